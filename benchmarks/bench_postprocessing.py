"""Post-processing per rule and decoding method: where each rule helps and hurts (issue 31, item 6).

The thesis's algorithms 7 and 8 (``000`` section 6.1.2) are rules and presets of
:mod:`skfcrf.structure` (:data:`~skfcrf.structure.REPAIR_PRESETS`).  For every data set
(style, number of reports, seed: ``make_dictations(n, style, random_state=seed)``, the
first 70% of the reports to train, the rest to test, the standard dictation features) and
every decoding method

* ``exact``: the default ``FactorialCRF()``, exact decoding over the joint label states;
* ``trp``: ``FactorialCRF(inference="trp")``: the default objective, TRP decoding (the
  default model's joint-state transition weights need exact decoding, so this is a fit
  of its own; without exact inference no likelihood fine-tuning runs);
* ``pl-trp``: the thesis's set-up, ``FactorialCRF(objective="pseudolikelihood",
  inference="trp")``;

the test predictions are scored raw (``none``), after the formal constraints only
(``formal``), after each rule alone (with the formal constraints: ``7.2`` ... ``8.9``;
``7.5-move`` and ``8.6-all`` are steps 7.5 and 8.6 as the presets had them before
issue 31)
and after each preset (``cor``, ``rcg``, ``rcg+8.1``): joint accuracy, accuracy and
WindowDiff per chain, and the fraction of labels the post-processing changed.

    python benchmarks/bench_postprocessing.py                       # 4 data sets, ~10 min
    python benchmarks/bench_postprocessing.py --datasets cor:40:5   # the issue's set-up

Writes ``postprocessing.csv`` and ``postprocessing.json`` to ``--out``.
"""
import argparse
import csv
import json
import os
import time
import warnings

import numpy as np

from skfcrf import FactorialCRF
from skfcrf.datasets import make_dictations
from skfcrf.metrics import chain_accuracy, joint_accuracy, windowdiff
from skfcrf.structure import (
    REPAIR_PRESETS,
    RULE_8_1,
    fix_long_headings,
    merge_same_type_at_heading,
    merge_unless_starts_with,
    min_enumeration_elements,
    no_double_begins,
    no_untyped_between_typed,
    repair_sequences,
    sections_at_headings,
    typed_subsections_start_at,
)

from _dictations import standard_features

#: single rules by the thesis's step number (each applied with the formal constraints);
#: ``7.5-move`` is the step-7.5 rule of the ``cor`` preset before issue 31, ``8.6-all``
#: step 8.6 before it (short enumerations relabelled even when a marker was dictated)
SINGLE_RULES = {
    "7.2": (typed_subsections_start_at(),), "7.4": (no_untyped_between_typed(),),
    "7.5": (sections_at_headings(),),
    "7.5-move": (merge_unless_starts_with(2, ["Heading"], move=True),),
    "8.1": (RULE_8_1,), "8.3": (merge_same_type_at_heading(),), "8.5": (no_double_begins(),),
    "8.6": (min_enumeration_elements(),), "8.6-all": (min_enumeration_elements(keep_marked=False),),
    "8.9": (fix_long_headings(),),
}
#: every post-processing variant measured: raw, formal, single rules, presets
VARIANTS = ("none", "formal", *SINGLE_RULES, "cor", "rcg", "rcg+8.1")
DECODINGS = ("exact", "trp", "pl-trp")
COLUMNS = ("dataset", "style", "n_train", "n_test", "seed", "decoding", "rules", "joint",
           "chain0", "chain1", "chain2", "wd0", "wd1", "wd2", "changed")


def rules_of(variant):
    """The ``rules=`` argument of :func:`repair_sequences` for a variant name (None: raw)."""
    if variant == "none":
        return None
    return SINGLE_RULES.get(variant, REPAIR_PRESETS.get(variant, variant))


def scores(y_true, y_pred):
    """Joint accuracy, accuracy and WindowDiff per chain of one prediction (a dict)."""
    n_chains = y_true[0].shape[1]
    out = {"joint": joint_accuracy(y_true, y_pred)}
    for c in range(n_chains):
        out[f"chain{c}"] = chain_accuracy(y_true, y_pred, chain=c)
    for c in range(n_chains):
        out[f"wd{c}"] = windowdiff(y_true, y_pred, chain=c)
    return out


def changed_fraction(before, after):
    """Fraction of the labels (all chains) that post-processing changed."""
    n = sum(b.size for b in before)
    return sum(int((np.asarray(b) != np.asarray(a)).sum()) for b, a in zip(before, after)) / n


def fit_quietly(model, F, y):
    """``model.fit(F, y)`` without convergence warnings; returns the fit time."""
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(F, y)
    return time.perf_counter() - t0


def split_dictations(style, n_reports, seed, train_fraction=0.7):
    """Tokens, features and labels of one data set, split into train and test."""
    X, y = make_dictations(n_reports, style=style, random_state=seed)
    F = standard_features().fit_transform(X)
    k = int(round(train_fraction * n_reports))
    return (X[:k], F[:k], y[:k]), (X[k:], F[k:], y[k:])


