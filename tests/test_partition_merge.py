"""Pieces a partitioned (e.g. Dask) fit merges: observation counts and feature-table keys of
parts equal those of the whole training set; and the optional dask dependency stays optional.
These run without dask."""
import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp

from skfcrf import FactorialCRF
from skfcrf.estimators._observations import ObservationCounts, ObservationEncoder
from skfcrf.model._layout import ParameterLayout, unique_int

from _helpers import synthetic


def _parts(X, cuts):
    bounds = [0, *cuts, len(X)]
    return [X[a:b] for a, b in zip(bounds[:-1], bounds[1:])]


@pytest.mark.parametrize("form", ["dicts", "names", "matrix"])
@pytest.mark.parametrize("min_instance_freq", [1, 3, 0.25])
def test_merged_counts_fit_the_whole_sets_encoder(form, min_instance_freq):
    X, _ = synthetic(n_seq=30, seed=4)
    rng = np.random.default_rng(1)
    # "never" only ever has the value 0: it is no observation, and no column is kept for it
    X = [[{**tok, f"rare={rng.integers(0, 40)}": 0.5, "never": 0.0} for tok in seq] for seq in X]
    if form == "names":
        X = [[sorted(tok) for tok in seq] for seq in X]
    elif form == "matrix":
        X = [sp.csr_matrix(rng.integers(0, 2, size=(len(seq), 7)) * 1.0) for seq in X]
    whole = ObservationEncoder()
    Xm, _ = whole.fit_transform(X, min_instance_freq)
    counts = ObservationCounts.merge(ObservationEncoder().count(p) for p in _parts(X, [7, 8, 20]))
    merged = ObservationEncoder().fit_counts(counts, min_instance_freq)
    assert merged.kind == whole.kind
    np.testing.assert_array_equal(merged.kept_columns, whole.kept_columns)
    if form != "matrix":
        np.testing.assert_array_equal(merged.names, whole.names)
        assert merged.vocabulary == whole.vocabulary
        assert list(whole.vocabulary.values()) == list(range(len(whole.names)))
    if form == "dicts":
        assert "never" not in whole.vocabulary
    assert (merged.transform(X)[0] != Xm).nnz == 0


def test_merging_refuses_mixed_forms():
    X, _ = synthetic(n_seq=4)
    names = ObservationEncoder().count(X)
    matrix = ObservationEncoder().count([sp.csr_matrix(np.ones((2, 3)))])
    with pytest.raises(ValueError, match="mix"):
        ObservationCounts.merge([names, matrix])


@pytest.mark.parametrize("modes", [("supported", "default", "default"),
                                   ("all", "supported", "supported"),
                                   ("supported", "all", "supported")])
def test_union_of_part_keys_is_the_whole_sets_layout(modes):
    X, y = synthetic(n_seq=20, n_chains=2, seed=6)
    crf = FactorialCRF(unary_features=modes[0], transition_features=modes[1],
                       coupling_features=modes[2], max_iter=1)
    crf._validate_params()
    Xm, seq_ptr, gold, *_ = crf._encode_training_data(X, y)
    graph = crf.graph_
    keys = [ParameterLayout.support_keys(graph, sp.csr_matrix((0, Xm.shape[1])),
                                         np.zeros(1, np.int64), np.zeros((0, 2), np.int32), *modes)]
    for a, b in [(0, 5), (5, 6), (6, 20)]:
        rows = slice(seq_ptr[a], seq_ptr[b])
        keys.append(ParameterLayout.support_keys(graph, Xm[rows], seq_ptr[a:b + 1] - seq_ptr[a],
                                                 gold[rows], *modes, supported_only=True))
    layout = ParameterLayout.from_keys(graph, Xm.shape[1], unique_int(np.concatenate(keys)))
    np.testing.assert_array_equal(layout.feat_ptr, crf.layout_.feat_ptr)
    np.testing.assert_array_equal(layout.ent_col, crf.layout_.ent_col)


def test_dask_stays_optional():
    """``import skfcrf`` imports no dask; ``skfcrf.dask`` without it says what to install."""
    code = (
        "import sys\n"
        "import skfcrf\n"
        "assert 'dask' not in sys.modules and 'distributed' not in sys.modules\n"
        "sys.modules['dask'] = None\n"          # as if dask were not installed
        "sys.modules['distributed'] = None\n"
        "try:\n"
        "    import skfcrf.dask\n"
        "except ImportError as exc:\n"
        "    assert 'pip install skfcrf[dask]' in str(exc), exc\n"
        "else:\n"
        "    raise AssertionError('no ImportError')\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr


def test_named_encoder_reads_names_as_the_matrix_encoder_read_columns():
    """``named``: a matrix encoder whose columns are called by names, as the encoder of
    those names (same kept columns, same order); names it dropped are dropped."""
    names = ["a", "b", "c", "d"]
    X = [sp.csr_matrix(np.array([[1.0, 0.0, 2.0, 0.0], [0.0, 0.0, 1.0, 0.0]])),
         sp.csr_matrix(np.array([[0.0, 0.0, 3.0, 0.0]]))]
    encoder = ObservationEncoder()
    by_matrix, _ = encoder.fit_transform(X, min_instance_freq=1)
    named = encoder.named(names)
    assert named.names.tolist() == ["a", "c"]
    dicts = [[{n: v for n, v in zip(names, row) if v} for row in m.toarray()] for m in X]
    dicts[0][0]["unknown"] = 5.0
    by_name, _ = named.transform(dicts)
    assert (by_name != by_matrix).nnz == 0
    with pytest.raises(ValueError, match="3 names for 4 columns"):
        encoder.named(names[:3])
    with pytest.raises(ValueError, match="fitted on matrices"):
        named.named(names)
