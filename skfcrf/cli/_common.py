"""Shared pieces of the ``skfcrf`` commands: errors, the parser class, option
types, progress messages, HTML wrapping and the convergence summary of a decoding."""
import argparse
import html
import sys

from skfcrf.transformers import DICTATION_FEATURE_KINDS

PROG = "skfcrf"
#: ``--features`` kinds (those of :func:`skfcrf.transformers.make_dictation_features`)
FEATURE_KINDS = DICTATION_FEATURE_KINDS
#: ``--features auto``: the kinds below, chosen from the training labels
AUTO_FEATURES = "auto"
#: the kinds of the dictation experiments, for labels of the dictation scheme
DICTATION_FEATURES = ("ngram", "concepts", "position")
#: the kinds for any other labels (CoNLL chunks, named entities, parts of speech)
GENERAL_FEATURES = ("ngram", "affix", "shape", "casing")
#: ``--sep`` choices and the separators they stand for
SEPARATORS = {"whitespace": None, "tab": "\t", "space": " "}


class CLIError(Exception):
    """An error reported to the user as one line (exit status ``status``)."""

    def __init__(self, message, status=1):
        super().__init__(message)
        self.status = status


class Parser(argparse.ArgumentParser):
    """ArgumentParser whose errors are one line on stderr (no usage block)."""

    def error(self, message):
        raise CLIError(f"{message} (see '{self.prog} --help')", status=2)


def add_quiet(parser):
    """The ``-q/--quiet`` option every command has."""
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress messages")


#: ``--repair`` choices: the names of :data:`skfcrf.structure.REPAIR_PRESETS`
REPAIR_CHOICES = ("formal", "cor", "rcg", "rcg+8.1")


def add_repair_option(parser, what):
    """The ``--repair PRESET`` option of ``evaluate`` and ``tag``; ``what`` ends its help."""
    parser.add_argument("--repair", choices=REPAIR_CHOICES, metavar="PRESET",
                        help="post-process the predicted labels with a preset of "
                        "skfcrf.structure.REPAIR_PRESETS: formal (Begin and hierarchy "
                        "constraints only), cor (thesis algorithm 7, formatted reports), rcg "
                        "(algorithm 8 without its step 8.1, recognizer output) or rcg+8.1 "
                        f"(algorithm 8 in full); {what}")


def add_data_and_model(parser, data_help="labelled file (the model's attribute and label columns)"):
    """The ``DATA`` argument (described by ``data_help``) and ``--model PATH`` option of the
    commands that apply a model to a column file (``tag``, ``evaluate``, ``view``)."""
    parser.add_argument("data", metavar="DATA", help=data_help)
    parser.add_argument("--model", required=True, metavar="PATH", help="model written by 'skfcrf train'")


# ----------------------------------------------------------------------------- option types
def _bounded(convert, ok, what):
    """An argparse type: ``convert`` the text, then require ``ok(value)``."""
    def parse(text):
        try:
            v = convert(text)
        except ValueError:
            v = None
        if v is None or not ok(v):
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}")
        return v
    return parse


positive_int = _bounded(int, lambda v: v >= 1, "a positive integer")
nonnegative_int = _bounded(int, lambda v: v >= 0, "a non-negative integer")
positive_float = _bounded(float, lambda v: v > 0, "a positive number")


def n_jobs(text):
    """An int other than 0 (-1: all cores)."""
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if v == 0:
        raise argparse.ArgumentTypeError("n-jobs must not be 0 (use -1 for all cores)")
    return v


def instance_freq(text):
    """An int >= 1 (number of sequences) or a float in (0, 1] (fraction of them)."""
    try:
        v = int(text)
        ok = v >= 1
    except ValueError:
        try:
            v = float(text)
        except ValueError:
            v = None
        ok = v is not None and 0 < v <= 1
    if not ok:
        raise argparse.ArgumentTypeError(
            f"expected an integer >= 1 or a fraction in (0, 1], got {text!r}")
    return v


