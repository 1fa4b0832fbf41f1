"""Reading observation dicts: a sequence of plain dicts read at once gives what
reading it token by token gives (columns, values, vocabulary order)."""
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skfcrf._kernels._dicts import read_dict_sequence
from skfcrf.estimators._observations import ObservationEncoder, _token_by_token, _values

NAMES = st.sampled_from([f"n{k}" for k in range(12)])
VALUES = st.one_of(st.floats(-1e6, 1e6), st.integers(-5, 5), st.booleans(),
                   st.integers(2**62, 2**66), st.floats(-1e6, 1e6).map(np.float64),
                   st.floats(-1e6, 1e6, width=32).map(np.float32))
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
    assert read_dict_sequence([{"a": 1.0}, ["a"]], vocabulary, False) is None      # a name list
    assert read_dict_sequence([{"a": "1"}], vocabulary, False) is None              # a string value
    assert read_dict_sequence([{"a": np.ones(2)}, {"a": np.ones(3)}], vocabulary, False) is None
    assert read_dict_sequence([{("a", "b"): 1.0}], vocabulary, True) is None        # not a string
    assert vocabulary == {"a": 0}
    columns, values, counts = read_dict_sequence([{"a": 2, "z": 1.0}, {}], vocabulary, False)
    assert columns.tolist() == [0] and values.tolist() == [2.0] and counts.tolist() == [1, 0]
    assert read_dict_sequence([{"a": np.float32(0.1)}], vocabulary, False) is None
    assert read_dict_sequence([{"a": 10**400}], vocabulary, False) is None      # beyond a double
    assert read_dict_sequence([{"a": 1.0}, {"z": "1"}], vocabulary, False)[1].tolist() == [1.0]
    columns, values, counts = read_dict_sequence([{"b": 2**63, "a": np.float64(0.5)}, {"a": True}],
                                                 vocabulary, True)
    assert vocabulary == {"a": 0, "b": 1}
    assert columns.tolist() == [1, 0, 0] and counts.tolist() == [2, 1]
    assert values.tolist() == [float(2**63), 0.5, 1.0]


def test_values_beyond_a_double_and_unusual_numbers_read_as_before():
    """The sequences the reader hands back are read by the general path: a huge int is
    refused as too large, numpy scalars and other real numbers are taken."""
    X = [[{"a": np.float32(0.5), "b": Fraction(1, 4)}, {"a": np.int64(3)}]]
    csr, _ = ObservationEncoder().fit_transform(X)
    assert csr.toarray().tolist() == [[0.5, 0.25], [3.0, 0.0]]
    with pytest.raises(ValueError, match="finite and at most"):
        ObservationEncoder().fit_transform([[{"a": 10**400}]])


@settings(max_examples=60, deadline=None)
@given(SEQUENCES, st.sampled_from([1, 2]))
def test_fit_transform_is_the_dense_observations_without_stored_zeros(X, min_freq):
    # every column kept and no zero value takes the read matrix as it is; otherwise
    # the pruning masks (a column in fewer than min_freq sequences, or a zero value)
    csr, seq_ptr = ObservationEncoder().fit_transform(X, min_instance_freq=min_freq)
    encoder = ObservationEncoder()
    _, indptr, indices, data, _, n_columns, names, _ = encoder._read_all(X)
    dense = np.zeros((len(indptr) - 1, n_columns))
    for row in range(len(indptr) - 1):
        for k in range(indptr[row], indptr[row + 1]):
            dense[row, indices[k]] += data[k]
    in_sequences = np.zeros(n_columns, int)
    for s in range(len(seq_ptr) - 1):
        in_sequences += (dense[seq_ptr[s]:seq_ptr[s + 1]] != 0).any(axis=0)
    kept = in_sequences >= min_freq
    assert not (csr.data == 0).any()
    np.testing.assert_array_equal(csr.toarray(), dense[:, kept])
