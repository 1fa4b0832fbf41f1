"""``skfcrf view DATA --model PATH --output OUT``: gold and predicted structure as HTML pages.

Reads a labelled file as ``evaluate`` does, decodes it
(:meth:`skfcrf.FactorialCRF.decode`) and writes
:func:`skfcrf.structure.write_comparison_pages` (a directory: one page per
sequence, called a report for dictation-like data, and ``index.html``), or one
:func:`skfcrf.structure.render_comparison` page (a file ending in ``.html``) for
``--sequence N`` or a file of one sequence.
"""
import os

from skfcrf.cli._common import CLIError, add_data_and_model, add_quiet, counted, positive_int
from skfcrf.cli._files import (
    check_writable,
    config_chain_names,
    load_model,
    looks_like_dictations,
    read_data,
)
from skfcrf.cli._progress import decode_data


def add_parser(sub):
    v = sub.add_parser("view", help="gold and predicted structure side by side, as HTML pages",
                       description="Decode a labelled column file and write, for every sequence, "
                       "a self-contained HTML page showing the gold and predicted segments of "
                       "every chain as nested boxes, the disagreements, the scores and the "
                       "decoding status, plus an index page.")
    add_data_and_model(v)
    v.add_argument("--output", required=True, metavar="OUT",
                   help="directory to write (index.html and one page per sequence), or an "
                   ".html file for a single sequence")
    v.add_argument("--sequence", type=positive_int, metavar="N",
                   help="only the N-th sequence (from 1), written to OUT as one page")
    v.add_argument("--chain-names", metavar="NAMES",
                   help="comma-separated chain names, chain 0 first, instead of those "
                   "stored with the model")
    v.add_argument("--repair", action="store_true",
                   help="show the predictions after skfcrf.structure.repair (formal constraints)")
    add_quiet(v)
    v.set_defaults(func=run)
    return v


def _display_tokens(seq):
    """Tokens as shown: the word, or the first attribute when there is no word column."""
    return [t if isinstance(t, str) else t.get("word", next(iter(t.values()), "")) for t in seq]


def run(args):
    from skfcrf.structure import render_comparison, repair, write_comparison_pages

    crf, config = load_model(args.model)
    n_chains = crf.n_chains_
    names = config_chain_names(config, n_chains)
    if args.chain_names:
        names = [n.strip() for n in args.chain_names.split(",")]
        if len(names) != n_chains:
            raise CLIError(f"--chain-names gives {len(names)} names but the model has "
                           f"{n_chains} chains", 2)
    X, y = read_data(args.data, config["attributes"], n_chains, config["sep"])
    # what a sequence is: a report of the dictation task, else a plain sequence (a CoNLL
    # sentence, a document: the file does not say)
    unit = "report" if looks_like_dictations(y) else "sequence"
    single = args.sequence is not None or (len(X) == 1 and args.output.endswith(".html"))
    if args.sequence is not None:
        if args.sequence > len(X):
            raise CLIError(f"--sequence {args.sequence}: {args.data} has {counted(len(X), 'sequence')}", 2)
        index = args.sequence - 1
        X, y = X[index:index + 1], y[index:index + 1]
    else:
        index = 0
    if single and os.path.isdir(args.output):
        raise CLIError(f"--output is a directory; give a file name for one page: {args.output}", 2)
    if not single and os.path.isfile(args.output):
        raise CLIError(f"--output is a file; several sequences need a directory: {args.output}", 2)
    if single:
        check_writable(args.output, "--output")
    else:   # write_comparison_pages makes the directory
        check_writable(args.output, "--output", directory=True, create=True)
    decodings = decode_data(crf, config, X, quiet=args.quiet, what="decoding",
                            model_path=args.model)
    tokens = [_display_tokens(s) for s in X]
    preds = [d.labels for d in decodings]
    if args.repair:
        preds = [repair(p, tokens=t) for p, t in zip(preds, tokens)]
    try:
        if single:
            page = render_comparison(tokens[0], y[0], preds[0], decoding=decodings[0],
                                     chain_names=names,
                                     title=f"{os.path.basename(args.data)}: {unit} {index + 1}")
            with open(args.output, "w", encoding="utf-8") as fh:
                fh.write(page)
            print(f"wrote {args.output}")
        else:
            path = write_comparison_pages(args.output, tokens, y, preds, decodings=decodings,
                                          chain_names=names, unit=unit,
                                          title=os.path.basename(args.data))
            print(f"wrote {counted(len(X), unit + ' page')} and the index {path}")
    except OSError as exc:
        raise CLIError(f"cannot write {args.output}: {exc.strerror or exc}") from None
    return 0
