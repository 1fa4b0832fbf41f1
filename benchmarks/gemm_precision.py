"""Would a float32 path pay?  sgemm against dgemm at the PL kernel's product shapes.

The pseudolikelihood kernel sends each tied edge's factor instances, in chunks of
128, through three products with the edge's ``L_a x L_b`` matrix.  This times
those products (one BLAS thread, as in training) in float64 and float32 on the
dictation model's edges, alternating the two, and prints the speed-up a float32
path could get on them.

    python benchmarks/gemm_precision.py --repeat 5
"""
import argparse
import time

import numpy as np
from threadpoolctl import threadpool_limits

CHUNK = 128
EDGES = [(7, 7), (72, 72), (44, 44), (7, 72), (72, 44)]   # the dictation model's tied edges


def products(dtype, rng):
    mats = []
    for la, lb in EDGES:
        mats.append((rng.random((CHUNK, la)).astype(dtype), rng.random((CHUNK, lb)).astype(dtype),
                     rng.random((la, lb)).astype(dtype)))

    def run(n):
        for _ in range(n):
            for eu, ew, E in mats:
                ew @ E.T          # R
                eu @ E            # CM
                ew.T @ eu         # expected counts
    return run


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--chunks", type=int, default=2000, help="chunks per timing")
    opt = ap.parse_args()
    rng = np.random.default_rng(0)
    runs = {"float64": products(np.float64, rng), "float32": products(np.float32, rng)}
    times = {k: [] for k in runs}
    with threadpool_limits(1, user_api="blas"):
        for _ in range(opt.repeat):
            for k, run in runs.items():
                t = time.perf_counter()
                run(opt.chunks)
                times[k].append(time.perf_counter() - t)
    d, s = np.median(times["float64"]), np.median(times["float32"])
    print(f"{opt.chunks} chunks of {CHUNK} instances, all five edges: float64 median {d:.3f} s, "
          f"float32 median {s:.3f} s, speed-up x{d / s:.2f}")


if __name__ == "__main__":
    main()
