"""Does the joint model lose a chain to its independent version? (issue 32, goal 2)

The default ``FactorialCRF()`` against the same model without couplings or joint
training: every chain its own linear-chain CRF (``coupling="none"``,
``finetune_iter=0``; the independent stage alone, trained to convergence with
``max_iter`` iterations per chain).  Per chain: accuracy, and WindowDiff of the
dictation chains or chunk F1 (conlleval) on CoNLL-2000; joint accuracy; and a
paired test (:func:`skfcrf.metrics.paired_test`) of the per-sequence accuracy of
each chain, default minus independent.

    python benchmarks/bench_per_chain.py --task dictations
    python benchmarks/bench_per_chain.py --task conll [--n-train 2000 --n-test 500]

Data as ``bench_calibration.py``'s (dictations 200 / 100 with ``sigma=31.6``; CoNLL-2000
POS + chunks from word observations).
"""
from bench_calibration import data, summary, task_parser, timed_fit

from skfcrf import FactorialCRF
from skfcrf.metrics import chain_accuracy, paired_test, sequence_scores

MODELS = {
    "default": {},
    "independent": dict(coupling="none", finetune_iter=0),
}


def main():
    ap = task_parser(__doc__)
    args = ap.parse_args()
    Xtr, ytr, Xte, yte, params = data(args.task, args.n_train, args.n_test)
    preds = {}
    for name, extra in MODELS.items():
        model = FactorialCRF(n_jobs=args.n_jobs, **{**params, **extra})
        fit = timed_fit(model, Xtr, ytr)
        preds[name] = model.predict(Xte)
        print(f"{args.task} {name}: {summary(args.task, yte, preds[name])}  fit {fit:.1f} s",
              flush=True)
    for c in range(preds["default"][0].shape[1]):
        a, b = (sequence_scores(yte, preds[m], chain_accuracy, chain=c)
                for m in ("default", "independent"))
        test = paired_test(a, b)
        print(f"chain {c}: per-sequence accuracy, default - independent {test.mean_difference:+.4f}"
              f" (paired t-test p = {test.pvalue:.3g}, {test.n} sequences)")


if __name__ == "__main__":
    main()
