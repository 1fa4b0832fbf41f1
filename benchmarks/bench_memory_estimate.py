"""The memory guard's estimate against measured peak memory (issue 19, item 1).

For each configuration a fresh subprocess builds the data and the observations,
then records its resident memory, resets the kernel's high-water mark
(``/proc/self/clear_refs``, Linux) and fits; the fit's peak is the high-water
mark (``VmHWM``) after the fit minus the resident memory before it.  Where the
reset is not permitted it falls back to ``resource.getrusage().ru_maxrss`` (the
process's high-water mark) minus the same baseline.  The estimate is
``check_fit_memory``'s total of ``estimate_fit_memory`` -- what ``verbose=1``
prints -- computed from the same encoded data.

Configurations: one chain of CoNLL-2000 chunk labels (the first ``--conll``
training sentences, CRFsuite-example observations; the default objective, and
the likelihood with ``transition_features="all"``), and the three-chain
synthetic dictations (``make_dictations(--reports)``, standard features; default
and ``transition_features="all"``).

    SKFCRF_CONLL2000=/path/to/conll2000 python benchmarks/bench_memory_estimate.py
    python benchmarks/bench_memory_estimate.py --config dictations   # one configuration
"""
import argparse
import gc
import json
import os
import resource
import subprocess
import sys

CONFIGS = {
    "conll": dict(data="conll", params={}),
    "conll-all-likelihood": dict(data="conll", params=dict(objective="likelihood",
                                                           transition_features="all")),
    "dictations": dict(data="dictations", params={}),
    "dictations-all": dict(data="dictations", params=dict(transition_features="all")),
}


def _status_kb(field):
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise KeyError(field)


def reset_peak():
    """Reset the high-water mark to the current RSS; False where not permitted."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


def measure_fit(crf, X, y):
    """Peak bytes the fit adds over the resident memory before it, and the method used."""
    gc.collect()
    baseline = _status_kb("VmRSS")
    if reset_peak():
        crf.fit(X, y)
        return (_status_kb("VmHWM") - baseline) * 1024, "VmHWM after clear_refs"
    crf.fit(X, y)
    return (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - baseline) * 1024, "ru_maxrss"


def estimate(crf, X, y):
    """The guard's estimate (bytes) and weight count for fitting ``crf`` on ``X, y``."""
    from sklearn.base import clone

    from skfcrf._validation import check_label_sequences
    from skfcrf.estimators._observations import ObservationEncoder
    from skfcrf.model._labels import fit_classes, resolve_couplings
    from skfcrf.model._layout import build_graph
    from skfcrf.model._memory import (
        check_fit_memory,
        column_counts,
        estimate_fit_memory,
        nnz_of,
    )

    crf = clone(crf)
    y_seqs, _ = check_label_sequences(y)
    Xm, seq_ptr = ObservationEncoder().fit_transform(X, crf.min_instance_freq)
    n_chains = y_seqs[0].shape[1]
    classes = fit_classes(y_seqs, n_chains)
    graph = build_graph([len(c) for c in classes], resolve_couplings(crf.coupling, n_chains),
                        crf.transition_features, crf.coupling_features)
    est = estimate_fit_memory(
        graph, Xm.shape[0], Xm.shape[1], nnz_of(Xm), unary_features=crf.unary_features,
        transition_features=crf.transition_features, coupling_features=crf.coupling_features,
        objective=crf.objective, lbfgs_memory=crf.lbfgs_memory,
        column_counts=column_counts(Xm), n_sequences=len(seq_ptr) - 1)
    return check_fit_memory(est, max_memory=2 ** 62), est


def load(data, args):
    if data == "conll":
        sys.path.insert(0, os.path.dirname(__file__))
        from _conll import chunk_observations
        from _conll import load as load_conll
        X, y = load_conll("train")
        X, y = X[:args.conll], y[:args.conll]
        return chunk_observations(X), [[chunk for _, chunk in seq] for seq in y]
    from skfcrf.datasets import make_dictations

    from _dictations import standard_features
    tokens, y = make_dictations(args.reports, style="rcg", random_state=0)
    return standard_features().fit_transform(tokens), y


def child(args):
    import warnings

    from skfcrf import FactorialCRF
    config = CONFIGS[args.config]
    X, y = load(config["data"], args)
    crf = FactorialCRF(max_iter=args.max_iter, finetune_iter=args.finetune_iter,
                       random_state=0, **config["params"])
    total, est = estimate(crf, X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ConvergenceWarning of the short fit
        measured, method = measure_fit(crf, X, y)
    parts = {k: v for k, v in est.items() if k not in ("n_weights", "dominant_template")}
    print(json.dumps(dict(config=args.config, tokens=sum(len(s) for s in X),
                          n_weights=est["n_weights"], n_params=int(crf.coef_.size),
                          n_iter=crf.n_iter_, estimate_mb=round(total / 2 ** 20, 1),
                          measured_mb=round(measured / 2 ** 20, 1),
                          ratio=round(total / measured, 2) if measured > 0 else None,
                          method=method,
                          parts_mb={k: round(v / 2 ** 20, 1) for k, v in parts.items()})),
          flush=True)


def run(config, args):
    """Run one configuration in a fresh interpreter; its JSON record."""
    cmd = [sys.executable, __file__, "--config", config, "--child", "--conll", str(args.conll),
           "--reports", str(args.reports), "--max-iter", str(args.max_iter),
           "--finetune-iter", str(args.finetune_iter)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", choices=sorted(CONFIGS), action="append")
    parser.add_argument("--conll", type=int, default=2000, help="CoNLL training sentences")
    parser.add_argument("--reports", type=int, default=30, help="dictation reports")
    parser.add_argument("--max-iter", type=int, default=10)
    parser.add_argument("--finetune-iter", type=int, default=3)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        args.config = args.config[0]
        child(args)
        return
    for config in args.config or list(CONFIGS):
        rec = run(config, args)
        print(f"{rec['config']:22s} {rec['tokens']:7d} tokens {rec['n_weights']:10,d} weights "
              f"(fitted {rec['n_params']:,d}, {rec['n_iter']} iterations)  "
              f"estimate {rec['estimate_mb']:8.1f} MB  measured {rec['measured_mb']:8.1f} MB  "
              f"ratio {rec['ratio']}  ({rec['method']})", flush=True)
        print("    " + ", ".join(f"{k} {v}" for k, v in rec["parts_mb"].items()), flush=True)


if __name__ == "__main__":
    main()
