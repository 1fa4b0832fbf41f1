"""``skfcrf inspect MODEL``: the largest weights of a saved model, as a table (on
standard output), and what its fit made of the in-chain transitions (one line on
standard error)."""
from skfcrf.cli._common import nonnegative_int
from skfcrf.cli._files import generic_chain_names, load_crf, stored_chain_names


def add_parser(sub):
    g = sub.add_parser("inspect", help="print a model's largest weights",
                       description="Print the largest-magnitude weights of a saved model "
                       "(FactorialCRF.top_weights): template kind, chains (by the names "
                       "stored with the model by 'skfcrf train', if any), observation "
                       "(or 'bias'), label assignment and weight.")
    g.add_argument("model", metavar="MODEL", help="model file (FactorialCRF.save / skfcrf train)")
    g.add_argument("-n", "--top", type=nonnegative_int, default=20, metavar="N",
                   help="how many weights (default: %(default)s)")
    g.add_argument("--chain", default=None, metavar="C",
                   help="only weights of templates involving chain C (its index or name)")
    g.add_argument("--kind", choices=("unary", "transition", "coupling"), default=None,
                   help="only weights of this template kind")
    g.set_defaults(func=run)
    return g


def format_weights(records, chain_names=None):
    """The records of :meth:`FactorialCRF.top_weights` as an aligned text table; the
    chains by their ``chain_names`` (default: their indices)."""
    rows = [("kind", "chains", "observation", "labels", "weight")]
    for r in records:
        chains = map(str, r.chains) if chain_names is None else (chain_names[c] for c in r.chains)
        rows.append((r.kind, ",".join(chains), r.observation,
                     " -> ".join(map(str, r.labels)) if r.kind == "transition"
                     else " / ".join(map(str, r.labels)), f"{r.weight:+.4f}"))
    widths = [max(len(row[i]) for row in rows) for i in range(5)]
    lines = ["  ".join(cell.ljust(w) if i < 4 else cell.rjust(w)
                       for i, (cell, w) in enumerate(zip(row, widths))).rstrip() for row in rows]
    return "\n".join(lines)


def transitions_line(crf, chain_names):
    """One line: what the model's fit made of its in-chain transitions
    (``transitions_``) and why; None for a model file without it."""
    choice = getattr(crf, "transitions_", None)
    if not choice:
        return None
    unseen = ", ".join(f"{n} {k}" for n, k in zip(chain_names, choice["unseen"]))
    decoding = ("MAP decoding over the transitions seen in training"
                if choice["decoding"] == "seen" else "decoding over every allowed transition")
    return (f"transitions: {choice['world']} ({decoding}; never seen per chain: {unseen}): "
            f"{choice['reason']}")


def anchors_line(crf, chain_names):
    """One line: which chains' own sure labels the model's MAP decoding keeps
    (``anchors_``) and why; None for a model without the record."""
    record = getattr(crf, "anchors_", None)
    if not record:
        return None
    chains = ", ".join(chain_names[c] for c in record["chains"]) or "none"
    return f"anchors: {chains}: {record['reason']}"


def run(args):
    import sys

    from skfcrf.cli._common import CLIError

    crf = load_crf(args.model)
    names = stored_chain_names(args.model, crf.n_chains_)
    chain = args.chain
    if chain is not None:
        if chain in names:
            chain = names.index(chain)
        else:
            try:
                chain = int(chain)
            except ValueError:
                raise CLIError(f"--chain {chain}: the model's chains are 0-{crf.n_chains_ - 1}"
                               f" ({', '.join(names)})", status=2) from None
    try:
        records = crf.top_weights(n=args.top, chain=chain, kind=args.kind)
    except ValueError as exc:
        raise CLIError(str(exc), status=2) from None
    # unnamed chains (chain 0, ...) keep their indices
    print(format_weights(records, None if names == generic_chain_names(crf.n_chains_) else names))
    for line in (transitions_line(crf, names), anchors_line(crf, names)):
        if line is not None:        # beside the table, which stays machine-readable
            print(line, file=sys.stderr)
    return 0