def decoders(F, y, n_jobs, bp_max_iter):
    """Fitted models by decoding method, with their fit times."""
    models = {"exact": FactorialCRF(n_jobs=n_jobs),
              "trp": FactorialCRF(inference="trp", n_jobs=n_jobs, bp_max_iter=bp_max_iter),
              "pl-trp": FactorialCRF(objective="pseudolikelihood", inference="trp",
                                     n_jobs=n_jobs, bp_max_iter=bp_max_iter)}
    return {name: (m, fit_quietly(m, F, y)) for name, m in models.items()}


def variant_rows(X_test, y_test, pred, variants, meta):
    """One table row per post-processing variant of the prediction ``pred``."""
    rows = []
    for v in variants:
        rules = rules_of(v)
        fixed = pred if rules is None else repair_sequences(pred, rules, X_test)
        row = dict(meta, rules=v, **scores(y_test, fixed), changed=changed_fraction(pred, fixed))
        rows.append(row)
    return rows


def run_dataset(spec, args):
    """All rows of one data set ``style:n_reports:seed``."""
    style, n, seed = spec.split(":")
    n, seed = int(n), int(seed)
    (_, Ftr, ytr), (Xte, Fte, yte) = split_dictations(style, n, seed)
    models = decoders(Ftr, ytr, args.n_jobs, args.bp_max_iter)
    rows, stats = [], {}
    for decoding in args.decodings:
        model, fit_time = models[decoding]
        t0 = time.perf_counter()
        decoded = model.decode(Fte)
        stats[decoding] = dict(fit_time=round(fit_time, 2),
                               decode_time=round(time.perf_counter() - t0, 2),
                               **convergence(decoded))
        pred = [d.labels for d in decoded]
        meta = dict(dataset=spec, style=style, n_train=len(ytr), n_test=len(yte), seed=seed,
                    decoding=decoding)
        rows += variant_rows(Xte, yte, pred, args.variants, meta)
        base = rows[-len(args.variants)]
        print(f"{spec} {decoding}: raw joint {base['joint']:.4f}  "
              + "  ".join(f"{r['rules']} {r['joint'] - base['joint']:+.4f}"
                          for r in rows[-len(args.variants) + 1:]), flush=True)
    return rows, stats


def convergence(decoded):
    """Fraction of sequences decoded exactly or with converged TRP, and mean TRP iterations
    of the converged ones (the thesis's table 6.13)."""
    status = [d.status for d in decoded]
    conv = [d.n_iter for d in decoded if d.status == "converged"]
    return dict(exact=status.count("exact") / len(status),
                converged=status.count("converged") / len(status),
                mean_iterations=float(np.mean(conv)) if conv else float("nan"))


def json_ready(obj):
    """``obj`` with every NaN float replaced by None (strict JSON has no NaN)."""
    if isinstance(obj, dict):
        return {k: json_ready(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_ready(v) for v in obj]
    if isinstance(obj, float) and obj != obj:
        return None
    return obj


def write(rows, settings, stats, out, name="postprocessing"):
    """``name``.csv (the rows) and ``name``.json (settings, decoding stats and rows)."""
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, f"{name}.csv"), "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=COLUMNS)
        w.writeheader()
        for r in rows:
            w.writerow({k: (f"{v:.5f}" if isinstance(v, float) else v) for k, v in r.items()})
    with open(os.path.join(out, f"{name}.json"), "w") as fh:
        json.dump(json_ready({"settings": settings, "decoding": stats, "rows": rows}), fh, indent=1)


def summary(rows, variants=("formal", "cor", "rcg", "rcg+8.1")):
    """Markdown table: joint accuracy raw -> after each preset, per data set and decoding."""
    variants = [v for v in variants if any(r["rules"] == v for r in rows)]
    lines = ["| data set | decoding | raw | " + " | ".join(variants) + " |",
             "| --- | --- | --- | " + " | ".join("---" for _ in variants) + " |"]
    keys = sorted({(r["dataset"], r["decoding"]) for r in rows},
                  key=lambda k: (k[0], DECODINGS.index(k[1])))
    for ds, dec in keys:
        got = {r["rules"]: r for r in rows if r["dataset"] == ds and r["decoding"] == dec}
        raw = got["none"]["joint"]
        cells = [f"{100 * got[v]['joint']:.2f} ({100 * (got[v]['joint'] - raw):+.2f})"
                 for v in variants if v in got]
        lines.append(f"| {ds} | {dec} | {100 * raw:.2f} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--datasets", nargs="+", default=["cor:40:5", "rcg:40:5", "cor:90:1", "rcg:90:1"],
                    help="style:n_reports:seed, the first 70%% of the reports train")
    ap.add_argument("--decodings", nargs="+", default=list(DECODINGS), choices=DECODINGS)
    ap.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=VARIANTS)
    ap.add_argument("--bp-max-iter", type=int, default=200)
    ap.add_argument("--n-jobs", type=int, default=2)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results"))
    args = ap.parse_args(argv)
    if args.variants[0] != "none":
        args.variants = ["none", *[v for v in args.variants if v != "none"]]
    t0 = time.perf_counter()
    rows, stats = [], {}
    for spec in args.datasets:
        r, s = run_dataset(spec, args)
        rows += r
        stats[spec] = s
    settings = {k: v for k, v in vars(args).items() if k != "out"}
    settings["wall_time"] = round(time.perf_counter() - t0, 1)
    write(rows, settings, stats, args.out)
    print(summary(rows))
    return rows


if __name__ == "__main__":
    main()
