"""The development suite: the default against every alternative on many multi-level tasks.

One command fits ``FactorialCRF()`` (the package default) and the candidate settings on
every task of the suite and prints one table per task and a summary (issue 78):

* joint accuracy (every chain right at a token), accuracy per chain, and per chain
  segment F1 (conlleval, chains of ``B-``/``I-`` tags) or WindowDiff (boundary
  chains);
* fit seconds (skfcrf with ``--n-jobs`` threads; CRFsuite has one);
* paired per-sequence tests (:func:`skfcrf.metrics.paired_test`, Student's t over the
  test sequences pooled over the folds) of every row against the default, for joint
  accuracy, each chain's accuracy and each boundary chain's WindowDiff; the last
  column names the chains on which the default is worse than the row with p < .05.

Rows:

``default``
    ``FactorialCRF(**prior)``: what a user gets.
``unseen``, ``backoff``, ``open``
    The default with ``forbidden_transitions="unseen"`` (the closed world),
    ``"backoff"`` and None (every transition scored).
``alone``
    Every chain trained and decoded alone, on the same observations and prior:
    sklearn-crfsuite chains (L-BFGS, ``c2 = 1 / (2 sigma^2)``, every transition
    scored, the same ``max_iter``) where it is installed, else one-chain
    ``FactorialCRF`` models (``--peer skfcrf``).
``cascade``
    Where the task's levels are ordered: chain ``k`` trained with the gold labels
    of chains ``0..k-1`` at offsets -1, 0, 1 as further observations, tagged with
    the predictions of the earlier levels (the usual stack of CRFsuite taggers).

``--settings NAME=JSON`` adds rows of the default with other keyword arguments, e.g.
``--settings 'sigma3={"sigma": 3}'``; ``--models`` chooses the rows.

Tasks (``--tasks``; small ones by cross-validation, never one split):

``dictations-rcg``, ``dictations-cor``
    ``make_dictations`` in both styles, ``--dictation-seeds`` data sets of
    ``--n-dictations`` reports, each split 2:1 into training and test reports
    (sentences / subsections / sections; WindowDiff).
``urology``
    The shared MTSamples urology reports: transcripts with the generator's noise
    model (word error rate 0.1), labels carried over by ``skfcrf prepare``, 4-fold
    cross-validation, scored against the transcripts' true labels.
``conll2000``
    CoNLL-2000 POS + chunks from words (``_conll.word_observations``): the first
    ``--n-conll`` training sentences, the first ``--n-conll // 2`` test sentences.
``conll2003``
    CoNLL-2003 English POS + chunks + NER from words: the first ``--n-conll``
    training sentences; ``eng.testa`` (the first ``--n-conll // 2`` sentences) to
    choose on, ``eng.testb`` with ``--final``.
``gum``, ``ewt``
    Universal Dependencies English GUM and EWT documents as transcripts (lower case,
    no punctuation): part of speech, sentence boundaries, paragraphs (GUM: headings
    too); ``_ud.py`` says where the data come from.  3-fold cross-validation over
    ``--n-gum`` / ``--n-ewt`` documents drawn at random (pieces of at most
    ``--max-tokens`` tokens, cut at paragraph starts).

    python benchmarks/suite.py                                  # every task and row
    python benchmarks/suite.py --tasks urology gum --models default unseen alone
    python benchmarks/suite.py --settings 'closed={"forbidden_transitions": "unseen"}'
    python benchmarks/suite.py --json suite.json               # the figures as JSON too
    python benchmarks/suite.py --report a.json old=b.json      # the tables of earlier runs

Data: CoNLL-2000 from ``SKFCRF_CONLL2000`` (default ``../shared/data/conll2000``),
CoNLL-2003 from ``SKFCRF_CONLL2003`` (``../shared/data/conll2003``), the reports from
``SKFCRF_MTSAMPLES``, the UD treebanks as ``_ud.py`` says.  A task whose data are
missing is skipped with a line saying so.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass, field

import numpy as np

from skfcrf import FactorialCRF
from skfcrf.datasets import read_conll
from skfcrf.metrics import (
    chain_accuracy,
    joint_accuracy,
    paired_test,
    segment_f1,
    sequence_scores,
    windowdiff,
)

HERE = os.path.dirname(os.path.abspath(__file__))
SHARED = os.path.join(HERE, "..", "..", "shared", "data")
WORLDS = {"unseen": "unseen", "backoff": "backoff", "open": None}
BASELINES = ("alone", "cascade")


@dataclass
class Task:
    """A suite task: its folds, each ``(X_train, y_train, X_test, y_test)`` (per-token
    observation dicts; labels as ``(n, C)`` object arrays), the prior, the chains'
    names and segment metric (``"f1"`` or ``"wd"``), and whether the chains are
    ordered levels (a cascade runs them in order)."""

    name: str
    folds: list
    chains: tuple
    metrics: tuple
    params: dict = field(default_factory=dict)
    ordered: bool = True
    note: str = ""


def _arrays(y):
    return [np.asarray(s, dtype=object).reshape(len(s), -1) for s in y]


def _kfold(X, y, k):
    n = len(X)
    return [([X[i] for i in range(n) if i % k != f], [y[i] for i in range(n) if i % k != f],
             [X[i] for i in range(f, n, k)], [y[i] for i in range(f, n, k)]) for f in range(k)]


# --------------------------------------------------------------------------- tasks

def dictation_task(style, args):
    from skfcrf.datasets import make_dictations
    from skfcrf.transformers import make_dictation_features
    folds = []
    for seed in args.dictation_seeds:
        X, y = make_dictations(args.n_dictations, style=style, random_state=seed)
        F = make_dictation_features().fit_transform(X)
        n_train = 2 * len(F) // 3
        folds.append((F[:n_train], _arrays(y[:n_train]), F[n_train:], _arrays(y[n_train:])))
    return Task(f"dictations-{style}", folds, ("sentence", "subsection", "section"),
                ("wd", "wd", "wd"), dict(sigma=31.6),
                note=f"seeds {args.dictation_seeds}, {args.n_dictations} reports each, 2:1")


def urology_task(args):
    from skfcrf.transformers import make_dictation_features

    from bench_real_reports import REPORTS, make_archive
    reports = os.environ.get("SKFCRF_MTSAMPLES", REPORTS)
    if not os.path.isdir(reports):
        return None
    with tempfile.TemporaryDirectory() as tmp:
        rep_dir, tr_dir, truth = make_archive(tmp, 0.1, 0)
        out = os.path.join(tmp, "aligned.txt")
        res = subprocess.run([sys.executable, "-m", "skfcrf", "prepare", rep_dir, tr_dir,
                              "-o", out, "-q"], capture_output=True, text=True)
        if res.returncode != 0:
            sys.exit(f"prepare failed:\n{res.stderr}")
        X, y = read_conll(out, n_label_columns=3)
    names = sorted(truth)
    gold = [np.asarray(truth[n][1], dtype=object) for n in names]
    folds = []
    for tr_X, tr_y, te_X, te_y in _kfold(X, list(zip(y, gold)), 4):
        features = make_dictation_features()
        folds.append((features.fit_transform(tr_X), _arrays([a for a, _ in tr_y]),
                      features.transform(te_X), [g for _, g in te_y]))
    return Task("urology", folds, ("sentence", "subsection", "section"), ("wd", "wd", "wd"),
                dict(sigma=10.0), note="136 reports, WER 0.1, labels from prepare, 4 folds")


def conll2000_task(args):
    import _conll
    if not os.path.isdir(_conll.DATA):
        return None
    Xtr, ytr = _conll.load("train")
    Xte, yte = _conll.load("test")
    Xtr, ytr, Xte, yte = Xtr[:args.n_conll], ytr[:args.n_conll], Xte[:args.n_conll // 2], \
        yte[:args.n_conll // 2]
    F = _conll.word_observations(Xtr + Xte)
    return Task("conll2000", [(F[:len(Xtr)], _arrays(ytr), F[len(Xtr):], _arrays(yte))],
                ("pos", "chunk"), ("acc", "f1"),
                note=f"{len(Xtr)} / {len(Xte)} sentences, word observations")


CONLL2003 = os.environ.get("SKFCRF_CONLL2003", os.path.join(SHARED, "conll2003"))


def read_conll2003(split):
    """``(X, y)`` of one CoNLL-2003 file: token dicts with ``word``; ``(n, 3)`` labels
    POS, chunk, NER (``read_conll`` leaves the ``-DOCSTART-`` lines out)."""
    X, y = read_conll(os.path.join(CONLL2003, split), n_label_columns=3, attributes=("word",))
    return [[{"word": w} for w in x] for x in X], _arrays(y)


def conll2003_task(args):
    import _conll
    if not os.path.isdir(CONLL2003):
        return None
    split = "eng.testb" if args.final else "eng.testa"
    Xtr, ytr = read_conll2003("eng.train")
    Xte, yte = read_conll2003(split)
    n_test = len(Xte) if args.final else args.n_conll // 2
    Xtr, ytr, Xte, yte = Xtr[:args.n_conll], ytr[:args.n_conll], Xte[:n_test], yte[:n_test]
    F = _conll.word_observations(Xtr + Xte)
    return Task("conll2003", [(F[:len(Xtr)], ytr, F[len(Xtr):], yte)], ("pos", "chunk", "ner"),
                ("acc", "f1", "f1"), note=f"{len(Xtr)} train / {len(Xte)} {split} sentences")


def ud_task(name, args):
    import _ud
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")     # GUM's train split read from its sources
            tokens, labels, _ = _ud.transcript_task(name, max_tokens=args.max_tokens)
    except FileNotFoundError:
        return None
    rng = np.random.default_rng(0)
    order = rng.permutation(len(tokens))[:args.n_gum if name == "gum" else args.n_ewt]
    F = _ud.observations([tokens[i] for i in order])
    y = _arrays([labels[i] for i in order])
    for seq in y:       # sentence starts as segment tags, for WindowDiff
        seq[:, 1] = np.where(seq[:, 1] == "B", "B-S", "I-S")
    return Task(name, _kfold(F, y, 3), ("pos", "sentence", "paragraph"), ("acc", "wd", "wd"),
                ordered=False, note=f"{len(F)} documents, 3 folds")


TASKS = {
    "dictations-rcg": lambda a: dictation_task("rcg", a),
    "dictations-cor": lambda a: dictation_task("cor", a),
    "urology": urology_task,
    "conll2000": conll2000_task,
    "conll2003": conll2003_task,
    "gum": lambda a: ud_task("gum", a),
    "ewt": lambda a: ud_task("ewt", a),
}


# --------------------------------------------------------------------------- models

def _chain(y, c):
    return [list(s[:, c]) for s in y]


def _stack(per_chain, n_seq):
    return [np.stack([np.asarray(chain[s], dtype=object) for chain in per_chain], axis=1)
            for s in range(n_seq)]


def one_chain_model(params, args):
    """A fresh one-chain tagger of the ``alone`` and ``cascade`` rows."""
    sigma = params.get("sigma", 1.0)
    if args.peer == "crfsuite":
        import sklearn_crfsuite
        return sklearn_crfsuite.CRF(algorithm="lbfgs", c1=0.0, c2=1.0 / (2 * sigma ** 2),
                                    max_iterations=args.max_iter,
                                    all_possible_transitions=True)
    return FactorialCRF(n_jobs=args.n_jobs, max_iter=args.max_iter, **params)


def _flat(pred):
    return [list(p[:, 0]) if isinstance(p, np.ndarray) and p.ndim == 2 else list(p)
            for p in pred]


def fit_alone(task, params, args, Xtr, ytr, Xte):
    preds = []
    for c in range(len(task.chains)):
        model = one_chain_model(params, args)
        model.fit(Xtr, _chain(ytr, c))
        preds.append(_flat(model.predict(Xte)))
    return _stack(preds, len(Xte))


def _with_levels(X, levels):
    """Observations ``X`` with the labels of earlier levels (a list of per-sequence
    label lists) at offsets -1, 0, 1."""
    out = []
    for s, x in enumerate(X):
        seq = []
        for t, tok in enumerate(x):
            tok = dict(tok)
            for k, lab in enumerate(levels):
                for d in (-1, 0, 1):
                    if 0 <= t + d < len(x):
                        tok[f"level{k}[{d}]={lab[s][t + d]}"] = 1.0
            seq.append(tok)
        out.append(seq)
    return out


def fit_cascade(task, params, args, Xtr, ytr, Xte):
    gold, guessed = [], []
    for c in range(len(task.chains)):
        model = one_chain_model(params, args)
        model.fit(_with_levels(Xtr, gold), _chain(ytr, c))
        guessed.append(_flat(model.predict(_with_levels(Xte, guessed))))
        gold.append(_chain(ytr, c))
    return _stack(guessed, len(Xte))


def rows(args):
    """Row name -> keyword arguments of ``FactorialCRF`` (None: a baseline)."""
    out = {"default": {}}
    out.update({name: {"forbidden_transitions": ft} for name, ft in WORLDS.items()})
    for spec in args.settings:
        name, _, text = spec.partition("=")
        out[name] = json.loads(text)
    out.update({b: None for b in BASELINES})
    return {k: v for k, v in out.items() if k in args.models or k in
            [s.partition("=")[0] for s in args.settings]}


# --------------------------------------------------------------------------- scores

def scores(task, y, pred):
    """Joint accuracy, then per chain its accuracy and its segment score."""
    out = {"joint": joint_accuracy(y, pred)}
    for c, (name, metric) in enumerate(zip(task.chains, task.metrics)):
        out[f"acc.{name}"] = chain_accuracy(y, pred, chain=c)
        if metric == "f1":
            out[f"f1.{name}"] = segment_f1(y, pred, chain=c)
        elif metric == "wd":
            out[f"wd.{name}"] = windowdiff(y, pred, chain=c)
    return out


def per_sequence(task, y, pred):
    """Per test sequence: joint accuracy, each chain's accuracy and, for a boundary
    chain, its WindowDiff."""
    out = {"joint": sequence_scores(y, pred, joint_accuracy)}
    for c, (name, metric) in enumerate(zip(task.chains, task.metrics)):
        out[f"acc.{name}"] = sequence_scores(y, pred, chain_accuracy, chain=c)
        if metric == "wd":
            out[f"wd.{name}"] = sequence_scores(y, pred, windowdiff, chain=c)
    return out


def run_task(task, args, emit):
    models = rows(args)
    y_all, preds, seconds = [], {m: [] for m in models}, {m: 0.0 for m in models}
    for k, (Xtr, ytr, Xte, yte) in enumerate(task.folds):
        y_all += list(yte)
        for name, extra in models.items():
            if name == "cascade" and not task.ordered:
                continue
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                if extra is None:
                    fit = fit_alone if name == "alone" else fit_cascade
                    pred = fit(task, task.params, args, Xtr, ytr, Xte)
                else:
                    crf = FactorialCRF(n_jobs=args.n_jobs, max_iter=args.max_iter,
                                       **{**task.params, **extra}).fit(Xtr, ytr)
                    pred = crf.predict(Xte)
            seconds[name] += time.perf_counter() - t0
            preds[name] += list(pred)
            emit(f"  {task.name} fold {k} {name}: joint {joint_accuracy(yte, pred):.4f} "
                 f"({time.perf_counter() - t0:.1f} s)")
    result = {}
    base = per_sequence(task, y_all, preds["default"]) if preds.get("default") else None
    for name, pred in preds.items():
        if not pred:
            continue
        row = {"seconds": seconds[name], **scores(task, y_all, pred)}
        if base is not None and name != "default":
            mine = per_sequence(task, y_all, pred)
            for key, values in mine.items():
                test = paired_test(values, base[key])
                row[f"diff.{key}"] = test.mean_difference
                row[f"p.{key}"] = test.pvalue
        result[name] = row
    return result


def _chains(result):
    """The chains' names of a task's result, in order (from its ``acc.`` keys)."""
    return [k[4:] for k in next(iter(result.values())) if k.startswith("acc.")]


def table(name, note, result):
    """One task's rows as a Markdown table."""
    keys = ["joint"] + [k for k in next(iter(result.values())) if k.startswith(("acc.", "f1.",
                                                                                "wd."))]
    head = (f"| row | fit s | {' | '.join(keys)} | joint - default (p) "
            "| default worse on (p < .05) |")
    lines = [f"### {name}" + (f" ({note})" if note else ""), "", head,
             "|" + " --- |" * (len(keys) + 4)]
    for row_name, row in result.items():
        cells = [f"{row['seconds']:.1f}"] + [f"{row[k]:.4f}" for k in keys]
        if "diff.joint" in row:
            cells.append(f"{100 * row['diff.joint']:+.2f} ({row['p.joint']:.2g})")
            worse = [c for c in _chains(result)
                     if row[f"diff.acc.{c}"] > 0 and row[f"p.acc.{c}"] < 0.05]
            worse += [f"{c} (WindowDiff)" for c in _chains(result)
                      if f"p.wd.{c}" in row and row[f"diff.wd.{c}"] < 0
                      and row[f"p.wd.{c}"] < 0.05]
            cells.append(", ".join(worse) or "none")
        else:
            cells += ["", ""]
        lines.append(f"| {row_name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def summary(results):
    """Joint accuracy per task and row, the mean over tasks, and how far the default
    is from the best other row."""
    names = []
    for res in results.values():
        names += [n for n in res if n not in names]
    lines = ["### Joint accuracy (%)", "",
             "| task | " + " | ".join(names) + " | default - best other |",
             "|" + " --- |" * (len(names) + 2)]
    for task, res in results.items():
        others = [r["joint"] for n, r in res.items() if n != "default"]
        cells = [f"{100 * res[n]['joint']:.2f}" if n in res else "" for n in names]
        gap = (f"{100 * (res['default']['joint'] - max(others)):+.2f}"
               if "default" in res and others else "")
        lines.append(f"| {task} | " + " | ".join(cells) + f" | {gap} |")
    means = []
    for n in names:
        have = [100 * r[n]["joint"] for r in results.values() if n in r]
        means.append(f"{np.mean(have):.2f}" + ("" if len(have) == len(results)
                                                 else f" ({len(have)} tasks)"))
    lines.append("| mean | " + " | ".join(means) + " | |")
    return "\n".join(lines)


def report(paths):
    """The tables and summary of ``--json`` files of earlier runs.  ``LABEL=PATH``
    renames the file's ``default`` rows to ``LABEL`` (e.g. the default of an earlier
    revision; ``drop=PATH`` leaves them out); ``default`` rows come first.  A row from
    another file than its task's ``default`` loses its paired tests (they were
    against another default)."""
    results, notes, source = {}, {}, {}
    for k, spec in enumerate(paths):
        label, _, path = spec.rpartition("=")
        with open(path) as fh:
            data = json.load(fh)
        for name, rows in data["results"].items():
            for row, values in rows.items():
                if row == "default" and label:
                    if label == "drop":
                        continue
                    row = label
                results.setdefault(name, {})[row] = dict(values)
                source[name, row] = k
        notes.update(data.get("notes", {}))
    for name, rows in results.items():
        for row, values in rows.items():
            if source.get((name, "default")) != source[name, row]:
                for key in [key for key in values if key.startswith(("diff.", "p."))]:
                    del values[key]
        rows = dict(sorted(rows.items(), key=lambda kv: kv[0] != "default"))
        results[name] = rows
        print(table(name, notes.get(name, ""), rows) + "\n")
    print(summary(results))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tasks", nargs="+", default=list(TASKS), choices=list(TASKS))
    ap.add_argument("--models", nargs="+", default=["default", *WORLDS, *BASELINES])
    ap.add_argument("--settings", nargs="*", default=[], metavar="NAME=JSON")
    ap.add_argument("--peer", choices=("crfsuite", "skfcrf"), default=None,
                    help="the one-chain taggers of the baselines (default: crfsuite where "
                         "installed)")
    ap.add_argument("--n-jobs", type=int, default=2)
    ap.add_argument("--max-iter", type=int, default=100)
    ap.add_argument("--dictation-seeds", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--n-dictations", type=int, default=225)
    ap.add_argument("--n-conll", type=int, default=2000)
    ap.add_argument("--n-gum", type=int, default=150)
    ap.add_argument("--n-ewt", type=int, default=450)
    ap.add_argument("--max-tokens", type=int, default=600)
    ap.add_argument("--final", action="store_true", help="CoNLL-2003 on eng.testb")
    ap.add_argument("--json", help="write the figures to this file too")
    ap.add_argument("--report", nargs="+", metavar="JSON",
                    help="fit nothing: print the tables of earlier runs' --json files (a "
                         "task in several, the last one's rows replace or join the earlier; "
                         "LABEL=JSON renames that file's default rows to LABEL, drop=JSON "
                         "leaves them out)")
    args = ap.parse_args()
    if args.report:
        report(args.report)
        return
    if args.peer is None:
        try:
            import sklearn_crfsuite  # noqa: F401
            args.peer = "crfsuite"
        except ImportError:
            args.peer = "skfcrf"

    def emit(text):
        print(text, file=sys.stderr, flush=True)

    results, tasks = {}, {}
    for name in args.tasks:
        task = TASKS[name](args)
        if task is None:
            emit(f"{name}: data not found, skipped")
            continue
        tasks[name] = task
        results[name] = run_task(task, args, emit)
        print(table(name, task.note, results[name]) + "\n", flush=True)
        if args.json:
            with open(args.json, "w") as fh:
                json.dump({"args": vars(args), "results": results,
                           "notes": {n: t.note for n, t in tasks.items()}}, fh, indent=1)
    print(summary(results))


if __name__ == "__main__":
    main()
