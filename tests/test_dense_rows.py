"""Dense rows of the feature table (``_contract.dense_rows``, ``_table.pxd``): the fused
objectives' products through them equal the entry-by-entry products."""
import numpy as np
import pytest

from skfcrf import FactorialCRF
from skfcrf._kernels import _contract
from skfcrf._kernels._contract import DENSE_WIDTH, dense_rows
from skfcrf.estimators import training_problem


def _data(n_chains, seed=4, n_labels=6):
    """Sequences of random observations; chain 0 has ``n_labels`` labels, the others two."""
    rng = np.random.default_rng(seed)
    X, y = [], []
    for _ in range(30):
        T = int(rng.integers(2, 9))
        X.append([{f"w={rng.integers(12)}": 1.0, f"s={rng.integers(3)}": float(rng.random()),
                   "bias": 1.0} for _ in range(T)])
        labels = [(f"a{rng.integers(n_labels)}", f"b{rng.integers(2)}", f"c{rng.integers(2)}")
                  for _ in range(T)]
        y.append([lab[0] if n_chains == 1 else lab[:n_chains] for lab in labels])
    return X, y


def _terms(objective, n_chains, n_labels=6):
    """The chain-wise kernel's terms of a fit of :func:`_data` (every label's weights,
    so that frequent observations get dense rows), and the starting weights."""
    X, y = _data(n_chains, n_labels=n_labels)
    est = FactorialCRF(objective=objective, unary_features="all", n_jobs=2)
    problem, theta0, _ = training_problem(est, X, y)
    return (problem._fused if objective == "likelihood" else problem.terms), theta0


def test_dense_rows_selection():
    # observation 0: 5 entries in columns 0..8; 1: 2 entries (too few); 2: 4 entries but
    # reaching column 40 (outside the 32 columns from the table's first); 3: none
    feat_ptr = np.array([0, 5, 7, 11, 11])
    ent_col = np.array([1, 2, 3, 5, 8, 0, 1, 2, 3, 4, 40])
    of, slot, base, width = dense_rows(feat_ptr, ent_col)
    assert base == 0 and width == 16        # columns 0..8, rounded up to DENSE_STEP
    assert of.tolist() == [0, -1, -1, -1]
    assert slot.tolist() == [1, 2, 3, 5, 8] + [-1] * 6
    # a table reduced to columns from 10: the rows start there
    of, slot, base, width = dense_rows(feat_ptr[:2], ent_col[:5] + 10)
    assert base == 11 and width == 8 and slot.tolist() == [0, 1, 2, 4, 7]
    # at most DENSE_MAX_ROWS rows, those updated most often
    many = np.arange(0, 4 * 10 + 1, 4)
    cols = np.tile(np.arange(4), 10)
    old = _contract.DENSE_MAX_ROWS
    try:
        _contract.DENSE_MAX_ROWS = 3
        of, slot, _, width = dense_rows(many, cols,
                                        occurrences=np.array([5, 1, 9, 0, 7, 2, 2, 8, 1, 1]))
    finally:
        _contract.DENSE_MAX_ROWS = old
    assert np.flatnonzero(of >= 0).tolist() == [2, 4, 7]
    assert width == 8 and (slot >= 0).sum() == 3 * 4 and slot.max() < 3 * width
    # rows reaching the 32nd column: the longest rows
    _, _, _, width = dense_rows(np.array([0, 4]), np.array([0, 9, 20, 31]))
    assert width == DENSE_WIDTH


@pytest.mark.parametrize("objective, n_chains, n_labels, width",
                         [("likelihood", 1, 6, 8), ("chainwise", 3, 6, 8),
                          ("independent", 3, 6, 8), ("likelihood", 1, 12, 16),
                          ("likelihood", 1, 20, 24), ("independent", 3, 30, 32)])
