"""Issue 30, item 7: CRFsuite's other trainers, skfcrf.crfsuite against sklearn_crfsuite.

CoNLL-2000 chunking with the sklearn-crfsuite tutorial's features
(``bench_crfsuite_dropin.sent2features``), ``all_possible_transitions=True``,
each of ``l2sgd``, ``ap``, ``pa`` and ``arow`` at CRFsuite's defaults but
``max_iterations`` (the same number of epochs on both sides; ``c2`` for
``l2sgd``), trained by ``sklearn_crfsuite.CRF`` and by ``skfcrf.crfsuite.CRF`` in the
same run, one thread each.  Prints per algorithm the flat F1 of the chunk labels
without ``"O"`` (the tutorial's score), the fit time (feature generation included
on both sides), the trainer's own seconds (``training_log_.training_seconds``:
CRFsuite's epochs; skfcrf's oracle set-up and epochs), and the differences.
Goal: flat F1 within 0.01 of CRFsuite's trainer of the same name, no slower.

With ``--repeat N`` each algorithm is fitted N times per side, the sides
alternating (CRFsuite, skfcrf, CRFsuite, ...), and the medians are printed, the
ratio as the median of the rounds' ratios.  ``--sides skfcrf`` times skfcrf alone
(e.g. an earlier revision's tree first on ``PYTHONPATH``, for a before/after).

    python benchmarks/bench_crfsuite_trainers.py [--iterations 10] [--c2 0.1]
        [--algorithms l2sgd,ap,pa,arow] [--repeat 1] [--sides crfsuite,skfcrf]
"""
import argparse
import os
import statistics

os.environ.setdefault("OMP_NUM_THREADS", "1")

import sklearn_crfsuite  # noqa: E402
from bench_crfsuite_dropin import sent2features  # noqa: E402

from skfcrf import crfsuite  # noqa: E402

from _conll import Timer, chain_labels, load  # noqa: E402


def run(module, algorithm, data, args):
    X_train, y_train, X_test, y_test = data
    params = dict(max_iterations=args.iterations)
    if algorithm == "l2sgd":
        params["c2"] = args.c2
    crf = module.CRF(algorithm=algorithm, all_possible_transitions=True, **params)
    with Timer() as t_fit:
        crf.fit(X_train, y_train)
    y_pred = crf.predict(X_test)
    labels = [lab for lab in crf.classes_ if lab != "O"]
    flat = module.metrics.flat_f1_score(y_test, y_pred, average="weighted", labels=labels)
    return t_fit.seconds, crf.training_log_.training_seconds, flat


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iterations", type=int, default=10)
    ap.add_argument("--c2", type=float, default=0.1)
    ap.add_argument("--algorithms", default="l2sgd,ap,pa,arow")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--sides", default="crfsuite,skfcrf")
    args = ap.parse_args()
    sides = [dict(crfsuite=sklearn_crfsuite, skfcrf=crfsuite)[name]
             for name in args.sides.split(",")]
    X_train, y_train = load("train")
    X_test, y_test = load("test")
    data = ([sent2features(s) for s in X_train], chain_labels(y_train, 1),
            [sent2features(s) for s in X_test], chain_labels(y_test, 1))
    print(f"train: {len(data[0])} sentences; max_iterations={args.iterations} (epochs), "
          f"l2sgd c2={args.c2}, all_possible_transitions=True, one thread; "
          f"medians of {args.repeat} fit(s) per side")
    print(f"{'algorithm':9s} {'CRFsuite fit s':>14s} {'skfcrf fit s':>12s} {'ratio':>6s} "
          f"{'CRFsuite train s':>16s} {'skfcrf train s':>14s} {'ratio':>6s} "
          f"{'CRFsuite F1':>11s} {'skfcrf F1':>9s} {'F1 diff':>8s}")
    for algorithm in args.algorithms.split(","):
        runs = {module: [] for module in sides}
        for _ in range(args.repeat):
            for module in sides:
                runs[module].append(run(module, algorithm, data, args))
        cs, us = (runs.get(module, [(float("nan"),) * 3]) for module in
                  (sklearn_crfsuite, crfsuite))
        med = [[statistics.median(r[i] for r in side) for i in range(3)] for side in (cs, us)]
        ratio = [statistics.median(u[i] / c[i] for c, u in zip(cs, us)) for i in range(2)]
        print(f"{algorithm:9s} {med[0][0]:14.2f} {med[1][0]:12.2f} {ratio[0]:6.2f} "
              f"{med[0][1]:16.2f} {med[1][1]:14.2f} {ratio[1]:6.2f} {med[0][2]:11.4f} "
              f"{med[1][2]:9.4f} {med[1][2] - med[0][2]:+8.4f}", flush=True)
    print("goal: F1 within 0.01 of CRFsuite's trainer of the same name, fit ratio <= 1")


if __name__ == "__main__":
    main()
