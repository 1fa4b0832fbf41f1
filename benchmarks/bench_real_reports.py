"""End to end on real formatted reports (issue 27, item 6).

The shared MTSamples urology reports (``../shared/data/mtsamples-urology``, 136 real
formatted reports) stand in for a hospital's archive.  Recognizer-style transcripts of
them are made with the generator's noise model (``dictate_report``, word error rate
``--wer``); then exactly what a user does:

1. ``skfcrf prepare REPORTS TRANSCRIPTS -o aligned.txt`` (parse every report, align its
   transcript, carry the labels over);
2. k-fold cross-validation over the reports (sorted by name, fold ``k`` tests every
   ``folds``-th report from the ``k``-th): train on the aligned labels, tag the test
   transcripts;
3. evaluate against the noise model's true transcript labels (per-chain accuracy, joint
   accuracy, WindowDiff, section segment F1) -- so the figures include the label
   transfer's own errors in the training data;
4. render one tagged transcript as a formatted report (``render_text``).

Per fold and as the mean over folds with the half-width of a 95% interval (Student's t
over the folds); the joint-accuracy difference is paired by fold.

The same observations (``make_dictation_features``) train the default ``FactorialCRF``
and, as the baseline measured in the same run, three independent CRFsuite chains
(``sklearn_crfsuite``, L-BFGS, ``c2 = 1 / (2 sigma^2)``, the same ``max_iter``).

``--forbidden-transitions`` fits one ``FactorialCRF`` row per value (``auto``, the
default; ``unseen``, the closed world; ``backoff``; ``none``), each fold's rows in turn,
and pairs every further row's joint accuracy with the first's by fold; each row also
gives the share of test transcripts whose true labelling has probability 0
(``log_prob`` = -inf).

    python benchmarks/bench_real_reports.py [--wer 0.1] [--folds 4] [--n-jobs 2] [--skip-crfsuite]
        [--forbidden-transitions auto unseen backoff none]
"""
import argparse
import glob
import os
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from skfcrf import FactorialCRF
from skfcrf._dictation_vocab import HESITATIONS
from skfcrf.datasets import dictate_report, read_conll
from skfcrf.metrics import chain_accuracy, confidence_interval, joint_accuracy, segment_f1, windowdiff
from skfcrf.structure import parse_report, render_text
from skfcrf.transformers import make_dictation_features

HERE = os.path.dirname(os.path.abspath(__file__))
REPORTS = os.path.join(HERE, "..", "..", "shared", "data", "mtsamples-urology")


def make_archive(directory, wer, seed):
    """Reports and their simulated transcripts in two directories; the true labels."""
    rep_dir, tr_dir = os.path.join(directory, "reports"), os.path.join(directory, "transcripts")
    os.makedirs(rep_dir)
    os.makedirs(tr_dir)
    truth = {}
    for i, path in enumerate(sorted(glob.glob(os.path.join(REPORTS, "*.txt")))):
        name = os.path.basename(path)
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
        toks, labs = parse_report(text, errors="ignore")
        transcript, labels, _ = dictate_report(toks, labs, word_error_rate=wer, random_state=seed + i)
        with open(os.path.join(rep_dir, name), "w", encoding="utf-8") as fh:
            fh.write(text)
        with open(os.path.join(tr_dir, name), "w", encoding="utf-8") as fh:
            fh.write(" ".join(transcript) + "\n")
        truth[name] = (transcript, labels)
    return rep_dir, tr_dir, truth


def crfsuite_chains(F_train, y_train, F_test, sigma, max_iter):
    import sklearn_crfsuite

    pred = [np.empty((len(f), 3), dtype=object) for f in F_test]
    for c in range(3):
        crf = sklearn_crfsuite.CRF(algorithm="lbfgs", c1=0.0, c2=1.0 / (2 * sigma ** 2),
                                   max_iterations=max_iter, all_possible_transitions=True)
        crf.fit(F_train, [[lab[c] for lab in y] for y in y_train])
        for p, seq in zip(pred, crf.predict(F_test)):
            p[:, c] = seq
    return pred


def _gold_log_probs(crf, F_test, gold_test):
    """``log p(true labels | x)`` per test transcript; -inf where the model forbids them
    (a label never seen in training counts as impossible too)."""
    known = [set(c) for c in crf.classes_]
    out = np.full(len(gold_test), -np.inf)
    ok = [i for i, g in enumerate(gold_test)
          if all(set(g[:, c]) <= known[c] for c in range(len(known)))]
    if ok:
        out[ok] = crf.log_prob([F_test[i] for i in ok], [gold_test[i] for i in ok])
    return out


def scores(y_true, y_pred):
    """Accuracy per chain, joint accuracy, WindowDiff per chain, section segment F1."""
    acc = chain_accuracy(y_true, y_pred)
    wd = [windowdiff(y_true, y_pred, chain=c) for c in range(3)]
    return np.array([*acc, joint_accuracy(y_true, y_pred), *wd, segment_f1(y_true, y_pred, chain=2)])


NAMES = ["acc0", "acc1", "acc2", "joint", "wd0", "wd1", "wd2", "secF1"]