def test_products_through_dense_rows_equal_the_entries(objective, n_chains, n_labels, width):
    # rows of every length (their copies of the loops in _simd.h) against the entries
    terms, theta0 = _terms(objective, n_chains, n_labels)
    rows = terms.dense if n_chains == 1 else terms._table_of(np.array([True, False, False]))[2]
    assert (rows[0] >= 0).any() and rows[3] == width    # the test exercises such rows
    theta = np.random.default_rng(1).normal(size=theta0.shape)
    chains = None if n_chains == 1 else np.array([True, False, False])
    for which in (None, chains):
        if which is None and objective == "independent":
            continue
        loss, grad = terms.losses_gradient(theta, 2, which)
        dense = terms.dense
        cache = terms._table_cache
        terms.dense = None
        if cache is not None:
            terms._table_cache = (cache[0], cache[1][:2] + (None,))
        ref_loss, ref_grad = terms.losses_gradient(theta, 2, which)
        terms.dense, terms._table_cache = dense, cache
        np.testing.assert_allclose(loss, ref_loss, rtol=1e-12)
        np.testing.assert_allclose(grad, ref_grad, rtol=1e-10, atol=1e-12)


def test_resolve_slots_packs_each_observations_entries_or_dense_row():
    from skfcrf._kernels._contract import SLOT_BITS, resolve_slots

    feat_ptr = np.array([0, 5, 7, 11, 11])
    indices = np.array([2, 0, 3, 1, 0], dtype=np.int32)
    slots = resolve_slots(indices, feat_ptr)
    starts, counts = slots >> SLOT_BITS, slots & ((1 << SLOT_BITS) - 1)
    assert starts.tolist() == feat_ptr[indices].tolist()
    assert counts.tolist() == np.diff(feat_ptr)[indices].tolist()
    # observation 0 has dense row 1: its occurrences name it (-2), the others unchanged
    dense_of = np.array([1, -1, -1, -1], dtype=np.int32)
    with_dense = resolve_slots(indices, feat_ptr, dense_of)
    assert with_dense.tolist() == [slots[0], -2, slots[2], slots[3], -2]
    # an observation with too many entries for the packing: none (looked up as they go)
    assert resolve_slots(np.zeros(1, np.int32), np.array([0, 1 << SLOT_BITS])) is None


@pytest.mark.parametrize("objective, n_chains", [("likelihood", 1), ("chainwise", 3),
                                                 ("independent", 3)])
def test_resolved_observations_give_the_bits_of_the_lookups(objective, n_chains):
    terms, theta0 = _terms(objective, n_chains)
    theta = np.random.default_rng(2).normal(size=theta0.shape)
    chains = None if n_chains == 1 else np.array([False, True, True])
    for which in (None, chains):
        if which is None and objective == "independent":
            continue
        loss, grad = terms.losses_gradient(theta, 2, which)
        assert terms._slots[2][0] is not None       # the kernel read resolved observations
        tables, dense = terms._slots[:2]
        terms._slots = (tables, dense, (None, None))  # the kernel looks them up instead
        ref_loss, ref_grad = terms.losses_gradient(theta, 2, which)
        np.testing.assert_array_equal(loss, ref_loss)
        np.testing.assert_array_equal(grad, ref_grad)
        terms._slots = None


def test_slots_that_name_dense_rows_need_dense_rows():
    terms, theta0 = _terms("likelihood", 1)
    terms.losses_gradient(theta0, 1)
    tables, dense, slots = terms._slots
    assert (slots[0] < 0).any()
    terms._slots = (tables, None, slots)
    terms.dense = None
    with pytest.raises(ValueError, match="dense rows"):
        terms.losses_gradient(theta0, 1)


def test_dense_rows_of_a_length_without_row_products_are_refused():
    terms, theta0 = _terms("likelihood", 1)
    of, slot, base, _ = terms.dense
    terms.dense = (of, slot, base, 40)
    terms._slots = None
    with pytest.raises(ValueError, match="dense rows of 40 values"):
        terms.losses_gradient(theta0, 1)
