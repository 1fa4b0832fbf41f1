"""Target 4: loss + gradient with n_jobs=2 against n_jobs=1 (same process, alternating runs).

Times one evaluation of the penalised objective and its gradient (observation
products, potentials, pseudolikelihood or likelihood kernel, weight gradient)
on seed-scale dictations (3 chains) or two-chain CoNLL-2000.

    python benchmarks/bench_gradient_threads.py [--data dictations|conll2]
        [--objective pseudolikelihood] [--repeat 7]
"""
import argparse
import os
import sys
import time

import numpy as np

from skfcrf import FactorialCRF
from skfcrf.estimators import training_problem


def dictations(n_reports):
    from skfcrf.datasets import make_dictations
    sys.path.insert(0, os.path.dirname(__file__))
    from _dictations import standard_features
    X, y = make_dictations(n_reports=n_reports, style="rcg", random_state=0)
    return standard_features().fit_transform(X), y


def conll2():
    sys.path.insert(0, os.path.dirname(__file__))
    from _conll import load, word_observations
    X, y = load("train")
    return word_observations(X), y


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="dictations", choices=["dictations", "conll2"])
    ap.add_argument("--n-reports", type=int, default=1338)
    ap.add_argument("--objective", default="pseudolikelihood")
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    F, y = dictations(args.n_reports) if args.data == "dictations" else conll2()
    est = FactorialCRF(objective=args.objective, min_instance_freq=2, random_state=0)
    objective, theta0, _ = training_problem(est, F, y)
    batch = objective.batch
    theta = np.random.default_rng(0).normal(scale=0.1, size=theta0.shape)

    def evaluate(n_threads):
        objective.n_threads = n_threads
        return objective.loss_gradient(theta)

    ref, two = evaluate(1), evaluate(2)
    diff = np.max(np.abs(ref[1] - two[1])) / max(1e-300, np.max(np.abs(ref[1])))
    print(f"{args.data}: {batch.X.shape[0]} tokens, {batch.X.nnz} observation entries, "
          f"{theta.size} weights; loss n_jobs=1 {ref[0]:.6f}, n_jobs=2 {two[0]:.6f}, "
          f"max relative gradient difference {diff:.1e}")
    times = {1: [], 2: []}
    for _ in range(args.repeat):
        for n in (1, 2):
            t = time.perf_counter()
            evaluate(n)
            times[n].append(time.perf_counter() - t)
    m1, m2 = np.median(times[1]), np.median(times[2])
    print(f"{args.objective} loss+gradient: n_jobs=1 median {m1:.3f} s, n_jobs=2 median {m2:.3f} s, "
          f"speed-up x{m1 / m2:.2f}")


if __name__ == "__main__":
    main()
