"""Reading observation dicts: a sequence of plain dicts read at once gives what
reading it token by token gives (columns, values, vocabulary order)."""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from skfcrf.estimators._observations import ObservationEncoder, _dict_sequence, _token_by_token, _values

NAMES = st.sampled_from([f"n{k}" for k in range(12)])
VALUES = st.one_of(st.floats(-1e6, 1e6), st.integers(-5, 5), st.booleans())
TOKENS = st.dictionaries(NAMES, VALUES, max_size=5)
SEQUENCES = st.lists(st.lists(TOKENS, max_size=6), min_size=1, max_size=5)


def token_by_token(X, vocabulary, grow):
    parts = [_token_by_token(i, list(seq), vocabulary, grow) for i, seq in enumerate(X)]
    counts = np.concatenate([p[2] for p in parts])
    indptr = np.concatenate([[0], np.cumsum(counts)])
    seq_ptr = np.concatenate([[0], np.cumsum([len(seq) for seq in X])])
    data = _values([v for p in parts for v in p[1]], indptr, seq_ptr)
    return indptr, np.concatenate([p[0] for p in parts]), data, seq_ptr


@settings(max_examples=60, deadline=None)
@given(X=SEQUENCES, known=st.lists(NAMES, max_size=8, unique=True), grow=st.booleans())
def test_dicts_read_at_once_as_token_by_token(X, known, grow):
    fast_vocabulary = {name: k for k, name in enumerate(known)}
    slow_vocabulary = dict(fast_vocabulary)
    fast = ObservationEncoder._read_names(X, fast_vocabulary, grow)
    slow = token_by_token(X, slow_vocabulary, grow)
    assert list(fast_vocabulary.items()) == list(slow_vocabulary.items())
    for a, b in zip(fast, slow):
        np.testing.assert_array_equal(a, b)
        assert a.dtype == b.dtype or a.size == 0


def test_sequences_needing_messages_are_read_token_by_token():
    vocabulary = {"a": 0}
    assert _dict_sequence([{"a": 1.0}, ["a"]], vocabulary, False) is None      # a name list
    assert _dict_sequence([{"a": "1"}], vocabulary, False) is None              # a string value
    assert _dict_sequence([{"a": np.ones(2)}, {"a": np.ones(3)}], vocabulary, False) is None
    assert _dict_sequence([{("a", "b"): 1.0}], vocabulary, True) is None        # not a string
    assert vocabulary == {"a": 0}
    columns, values, counts = _dict_sequence([{"a": 2, "z": 1.0}, {}], vocabulary, False)
    assert columns.tolist() == [0] and values.tolist() == [2.0] and counts.tolist() == [1, 0]
