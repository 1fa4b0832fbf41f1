"""``skfcrf inspect MODEL``: the largest weights of a saved model, as a table."""
from skfcrf.cli._common import nonnegative_int
from skfcrf.cli._files import load_crf


def add_parser(sub):
    g = sub.add_parser("inspect", help="print a model's largest weights",
                       description="Print the largest-magnitude weights of a saved model "
                       "(FactorialCRF.top_weights): template kind, chains, observation "
                       "(or 'bias'), label assignment and weight.")
    g.add_argument("model", metavar="MODEL", help="model file (FactorialCRF.save / skfcrf train)")
    g.add_argument("-n", "--top", type=nonnegative_int, default=20, metavar="N",
                   help="how many weights (default: %(default)s)")
    g.add_argument("--chain", type=int, default=None, metavar="C",
                   help="only weights of templates involving chain C")
    g.add_argument("--kind", choices=("unary", "transition", "coupling"), default=None,
                   help="only weights of this template kind")
    g.set_defaults(func=run)
    return g


def format_weights(records):
    """The records of :meth:`FactorialCRF.top_weights` as an aligned text table."""
    rows = [("kind", "chains", "observation", "labels", "weight")]
    for r in records:
        rows.append((r.kind, ",".join(map(str, r.chains)), r.observation,
                     " -> ".join(map(str, r.labels)) if r.kind == "transition"
                     else " / ".join(map(str, r.labels)), f"{r.weight:+.4f}"))
    widths = [max(len(row[i]) for row in rows) for i in range(5)]
    lines = ["  ".join(cell.ljust(w) if i < 4 else cell.rjust(w)
                       for i, (cell, w) in enumerate(zip(row, widths))).rstrip() for row in rows]
    return "\n".join(lines)


def run(args):
    from skfcrf.cli._common import CLIError

    crf = load_crf(args.model)
    try:
        records = crf.top_weights(n=args.top, chain=args.chain, kind=args.kind)
    except ValueError as exc:
        raise CLIError(str(exc), status=2) from None
    print(format_weights(records))
    return 0
