"""Decoding methods side by side (issue 15): time, fraction per status, joint accuracy.

Loads a model saved by ``bench_dictations_seed.py --save MODEL`` and decodes the seed-scale
test reports (``make_dictations(2007, style="rcg", random_state=1)``, the last 669)
with every applicable ``inference=`` method: ``joint`` (exact over the observed label
combinations) and ``trp`` at several iteration caps (max-product + chain-wise coordinate
ascent).  Time includes computing the potentials, not the features.

    python benchmarks/bench_dictations_seed.py --save /tmp/seed.npz
    python benchmarks/bench_decoding.py /tmp/seed.npz [--bp-max-iter 50 1000]
    python benchmarks/bench_decoding.py --conll [--conll-iter 100]

``--conll``: instead, fits a two-chain (POS + chunks) model on CoNLL-2000 train from word
observations (chain-wise objective, ``--conll-iter`` iterations, no fine-tuning, sigma
1/sqrt(2)) and decodes CoNLL-2000 test the same ways.
"""
import argparse
import math
import time

import numpy as np

from skfcrf import FactorialCRF
from skfcrf.datasets import make_dictations
from skfcrf.metrics import chain_accuracy, joint_accuracy

from _dictations import standard_features


def compare(crf, F_test, y_test, bp_max_iter):
    """Decode with every method; print time, status fractions and accuracy."""
    runs = [("joint", {})] + [("trp", {"bp_max_iter": k}) for k in bp_max_iter]
    print(f"{len(F_test)} test sequences, {sum(map(len, F_test))} tokens, "
          f"{len(crf.joint_states_)} joint label states")
    print(f"{'method':22s} {'time s':>7s}  {'exact':>6s} {'conv.':>6s} {'approx.':>7s}  "
          f"{'joint acc':>9s}  per chain")
    for method, extra in runs:
        crf.set_params(inference=method, **extra)
        t0 = time.perf_counter()
        decoded = crf.decode(F_test)
        seconds = time.perf_counter() - t0
        pred = [d.labels for d in decoded]
        frac = {k: np.mean([d.status == k for d in decoded]) for k in
                ("exact", "converged", "approximate")}
        name = method + "".join(f" {k}={v}" for k, v in extra.items())
        print(f"{name:22s} {seconds:7.1f}  {100 * frac['exact']:5.1f}% "
              f"{100 * frac['converged']:5.1f}% {100 * frac['approximate']:6.1f}%  "
              f"{100 * joint_accuracy(y_test, pred):8.2f}%  "
              + "/".join(f"{100 * a:.2f}" for a in chain_accuracy(y_test, pred)), flush=True)


def conll(args):
    from _conll import load, word_observations
    X, y = load("train")
    X_test, y_test = load("test")
    crf = FactorialCRF(sigma=1 / math.sqrt(2), max_iter=args.conll_iter, finetune_iter=0,
                       n_jobs=args.n_jobs, random_state=0)
    t0 = time.perf_counter()
    crf.fit(word_observations(X), y)
    print(f"CoNLL-2000 two chains: fit {time.perf_counter() - t0:.1f} s, {crf.n_iter_} "
          "iterations (chain-wise)")
    compare(crf, word_observations(X_test), y_test, args.bp_max_iter)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", nargs="?")
    ap.add_argument("--conll", action="store_true")
    ap.add_argument("--conll-iter", type=int, default=100)
    ap.add_argument("--n-reports", type=int, default=2007)
    ap.add_argument("--n-train", type=int, default=1338)
    ap.add_argument("--n-jobs", type=int, default=2)
    ap.add_argument("--bp-max-iter", type=int, nargs="+", default=[50])
    args = ap.parse_args()
    if args.conll:
        return conll(args)
    if args.model is None:
        ap.error("MODEL is required unless --conll")
    X, y = make_dictations(n_reports=args.n_reports, style="rcg", random_state=1)
    features = standard_features().fit(X[:args.n_train])
    F_test, y_test = features.transform(X[args.n_train:]), y[args.n_train:]
    crf = FactorialCRF.load(args.model).set_params(n_jobs=args.n_jobs)
    compare(crf, F_test, y_test, args.bp_max_iter)


if __name__ == "__main__":
    main()