def line(label, values, seconds=None):
    t = "" if seconds is None else f" fit {seconds:6.1f} s"
    return f"  {label:28}{t} " + " ".join(f"{v:7.4f}" for v in values)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--wer", type=float, default=0.1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--n-jobs", type=int, default=2)
    ap.add_argument("--sigma", type=float, default=10.0)
    ap.add_argument("--max-iter", type=int, default=100)
    ap.add_argument("--folds", type=int, default=4)
    ap.add_argument("--skip-crfsuite", action="store_true")
    ap.add_argument("--forbidden-transitions", nargs="+", default=["auto"],
                    choices=["auto", "unseen", "backoff", "none"])
    args = ap.parse_args()
    worlds = {f"FactorialCRF {w}" if len(args.forbidden_transitions) > 1 else "FactorialCRF":
              (None if w == "none" else w) for w in args.forbidden_transitions}
    with tempfile.TemporaryDirectory() as tmp:
        rep_dir, tr_dir, truth = make_archive(tmp, args.wer, args.seed)
        out = os.path.join(tmp, "aligned.txt")
        t0 = time.perf_counter()
        res = subprocess.run([sys.executable, "-m", "skfcrf", "prepare", rep_dir, tr_dir, "-o", out, "-q"],
                             capture_output=True, text=True)
        t_prep = time.perf_counter() - t0
        if res.returncode != 0:
            sys.exit(f"prepare failed:\n{res.stderr}")
        X, y = read_conll(out, n_label_columns=3)
    names = sorted(truth)
    assert len(X) == len(names), "prepare skipped pairs: " + res.stderr
    gold = [np.asarray(truth[n][1], dtype=object) for n in names]
    aligned_right = sum(np.sum(np.asarray(a, dtype=object) == g) for a, g in zip(y, gold))
    n_tok = sum(len(g) for g in gold)
    print(f"{len(names)} real reports, transcripts at WER {args.wer}: prepare {t_prep:.1f} s; "
          f"aligned labels agree with the truth on {100 * aligned_right / (3 * n_tok):.2f}% "
          f"of {n_tok} tokens x 3 chains")
    print(f"{args.folds}-fold cross-validation; columns: " + " ".join(f"{n:>7}" for n in NAMES))
    results = {**{name: [] for name in worlds}, "CRFsuite x3": []}
    times = {k: [] for k in results}
    impossible = {name: 0 for name in worlds}
    first = None
    for k in range(args.folds):
        test = list(range(k, len(names), args.folds))
        train = [i for i in range(len(names)) if i % args.folds != k]
        X_train, y_train = [X[i] for i in train], [y[i] for i in train]
        X_test, gold_test = [X[i] for i in test], [gold[i] for i in test]
        features = make_dictation_features()
        F_train = features.fit_transform(X_train)
        F_test = features.transform(X_test)
        for name, world in worlds.items():
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                crf = FactorialCRF(sigma=args.sigma, max_iter=args.max_iter, n_jobs=args.n_jobs,
                                   forbidden_transitions=world, random_state=0).fit(F_train, y_train)
            times[name].append(time.perf_counter() - t0)
            pred = crf.predict(F_test)
            results[name].append(scores(gold_test, pred))
            impossible[name] += int(np.sum(np.isneginf(_gold_log_probs(crf, F_test, gold_test))))
            print(line(f"fold {k} {name}", results[name][-1], times[name][-1]), flush=True)
            if first is None:
                first = (X_test[0], pred[0])
        if not args.skip_crfsuite:
            t0 = time.perf_counter()
            base = crfsuite_chains(F_train, y_train, F_test, args.sigma, args.max_iter)
            times["CRFsuite x3"].append(time.perf_counter() - t0)
            results["CRFsuite x3"].append(scores(gold_test, base))
            print(line(f"fold {k} CRFsuite x3", results["CRFsuite x3"][-1], times["CRFsuite x3"][-1]),
                  flush=True)
    print(f"mean over {args.folds} folds (+- 95% half-width)")
    for name, rows in results.items():
        if not rows:
            continue
        rows = np.array(rows)
        ci = [confidence_interval(rows[:, j]) for j in range(rows.shape[1])]
        print(line(name, [m for m, _ in ci], float(np.sum(times[name]))))
        print("  " + " " * 28 + " " * 14 + " ".join(f"+-{h:5.4f}" for _, h in ci))
    base_name = next(iter(worlds))
    for name in worlds:
        print(f"{name}: true test labellings with probability 0: "
              f"{100 * impossible[name] / len(names):.1f}% of {len(names)} transcripts")
        if name != base_name:
            diff = np.array(results[name])[:, 3] - np.array(results[base_name])[:, 3]
            m, h = confidence_interval(diff)
            print(f"joint accuracy, {name} - {base_name}, paired by fold: {100 * m:+.2f} +- "
                  f"{100 * h:.2f} points; fit time ratio "
                  f"{np.sum(times[name]) / np.sum(times[base_name]):.2f}")
    if results["CRFsuite x3"]:
        diff = np.array(results[base_name])[:, 3] - np.array(results["CRFsuite x3"])[:, 3]
        m, h = confidence_interval(diff)
        print(f"joint accuracy, {base_name} - CRFsuite x3, paired by fold: {100 * m:+.2f} +- "
              f"{100 * h:.2f} points; fit time ratio "
              f"{np.sum(times[base_name]) / np.sum(times['CRFsuite x3']):.2f}")
    print("\nThe first test transcript, tagged and rendered (first 25 lines):")
    text = render_text(first[0], first[1], dictated_punctuation=True, capitalize=True,
                       drop_words=HESITATIONS)
    print("\n".join(text.splitlines()[:25]))


if __name__ == "__main__":
    main()
