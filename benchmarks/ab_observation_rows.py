"""A/B of the differenced observation columns on one loss/gradient evaluation.

Prepares the same dictation batch twice, once with differencing chosen by the
cost model (``PASS_COST = 2``, the default) and once direct only
(``PASS_COST = inf``, the products as before differencing existed), then times
the objective's ``loss_gradient`` on both alternately in one process.  Prints medians, their
ratio and the largest relative difference of loss and gradient.

    python benchmarks/ab_observation_rows.py [--n-reports 300] [--n-jobs 2] [--repeat 7]
"""
import argparse
import time

import numpy as np

import skfcrf.model._observation_rows as rows_module
from skfcrf import FactorialCRF
from skfcrf.datasets import make_dictations
from skfcrf.estimators import training_problem

from _dictations import standard_features


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n-reports", type=int, default=300)
    ap.add_argument("--n-jobs", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    X, y = make_dictations(n_reports=args.n_reports, style="rcg", random_state=0)
    F = standard_features().fit_transform(X)
    est = FactorialCRF(objective="pseudolikelihood", min_instance_freq=2, n_jobs=args.n_jobs)
    batches = {}
    for name, cost in (("direct", np.inf), ("differenced", rows_module.PASS_COST)):
        saved, rows_module.PASS_COST = rows_module.PASS_COST, cost
        t0 = time.perf_counter()
        batches[name] = training_problem(est, F, y).objective
        rows_module.PASS_COST = saved
        obs = batches[name].batch.obs
        print(f"{name}: batch prepared in {time.perf_counter() - t0:.2f} s, "
              f"{int(obs.differenced.sum())} differenced columns")
    theta = np.random.default_rng(0).normal(scale=0.1, size=batches["direct"].n_params)
    times = {name: [] for name in batches}
    last = {}
    for _ in range(args.repeat):
        for name, objective in batches.items():
            t0 = time.perf_counter()
            last[name] = objective.loss_gradient(theta)
            times[name].append(time.perf_counter() - t0)
    med = {name: float(np.median(t)) for name, t in times.items()}
    print(f"{batches['direct'].batch.X.shape[0]} tokens, n_jobs={args.n_jobs}, "
          f"median of {args.repeat}: direct {med['direct']:.3f} s, "
          f"differenced {med['differenced']:.3f} s, ratio {med['differenced'] / med['direct']:.3f}")
    (la, ga), (lb, gb) = last["direct"], last["differenced"]
    print(f"loss rel diff {abs(la - lb) / abs(la):.2e}, "
          f"gradient max rel diff {np.abs(ga - gb).max() / np.abs(ga).max():.2e}")


if __name__ == "__main__":
    main()
