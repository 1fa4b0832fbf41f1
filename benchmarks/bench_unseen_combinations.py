"""Gold labellings with unseen label combinations: log_prob and decode with fixed labels.

Issue 29's goal for joint-state inference: every labelling that respects the
explicit constraints has a finite ``log_prob``, and ``decode(fixed=...)``
accepts every such fixed labelling.  On ``make_dictations(300, "rcg",
random_state=1)`` with ``make_dictation_features()``, the first 200 reports to
train and the last 100 to test, ``sigma=31.6``, this prints the share of test
gold labellings with ``log_prob == -inf``, and how many test reports
``decode`` refuses with their gold section labels (chain 2), chains 0 and 2,
or all labels fixed -- with the times of each.

    python benchmarks/bench_unseen_combinations.py [--forbidden-transitions none]
        [--model /tmp/m.pkl]

``--model``: pickle the fitted model there, or load it if the file exists
(so two revisions can be compared on the same fit).
"""
import argparse
import os
import pickle
import time
import warnings

import numpy as np

from skfcrf import FactorialCRF
from skfcrf.datasets import make_dictations
from skfcrf.transformers import make_dictation_features


def refused(crf, X, fixed):
    """Reports ``decode`` refuses with ``fixed``, one at a time, and the time taken."""
    t0 = time.perf_counter()
    errors = 0
    for s in range(len(X)):
        try:
            crf.decode(X[s:s + 1], fixed=fixed[s:s + 1])
        except ValueError:
            errors += 1
    return errors, time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--forbidden-transitions", default="none", choices=("auto", "none", "unseen"))
    ap.add_argument("--model", default=None)
    ap.add_argument("--n-jobs", type=int, default=2)
    args = ap.parse_args()
    X, y = make_dictations(300, style="rcg", random_state=1)
    F = make_dictation_features().fit_transform(X)
    Xtr, ytr, Xte, yte = F[:200], y[:200], F[200:], y[200:]
    if args.model and os.path.exists(args.model):
        with open(args.model, "rb") as fh:
            crf = pickle.load(fh)
    else:
        ft = None if args.forbidden_transitions == "none" else args.forbidden_transitions
        crf = FactorialCRF(sigma=31.6, forbidden_transitions=ft, n_jobs=args.n_jobs)
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            crf.fit(Xtr, ytr)
        print(f"fit {time.perf_counter() - t0:.1f} s", flush=True)
        if args.model:
            with open(args.model, "wb") as fh:
                pickle.dump(crf, fh)
    t0 = time.perf_counter()
    lp = crf.log_prob(Xte, yte)
    print(f"log_prob: {np.mean(np.isneginf(lp)):.1%} of the gold labellings -inf "
          f"({time.perf_counter() - t0:.2f} s)")
    gold = [np.asarray(seq, dtype=object) for seq in yte]
    for name, chains in (("chain 2", [2]), ("chains 0 and 2", [0, 2]), ("all chains", [0, 1, 2])):
        fixed = []
        for g in gold:
            f = np.full(g.shape, None, dtype=object)
            f[:, chains] = g[:, chains]
            fixed.append(f)
        errors, seconds = refused(crf, Xte, fixed)
        print(f"decode with the gold labels of {name} fixed: {errors} of {len(Xte)} reports "
              f"refused ({seconds:.2f} s, one report per call)")


if __name__ == "__main__":
    main()
