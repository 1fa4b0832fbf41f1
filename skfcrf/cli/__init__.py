"""The ``skfcrf`` command line.

Subcommands
-----------
``skfcrf demo``
    The embedded default: cross-validates a factorial CRF on synthetic medical
    dictations, prints the per-chain accuracy / WindowDiff tables with confidence
    intervals and, with ``--output-dir``, writes one recognised report as HTML and
    Markdown.
``skfcrf train DATA --model PATH``
    Fits a model on a CoNLL-style column file.  The CRF is saved with
    :meth:`skfcrf.FactorialCRF.save` (arrays + JSON, no pickle) and the feature
    configuration next to it as ``PATH.features.json`` (plain JSON); Ctrl-C writes
    the model trained so far.
``skfcrf tag DATA --model PATH``
    Writes predicted label columns, or the sequences rendered as HTML/Markdown.
``skfcrf evaluate DATA --model PATH``
    Prints per-chain and joint accuracy, per-label reports, segment F1 and WindowDiff.
``skfcrf view DATA --model PATH --output OUT``
    Writes the gold and predicted structure side by side as HTML pages
    (:func:`skfcrf.structure.write_comparison_pages`).
``skfcrf inspect MODEL``
    Prints the model's largest weights (:meth:`skfcrf.FactorialCRF.top_weights`).
``skfcrf prepare REPORTS TRANSCRIPTS -o OUT``
    Aligns recognizer transcripts with their formatted reports (paired by file name)
    and writes the transcripts' tokens with the reports' structure as training data
    (:func:`skfcrf.structure.parse_report`, :func:`skfcrf.structure.align_transcript`).

Layout: one module per command (``_demo``, ``_train``, ``_tag``, ``_evaluate``,
``_view``, ``_inspect``, ``_prepare``),
each with ``add_parser(subparsers)`` and ``run(args)``; ``_common`` holds the
errors, option types and output helpers, ``_files`` the data files and the
model + feature configuration files, ``_progress`` the progress bars (``tqdm``,
on stderr when it is a terminal, none with ``--quiet``).

Errors are reported as one line ``skfcrf: error: ...`` on stderr with a non-zero
exit status (2 for usage errors, 1 otherwise, 130 for Ctrl-C).  Output paths are
checked when a command starts (:func:`skfcrf.cli._files.check_writable`).
"""
import os
import sys

from skfcrf.cli import _demo, _evaluate, _inspect, _prepare, _tag, _train, _view
from skfcrf.cli._common import FEATURE_KINDS, PROG, CLIError, Parser

__all__ = ["main", "build_parser", "FEATURE_KINDS"]

#: the commands, in help order
COMMANDS = (_demo, _train, _tag, _evaluate, _view, _inspect, _prepare)


def build_parser():
    """The ``skfcrf`` argument parser."""
    from skfcrf import __version__

    p = Parser(prog=PROG, description="Factorial CRFs: several coupled label chains over "
               "token sequences (structure of dictated reports, POS + chunks, ...).")
    p.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    p.add_argument("--traceback", action="store_true",
                   help="show the full traceback of unexpected errors (for bug reports)")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for command in COMMANDS:
        command.add_parser(sub)
    return p


def main(argv=None):
    """Run the ``skfcrf`` command; return the exit status."""
    argv = sys.argv[1:] if argv is None else list(argv)
    show_tb = "--traceback" in argv
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        if args.command is None:
            parser.print_help(sys.stderr)
            return 2
        return args.func(args)
    except CLIError as exc:
        _error(exc)
        return exc.status
    except KeyboardInterrupt:
        _error("interrupted")
        return 130
    except BrokenPipeError:
        # output piped into e.g. `head`: stop quietly, without a second error at exit
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError, AttributeError):
            pass
        return 1
    except MemoryError:
        _error("out of memory")
        return 1
    except (OSError, ValueError, TypeError, KeyError, RuntimeError) as exc:
        if show_tb:
            raise
        _error(exc if str(exc).strip() else type(exc).__name__)
        return 1
    except Exception as exc:  # a bug: still one line, the traceback on request
        if show_tb:
            raise
        _error(f"internal error ({type(exc).__name__}: {exc}); rerun with --traceback to see where")
        return 1


def _error(message):
    """Print ``skfcrf: error: message`` as exactly one line on stderr."""
    text = " ".join(str(message).splitlines()).strip()
    print(f"{PROG}: error: {text}", file=sys.stderr, flush=True)

