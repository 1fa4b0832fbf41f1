"""Training loss and held-out scores against L-BFGS iterations (dictations, pseudolikelihood).

Trains one FCRF (standard feature union, three chains, PL, ``tol=1e-12`` so that
L-BFGS runs all ``--max-iter`` iterations) and keeps a copy of the weights every
``--every`` iterations (the optimiser's callback is wrapped for that: one
trajectory, no restarts).  Then decodes the held-out reports with each copy
and prints per snapshot: penalised loss, joint accuracy, accuracy per chain,
macro-F1 per chain.

    python benchmarks/curve_dictations.py [--n-train 300] [--n-test 150] [--every 25] [--max-iter 800]
"""
import argparse
import time
import warnings

from sklearn.exceptions import ConvergenceWarning

from skfcrf import FactorialCRF
from skfcrf.datasets import make_dictations
from skfcrf.metrics import chain_accuracy, joint_accuracy, precision_recall_fscore

from _dictations import standard_features


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n-train", type=int, default=300)
    ap.add_argument("--n-test", type=int, default=150)
    ap.add_argument("--every", type=int, default=25)
    ap.add_argument("--max-iter", type=int, default=800)
    ap.add_argument("--sigma", type=float, default=10.0)
    ap.add_argument("--lbfgs-memory", type=int, default=3)
    ap.add_argument("--n-jobs", type=int, default=2)
    ap.add_argument("--bp-max-iter", type=int, default=50)
    args = ap.parse_args()

    X, y = make_dictations(n_reports=args.n_train, style="rcg", random_state=0)
    X_test, y_test = make_dictations(n_reports=args.n_test, style="rcg", random_state=1)
    features = standard_features()
    F = features.fit_transform(X)
    F_test = features.transform(X_test)
    crf = FactorialCRF(sigma=args.sigma, max_iter=args.max_iter, tol=1e-12,
                       lbfgs_memory=args.lbfgs_memory, min_instance_freq=2,
                       n_jobs=args.n_jobs, random_state=0)

    snapshots = {}

    def keep(iteration, loss, coef):
        if iteration % args.every == 0:
            snapshots[iteration] = coef.copy()

    crf.set_params(callback=keep)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        crf.fit(F, y)
    print(f"fit {time.perf_counter() - t0:.1f} s, {crf.n_iter_} iterations, "
          f"{sum(map(len, X))} training tokens")
    snapshots[crf.n_iter_] = crf.coef_.copy()

    crf.set_params(bp_max_iter=args.bp_max_iter)
    print("iter  loss        joint   acc per chain            macro-F1 per chain")
    for k in sorted(snapshots):
        crf.coef_ = snapshots[k]
        pred = crf.predict(F_test)
        acc = chain_accuracy(y_test, pred)
        f1 = [precision_recall_fscore(y_test, pred, chain=c, average="macro", zero_division=0.0)[2]
              for c in range(3)]
        print(f"{k:4d}  {crf.loss_curve_[k - 1]:<10.6g}  {joint_accuracy(y_test, pred):.4f}  "
              + " ".join(f"{a:.4f}" for a in acc) + "   " + " ".join(f"{v:.4f}" for v in f1),
              flush=True)


if __name__ == "__main__":
    main()
