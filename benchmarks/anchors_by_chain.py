"""Each chain anchored in turn: what ``anchors=[c]`` does to every chain, per suite task.

The study behind ``anchors="auto"`` (issue 78, "no chain worse"): one fit per fold
with ``anchors=None``; its test sequences decoded with no anchor and with each chain
anchored alone (the anchors change decoding only, so one fit serves every row).
Prints per row the joint accuracy and each chain's accuracy and segment score, pooled
over the folds, as ``suite.py`` computes them.

    python benchmarks/anchors_by_chain.py --tasks dictations-cor urology gum
"""
import argparse
import time

import suite

from skfcrf import FactorialCRF
from skfcrf.estimators._anchoring import anchors_record


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", nargs="+", default=["dictations-cor", "urology", "gum"],
                    choices=list(suite.TASKS))
    ap.add_argument("--max-iter", type=int, default=100)
    ap.add_argument("--n-jobs", type=int, default=2)
    ap.add_argument("--dictation-seeds", type=int, nargs="+", default=[1])
    ap.add_argument("--n-dictations", type=int, default=225)
    ap.add_argument("--n-conll", type=int, default=2000)
    ap.add_argument("--n-gum", type=int, default=150)
    ap.add_argument("--n-ewt", type=int, default=450)
    ap.add_argument("--max-tokens", type=int, default=600)
    args = ap.parse_args()
    args.final = False
    for name in args.tasks:
        task = suite.TASKS[name](args)
        if task is None:
            print(f"{name}: data not found, skipped")
            continue
        rows = {"none": []} | {f"chain {c} ({n})": [] for c, n in enumerate(task.chains)}
        gold = []
        for f, (Xtr, ytr, Xte, yte) in enumerate(task.folds):
            t0 = time.perf_counter()
            model = FactorialCRF(max_iter=args.max_iter, n_jobs=args.n_jobs, anchors=None,
                                 **task.params).fit(Xtr, ytr)
            print(f"  {name} fold {f}: fit {time.perf_counter() - t0:.1f} s", flush=True)
            gold += list(yte)
            for c, row in enumerate(rows):
                model.anchors_ = anchors_record([] if c == 0 else [c - 1], "study")
                rows[row] += model.predict(Xte)
        print(f"### {name} ({task.note})\n")
        keys = list(suite.scores(task, gold, rows["none"]))
        print("| anchored | " + " | ".join(keys) + " |")
        print("| --- |" + " --- |" * len(keys))
        for row, pred in rows.items():
            got = suite.scores(task, gold, pred)
            print(f"| {row} | " + " | ".join(f"{got[k]:.4f}" for k in keys) + " |")
        print()


if __name__ == "__main__":
    main()
