"""Issue 30, item 7: CRFsuite's other trainers, skfcrf.crfsuite against sklearn_crfsuite.

CoNLL-2000 chunking with the sklearn-crfsuite tutorial's features
(``bench_crfsuite_dropin.sent2features``), ``all_possible_transitions=True``,
each of ``l2sgd``, ``ap``, ``pa`` and ``arow`` at CRFsuite's defaults but
``max_iterations`` (the same number of epochs on both sides; ``c2`` for
``l2sgd``), trained by ``sklearn_crfsuite.CRF`` and by ``skfcrf.crfsuite.CRF`` in the
same run, one thread each.  Prints per algorithm the flat F1 of the chunk labels
without ``"O"`` (the tutorial's score), the fit time, and the differences.
Goal: flat F1 within 0.01 of CRFsuite's trainer of the same name, no slower.

    python benchmarks/bench_crfsuite_trainers.py [--iterations 10] [--c2 0.1]
        [--algorithms l2sgd,ap,pa,arow]
"""
import argparse
import os

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
    return t_fit.seconds, flat


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iterations", type=int, default=10)
    ap.add_argument("--c2", type=float, default=0.1)
    ap.add_argument("--algorithms", default="l2sgd,ap,pa,arow")
    args = ap.parse_args()
    X_train, y_train = load("train")
    X_test, y_test = load("test")
    data = ([sent2features(s) for s in X_train], chain_labels(y_train, 1),
            [sent2features(s) for s in X_test], chain_labels(y_test, 1))
    print(f"train: {len(data[0])} sentences; max_iterations={args.iterations} (epochs), "
          f"l2sgd c2={args.c2}, all_possible_transitions=True, one thread")
    print(f"{'algorithm':9s} {'CRFsuite fit s':>14s} {'skfcrf fit s':>12s} {'ratio':>6s} "
          f"{'CRFsuite F1':>11s} {'skfcrf F1':>9s} {'F1 diff':>8s}")
    for algorithm in args.algorithms.split(","):
        t_cs, f_cs = run(sklearn_crfsuite, algorithm, data, args)
        t_us, f_us = run(crfsuite, algorithm, data, args)
        print(f"{algorithm:9s} {t_cs:14.2f} {t_us:12.2f} {t_us / t_cs:6.2f} {f_cs:11.4f} "
              f"{f_us:9.4f} {f_us - f_cs:+8.4f}", flush=True)
    print("goal: F1 within 0.01 of CRFsuite's trainer of the same name, fit ratio <= 1")


if __name__ == "__main__":
    main()
