"""A/B of the batch L-BFGS: skfcrf's :class:`~skfcrf.solvers.LBFGS` against scipy's
L-BFGS-B on the same objective, in one process, alternating.

Both run the same algorithm (without bounds, :class:`LBFGS` takes L-BFGS-B's
steps), so the loss after ``--iterations`` and the number of evaluations should
agree; the time is the solvers' bookkeeping.  Workload: one-chain CoNLL-2000
chunking with CRFsuite's example observations, the likelihood, ``sigma =
1/sqrt(2)``, memory 6, as ``bench_conll_chunking.py``.  Prints per solver and round
the seconds, evaluations and final loss, then the median time ratio.

    python benchmarks/ab_lbfgs.py [--rounds 3] [--iterations 100]
"""
import argparse
import math
import statistics
import time
import warnings

from scipy.optimize import minimize

from skfcrf import FactorialCRF
from skfcrf.estimators import training_problem
from skfcrf.solvers import LBFGS, ConvergenceMonitor

from _conll import chain_labels, chunk_observations, load


class Counted:
    def __init__(self, objective):
        self.objective, self.n = objective, 0

    def loss_gradient(self, theta):
        self.n += 1
        return self.objective.loss_gradient(theta)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--iterations", type=int, default=100)
    args = ap.parse_args()
    X, y = load("train")
    crf = FactorialCRF(objective="likelihood", sigma=1 / math.sqrt(2), lbfgs_memory=6, n_jobs=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        problem = training_problem(crf, chunk_observations(X), chain_labels(y, 1))
    print(f"{crf.layout_.n_params} weights")
    times = {"L-BFGS-B": [], "LBFGS": []}
    for r in range(args.rounds):
        for name in times:
            objective = Counted(problem.objective)
            t0 = time.perf_counter()
            if name == "L-BFGS-B":
                x = minimize(objective.loss_gradient, problem.theta0, jac=True, method="L-BFGS-B",
                             options=dict(maxcor=6, maxiter=args.iterations, ftol=0.0,
                                          gtol=0.0)).x
            else:
                x = LBFGS(memory=6, max_iter=args.iterations, tol=0.0).solve(
                    objective, problem.theta0, ConvergenceMonitor()).coef
            seconds = time.perf_counter() - t0
            times[name].append(seconds)
            loss = problem.objective.loss_gradient(x)[0]
            print(f"round {r + 1} {name:9s} {seconds:6.2f} s  {objective.n} evaluations  "
                  f"loss {loss:.4f}", flush=True)
    a, b = statistics.median(times["L-BFGS-B"]), statistics.median(times["LBFGS"])
    print(f"median: L-BFGS-B {a:.2f} s, LBFGS {b:.2f} s, ratio {b / a:.3f}")


if __name__ == "__main__":
    main()
