"""Training from partial labels (issue 16, item 1): section labels removed, in one run.

``make_dictations(300, style="rcg", random_state=1)``: first 200 reports train, last 100
test, the standard feature union (extracted once), ``sigma=31.6``, ``n_jobs=2``,
``random_state=0``, otherwise ``FactorialCRF``'s defaults.  Rows:

``full``            every label given
``full-noforbid``   every label given, ``forbidden_transitions=None`` (with missing labels
                    the default ``"auto"`` forbids no transition, so this row separates
                    that effect from the missing labels')
``tokens-50``       50% of the section-level labels (chain 2) removed, token by token at
                    random (``None``); the other chains complete
``reports-50``      the section labels of a random half of the reports removed

Each row: fit seconds, test joint accuracy, per-chain accuracy and WindowDiff.

    python benchmarks/bench_partial_labels.py [--rows full tokens-50] [--fraction 0.5]
"""
import argparse
import os
import sys
import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from skfcrf import FactorialCRF
from skfcrf.datasets import make_dictations
from skfcrf.metrics import chain_accuracy, joint_accuracy, windowdiff

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _dictations import standard_features  # noqa: E402

SECTION = 2


def remove_tokens(y, fraction, rng):
    """Each section label replaced by None with probability ``fraction``."""
    out = []
    for seq in y:
        seq = np.asarray(seq, dtype=object).copy()
        seq[rng.random(len(seq)) < fraction, SECTION] = None
        out.append(seq)
    return out


def remove_reports(y, fraction, rng):
    """The section labels of a random ``fraction`` of the reports replaced by None."""
    chosen = set(rng.choice(len(y), size=int(round(fraction * len(y))), replace=False).tolist())
    out = []
    for i, seq in enumerate(y):
        seq = np.asarray(seq, dtype=object).copy()
        if i in chosen:
            seq[:, SECTION] = None
        out.append(seq)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", nargs="+",
                    default=["full", "full-noforbid", "tokens-50", "reports-50"])
    ap.add_argument("--fraction", type=float, default=0.5)
    ap.add_argument("--n-jobs", type=int, default=2)
    args = ap.parse_args()
    X, y = make_dictations(n_reports=300, style="rcg", random_state=1)
    X, y, X_test, y_test = X[:200], y[:200], X[200:], y[200:]
    features = standard_features()
    F, F_test = features.fit_transform(X), features.transform(X_test)
    rng = np.random.default_rng(0)
    labels = {"full": y, "full-noforbid": y,
              "tokens-50": remove_tokens(y, args.fraction, rng),
              "reports-50": remove_reports(y, args.fraction, rng)}
    print(f"{'row':15s} {'given sec.':>10s} {'fit s':>7s} {'joint':>7s}  accuracy per chain"
          "        WindowDiff per chain", flush=True)
    for row in args.rows:
        params = dict(sigma=31.6, n_jobs=args.n_jobs, random_state=0)
        if row == "full-noforbid":
            params["forbidden_transitions"] = None
        crf = FactorialCRF(**params)
        given = np.mean([lab is not None for seq in labels[row] for lab in
                         np.asarray(seq, dtype=object)[:, SECTION]])
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            crf.fit(F, labels[row])
        t_fit = time.perf_counter() - t0
        pred = crf.predict(F_test)
        acc = chain_accuracy(y_test, pred)
        wd = [windowdiff(y_test, pred, chain=c) for c in range(3)]
        print(f"{row:15s} {100 * given:9.1f}% {t_fit:7.1f} {100 * joint_accuracy(y_test, pred):6.2f}%  "
              + "/".join(f"{100 * a:.2f}" for a in acc) + "   "
              + "/".join(f"{w:.3f}" for w in wd), flush=True)


if __name__ == "__main__":
    main()
