"""Two-stage models and their ensemble with the default against the default (issue 31, item 1).

Marcheggiani (2014, sections 2.2.3-2.2.4) cascades a coarse first-stage CRF into a
token-level one and finds the confidence-weighted ensemble of the single-stage and
the two-stage models best.  Here the first stage is a ``FactorialCRF()`` of chain 0
(the dictations' sentence chain, CoNLL's POS tags), the second a ``FactorialCRF()`` of
all the chains that also observes the first stage's labels or marginals
(:class:`skfcrf.ensemble.TwoStage`, cross-fitted with ``--cv`` folds, at the token or
``--offsets``).  The ensembles average the fitted single-stage and two-stage models'
marginals (:class:`~skfcrf.ensemble.MarginalAveraging`, eq. 2.4 ``mean`` or per-token
``confidence`` weighting; their fit time is the members').  Every row is scored on the
same test set: joint and per-chain accuracy, chunk F1 (conlleval) on CoNLL-2000,
WindowDiff per chain on the dictations, the fit time, and against the single-stage row
the p-value of a paired t-test of the per-sequence joint accuracies.

    python benchmarks/bench_two_stage.py --task dictations
    python benchmarks/bench_two_stage.py --task conll [--n-train 2000 --n-test 500]
    python benchmarks/bench_two_stage.py --task conll --first-outputs labels --offsets -1 0 1
    python benchmarks/bench_two_stage.py --task conll --first-outputs --one-chain 1

Data as ``bench_calibration.py``'s: ``make_dictations(300, "rcg", random_state=1)``, the
first 200 reports to train and the last 100 to test, ``make_dictation_features()``,
``sigma=31.6`` (both stages); CoNLL-2000 POS + chunks from word observations, the first
``--n-train`` / ``--n-test`` sentences.
"""
import numpy as np
from bench_calibration import data, summary, task_parser, timed_fit
from sklearn.frozen import FrozenEstimator

from skfcrf import FactorialCRF
from skfcrf.ensemble import MarginalAveraging, TwoStage
from skfcrf.metrics import chain_accuracy


def main():
    ap = task_parser(__doc__)
    ap.add_argument("--cv", type=int, default=5, help="cross-fitting folds")
    ap.add_argument("--first-outputs", nargs="*", default=["labels", "marginals"],
                    choices=("labels", "marginals"), help="none: no two-stage rows")
    ap.add_argument("--one-chain", type=int, default=None, metavar="C",
                    help="also fit chain C alone (the thesis's kind of baseline: one linear chain)")
    ap.add_argument("--offsets", nargs="+", type=int, default=[0],
                    help="tokens whose first-stage outputs each token observes")
    ap.add_argument("--random-state", type=int, default=0, help="the folds' shuffle")
    args = ap.parse_args()
    Xtr, ytr, Xte, yte, params = data(args.task, args.n_train, args.n_test)

    def crf():
        return FactorialCRF(n_jobs=args.n_jobs, **params)

    single = crf()
    fit_single = timed_fit(single, Xtr, ytr)
    base = single.predict(Xte)
    print(f"{args.task} single-stage FactorialCRF(): {summary(args.task, yte, base)}"
          f"  fit {fit_single:.1f} s", flush=True)
    if args.one_chain is not None:
        alone = crf()
        fit_alone = timed_fit(alone, Xtr, [[t[args.one_chain] for t in s] for s in ytr])
        gold = [[t[args.one_chain] for t in s] for s in yte]
        pred = alone.predict(Xte)
        acc = chain_accuracy(gold, pred, chain=0)
        extra = ""
        if args.task == "conll" and args.one_chain == 1:
            from _conll import chunk_f1
            extra = f"  chunk F1 {chunk_f1(gold, [list(p) for p in pred]):.4f}"
        print(f"{args.task} chain {args.one_chain} alone: accuracy {acc:.4f}{extra}  "
              f"fit {fit_alone:.1f} s", flush=True)
    for output in args.first_outputs:
        two = TwoStage(crf(), crf(), first_chains=0, cv=args.cv, first_output=output,
                       offsets=tuple(args.offsets), random_state=args.random_state)
        fit_two = timed_fit(two, Xtr, ytr)
        first = two.first_.predict(Xte)
        gold_first = [np.asarray(s, dtype=object)[:, :1] for s in yte]
        name = f"two-stage ({output}, offsets {args.offsets})"
        print(f"{args.task} {name}: {summary(args.task, yte, two.predict(Xte), base)}  "
              f"fit {fit_two:.1f} s  (first stage alone: chain 0 "
              f"{chain_accuracy(gold_first, first, chain=0):.4f})", flush=True)
        for weighting in ("mean", "confidence"):
            ens = MarginalAveraging([FrozenEstimator(single), FrozenEstimator(two)],
                                    weighting=weighting).fit(Xtr, ytr)
            print(f"{args.task} ensemble single + {name}, {weighting}: "
                  f"{summary(args.task, yte, ens.predict(Xte), base)}  "
                  f"fit {fit_single + fit_two:.1f} s", flush=True)


if __name__ == "__main__":
    main()
