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
    python benchmarks/bench_calibration.py --task conll --n-test 2012 \
        --forbidden-transitions auto backoff none --bootstrap 2000
    python benchmarks/bench_calibration.py --task dictations --calibration dev temperature \
        --random-state 0

``--bootstrap N``: for every model after the first, the difference of its chunk F1
(``conll``) or joint accuracy (``dictations``) to the first model's, with a 95% interval
from ``N`` paired bootstrap resamples of the test sequences.  Test sequences with a
label never seen in training have no ``log_prob``; the share of impossible gold
labellings leaves them out and says how many.

``--calibration temperature`` fits ``FactorialCRF(calibration="temperature")``
(``calibration_cv`` from ``--calibration-cv``, the folds from
``--random-state``) and prints its fitted temperatures and the ECE of the same
model's marginals without them (``marginal_temperatures_`` set to 1): the
weights are those of the uncalibrated fit, so joint accuracy and the
uncalibrated ECE equal ``--calibration none``'s.

``--calibration dev`` fits the uncalibrated model and then
``crf.calibrate(X_dev, y_dev)`` on a development set held out from training:
``--n-dev`` further dictations (``make_dictations(n_dev, "rcg",
random_state=--dev-random-state)``, default 100) or the ``--n-dev`` CoNLL-2000 training
sentences after the first ``--n-train`` (default 500).  The fit is the plain one; the
calibration's time is printed apart.

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


def dev_data(task, n_train, n_dev, random_state):
    """A development set held out from :func:`data`'s training and test sets: ``X, y``."""
    if task == "dictations":
        from skfcrf.datasets import make_dictations
        from skfcrf.transformers import make_dictation_features
        X, y = make_dictations(n_dev, style="rcg", random_state=random_state)
        return make_dictation_features().fit_transform(X), y
    from _conll import load, word_observations
    X, y = load("train")
    return word_observations(X[n_train:n_train + n_dev]), y[n_train:n_train + n_dev]


def sequence_counts(task, y, pred):
    """``(n, 3)``: per test sequence, the matched, reference and predicted chunks
    (``conll``) or the jointly right tokens and the tokens twice (``dictations``), so
    that ``2 * a / (b + c)`` of the summed rows is chunk F1 or joint accuracy."""
    if task == "conll":
        from skfcrf.metrics import segment_counts
        rows = []
        for s, p in zip(y, pred):
            counts = segment_counts([[t[1] for t in s]], [list(p[:, 1])])
            true, guessed, right = (sum(c[i] for c in counts.values()) for i in range(3))
            rows.append((right, true, guessed))
        return np.array(rows, dtype=float)
    from skfcrf.metrics import sequence_scores
    n = np.array([len(s) for s in y], dtype=float)
    return np.column_stack([sequence_scores(y, pred, joint_accuracy) * n, n, n])


def paired_bootstrap(counts_a, counts_b, n_resamples, random_state=0):
    """``a - b`` of the score ``2 * sum(right) / (sum(reference) + sum(predicted))`` and
    its 95% interval over ``n_resamples`` resamples of the sequences (the same for both)."""
    def score(c):
        return 2 * c[..., 0].sum(-1) / (c[..., 1].sum(-1) + c[..., 2].sum(-1))
    rng = np.random.default_rng(random_state)
    idx = rng.integers(0, len(counts_a), (n_resamples, len(counts_a)))
    diffs = score(counts_a[idx]) - score(counts_b[idx])
    return score(counts_a) - score(counts_b), *np.percentile(diffs, [2.5, 97.5])


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


def fixed_last_chain_refused(crf, X, y):
    """How many sequences ``decode`` refuses (``ValueError``) with the gold labels of the
    last chain fixed (the dictations' sections, CoNLL's chunks) and the others free."""
    refused = 0
    for x, labels in zip(X, y):
        fixed = np.full(np.shape(labels), None, dtype=object)
        fixed[:, -1] = np.asarray(labels, dtype=object)[:, -1]
        try:
            crf.decode([x], fixed=[fixed])
        except ValueError:
            refused += 1
    return refused


def main():
    ap = task_parser(__doc__)
    ap.add_argument("--forbidden-transitions", nargs="+", default=["auto"],
                    choices=("auto", "none", "unseen", "backoff"))
    ap.add_argument("--calibration", nargs="+", default=["none"],
                    choices=("none", "temperature", "dev"))
    ap.add_argument("--calibration-cv", type=int, default=4)
    ap.add_argument("--n-dev", type=int, default=None,
                    help="--calibration dev: 100 dictations or 500 CoNLL sentences")
    ap.add_argument("--dev-random-state", type=int, default=2)
    ap.add_argument("--random-state", type=int, default=None)
    ap.add_argument("--bootstrap", type=int, default=0)
    args = ap.parse_args()
    Xtr, ytr, Xte, yte, params = data(args.task, args.n_train, args.n_test)
    dev = None
    if "dev" in args.calibration:
        n_dev = args.n_dev or (100 if args.task == "dictations" else 500)
        dev = dev_data(args.task, args.n_train, n_dev, args.dev_random_state)
    first = None
    for forbidden, calibration in [(f, c) for f in args.forbidden_transitions
                                   for c in args.calibration]:
        crf = FactorialCRF(n_jobs=args.n_jobs,
                           forbidden_transitions=None if forbidden == "none" else forbidden,
                           calibration="temperature" if calibration == "temperature" else None,
                           calibration_cv=args.calibration_cv,
                           random_state=args.random_state, **params)
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            crf.fit(Xtr, ytr)
        fit = time.perf_counter() - t0
        calibrate = ""
        if calibration == "dev":
            t0 = time.perf_counter()
            crf.calibrate(*dev)
            calibrate = (f"  calibrate on {len(dev[0])} dev sequences "
                         f"{time.perf_counter() - t0:.2f} s")
        t0 = time.perf_counter()
        pred = crf.predict(Xte)
        decode = time.perf_counter() - t0
        known = [i for i, s in enumerate(yte)
                 if all(np.isin(np.asarray(s, dtype=object)[:, c], crf.classes_[c]).all()
                        for c in range(crf.n_chains_))]
        impossible = float(np.mean(np.isneginf(
            crf.log_prob([Xte[i] for i in known], [yte[i] for i in known]))))
        unknown = (f" ({len(yte) - len(known)} with labels never seen in training left out)"
                   if len(known) < len(yte) else "")
        refused = fixed_last_chain_refused(crf, [Xte[i] for i in known], [yte[i] for i in known])
        ece = chain_ece(crf, Xte, yte)
        chunks = ""
        if args.task == "conll":
            from _conll import chunk_f1
            f1 = chunk_f1([[t[1] for t in s] for s in yte], [list(s[:, 1]) for s in pred])
            chunks = f"  chunk F1 {f1:.4f}"
        extra = ""
        if args.bootstrap:
            counts = sequence_counts(args.task, yte, pred)
            if first is None:
                first = forbidden, counts
            else:
                diff, low, high = paired_bootstrap(counts, first[1], args.bootstrap)
                extra += (f"  {'chunk F1' if args.task == 'conll' else 'joint'} - "
                          f"{first[0]}'s {diff:+.4f} [{low:+.4f}, {high:+.4f}]")
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
              f"  gold impossible {impossible:.1%}{unknown}"
              f"  decode(fixed=gold chain {crf.n_chains_ - 1}) refused {refused}/{len(known)}"
              f"  fit {fit:.1f} s{calibrate}  decode {decode:.2f} s"
              + extra, flush=True)


if __name__ == "__main__":
    main()
