"""Issue 75 goal: CRFsuite model files shared between CRFsuite and ``skfcrf.crfsuite``.

CoNLL-2000 chunking with the sklearn-crfsuite tutorial's features
(``bench_crfsuite_dropin.word2features``: bias, lower-cased word, 3- and 2-letter
suffixes, upper/title/digit flags, POS and its first two letters, the same for
the neighbouring tokens, BOS/EOS) plus one real-valued attribute (the word's
length / 10), L-BFGS with ``c1=0.1, c2=0.1, max_iterations=50``.

1. A model trained by python-crfsuite (``sklearn_crfsuite.CRF(model_filename=...)``)
   is loaded by ``skfcrf.crfsuite.CRF(model_filename=...)``: labels of the whole
   test set compared token by token with CRFsuite's, marginals compared too.
2. A model trained by ``skfcrf.crfsuite.CRF(model_filename=...)`` is opened by
   ``pycrfsuite.Tagger``: its labels compared with skfcrf's predictions.
3. The file written back from the model read in 1 is compared byte by byte
   with CRFsuite's.

Prints the counts of differing tokens (the goal: 0 both ways).

    python benchmarks/crfsuite_model_files.py [--iterations 50] [--keep DIR]
"""
import argparse
import os
import tempfile
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import pycrfsuite  # noqa: E402
import sklearn_crfsuite  # noqa: E402
from bench_crfsuite_dropin import word2features  # noqa: E402

from skfcrf import crfsuite  # noqa: E402
from skfcrf.crfsuite import _model_file  # noqa: E402

from _conll import chain_labels, load  # noqa: E402


def sent2features(sent):
    """The tutorial's features of every token, plus a real-valued attribute."""
    out = []
    for i in range(len(sent)):
        features = word2features(sent, i)
        features["word.len/10"] = len(sent[i]["word"]) / 10
        out.append(features)
    return out


def differing(a, b):
    """``(tokens, sequences)`` where the labellings ``a`` and ``b`` differ."""
    tokens = sum(sum(x != y for x, y in zip(s, t)) + abs(len(s) - len(t)) for s, t in zip(a, b))
    return tokens, sum(list(s) != list(t) for s, t in zip(a, b))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--iterations", type=int, default=50)
    ap.add_argument("--keep", metavar="DIR", help="write the model files there (default: a "
                    "temporary directory, removed at the end)")
    args = ap.parse_args()

    X_train, y_train = load("train")
    X_test, y_test = load("test")
    F_train = [sent2features(s) for s in X_train]
    F_test = [sent2features(s) for s in X_test]
    chunks_train = chain_labels(y_train, 1)
    n_tokens = sum(map(len, F_test))
    params = dict(algorithm="lbfgs", c1=0.1, c2=0.1, max_iterations=args.iterations)
    print(f"CoNLL-2000 chunking: train {len(F_train)} sentences, test {len(F_test)} sentences "
          f"/ {n_tokens} tokens; {params}")

    with tempfile.TemporaryDirectory() as tmp:
        folder = args.keep or tmp
        os.makedirs(folder, exist_ok=True)
        peer_path = os.path.join(folder, "crfsuite.crfsuite")
        ours_path = os.path.join(folder, "skfcrf.crfsuite")

        # 1. CRFsuite's model in skfcrf
        t = time.perf_counter()
        peer = sklearn_crfsuite.CRF(**params, model_filename=peer_path).fit(F_train, chunks_train)
        fit_peer = time.perf_counter() - t
        y_peer = list(peer.predict(F_test))
        t = time.perf_counter()
        loaded = crfsuite.CRF(model_filename=peer_path)
        y_loaded = list(loaded.predict(F_test))
        load_predict = time.perf_counter() - t
        tok, seq = differing(y_peer, y_loaded)
        print(f"\n1. python-crfsuite model ({os.path.getsize(peer_path)} bytes, "
              f"{peer.num_attributes_} attributes, {len(peer.classes_)} labels; fit "
              f"{fit_peer:.1f} s) loaded by skfcrf.crfsuite.CRF(model_filename=...): load + "
              f"predict {load_predict:.1f} s")
        print(f"   differing tokens: {tok} of {n_tokens} ({seq} of {len(F_test)} sentences)")
        m_peer = peer.predict_marginals(F_test[:200])
        m_ours = loaded.predict_marginals(F_test[:200])
        gap = max(abs(a[k] - b[k]) for sa, sb in zip(m_peer, m_ours) for a, b in zip(sa, sb)
                  for k in a)
        print(f"   largest marginal difference (first 200 sentences): {gap:.2e}")
        same = (loaded.classes_ == peer.classes_ and loaded.attributes_ == peer.attributes_
                and loaded.size_ == peer.size_ and loaded.num_attributes_ == peer.num_attributes_)
        print(f"   classes_, attributes_, size_, num_attributes_ equal: {same}")
        info_ours, info_peer = loaded.tagger_.info(), peer.tagger_.info()
        print("   tagger_.info() equal (header, labels, attributes, transitions, "
              "state_features): " + str([getattr(info_ours, k) == getattr(info_peer, k) for k in (
                  "header", "labels", "attributes", "transitions", "state_features")]))

        # 3. the file written back
        with open(peer_path, "rb") as fh:
            original = fh.read()
        rewritten = _model_file.to_bytes(_model_file.read(original))
        print(f"\n3. CRFsuite's file read and written back by skfcrf: byte-identical: "
              f"{rewritten == original}")

        # 2. skfcrf's model in pycrfsuite
        t = time.perf_counter()
        ours = crfsuite.CRF(**params, model_filename=ours_path).fit(F_train, chunks_train)
        fit_ours = time.perf_counter() - t
        y_ours = list(ours.predict(F_test))
        tagger = pycrfsuite.Tagger()
        tagger.open(ours_path)
        y_tagged = [tagger.tag(x) for x in F_test]
        tok, seq = differing(y_ours, y_tagged)
        print(f"\n2. skfcrf.crfsuite model ({os.path.getsize(ours_path)} bytes, "
              f"{ours.num_attributes_} attributes; fit {fit_ours:.1f} s) opened by "
              "pycrfsuite.Tagger")
        print(f"   differing tokens: {tok} of {n_tokens} ({seq} of {len(F_test)} sentences)")
        probs = []
        for x, yp in zip(F_test[:200], y_ours[:200]):
            tagger.set(x)
            ours.tagger_.set(x)
            probs.append(abs(tagger.probability(yp) - ours.tagger_.probability(yp)))
        print(f"   largest P(y|x) difference (first 200 sentences): {max(probs):.2e}")
        gold = chain_labels(y_test, 1)
        acc = [np.mean([a == b for s, t in zip(pred, gold) for a, b in zip(s, t)])
               for pred in (y_ours, y_peer)]
        print(f"   (token accuracy: skfcrf's model {acc[0]:.4f}, CRFsuite's {acc[1]:.4f})")


if __name__ == "__main__":
    main()