def feature_list(text):
    """Comma-separated feature kinds, duplicates dropped; or ``auto`` alone."""
    kinds = [k.strip() for k in text.split(",") if k.strip()]
    if not kinds:
        raise argparse.ArgumentTypeError("expected a comma-separated list of feature kinds")
    if AUTO_FEATURES in kinds:
        if len(kinds) > 1:
            raise argparse.ArgumentTypeError(
                f"{AUTO_FEATURES} chooses the feature kinds itself: give it alone, or list the "
                "kinds")
        return [AUTO_FEATURES]
    bad = [k for k in kinds if k not in FEATURE_KINDS]
    if bad:
        raise argparse.ArgumentTypeError(
            f"unknown feature kind {bad[0]!r} (choose from {', '.join(FEATURE_KINDS)}, or "
            f"{AUTO_FEATURES} alone)")
    return list(dict.fromkeys(kinds))


def add_fit_options(parser, *, min_instance_freq, instances):
    """The options of the commands that fit a model (``train``, ``demo``), then ``-q``.

    ``--sigma``, ``--min-instance-freq`` (default ``min_instance_freq``, counted in
    ``instances``, e.g. "reports"), ``--n-jobs``, ``--seed``, ``-v`` and ``-q``.
    """
    parser.add_argument("--sigma", type=positive_float, metavar="S", default=10.0,
                        help="Gaussian prior standard deviation (default: %(default)s)")
    parser.add_argument("--min-instance-freq", type=instance_freq, metavar="F", default=min_instance_freq,
                        help="pre-pruning: minimum number (int) or fraction (float) of "
                        f"{instances} an observation occurs in (default: %(default)s)")
    parser.add_argument("--n-jobs", type=n_jobs, metavar="N", default=2,
                        help="threads for the CRF kernels (default: %(default)s; -1: all cores)")
    parser.add_argument("--seed", type=int, metavar="N", default=0,
                        help="random seed (default: %(default)s)")
    parser.add_argument("-v", "--verbose", action="count", default=0,
                        help="print the training loss at every iteration")
    add_quiet(parser)


# ----------------------------------------------------------------------------- output
def counted(n, noun):
    """``"1 sequence"``, ``"2 sequences"``: ``n`` and the noun in the right number."""
    return f"{n} {noun}" + ("" if n == 1 else "s")


def progress(msg, quiet=False):
    """A progress message on stderr (none with ``--quiet``)."""
    if not quiet:
        print(msg, file=sys.stderr, flush=True)


def html_document(title, body):
    """A complete HTML page around ``body``."""
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f"<title>{html.escape(title)}</title>\n</head>\n<body>\n{body}\n</body>\n</html>\n")


def as_2d(seqs):
    """Label sequences as ``(n_tokens, n_chains)`` object arrays."""
    import numpy as np

    return [np.asarray(s, dtype=object).reshape(len(s), -1) for s in seqs]


def has_boundaries(y, chain):
    """Whether any sequence of ``y`` has a segment boundary on ``chain``."""
    from skfcrf.metrics import segment_boundaries

    return any(len(b) and b.any() for b in segment_boundaries(y, chain=chain))


# ----------------------------------------------------------------------------- convergence
def convergence_summary(decodings):
    """How far the decodings of :meth:`skfcrf.FactorialCRF.decode` can be trusted.

    Parameters
    ----------
    decodings : list of records
        Each with ``status`` (``"exact"``, ``"converged"`` or ``"approximate"``) and ``n_iter``.

    Returns
    -------
    iterative : bool
        Whether any sequence was decoded by iterative (loopy) inference, i.e.
        has a status other than ``"exact"``; without it there is nothing to report.
    converged_fraction : float
        Fraction of the sequences whose status is not ``"approximate"`` (1.0
        for no sequences).
    mean_iterations : float
        Mean ``n_iter`` over the sequences (0.0 for no sequences).
    """
    if not decodings:
        return False, 1.0, 0.0
    iterative = any(d.status != "exact" for d in decodings)
    converged = sum(d.status != "approximate" for d in decodings) / len(decodings)
    mean_iter = sum(d.n_iter for d in decodings) / len(decodings)
    return iterative, converged, mean_iter
