"""Seed-scale structure recognition (issues 14 and 15): fit and decoding at the thesis's size.

``make_dictations(2007, style="rcg", random_state=1)``: the first 1,338 reports train,
the last 669 test; the standard feature union (word n-gram window, bag of concepts in a
+-10 window, relative position in 8 bins), three chains, ``sigma=31.6``, and otherwise
``FactorialCRF``'s defaults (``--objective``/``--max-iter``/``--inference`` override
them).  Prints the wall time of the whole fit (features included) and the process's
peak memory; then the decoding of the 669 test reports with the default inference
(time, fraction per status) and, with ``--compare-trp``, TRP max-product + chain-wise
coordinate ascent decoding of the same model.  ``--stage-times`` also prints the calls
and seconds of each stage of the fit (:mod:`_stage_times`: the first stage's evaluations,
the back-off set-up, the fine-tuning's and the joint-state transition stage's evaluations).

    python benchmarks/bench_dictations_seed.py [--n-jobs 2] [--compare-trp] [--stage-times]
"""
import argparse
import contextlib
import resource
import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from skfcrf import FactorialCRF
from skfcrf.datasets import make_dictations
from skfcrf.metrics import chain_accuracy, joint_accuracy, windowdiff

from _dictations import standard_features
from _stage_times import print_stage_times, stage_times


def peak_rss_gb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 ** 2


def decode_and_report(crf, F_test, y_test, label):
    t0 = time.perf_counter()
    decoded = crf.decode(F_test)
    t_dec = time.perf_counter() - t0
    pred = [d.labels for d in decoded]
    status = {k: np.mean([d.status == k for d in decoded]) for k in
              ("exact", "certified", "converged", "approximate")}
    acc = chain_accuracy(y_test, pred)
    print(f"{label}: decode {len(F_test)} reports in {t_dec:.1f} s; status "
          + ", ".join(f"{k} {100 * v:.1f}%" for k, v in status.items() if v)
          + f"; mean {np.mean([d.n_iter for d in decoded]):.1f} iterations", flush=True)
    print("  accuracy per chain: " + ", ".join(f"{100 * a:.2f}%" for a in acc)
          + f"; joint {100 * joint_accuracy(y_test, pred):.2f}%")
    print("  WindowDiff per chain: "
          + ", ".join(f"{windowdiff(y_test, pred, chain=c):.4f}" for c in range(3)), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n-reports", type=int, default=2007)
    ap.add_argument("--n-train", type=int, default=1338)
    ap.add_argument("--n-jobs", type=int, default=2)
    ap.add_argument("--sigma", type=float, default=31.6)
    ap.add_argument("--objective", default=None, help="default: FactorialCRF's")
    ap.add_argument("--max-iter", type=int, default=None, help="default: FactorialCRF's")
    ap.add_argument("--finetune-iter", type=int, default=None, help="default: FactorialCRF's")
    ap.add_argument("--state-transition-iter", type=int, default=None,
                    help="default: FactorialCRF's (0 skips the joint-state transition stage)")
    ap.add_argument("--inference", default="auto")
    ap.add_argument("--forbidden-transitions", default="auto",
                    choices=("auto", "unseen", "backoff", "none"))
    ap.add_argument("--verbose", type=int, default=0)
    ap.add_argument("--save", default=None, help="save the fitted model here (for bench_decoding.py)")
    ap.add_argument("--stage-times", action="store_true",
                    help="print the calls and seconds of each stage of the fit")
    ap.add_argument("--compare-trp", action="store_true",
                    help="also decode with TRP max-product (bp_max_iter 50) + coordinate ascent")
    args = ap.parse_args()

    t0 = time.perf_counter()
    X, y = make_dictations(n_reports=args.n_reports, style="rcg", random_state=1)
    X, y, X_test, y_test = X[:args.n_train], y[:args.n_train], X[args.n_train:], y[args.n_train:]
    print(f"generated {len(X)} + {len(X_test)} reports ({sum(map(len, X))} training tokens) "
          f"in {time.perf_counter() - t0:.1f} s", flush=True)
    params = dict(sigma=args.sigma, n_jobs=args.n_jobs, random_state=0, verbose=args.verbose,
                  inference=args.inference,
                  forbidden_transitions=(None if args.forbidden_transitions == "none"
                                         else args.forbidden_transitions))
    if args.objective:
        params["objective"] = args.objective
    if args.max_iter:
        params["max_iter"] = args.max_iter
    if args.finetune_iter is not None:
        params["finetune_iter"] = args.finetune_iter
    if args.state_transition_iter is not None:
        params["state_transition_iter"] = args.state_transition_iter
    crf = FactorialCRF(**params)
    features = standard_features()
    counting = stage_times() if args.stage_times else contextlib.nullcontext()
    with warnings.catch_warnings(record=True) as caught, counting as times:
        warnings.simplefilter("always", ConvergenceWarning)
        t0 = time.perf_counter()
        F = features.fit_transform(X)
        t_feat = time.perf_counter() - t0
        crf.fit(F, y)
        t_fit = time.perf_counter() - t0
    del F
    hit = any(issubclass(w.category, ConvergenceWarning) for w in caught)
    print(f"fit ({crf.objective}): {t_fit:.1f} s wall ({t_feat:.1f} s features, "
          f"{t_fit - t_feat:.1f} s training), {crf.n_iter_} L-BFGS iterations"
          f"{' (stopped at max_iter)' if hit else ''}, {crf.n_features_in_} observations, "
          f"{crf.coef_.size} weights, {len(crf.joint_states_)} joint label states; "
          f"peak RSS so far {peak_rss_gb():.2f} GB", flush=True)
    if times is not None:
        print_stage_times(times)
    if args.save:
        crf.save(args.save)
    t0 = time.perf_counter()
    F_test = features.transform(X_test)
    print(f"test features {time.perf_counter() - t0:.1f} s")
    decode_and_report(crf, F_test, y_test, f"inference={crf.inference}")
    if args.compare_trp:
        crf.set_params(inference="trp", bp_max_iter=50)
        decode_and_report(crf, F_test, y_test, "inference=trp, bp_max_iter=50")
    print(f"peak RSS of the whole run: {peak_rss_gb():.2f} GB")


if __name__ == "__main__":
    main()
