"""The default fit's first stage at seed scale: what one evaluation costs, and how much of
it long sequences cost (issue 32, item 3).

Builds the first-stage objective (:class:`~skfcrf.objectives.IndependentChains`, the
chain-wise kernel) of ``bench_dictations_seed.py``'s training reports and times its
loss-and-gradient evaluation at random weights, the kernels' scratch reused and one BLAS
thread, as in a fit: all chains, then each chain alone (the evaluations of the blocks
that run on once the costlier ones have stopped), for each ``--n-jobs``.  ``--pieces``
also cuts every report into pieces of at most that many tokens and times the same
tokens (827,439 by default) as those shorter sequences (a different model: the transitions between
the pieces are gone): the per-token cost of short sequences, whose score rows and
forward-backward tables stay in the cores' caches, bounds what cache blocking of the
long ones could reach.

    python benchmarks/bench_first_stage.py --n-jobs 1 2 --pieces 256 64
"""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from skfcrf import FactorialCRF  # noqa: E402
from skfcrf._blas import single_blas_thread  # noqa: E402
from skfcrf._kernels._alloc import reusing_scratch  # noqa: E402
from skfcrf.datasets import make_dictations  # noqa: E402
from skfcrf.estimators import training_problem  # noqa: E402

from _dictations import standard_features  # noqa: E402


def pieces(F, y, n):
    """Every sequence of ``F, y`` cut into pieces of at most ``n`` tokens."""
    out_F, out_y = [], []
    for f, labels in zip(F, y):
        for i in range(0, len(f), n):
            out_F.append(f[i:i + n])
            out_y.append(labels[i:i + n])
    return out_F, out_y


def timed(objective, theta, active, repeat):
    """Median seconds of ``repeat`` evaluations (after one to warm the scratch)."""
    with reusing_scratch(), single_blas_thread():
        objective.block_losses_gradient(theta, active)
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            objective.block_losses_gradient(theta, active)
            times.append(time.perf_counter() - t0)
    return float(np.median(times))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n-train", type=int, default=1338)
    ap.add_argument("--n-jobs", type=int, nargs="+", default=[2])
    ap.add_argument("--pieces", type=int, nargs="*", default=[])
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()

    X, y = make_dictations(n_reports=2007, style="rcg", random_state=1)
    X, y = X[:args.n_train], y[:args.n_train]
    F = standard_features().fit_transform(X)
    for n_jobs in args.n_jobs:
        objective, theta0, _ = training_problem(FactorialCRF(n_jobs=n_jobs), F, y)
        theta = np.random.default_rng(0).normal(scale=0.1, size=theta0.shape)
        n_tokens = int(objective.batch.seq_ptr[-1])
        n_chains = len(objective.blocks)
        cells = [("all chains", None)] + [
            (f"chain {c} alone", np.arange(n_chains) == c) for c in range(n_chains)]
        for name, active in cells:
            s = timed(objective, theta, active, args.repeat)
            print(f"n_jobs={n_jobs}, {len(F)} reports, {name}: {s:.3f} s "
                  f"({1e9 * s / n_tokens:.0f} ns a token)", flush=True)
        for n in args.pieces:
            F_n, y_n = pieces(F, y, n)
            # (the pieces' layout may have a few weights fewer: random weights of its own)
            cut, cut0, _ = training_problem(FactorialCRF(n_jobs=n_jobs), F_n, y_n)
            s = timed(cut, np.random.default_rng(0).normal(scale=0.1, size=cut0.shape), None,
                      args.repeat)
            print(f"n_jobs={n_jobs}, the same tokens in {len(F_n)} pieces of at most {n}, "
                  f"all chains: {s:.3f} s ({1e9 * s / n_tokens:.0f} ns a token)", flush=True)


if __name__ == "__main__":
    main()
