"""How much of the CRFsuite cascade's chunk F1 comes from which POS observations.

Trains the cascade's POS tagger (word observations), then three CRFsuite
chunkers on the word observations plus *predicted* POS (gold POS in training):
none, the POS tag at the token only, and POS tags at -1, 0, 1.  Compare with
the full cascade of ``bench_conll_joint.py`` (POS unigrams, bigrams and trigrams
at -2..2).  A two-chain FCRF couples POS and chunk at the same token, so its
chunk chain gets roughly the "POS at the token" information; lagged couplings
would give roughly the "-1, 0, 1" information.

    python benchmarks/ablation_cascade_pos.py
"""
import time

from skfcrf.transformers import NGramWindow, make_sequence_union

from _conll import chain_labels, chunk_f1, crfsuite, load, word_observations
from _conll import merge_observations as merge


def main():
    X_train, y_train = load("train")
    X_test, y_test = load("test")
    W_train, W_test = word_observations(X_train), word_observations(X_test)
    pos_train = chain_labels(y_train, 0)
    chunk_train, chunk_test = chain_labels(y_train, 1), chain_labels(y_test, 1)
    tagger = crfsuite()
    tagger.fit(W_train, pos_train)
    pred_pos = tagger.predict(W_test)
    X_test_pred = [[{"word": tok["word"], "pos": p} for tok, p in zip(s, ps)]
                   for s, ps in zip(X_test, pred_pos)]
    variants = [("words only", None),
                ("words + POS at 0", NGramWindow("pos", offsets=(0,))),
                ("words + POS at -1, 0, 1", NGramWindow("pos", offsets=(-1, 0, 1)))]
    for name, window in variants:
        if window is None:
            C_train, C_test = W_train, W_test
        else:
            union = make_sequence_union(window)
            C_train = merge(W_train, union.fit_transform(X_train))
            C_test = merge(W_test, union.fit_transform(X_test_pred))
        chunker = crfsuite()
        t = time.perf_counter()
        chunker.fit(C_train, chunk_train)
        print(f"{name:26s} chunker {time.perf_counter() - t:6.1f} s  chunk F1 "
              f"{chunk_f1(chunk_test, chunker.predict(C_test)):.4f}", flush=True)


if __name__ == "__main__":
    main()
