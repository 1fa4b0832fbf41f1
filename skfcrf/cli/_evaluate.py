"""``skfcrf evaluate DATA --model PATH [--repair PRESET]``: scores of a model on a labelled
column file, without and with post-processing (the sequences are decoded once)."""
from skfcrf.cli._common import (
    add_data_and_model,
    add_quiet,
    add_repair_option,
    as_2d,
    convergence_summary,
    counted,
    has_boundaries,
)
from skfcrf.cli._files import chain_title, config_chain_names, load_model, read_data
from skfcrf.cli._progress import decode_data


def add_parser(sub):
    e = sub.add_parser("evaluate", help="score a model on a labelled column file",
                       description="Per-chain and joint accuracy, segment F1, WindowDiff and a "
                       "per-label report for every chain.")
    add_data_and_model(e)
    add_repair_option(e, "the scores are then given without and with it, and the per-label "
                      "reports are those of the repaired labels")
    add_quiet(e)
    e.set_defaults(func=run)
    return e


def run(args):
    from skfcrf.metrics import classification_report
    from skfcrf.structure import repair_sequences

    crf, config = load_model(args.model)
    n_chains = crf.n_chains_
    X, y = read_data(args.data, config["attributes"], n_chains, config["sep"])
    decodings = decode_data(crf, config, X, quiet=args.quiet, model_path=args.model)
    yt, yp = as_2d(y), as_2d([d.labels for d in decodings])
    chain_names = config_chain_names(config, n_chains)
    names = [chain_title(c, name) for c, name in enumerate(chain_names)]
    width = max(len(n) for n in names + ["joint"])
    n_tokens = sum(len(s) for s in yt)
    print(f"{args.data}: {counted(len(yt), 'sequence')}, {counted(n_tokens, 'token')}, "
          f"{counted(n_chains, 'chain')}")
    print()
    if args.repair:
        print("without post-processing")
    _print_scores(yt, yp, names, width)
    if args.repair:
        yp_raw = yp
        yp = as_2d(repair_sequences(yp, args.repair, X))
        n_changed = sum(int((a != b).any(axis=1).sum()) for a, b in zip(yp_raw, yp))
        print()
        print(f"with post-processing (--repair {args.repair}; {n_changed} of {n_tokens} tokens "
              "relabelled)")
        _print_scores(yt, yp, names, width)
    iterative, converged, mean_iter = convergence_summary(decodings)
    if iterative:
        print(f"\nTRP max-product converged on {100 * converged:.1f}% of the "
              f"sequences (mean {mean_iter:.1f} iterations)")
    for c in range(n_chains):
        print()
        # its first line, "Chain c", named
        table = classification_report(yt, yp, chain=c).rstrip().split("\n", 1)[1]
        print(names[c][0].upper() + names[c][1:])
        print(table)
    return 0


def _print_scores(yt, yp, names, width):
    """Accuracy, segment F1 and WindowDiff per chain, then the joint accuracy."""
    from skfcrf.metrics import chain_accuracy, joint_accuracy, segment_f1, windowdiff

    acc = chain_accuracy(yt, yp)
    print(f"{'':<{width}}  accuracy  segment F1  WindowDiff")
    for c, name in enumerate(names):
        f1 = segment_f1(yt, yp, chain=c)
        wd = None
        if has_boundaries(yt, c):
            try:
                wd = windowdiff(yt, yp, chain=c)
            except ValueError:  # no sequence longer than the window
                wd = None
        wd_s = f"{wd:10.4f}" if wd is not None else f"{'-':>10}"
        print(f"{name:<{width}}  {acc[c]:8.4f}  {f1:10.4f}  {wd_s}")
    print(f"{'joint':<{width}}  {joint_accuracy(yt, yp):8.4f}")
