"""Issue 16 item 5: active-learning curves on synthetic dictations (thesis 001, 5.3-5.4).

Pool-based active learning with partial labels (:class:`skfcrf.active.ActiveLearner`,
Algorithm 2 of the thesis): the pool's gold labels play the oracle.  Every strategy
starts from the same seed report, labelled in full; every round refits (warm when no
new label appeared, else from scratch), scores joint accuracy on the test reports and
asks for ``--batch`` tokens (all three chains of a token; ``--unit label``: one
chain's label at a token; ``--unit neighbourhood``: a token and its two neighbours),
re-estimating a report after each of its tokens.  The curves -- joint accuracy against
the number of labelled tokens -- go to JSON and CSV, and the
figure to an SVG (``benchmarks/_svg.py``, no plotting library) for the docs.

    python benchmarks/bench_active_learning.py            # the documented run
    python benchmarks/bench_active_learning.py --quick    # a smoke test, ~1 min
"""
import argparse
import csv
import json
import os
import sys
import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from skfcrf import FactorialCRF
from skfcrf.active import ActiveLearner
from skfcrf.datasets import make_dictations

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _svg import line_chart  # noqa: E402

from _dictations import standard_features  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pool", type=int, default=40, help="pool reports")
    ap.add_argument("--test", type=int, default=30, help="test reports")
    ap.add_argument("--seed-reports", type=int, default=1,
                    help="pool reports labelled in full at the start")
    ap.add_argument("--batch", type=int, default=80,
                    help="tokens (unit token) or labels (unit label) asked per round (B)")
    ap.add_argument("--rounds", type=int, default=16)
    ap.add_argument("--strategies", default="random,MTM,MVM,MTE")
    ap.add_argument("--unit", default="token", choices=("label", "token", "neighbourhood"))
    ap.add_argument("--max-iter", type=int, default=30)
    ap.add_argument("--finetune-iter", type=int, default=5)
    ap.add_argument("--no-reestimate", action="store_true",
                    help="rank each batch at once instead of re-estimating after each label")
    ap.add_argument("--cold", action="store_true", help="refit from scratch every round")
    ap.add_argument("--random-state", type=int, default=0)
    ap.add_argument("--n-jobs", type=int, default=1)
    ap.add_argument("--out", default=os.path.join(ROOT, "benchmarks", "results",
                                                  "active_learning"))
    ap.add_argument("--svg", default=os.path.join(ROOT, "docs", "_static",
                                                  "active_learning_curve.svg"))
    ap.add_argument("--quick", action="store_true", help="tiny sizes, a smoke test")
    ap.add_argument("--replot", action="store_true",
                    help="only redraw the SVG from the JSON of an earlier run (--out)")
    args = ap.parse_args(argv)
    if args.replot:
        with open(args.out + ".json") as fh:
            saved = json.load(fh)
        plot(saved["curves"], saved["settings"], args.svg)
        return
    if args.quick:
        args.pool, args.test, args.seed_reports, args.batch, args.rounds = 8, 5, 1, 30, 2
        args.max_iter, args.out, args.svg = 10, args.out + "_quick", None

    t0 = time.perf_counter()
    tokens, y = make_dictations(n_reports=args.pool + args.test, style="rcg",
                                random_state=args.random_state)
    features = standard_features().fit(tokens)
    X = features.transform(tokens)
    X_pool, y_pool = X[:args.pool], y[:args.pool]
    X_test, y_test = X[args.pool:], y[args.pool:]
    n_pool_tokens = sum(len(s) for s in X_pool)
    seed = np.random.RandomState(args.random_state).choice(args.pool, args.seed_reports,
                                                           replace=False)
    print(f"pool {args.pool} reports ({n_pool_tokens} tokens, {3 * n_pool_tokens} labels), "
          f"test {args.test} reports ({sum(len(s) for s in X_test)} tokens); seed reports "
          f"{sorted(seed.tolist())}; B = {args.batch}, {args.rounds} rounds, unit "
          f"{args.unit}, max_iter {args.max_iter}; data and features "
          f"{time.perf_counter() - t0:.1f} s", flush=True)

    crf = FactorialCRF(max_iter=args.max_iter, finetune_iter=args.finetune_iter,
                       n_jobs=args.n_jobs, random_state=args.random_state)
    curves = {}
    for name in args.strategies.split(","):
        learner = ActiveLearner(crf, strategy=name, batch_size=args.batch, unit=args.unit,
                                reestimate=not args.no_reestimate, warm_start=not args.cold,
                                random_state=args.random_state, verbose=1)
        learner.start(X_pool, y_pool, seed=seed)
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)   # short refits on purpose
            learner.run(args.rounds, X_test, y_test)
        curves[name] = dict(history=learner.history_,
                            wall_time=time.perf_counter() - start)

    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    meta = {k: v for k, v in vars(args).items() if k not in ("out", "svg")}
    meta.update(seed=sorted(seed.tolist()), n_pool_tokens=n_pool_tokens)
    with open(args.out + ".json", "w") as fh:
        json.dump(dict(settings=meta, curves=curves), fh, indent=1)
    with open(args.out + ".csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["strategy", "round", "n_labels", "n_sequences", "warm", "joint_accuracy",
                    "fit_time", "query_time"])
        for name, c in curves.items():
            for h in c["history"]:
                w.writerow([name, h["round"], h["n_labels"], h["n_sequences"], h["warm"],
                            f"{h['score']:.5f}", f"{h['fit_time']:.2f}",
                            f"{h['query_time']:.2f}"])
    print(f"wrote {args.out}.json and .csv")
    if args.svg:
        plot(curves, meta, args.svg)
    print(f"total {time.perf_counter() - t0:.1f} s")


def plot(curves, settings, path):
    """The learning curves as an SVG line chart at ``path``."""
    per = 1 if settings["unit"] == "label" else 3
    series = [(name, [h["n_labels"] // per for h in c["history"]],
               [100 * h["score"] for h in c["history"]]) for name, c in curves.items()]
    xlabel = ("labelled tokens (all three chains)" if per == 3
              else "labels given (one chain at one token each)")
    line_chart(series, path, xlabel=xlabel, ylabel="joint accuracy on the test reports (%)",
               title=f"Active learning on {settings['pool']} synthetic dictations "
                     f"(B = {settings['batch']} {settings['unit']}s per round)")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
