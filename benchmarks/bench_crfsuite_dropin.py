"""Issue 30 goal: the sklearn-crfsuite tutorial with only the import changed, vs CRFsuite.

The features of the sklearn-crfsuite tutorial (``word2features``: bias, lower-cased
word, 3- and 2-letter suffixes, upper/title/digit flags, POS and its first two
letters, the same for the previous and next token, BOS/EOS), on CoNLL-2000
chunking, trained by ``sklearn_crfsuite.CRF`` and by ``skfcrf.crfsuite.CRF`` with
the tutorial's settings: ``c1`` (0 by default; ``--c1 0.1 --c2 0.01`` is the
issue's L1 goal, trained by OWL-QN on both sides), ``c2``, ``max_iterations=100``,
``all_possible_transitions=True``, CRFsuite's stopping tests at their defaults.
One thread on both sides.  Prints the tutorial's score (flat F1 of the chunk
labels without ``"O"``, ``average="weighted"``), the chunk F1 of exact typed spans
(conlleval), training time, the number of non-zero weights and the ratios.

    python benchmarks/bench_crfsuite_dropin.py [--c1 0] [--c2 0.1] [--iterations 100]
"""
import argparse
import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import sklearn_crfsuite  # noqa: E402
import sklearn_crfsuite.metrics  # noqa: E402,F401  (the tutorial imports it: from sklearn_crfsuite import metrics)

from skfcrf import crfsuite  # noqa: E402

from _conll import Timer, chain_labels, chunk_f1, load  # noqa: E402


def word2features(sent, i):
    """The sklearn-crfsuite tutorial's features of token ``i`` of ``sent``."""
    word, postag = sent[i]["word"], sent[i]["pos"]
    features = {
        "bias": 1.0,
        "word.lower()": word.lower(),
        "word[-3:]": word[-3:],
        "word[-2:]": word[-2:],
        "word.isupper()": word.isupper(),
        "word.istitle()": word.istitle(),
        "word.isdigit()": word.isdigit(),
        "postag": postag,
        "postag[:2]": postag[:2],
    }
    if i > 0:
        word1, postag1 = sent[i - 1]["word"], sent[i - 1]["pos"]
        features.update({
            "-1:word.lower()": word1.lower(),
            "-1:word.istitle()": word1.istitle(),
            "-1:word.isupper()": word1.isupper(),
            "-1:postag": postag1,
            "-1:postag[:2]": postag1[:2],
        })
    else:
        features["BOS"] = True
    if i < len(sent) - 1:
        word1, postag1 = sent[i + 1]["word"], sent[i + 1]["pos"]
        features.update({
            "+1:word.lower()": word1.lower(),
            "+1:word.istitle()": word1.istitle(),
            "+1:word.isupper()": word1.isupper(),
            "+1:postag": postag1,
            "+1:postag[:2]": postag1[:2],
        })
    else:
        features["EOS"] = True
    return features


def sent2features(sent):
    return [word2features(sent, i) for i in range(len(sent))]


def run(module, X_train, y_train, X_test, y_test, args):
    """The tutorial's code; ``module`` is ``sklearn_crfsuite`` or ``skfcrf.crfsuite``."""
    crf = module.CRF(algorithm="lbfgs", c1=args.c1, c2=args.c2, max_iterations=args.iterations,
                     all_possible_transitions=True)
    with Timer() as t_fit:
        crf.fit(X_train, y_train)
    with Timer() as t_pred:
        y_pred = crf.predict(X_test)
    labels = list(crf.classes_)
    labels.remove("O")
    flat = module.metrics.flat_f1_score(y_test, y_pred, average="weighted", labels=labels)
    return dict(fit=t_fit.seconds, predict=t_pred.seconds, flat_f1=flat,
                chunk_f1=chunk_f1(y_test, y_pred), n_iter=len(crf.training_log_.iterations),
                n_features=len(crf.state_features_) + len(crf.transition_features_))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--c1", type=float, default=0.0)
    ap.add_argument("--c2", type=float, default=0.1)
    ap.add_argument("--iterations", type=int, default=100)
    args = ap.parse_args()

    X_train, y_train = load("train")
    X_test, y_test = load("test")
    F_train = [sent2features(s) for s in X_train]
    F_test = [sent2features(s) for s in X_test]
    chunks_train, chunks_test = chain_labels(y_train, 1), chain_labels(y_test, 1)
    print(f"train: {len(F_train)} sentences, {sum(map(len, F_train))} tokens; "
          f"c1={args.c1}, c2={args.c2}, max_iterations={args.iterations}, all_possible_transitions=True")

    results = {}
    for name, module in (("sklearn_crfsuite", sklearn_crfsuite), ("skfcrf.crfsuite", crfsuite)):
        results[name] = run(module, F_train, chunks_train, F_test, chunks_test, args)

    print(f"{'':18s} {'fit s':>8s} {'predict s':>10s} {'flat F1':>8s} {'chunk F1':>9s} "
          f"{'iterations':>10s} {'non-zero w':>10s}")
    for name, r in results.items():
        print(f"{name:18s} {r['fit']:8.2f} {r['predict']:10.2f} {r['flat_f1']:8.4f} "
              f"{r['chunk_f1']:9.4f} {r['n_iter']:>10} {r['n_features']:>10}")
    cs, ours = results["sklearn_crfsuite"], results["skfcrf.crfsuite"]
    print(f"ratios skfcrf/CRFsuite: fit {ours['fit'] / cs['fit']:.3f}, predict "
          f"{ours['predict'] / cs['predict']:.3f}; flat F1 difference "
          f"{ours['flat_f1'] - cs['flat_f1']:+.4f}, chunk F1 difference "
          f"{ours['chunk_f1'] - cs['chunk_f1']:+.4f}; non-zero weights ratio "
          f"{ours['n_features'] / cs['n_features']:.3f}")
    if args.c1 > 0:
        print("goal (c1=0.1, c2=0.01): F1 within 0.003, non-zero weights within 10%")
    else:
        print("goal: flat F1 within 0.002, fit ratio <= 0.6")


if __name__ == "__main__":
    main()
