"""Calibration of the token marginals: expected calibration error per chain.

Per chain, every test token's confidence is its largest marginal
(``predict_marginals``) and it is right when that label is the gold one; the
tokens are put in 10 equal-width bins of confidence and
``ECE = sum_b n_b / N * |accuracy_b - mean confidence_b|``.  Also prints joint
accuracy, the fit and decoding times, and the share of test sequences whose
gold labelling has probability 0 (``log_prob == -inf``).

    python benchmarks/bench_calibration.py --task dictations [--forbidden-transitions auto none]
    python benchmarks/bench_calibration.py --task conll --n-train 2000 --n-test 500
    python benchmarks/bench_calibration.py --task dictations --calibration none temperature \
        --random-state 0

``--calibration temperature`` fits ``FactorialCRF(calibration="temperature")``
(``calibration_cv`` from ``--calibration-cv``, the folds from
``--random-state``) and prints its fitted temperatures and the ECE of the same
model's marginals without them (``marginal_temperatures_`` set to 1): the
weights are those of the uncalibrated fit, so joint accuracy and the
uncalibrated ECE equal ``--calibration none``'s.

``dictations``: ``make_dictations(300, "rcg", random_state=1)``, the first 200
reports to train, the last 100 to test, ``make_dictation_features()``,
``sigma=31.6``.  ``conll`` (also the chunk F1): CoNLL-2000 POS + chunks from word observations
(``_conll.word_observations``), the first ``--n-train`` training sentences and
the first ``--n-test`` test sentences.
"""
import argparse
import time
import warnings

import numpy as np

from skfcrf import FactorialCRF
from skfcrf.metrics import joint_accuracy


def expected_calibration_error(confidence, correct, n_bins=10):
    """``sum_b n_b / N * |accuracy_b - confidence_b|`` over equal-width confidence bins."""
    confidence = np.asarray(confidence, float)
    correct = np.asarray(correct, float)
    bins = np.minimum((confidence * n_bins).astype(int), n_bins - 1)
    ece = 0.0
    for b in range(n_bins):
        sel = bins == b
        if sel.any():
            ece += sel.mean() * abs(correct[sel].mean() - confidence[sel].mean())
    return ece


def chain_ece(crf, X, y, marginals=None):
    """ECE per chain of ``crf``'s marginals (``predict_marginals``) on ``(X, y)``."""
    if marginals is None:
        marginals = crf.predict_marginals(X)
    out = []
    for c in range(crf.n_chains_):
        conf, right = [], []
        for seq_m, seq_y in zip(marginals, y):
            m = seq_m[c]
            gold = np.asarray(seq_y, dtype=object)[:, c]
            conf.append(m.max(axis=1))
            right.append(crf.classes_[c][m.argmax(axis=1)] == gold)
        out.append(expected_calibration_error(np.concatenate(conf), np.concatenate(right)))
    return out


def task_parser(doc):
    """The options of the scripts that run on :func:`data`: ``--task``, ``--n-train``,
    ``--n-test`` (CoNLL-2000 sentences) and ``--n-jobs``."""
    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    ap.add_argument("--task", choices=("dictations", "conll"), default="dictations")
    ap.add_argument("--n-train", type=int, default=2000)
    ap.add_argument("--n-test", type=int, default=500)
    ap.add_argument("--n-jobs", type=int, default=2)
    return ap


def data(task, n_train, n_test):
    if task == "dictations":
        from skfcrf.datasets import make_dictations
        from skfcrf.transformers import make_dictation_features
        X, y = make_dictations(300, style="rcg", random_state=1)
        F = make_dictation_features().fit_transform(X)
        return F[:200], y[:200], F[200:], y[200:], dict(sigma=31.6)
    from _conll import load, word_observations
    Xtr, ytr = load("train")
    Xte, yte = load("test")
    Xtr, ytr, Xte, yte = Xtr[:n_train], ytr[:n_train], Xte[:n_test], yte[:n_test]
    both = word_observations(Xtr + Xte)
    return both[:len(Xtr)], ytr, both[len(Xtr):], yte, {}


def timed_fit(model, X, y):
    """Fit ``model`` with its warnings silenced; the seconds it took."""
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(X, y)
    return time.perf_counter() - t0


