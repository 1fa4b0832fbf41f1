"""``skfcrf tag DATA --model PATH [--repair PRESET]``: predicted label columns, or rendered
documents."""
import os
import sys

from skfcrf.cli._common import (
    CLIError,
    add_data_and_model,
    add_quiet,
    add_repair_option,
    counted,
    html_document,
    progress,
)
from skfcrf.cli._files import check_writable, count_columns, load_model, read_data
from skfcrf.cli._progress import decode_data


def add_parser(sub):
    g = sub.add_parser("tag", help="predict the label chains of a column file",
                       description="Tag a column file with a model written by 'skfcrf train'. "
                       "The file has the model's attribute columns; gold label columns after "
                       "them, if present (up to one per chain of the model), are ignored.")
    add_data_and_model(g, "file to tag")
    g.add_argument("--format", choices=("columns", "text", "html", "markdown"), default="columns",
                   help="attribute + predicted label columns, or the sequences rendered as "
                   "formatted reports: plain text (headings in capitals with a colon, "
                   "numbered lists, one paragraph per line), HTML or Markdown "
                   "(default: %(default)s)")
    g.add_argument("--verbatim", action="store_true",
                   help="render the tokens as they are; by default dictated punctuation "
                   "('period', 'comma', 'colon') becomes punctuation, dictated commands ('next "
                   "paragraph') and hesitations ('uh', 'um') are dropped and sentences start "
                   "with a capital")
    g.add_argument("--output", metavar="FILE", help="output file (default: standard output)")
    add_repair_option(g, "without it the label columns are the raw predictions and rendered "
                      "documents are repaired with formal")
    add_quiet(g)
    g.set_defaults(func=run)
    return g


def run(args):
    from skfcrf.datasets import write_conll

    if args.output:
        check_writable(args.output, "--output")
    crf, config = load_model(args.model)
    attributes = config["attributes"]
    sep = config["sep"]
    n_chains = crf.n_chains_
    n_attr = len(attributes)
    n_cols = count_columns(args.data, sep) if os.path.isfile(args.data) else n_attr
    # gold label columns, if present (any number up to the model's chains), are read and ignored
    if n_cols > n_attr + n_chains:
        raise CLIError(f"{args.data} has {counted(n_cols, 'column')}; the model reads "
                       f"{counted(n_attr, 'attribute column')} ({' '.join(attributes)}) "
                       f"and ignores up to {counted(n_chains, 'label column')} after them")
    n_label_columns = max(n_cols - n_attr, 0)
    X, _ = read_data(args.data, attributes, n_label_columns, sep)
    decodings = decode_data(crf, config, X, quiet=args.quiet, model_path=args.model)
    y_pred = [d.labels for d in decodings]
    if args.repair:
        from skfcrf.structure import repair_sequences

        y_pred = repair_sequences(y_pred, args.repair, X)
    if args.format == "columns":
        out = args.output if args.output else sys.stdout
        write_conll(out, X, y_pred, attributes=attributes,
                    sep="\t" if sep == "tab" else " ")
    else:
        text = render_documents(X, y_pred, args.format, rules=args.repair or "formal",
                                verbatim=args.verbatim)
        if args.output:
            with open(args.output, "w", encoding="utf-8") as fh:
                fh.write(text)
        else:
            sys.stdout.write(text)
    if args.output:
        progress(f"wrote {args.output}", args.quiet)
    return 0


def render_documents(X, y_pred, fmt, title="skfcrf", rules="formal", verbatim=False):
    """The tagged sequences, repaired with ``rules`` (a preset name or rules), as one HTML
    page, Markdown or plain text; unless ``verbatim``, recognizer output is cleaned
    (dictated punctuation -> marks, commands and hesitations dropped, sentence case)."""
    from skfcrf._dictation_vocab import HESITATIONS
    from skfcrf.structure import render_html, render_markdown, render_text, repair_sequences

    opts = {} if verbatim else {"dictated_punctuation": True, "capitalize": True,
                                "drop_words": HESITATIONS}
    render = {"html": render_html, "markdown": render_markdown, "text": render_text}[fmt]
    parts = []
    for i, (tokens, fixed) in enumerate(zip(X, repair_sequences(y_pred, rules, X))):
        if fmt == "html":
            parts.append(f"<article id=\"seq-{i + 1}\">\n{render_html(tokens, fixed, **opts)}</article>")
        else:
            parts.append(render(tokens, fixed, **opts))
    if fmt == "html":
        return html_document(title, "\n".join(parts))
    if fmt == "text":
        return "\n".join(parts)  # one report after the other, a blank line between
    return "\n---\n\n".join(parts)
