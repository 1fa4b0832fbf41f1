"""Training objectives side by side on dictations (issue 14, goals 1 and 2), in one run.

``make_dictations(300, style="rcg", random_state=1)``: first 200 reports train, last
100 test, the standard feature union, ``sigma=31.6``, ``n_jobs=2``, ``random_state=0``.
Rows (``--rows``, default all but the slow TRP likelihood):

``default``      ``FactorialCRF()``'s defaults (whatever objective/inference they are)
``previous``     the previous default: chain-wise PL 150 it. + 30 it. joint likelihood,
                 no transitions forbidden
``chainwise``    chain-wise pseudolikelihood alone (200 iterations, no fine-tuning)
``pl``           the old default: factor pseudolikelihood, ``max_iter=800``, TRP decoding
``likelihood``   likelihood with TRP marginals, ``max_iter=100, bp_max_iter=30`` (~15 min)
``default-150``  the defaults with ``max_iter=150`` (the default before the tenth session)
``stage1``       the defaults' first stage alone (``finetune_iter=0``), decoded jointly
``no-state-stage``  the defaults without the joint-state transition stage
``independent``  three one-chain models (exact likelihood, ``max_iter=150``), one per chain

Each row: fit seconds (features excluded, extracted once), decoding seconds, joint
accuracy, per-chain accuracy and WindowDiff, iterations, and the fraction of test
reports whose decoding is exact/certified/converged.

    python benchmarks/bench_objectives.py
    python benchmarks/bench_objectives.py --rows default pl independent likelihood
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

ROWS = {
    "default": dict(),
    "default-150": dict(max_iter=150),
    "stage1": dict(finetune_iter=0),
    "no-state-stage": dict(state_transition_iter=0),
    "previous": dict(objective="chainwise", forbidden_transitions=None),
    "chainwise": dict(objective="chainwise", max_iter=200, finetune_iter=0),
    "pl": dict(objective="pseudolikelihood", inference="trp", max_iter=800, finetune_iter=0),
    "likelihood": dict(objective="likelihood", inference="trp", max_iter=100, bp_max_iter=30),
}


def fit_joint(params, F, y, F_test):
    crf = FactorialCRF(**params)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        crf.fit(F, y)
    t_fit = time.perf_counter() - t0
    t0 = time.perf_counter()
    decoded = crf.decode(F_test)
    t_dec = time.perf_counter() - t0
    pred = [d.labels for d in decoded]
    trusted = np.mean([d.status != "approximate" for d in decoded])
    return pred, t_fit, t_dec, f"{crf.n_iter_} it., {crf.objective}/{crf.inference}", trusted


def fit_independent(common, F, y, F_test):
    preds, t_fit, t_dec, iters = [], 0.0, 0.0, []
    for c in range(3):
        crf = FactorialCRF(**dict(common, objective="likelihood", max_iter=150))
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            crf.fit(F, [np.asarray(s, dtype=object)[:, c] for s in y])
        t_fit += time.perf_counter() - t0
        t0 = time.perf_counter()
        preds.append(crf.predict(F_test))
        t_dec += time.perf_counter() - t0
        iters.append(crf.n_iter_)
    pred = [np.stack([p[i] for p in preds], axis=1) for i in range(len(F_test))]
    return pred, t_fit, t_dec, "it. " + "/".join(map(str, iters)), 1.0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", nargs="+", default=["default", "previous", "pl", "independent"],
                    choices=[*ROWS, "independent"])
    ap.add_argument("--n-reports", type=int, default=300)
    ap.add_argument("--n-train", type=int, default=200)
    ap.add_argument("--sigma", type=float, default=31.6)
    ap.add_argument("--n-jobs", type=int, default=2)
    args = ap.parse_args()

    X, y = make_dictations(args.n_reports, style="rcg", random_state=1)
    X_train, y_train = X[:args.n_train], y[:args.n_train]
    X_test, y_test = X[args.n_train:], y[args.n_train:]
    features = standard_features()
    t0 = time.perf_counter()
    F = features.fit_transform(X_train)
    F_test = features.transform(X_test)
    print(f"{len(X_train)} train / {len(X_test)} test reports, "
          f"{sum(map(len, X_train))} training tokens; features {time.perf_counter() - t0:.1f} s",
          flush=True)
    common = dict(sigma=args.sigma, n_jobs=args.n_jobs, random_state=0)
    print(f"{'row':12s} {'fit s':>8s} {'decode s':>9s} {'joint':>7s}  {'accuracy per chain':22s} "
          f"{'WindowDiff per chain':22s} trusted  notes")
    for row in args.rows:
        if row == "independent":
            pred, t_fit, t_dec, notes, trusted = fit_independent(common, F, y_train, F_test)
        else:
            pred, t_fit, t_dec, notes, trusted = fit_joint(dict(common, **ROWS[row]), F, y_train,
                                                           F_test)
        acc = chain_accuracy(y_test, pred)
        wd = [windowdiff(y_test, pred, chain=c) for c in range(3)]
        print(f"{row:12s} {t_fit:8.1f} {t_dec:9.2f} {100 * joint_accuracy(y_test, pred):6.2f}%  "
              + "/".join(f"{100 * a:.2f}" for a in acc).ljust(22) + " "
              + "/".join(f"{w:.4f}" for w in wd).ljust(22)
              + f" {100 * trusted:5.1f}%  {notes}", flush=True)


if __name__ == "__main__":
    main()
