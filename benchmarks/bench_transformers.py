"""Time the standard feature union on the CoNLL-2000 training set.

Union of NGramWindow (words at -2..2), NGramWindow(attribute="pos"),
BagOfConcepts(window=10) and RelativePosition(); reports the median of 3
``fit_transform`` runs and tokens/s.  Requirement: under 10 s.

Usage::

    python benchmarks/bench_transformers.py [path/to/train.txt] [--profile]
"""
import argparse
import cProfile
import pstats
import statistics
import sys
import time
from pathlib import Path

try:
    import skfcrf  # noqa: F401
except ImportError:  # running from a source checkout without installing
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import os

from skfcrf.datasets import read_conll
from skfcrf.transformers import (
    BagOfConcepts,
    NGramWindow,
    RelativePosition,
    SequenceFeatureUnion,
)

from _conll import DATA

DEFAULT = os.path.join(DATA, "train.txt")


def make_union():
    return SequenceFeatureUnion(
        [
            ("ngram", NGramWindow(offsets=(-2, -1, 0, 1, 2))),
            ("pos", NGramWindow(attribute="pos")),
            ("bag", BagOfConcepts(window=10)),
            ("relpos", RelativePosition()),
        ]
    )


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("path", nargs="?", default=DEFAULT)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--profile", action="store_true", help="cProfile one run")
    args = ap.parse_args(argv)

    X, _ = read_conll(args.path, attributes=("word", "pos"))
    n_tokens = sum(map(len, X))
    print(f"{len(X)} sequences, {n_tokens} tokens from {args.path}")
    if args.profile:
        prof = cProfile.Profile()
        prof.enable()
        make_union().fit_transform(X)
        prof.disable()
        pstats.Stats(prof).sort_stats("cumulative").print_stats(20)
    times = []
    for _ in range(args.repeats):
        union = make_union()
        t0 = time.perf_counter()
        out = union.fit_transform(X)
        times.append(time.perf_counter() - t0)
        n_obs = sum(len(d) for seq in out for d in seq)
        del out
    med = statistics.median(times)
    print(f"observations: {n_obs} ({n_obs / n_tokens:.1f} per token), "
          f"feature names: {len(union.get_feature_names_out())}")
    print(f"fit_transform times: {', '.join(f'{t:.2f}' for t in times)} s")
    print(f"median: {med:.2f} s  ({n_tokens / med:,.0f} tokens/s)  "
          f"{'OK' if med < 10 else 'TOO SLOW'} (limit 10 s)")
    return 0 if med < 10 else 1


if __name__ == "__main__":
    sys.exit(main())
