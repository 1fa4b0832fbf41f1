"""Shared set-up of the CoNLL-2000 benchmarks: data, observations, scoring.

The observations are those of CRFsuite's chunking example (words at -2..2 and
the word bigrams around the token, POS tags at -2..2 with their bigrams and
trigrams), built once by skfcrf's transformers; both toolkits are given the very
same per-token dicts.
"""
import os
import time

from skfcrf.datasets import read_conll
from skfcrf.metrics import segment_f1
from skfcrf.transformers import NGramWindow, make_sequence_union

DATA = os.environ.get(
    "SKFCRF_CONLL2000",
    os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data", "conll2000"),
)


def load(split):
    """Tokens (dicts with word and pos) and labels (n_tokens, 2): POS, chunk."""
    X, y = read_conll(os.path.join(DATA, f"{split}.txt"), n_label_columns=1,
                      attributes=("word", "pos"))
    pos_chunk = [[(tok["pos"], lab) for tok, lab in zip(xs, ys)] for xs, ys in zip(X, y)]
    return X, pos_chunk


def chunk_observations(X, use_pos=True):
    """CRFsuite-example observations: word and (optionally) POS n-grams in a window."""
    parts = [NGramWindow("word", ngram_range=(1, 2))]
    if use_pos:
        parts.append(NGramWindow("pos", ngram_range=(1, 3)))
    return make_sequence_union(*parts).fit_transform(X)


def word_observations(X):
    """Observations from words only (for joint POS + chunk tagging)."""
    from skfcrf.transformers import WordShape
    suffix = [[{"word": tok["word"], "suf3": tok["word"][-3:].lower(), "suf2": tok["word"][-2:].lower(),
                "lower": tok["word"].lower()} for tok in seq] for seq in X]
    union = make_sequence_union(
        NGramWindow("word", ngram_range=(1, 2)),
        NGramWindow("lower", offsets=(-1, 0, 1)),
        NGramWindow("suf3", offsets=(-1, 0, 1)),
        NGramWindow("suf2", offsets=(0,)),
        WordShape(mode="repg"),
    )
    return union.fit_transform(suffix)


def merge_observations(a, b):
    """Per-token union of two observation sets (lists of lists of dicts)."""
    return [[{**ta, **tb} for ta, tb in zip(sa, sb)] for sa, sb in zip(a, b)]


def crfsuite(c2=1.0, max_iterations=100):
    """The CRFsuite peer every CoNLL benchmark uses: L-BFGS, L2 only, no early stop."""
    import sklearn_crfsuite
    return sklearn_crfsuite.CRF(algorithm="lbfgs", c1=0.0, c2=c2, max_iterations=max_iterations,
                                num_memories=6, epsilon=1e-12, delta=1e-12,
                                all_possible_transitions=True)


def chain_labels(y, k):
    """Chain ``k`` of (POS, chunk) label pairs: 0 the POS tags, 1 the chunk tags."""
    return [[labels[k] for labels in seq] for seq in y]


def chunk_f1(y_true_chunks, y_pred_chunks):
    return segment_f1([list(s) for s in y_true_chunks], [list(s) for s in y_pred_chunks], chain=0)


class Timer:
    def __enter__(self):
        self.start = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.seconds = time.perf_counter() - self.start
