"""Early stopping against a full fit at seed scale (issue 16, item 6), in one run.

The seed setting of ``bench_dictations_seed.py``: ``make_dictations(2007, style="rcg",
random_state=1)``, the first 1,338 reports train, the last 669 test, the standard feature
union (extracted once), ``sigma=31.6``, ``n_jobs=2``, ``random_state=0``, otherwise
``FactorialCRF``'s defaults.  Rows:

``full``    the defaults (``early_stopping=False``)
``early``   ``early_stopping=True`` with its defaults: 10% of the training reports held
            out, joint accuracy on them every 5 iterations, stop after 10 scores without
            improvement, the best weights kept

Each row: fit seconds, iterations (and the best iteration), test joint accuracy, per-chain
accuracy and WindowDiff.

    python benchmarks/bench_early_stopping.py [--n-reports 2007 --n-train 1338]
"""
import argparse
import os
import sys
import time
import warnings

from sklearn.exceptions import ConvergenceWarning

from skfcrf import FactorialCRF
from skfcrf.datasets import make_dictations
from skfcrf.metrics import chain_accuracy, joint_accuracy, windowdiff

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _dictations import standard_features  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n-reports", type=int, default=2007)
    ap.add_argument("--n-train", type=int, default=1338)
    ap.add_argument("--n-jobs", type=int, default=2)
    ap.add_argument("--rows", nargs="+", default=["early", "full"])
    args = ap.parse_args()
    X, y = make_dictations(n_reports=args.n_reports, style="rcg", random_state=1)
    X, y, X_test, y_test = X[:args.n_train], y[:args.n_train], X[args.n_train:], y[args.n_train:]
    features = standard_features()
    F, F_test = features.fit_transform(X), features.transform(X_test)
    print(f"{len(X)} training reports ({sum(map(len, X))} tokens), {len(X_test)} test",
          flush=True)
    for row in args.rows:
        crf = FactorialCRF(sigma=31.6, n_jobs=args.n_jobs, random_state=0,
                           early_stopping=row == "early")
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            crf.fit(F, y)
        t_fit = time.perf_counter() - t0
        pred = crf.predict(F_test)
        acc = chain_accuracy(y_test, pred)
        wd = [windowdiff(y_test, pred, chain=c) for c in range(3)]
        extra = ""
        if row == "early":
            extra = (f", best iteration {crf.best_iteration_} (held-out joint accuracy "
                     f"{100 * crf.best_validation_score_:.2f}%, {len(crf.validation_scores_)} "
                     "scores)")
        print(f"{row}: fit {t_fit:.1f} s, {crf.n_iter_} iterations{extra}; test joint "
              f"{100 * joint_accuracy(y_test, pred):.2f}%, accuracy "
              + "/".join(f"{100 * a:.2f}" for a in acc) + ", WindowDiff "
              + "/".join(f"{w:.4f}" for w in wd), flush=True)


if __name__ == "__main__":
    main()