def summary(task, y, pred, baseline=None):
    """Joint accuracy, per-chain accuracy, chunk F1 (``conll``) or WindowDiff per chain
    and (against the ``baseline`` predictions) the paired t-test's p-value of the
    per-sequence joint accuracy, as one line."""
    from skfcrf.metrics import chain_accuracy, paired_test, sequence_scores, windowdiff
    n_chains = pred[0].shape[1]
    chains = " / ".join(f"{chain_accuracy(y, pred, chain=c):.4f}" for c in range(n_chains))
    if task == "conll":
        from _conll import chunk_f1
        f1 = chunk_f1([[t[1] for t in s] for s in y], [list(s[:, 1]) for s in pred])
        extra = f"chunk F1 {f1:.4f}"
    else:
        extra = "WindowDiff " + " / ".join(f"{windowdiff(y, pred, chain=c):.4f}"
                                            for c in range(n_chains))
    if baseline is not None:
        test = paired_test(sequence_scores(y, pred, joint_accuracy),
                           sequence_scores(y, baseline, joint_accuracy))
        extra += f"  paired t p={test.pvalue:.3f}"
    return f"joint {joint_accuracy(y, pred):.4f}  per chain {chains}  {extra}"


def tag_scores(y, pred):
    """Token F1 (micro / macro) and Cohen's kappa over every chain's tags (``O`` not a
    tag), as one line."""
    from skfcrf.metrics import cohen_kappa, token_f1
    return (f"token F1 {token_f1(y, pred, outside=['O']):.4f} / "
            f"{token_f1(y, pred, average='macro', outside=['O']):.4f}"
            f"  kappa {cohen_kappa(y, pred, outside=['O']):.4f}")


def main():
    ap = task_parser(__doc__)
    ap.add_argument("--forbidden-transitions", nargs="+", default=["auto"],
                    choices=("auto", "none", "unseen", "backoff"))
    ap.add_argument("--calibration", nargs="+", default=["none"],
                    choices=("none", "temperature"))
    ap.add_argument("--calibration-cv", type=int, default=4)
    ap.add_argument("--random-state", type=int, default=None)
    args = ap.parse_args()
    Xtr, ytr, Xte, yte, params = data(args.task, args.n_train, args.n_test)
    for forbidden, calibration in [(f, c) for f in args.forbidden_transitions
                                   for c in args.calibration]:
        crf = FactorialCRF(n_jobs=args.n_jobs,
                           forbidden_transitions=None if forbidden == "none" else forbidden,
                           calibration=None if calibration == "none" else calibration,
                           calibration_cv=args.calibration_cv,
                           random_state=args.random_state, **params)
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            crf.fit(Xtr, ytr)
        fit = time.perf_counter() - t0
        t0 = time.perf_counter()
        pred = crf.predict(Xte)
        decode = time.perf_counter() - t0
        impossible = float(np.mean(np.isneginf(crf.log_prob(Xte, yte))))
        ece = chain_ece(crf, Xte, yte)
        chunks = ""
        if args.task == "conll":
            from _conll import chunk_f1
            f1 = chunk_f1([[t[1] for t in s] for s in yte], [list(s[:, 1]) for s in pred])
            chunks = f"  chunk F1 {f1:.4f}"
        extra = ""
        if calibration != "none":
            temperatures = crf.marginal_temperatures_
            crf.marginal_temperatures_ = np.ones(crf.n_chains_)
            before = chain_ece(crf, Xte, yte)
            crf.marginal_temperatures_ = temperatures
            extra = (f"  temperatures {' / '.join(f'{t:.2f}' for t in temperatures)}"
                     f"  (without: ECE {' / '.join(f'{e:.4f}' for e in before)})")
        print(f"{args.task} forbidden_transitions={forbidden} calibration={calibration}: "
              f"joint {joint_accuracy(yte, pred):.4f}{chunks}"
              f"  ECE per chain {' / '.join(f'{e:.4f}' for e in ece)}"
              f"  gold impossible {impossible:.1%}  fit {fit:.1f} s  decode {decode:.2f} s"
              + extra, flush=True)


if __name__ == "__main__":
    main()
