"""Does the joint model lose a chain to its independent version? (issue 32, goal 2)

The default ``FactorialCRF()`` against two baselines, per chain: accuracy, and
WindowDiff of the dictation chains or chunk F1 (conlleval) on CoNLL-2000; joint
accuracy; and a paired test (:func:`skfcrf.metrics.paired_test`) of the
per-sequence accuracy of each chain, default minus baseline (on the dictations also of
the per-sequence WindowDiff, lower is better).

``one-chain``
    Independent chains, each trained and decoded alone: one ``FactorialCRF``
    per chain, fitted on that chain's labels only (a linear-chain CRF; a stack
    of sklearn-crfsuite taggers on the same observations).
``uncoupled``
    The default without couplings or joint training (``coupling="none"``,
    ``finetune_iter=0``: the first stage alone, every chain trained on its own)
    but decoded as the default decodes, exactly over the label combinations
    seen in training.  That state space is itself a coupling: it lets no
    chain take a label that never went with the others' labels (on the
    dictations it is worth 2 points of the subsection and section chains'
    accuracy over ``one-chain``).

    python benchmarks/bench_per_chain.py --task dictations [--extra-reports 400]
    python benchmarks/bench_per_chain.py --task conll [--n-train 2000 --n-test 500]
    python benchmarks/bench_per_chain.py --task dictations --forbidden-transitions backoff
    python benchmarks/bench_per_chain.py --task dictations --extra-reports 400 --ensemble

Data as ``bench_calibration.py``'s (dictations 200 / 100 with ``sigma=31.6``; CoNLL-2000
POS + chunks from word observations).  ``--extra-reports N`` (dictations) also scores
the models on ``N`` further reports, ``make_dictations(N, "rcg",
random_state=--extra-random-state)``: 100 test reports leave a chain's difference of
0.002 within the noise.  ``--forbidden-transitions`` sets the default's (e.g.
``backoff``), ``--independent-forbidden-transitions`` the two baselines' (``auto``,
their default; ``none``: open, every transition scored, as CRFsuite's chains).
``--ensemble`` also scores the average token marginals of the default and
``uncoupled`` (:class:`skfcrf.ensemble.MarginalAveraging` of both, frozen: no
further fit), decoded token by token.
"""
import numpy as np
from bench_calibration import data, summary, task_parser, timed_fit
from sklearn.frozen import FrozenEstimator

from skfcrf import FactorialCRF
from skfcrf.ensemble import MarginalAveraging
from skfcrf.metrics import chain_accuracy, paired_test, sequence_scores, windowdiff

BASELINES = ("one-chain", "uncoupled")


def one_chain_fit(make, X, y):
    """One model per chain (``make()`` each), fitted on that chain's labels; the seconds."""
    n_chains = len(y[0][0])
    models, seconds = [], 0.0
    for c in range(n_chains):
        model = make()
        seconds += timed_fit(model, X, [[token[c] for token in seq] for seq in y])
        models.append(model)
    return models, seconds


def one_chain_predict(models, X):
    """The chains' labels of :func:`one_chain_fit`'s models side by side, per sequence."""
    per_chain = [model.predict(X) for model in models]
    return [np.stack([chain[s] for chain in per_chain], axis=1) for s in range(len(X))]


def main():
    ap = task_parser(__doc__)
    ap.add_argument("--extra-reports", type=int, default=0)
    ap.add_argument("--extra-random-state", type=int, default=2)
    ap.add_argument("--ensemble", action="store_true")
    ap.add_argument("--forbidden-transitions", default="auto",
                    choices=("auto", "unseen", "backoff", "none"))
    ap.add_argument("--independent-forbidden-transitions", default="auto",
                    choices=("auto", "unseen", "none"))
    args = ap.parse_args()
    ft = None if args.forbidden_transitions == "none" else args.forbidden_transitions
    ft_baseline = (None if args.independent_forbidden_transitions == "none"
                   else args.independent_forbidden_transitions)
    Xtr, ytr, Xte, yte, params = data(args.task, args.n_train, args.n_test)
    tests = {"test": (Xte, yte)}
    if args.extra_reports and args.task == "dictations":
        from skfcrf.datasets import make_dictations
        from skfcrf.transformers import make_dictation_features
        X, y = make_dictations(args.extra_reports, "rcg", random_state=args.extra_random_state)
        tests[f"{args.extra_reports} further reports"] = (
            make_dictation_features().fit_transform(X), y)

    def model(**extra):
        return FactorialCRF(n_jobs=args.n_jobs, **{**params, **extra})

    preds, fitted, seconds = {}, {}, {}
    fitted["default"] = model(forbidden_transitions=ft)
    seconds["default"] = timed_fit(fitted["default"], Xtr, ytr)
    fitted["uncoupled"] = model(coupling="none", finetune_iter=0,
                                forbidden_transitions=ft_baseline)
    seconds["uncoupled"] = timed_fit(fitted["uncoupled"], Xtr, ytr)
    chains, seconds["one-chain"] = one_chain_fit(
        lambda: model(forbidden_transitions=ft_baseline), Xtr, ytr)
    for test_name, (X, _) in tests.items():
        preds["default", test_name] = fitted["default"].predict(X)
        preds["uncoupled", test_name] = fitted["uncoupled"].predict(X)
        preds["one-chain", test_name] = one_chain_predict(chains, X)
    names = ["default", "uncoupled", "one-chain"]
    if args.ensemble:
        ensemble = MarginalAveraging([FrozenEstimator(fitted[m]) for m in ("default", "uncoupled")])
        ensemble.fit(Xtr, ytr)
        for test_name, (X, _) in tests.items():
            preds["ensemble", test_name] = ensemble.predict(X)
        names.insert(1, "ensemble")
    for test_name, (_, y) in tests.items():
        for name in names:
            fit = f"  fit {seconds[name]:.1f} s" if name in seconds else ""
            print(f"{args.task} {name}, {test_name}: "
                  f"{summary(args.task, y, preds[name, test_name])}{fit}", flush=True)
    for test_name, (_, y) in tests.items():
        for name in [n for n in names if n not in BASELINES]:
            for baseline in BASELINES:
                for c in range(preds[name, test_name][0].shape[1]):
                    a, b = (sequence_scores(y, preds[m, test_name], chain_accuracy, chain=c)
                            for m in (name, baseline))
                    test = paired_test(a, b)
                    line = (f"{test_name}, chain {c}: per-sequence accuracy, {name} - {baseline} "
                            f"{test.mean_difference:+.4f} (paired t-test p = {test.pvalue:.3g}")
                    if args.task == "dictations":
                        wd = paired_test(*(sequence_scores(y, preds[m, test_name], windowdiff,
                                                           chain=c) for m in (name, baseline)))
                        line += (f"), WindowDiff {wd.mean_difference:+.4f} "
                                 f"(p = {wd.pvalue:.3g}")
                    print(f"{line}; {test.n} sequences)")


if __name__ == "__main__":
    main()
