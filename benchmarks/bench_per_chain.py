"""Does the joint model lose a chain to its independent version? (issue 32, goal 2)

The default ``FactorialCRF()`` against the same model without couplings or joint
training: every chain its own linear-chain CRF (``coupling="none"``,
``finetune_iter=0``; the independent stage alone, trained to convergence with
``max_iter`` iterations per chain).  Per chain: accuracy, and WindowDiff of the
dictation chains or chunk F1 (conlleval) on CoNLL-2000; joint accuracy; and a
paired test (:func:`skfcrf.metrics.paired_test`) of the per-sequence accuracy of
each chain, default minus independent.

    python benchmarks/bench_per_chain.py --task dictations [--extra-reports 400]
    python benchmarks/bench_per_chain.py --task conll [--n-train 2000 --n-test 500]
    python benchmarks/bench_per_chain.py --task dictations --forbidden-transitions backoff

Data as ``bench_calibration.py``'s (dictations 200 / 100 with ``sigma=31.6``; CoNLL-2000
POS + chunks from word observations).  ``--extra-reports N`` (dictations) also scores
both models on ``N`` further reports, ``make_dictations(N, "rcg",
random_state=--extra-random-state)``: 100 test reports leave a chain's difference of
0.002 within the noise.  ``--forbidden-transitions`` sets the first model's (e.g.
``backoff``; the independent chains have no joint states to back off over).
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
    ap.add_argument("--extra-reports", type=int, default=0)
    ap.add_argument("--extra-random-state", type=int, default=2)
    ap.add_argument("--forbidden-transitions", default="auto",
                    choices=("auto", "unseen", "backoff", "none"))
    args = ap.parse_args()
    ft = None if args.forbidden_transitions == "none" else args.forbidden_transitions
    Xtr, ytr, Xte, yte, params = data(args.task, args.n_train, args.n_test)
    tests = {"test": (Xte, yte)}
    if args.extra_reports and args.task == "dictations":
        from skfcrf.datasets import make_dictations
        from skfcrf.transformers import make_dictation_features
        X, y = make_dictations(args.extra_reports, "rcg", random_state=args.extra_random_state)
        tests[f"{args.extra_reports} further reports"] = (
            make_dictation_features().fit_transform(X), y)
    preds = {}
    for name, extra in MODELS.items():
        if name == "default":
            extra = dict(extra, forbidden_transitions=ft)
        model = FactorialCRF(n_jobs=args.n_jobs, **{**params, **extra})
        fit = timed_fit(model, Xtr, ytr)
        for test_name, (X, y) in tests.items():
            preds[name, test_name] = model.predict(X)
            print(f"{args.task} {name}, {test_name}: "
                  f"{summary(args.task, y, preds[name, test_name])}  fit {fit:.1f} s", flush=True)
    for test_name, (_, y) in tests.items():
        for c in range(preds["default", test_name][0].shape[1]):
            a, b = (sequence_scores(y, preds[m, test_name], chain_accuracy, chain=c)
                    for m in ("default", "independent"))
            test = paired_test(a, b)
            print(f"{test_name}, chain {c}: per-sequence accuracy, default - independent "
                  f"{test.mean_difference:+.4f} (paired t-test p = {test.pvalue:.3g}, "
                  f"{test.n} sequences)")


if __name__ == "__main__":
    main()
