"""End to end on real formatted reports (issue 27, item 6).

The shared MTSamples urology reports (``../shared/data/mtsamples-urology``, 136 real
formatted reports) stand in for a hospital's archive.  Recognizer-style transcripts of
them are made with the generator's noise model (``dictate_report``, word error rate
``--wer``); then exactly what a user does:

1. ``skfcrf prepare REPORTS TRANSCRIPTS -o aligned.txt`` (parse every report, align its
   transcript, carry the labels over);
2. train on the first 3/4 of the reports (sorted by name), tag the rest;
3. evaluate against the noise model's true transcript labels (per-chain accuracy, joint
   accuracy, WindowDiff, section segment F1) -- so the figures include the label
   transfer's own errors in the training data;
4. render one tagged transcript as a formatted report (``render_text``).

The same observations (``make_dictation_features``) train the default ``FactorialCRF``
and, as the baseline measured in the same run, three independent CRFsuite chains
(``sklearn_crfsuite``, L-BFGS, ``c2 = 1 / (2 sigma^2)``, the same ``max_iter``).

    python benchmarks/bench_real_reports.py [--wer 0.1] [--n-jobs 2] [--skip-crfsuite]
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
from skfcrf.datasets import dictate_report, read_conll
from skfcrf.datasets._dictation_vocab import HESITATIONS
from skfcrf.metrics import chain_accuracy, joint_accuracy, segment_f1, windowdiff
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


def scores(y_true, y_pred):
    acc = chain_accuracy(y_true, y_pred)
    wd = [windowdiff(y_true, y_pred, chain=c) for c in range(3)]
    return (f"accuracy {' / '.join(f'{100 * a:.2f}' for a in acc)}; joint "
            f"{100 * joint_accuracy(y_true, y_pred):.2f}%; WindowDiff {' / '.join(f'{w:.3f}' for w in wd)}; "
            f"section F1 {segment_f1(y_true, y_pred, chain=2):.3f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--wer", type=float, default=0.1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--n-jobs", type=int, default=2)
    ap.add_argument("--sigma", type=float, default=10.0)
    ap.add_argument("--max-iter", type=int, default=100)
    ap.add_argument("--skip-crfsuite", action="store_true")
    args = ap.parse_args()
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
    n_train = int(round(0.75 * len(names)))
    X_train, X_test = X[:n_train], X[n_train:]
    y_train, gold_test = y[:n_train], gold[n_train:]
    features = make_dictation_features()
    F_train = features.fit_transform(X_train)
    F_test = features.transform(X_test)
    print(f"train {n_train} reports (aligned labels), test {len(X_test)} (true labels)")
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        crf = FactorialCRF(sigma=args.sigma, max_iter=args.max_iter, n_jobs=args.n_jobs,
                           random_state=0).fit(F_train, y_train)
    t_fit = time.perf_counter() - t0
    pred = crf.predict(F_test)
    print(f"FactorialCRF (default, n_jobs={args.n_jobs}): fit {t_fit:.1f} s; {scores(gold_test, pred)}")
    if not args.skip_crfsuite:
        t0 = time.perf_counter()
        base = crfsuite_chains(F_train, y_train, F_test, args.sigma, args.max_iter)
        t_base = time.perf_counter() - t0
        print(f"3 independent CRFsuite chains (1 thread): fit {t_base:.1f} s; {scores(gold_test, base)}")
    print("\nThe first test transcript, tagged and rendered (first 25 lines):")
    text = render_text(X_test[0], pred[0], dictated_punctuation=True, capitalize=True,
                       drop_words=HESITATIONS)
    print("\n".join(text.splitlines()[:25]))


if __name__ == "__main__":
    main()
