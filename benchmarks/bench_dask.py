"""DaskFactorialCRF on a LocalCluster against local fits: time and bytes per iteration.

    python benchmarks/bench_dask.py [--reports 200] [--max-iter 8] [--finetune-iter 4]

Fits the default model (independent chains, then the joint-likelihood fine-tuning stage) on
synthetic dictations with the standard dictation features, for a fixed number of iterations,
four ways: local ``n_jobs=1`` and ``n_jobs=2``; a LocalCluster of 1 and of 2 single-threaded
worker processes (``npartitions=4`` for both, so their weights are identical).  Per stage it
prints the median wall time per solver iteration (from callback timestamps, the set-up
excluded) and the CPU seconds per iteration of all processes (client and workers: robust
to other load on the machine), the time to the end of the first iteration (with the
statistics, encoding and structure passes on the cluster), the
loss/gradient evaluations per iteration and the bytes leaving the workers per evaluation
(``Worker.transfer_outgoing_bytes_total``: worker-to-worker copies of theta and partial
sums, and the final sum sent to the client) beside the size of one weight vector.  The load
average is printed: the machine is shared, so the figures are as noisy as it is busy.
"""
import argparse
import os
import time
import warnings

import numpy as np
import psutil
from distributed import Client, LocalCluster
from sklearn.exceptions import ConvergenceWarning

from skfcrf import FactorialCRF
from skfcrf.dask import DaskFactorialCRF
from skfcrf.datasets import make_dictations
from skfcrf.transformers import make_dictation_features


def worker_cpu(client):
    """CPU seconds used so far by the worker processes (user + system)."""
    return sum(client.run(lambda: sum(psutil.Process().cpu_times()[:2])).values())


class Clock:
    """Callback recording when each iteration ended, and the CPU seconds used by this process
    (and the workers, with a client) at the first iteration, the end of stage 1 and the end."""

    def __init__(self, marks, client=None):
        self.times = []
        self.marks = marks
        self.client = client
        self.cpu = {}

    def __call__(self, iteration, loss, coef):
        self.times.append(time.perf_counter())
        if iteration in self.marks:
            self.cpu[iteration] = time.process_time() + (
                worker_cpu(self.client) if self.client is not None else 0.0)


def cpu_per_iteration(clock, max_iter, n_iter):
    """CPU seconds per iteration of stage 1 and of the fine-tuning stage (all processes)."""
    c = clock.cpu
    return ((c[max_iter] - c[1]) / (max_iter - 1), (c[n_iter] - c[max_iter]) / (n_iter - max_iter))


def per_iteration(times, start, max_iter):
    """Median seconds per iteration of stage 1 and of the fine-tuning stage."""
    steps = np.diff(np.concatenate([[start], times]))
    return float(np.median(steps[1:max_iter])), float(np.median(steps[max_iter + 1:]))


def outgoing(client):
    return sum(client.run(lambda dask_worker: dask_worker.transfer_outgoing_bytes_total).values())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reports", type=int, default=200)
    ap.add_argument("--max-iter", type=int, default=8)
    ap.add_argument("--finetune-iter", type=int, default=4)
    ap.add_argument("--npartitions", type=int, default=4)
    args = ap.parse_args()
    X_tok, y = make_dictations(n_reports=args.reports, random_state=0)
    X = make_dictation_features().fit_transform(X_tok)
    print(f"{args.reports} reports, {sum(map(len, y)):,} tokens; "
          f"load average at start {os.getloadavg()[0]:.1f}", flush=True)
    params = dict(max_iter=args.max_iter, finetune_iter=args.finetune_iter, random_state=0)
    rows, coefs = [], {}
    warnings.simplefilter("ignore", ConvergenceWarning)   # fixed iteration counts on purpose
    n_iter = args.max_iter + args.finetune_iter
    marks = (1, args.max_iter, n_iter)
    for n_jobs in (1, 2):
        clock = Clock(marks)
        t0 = time.perf_counter()
        model = FactorialCRF(n_jobs=n_jobs, callback=clock, **params).fit(X, y)
        setup = clock.times[0] - t0
        s1, s2 = per_iteration(clock.times, clock.times[0], args.max_iter)
        coefs[f"local n_jobs={n_jobs}"] = model.coef_
        assert model.n_iter_ == n_iter
        rows.append((f"local n_jobs={n_jobs}", setup, s1, s2,
                     *cpu_per_iteration(clock, args.max_iter, n_iter), float("nan"), float("nan")))
        print(rows[-1], flush=True)
    n_params = model.coef_.size
    for n_workers in (1, 2):
        with LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True,
                          dashboard_address=":0") as cluster, Client(cluster) as client:
            client.run(lambda: __import__("skfcrf.dask"))   # workers warm
            clock = Clock(marks, client)
            t0 = time.perf_counter()
            before = outgoing(client)
            model = DaskFactorialCRF(client=client, npartitions=args.npartitions,
                                     callback=clock, **params).fit(X, y)
            moved = outgoing(client) - before
            setup = clock.times[0] - t0
            s1, s2 = per_iteration(clock.times, clock.times[0], args.max_iter)
            name = f"dask {n_workers} worker{'s' * (n_workers > 1)}"
            coefs[name] = model.coef_
            rows.append((name, setup, s1, s2, *cpu_per_iteration(clock, args.max_iter, n_iter),
                         model.n_evaluations_ / model.n_iter_, moved / model.n_evaluations_))
            print(rows[-1], flush=True)
    print(f"\nweights: {n_params:,} ({8 * n_params / 1e6:.2f} MB per vector); "
          f"load average at end {os.getloadavg()[0]:.1f}")
    print(f"{'':16} {'1st iter':>8} {'s/iter 1':>8} {'s/iter 2':>8} {'cpu/it 1':>8} "
          f"{'cpu/it 2':>8} {'evals/it':>8} {'MB/eval':>8}   (1: stage 1, 2: fine-tuning)")
    for name, setup, s1, s2, c1, c2, evals, moved in rows:
        print(f"{name:16} {setup:8.2f} {s1:8.3f} {s2:8.3f} {c1:8.3f} {c2:8.3f} {evals:8.2f} "
              f"{moved / 1e6:8.2f}")
    ref = coefs["dask 1 worker"]
    print("dask 1 vs 2 workers identical:", np.array_equal(ref, coefs["dask 2 workers"]),
          "; max |dask - local n_jobs=1| / max |w|:",
          f"{np.abs(ref - coefs['local n_jobs=1']).max() / np.abs(ref).max():.1e}")


if __name__ == "__main__":
    main()
