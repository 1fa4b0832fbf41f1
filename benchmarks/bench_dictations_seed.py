"""Target 3: seed-scale structure recognition (the thesis's corpus size) in minutes.

``make_dictations(n_reports=1338, style="rcg")`` with the standard feature union
(word n-gram window, bag of concepts in a +-10 window, relative position in 8
bins), three chains, pseudolikelihood, up to 800 L-BFGS iterations: wall time
of the whole fit (features included) and the process's peak memory; then TRP
max-product decoding of 669 further reports with the converged fraction.

    python benchmarks/bench_dictations_seed.py [--n-train 1338] [--n-test 669] [--n-jobs 2]
        [--max-iter 800] [--bp-max-iter 50]
"""
import argparse
import resource
import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.pipeline import Pipeline

from skfcrf import FactorialCRF
from skfcrf.datasets import make_dictations
from skfcrf.metrics import chain_accuracy, joint_accuracy, windowdiff

from _dictations import standard_features


def peak_rss_gb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 ** 2


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n-train", type=int, default=1338)
    ap.add_argument("--n-test", type=int, default=669)
    ap.add_argument("--n-jobs", type=int, default=2)
    ap.add_argument("--max-iter", type=int, default=800)
    ap.add_argument("--sigma", type=float, default=10.0)
    ap.add_argument("--tol", type=float, default=1e-5,
                    help="L-BFGS tolerance (FactorialCRF's default; 1e-12 runs all of --max-iter)")
    ap.add_argument("--min-instance-freq", type=int, default=2)
    ap.add_argument("--verbose", type=int, default=0)
    ap.add_argument("--bp-max-iter", type=int, default=50,
                    help="TRP iteration cap for decoding (max-product rarely converges on these "
                         "models; accuracy hardly depends on the cap)")
    args = ap.parse_args()

    t0 = time.perf_counter()
    X, y = make_dictations(n_reports=args.n_train, style="rcg", random_state=0)
    X_test, y_test = make_dictations(n_reports=args.n_test, style="rcg", random_state=1)
    t_gen = time.perf_counter() - t0
    n_tok = sum(map(len, X))
    print(f"generated {len(X)} + {len(X_test)} reports ({n_tok} training tokens) in {t_gen:.1f} s")

    features = standard_features()
    crf = FactorialCRF(objective="pseudolikelihood", sigma=args.sigma, max_iter=args.max_iter,
                       lbfgs_memory=3, min_instance_freq=args.min_instance_freq,
                       n_jobs=args.n_jobs, random_state=0, verbose=args.verbose, tol=args.tol)
    model = Pipeline([("features", features), ("crf", crf)])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        t0 = time.perf_counter()
        F = features.fit_transform(X)
        t_feat = time.perf_counter() - t0
        crf.fit(F, y)
        t_fit = time.perf_counter() - t0
    del F
    hit = any(issubclass(w.category, ConvergenceWarning) for w in caught)
    print(f"fit: {t_fit:.1f} s wall ({t_feat:.1f} s features, {t_fit - t_feat:.1f} s training), "
          f"{crf.n_iter_} L-BFGS iterations{' (stopped at max_iter)' if hit else ''}, "
          f"{crf.n_features_in_} observations, {crf.coef_.size} weights; "
          f"peak RSS so far {peak_rss_gb():.2f} GB")

    crf.set_params(bp_max_iter=args.bp_max_iter)
    t0 = time.perf_counter()
    decoded = model[-1].decode(model[0].transform(X_test))
    t_pred = time.perf_counter() - t0
    pred = [d.labels for d in decoded]
    converged = np.mean([d.converged for d in decoded])
    mean_iter = np.mean([d.n_iter for d in decoded])
    acc = chain_accuracy(y_test, pred)
    print(f"decode {len(X_test)} reports (features + TRP max-product, "
          f"bp_max_iter={args.bp_max_iter}): {t_pred:.1f} s; "
          f"converged {100 * converged:.1f}%, mean {mean_iter:.1f} trees")
    print("accuracy per chain: " + ", ".join(f"{100 * a:.2f}%" for a in acc)
          + f"; joint {100 * joint_accuracy(y_test, pred):.2f}%")
    print("WindowDiff per chain: " + ", ".join(f"{windowdiff(y_test, pred, chain=c):.4f}" for c in range(3)))
    print(f"peak RSS of the whole run: {peak_rss_gb():.2f} GB")


if __name__ == "__main__":
    main()
