"""The pseudolikelihood kernel against a brute-force reference and finite differences."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skfcrf._kernels._pseudolikelihood import pseudolikelihood

from brute import brute_pl, make_problem

CASES = [
    ((3,), [4, 1, 3], [], 1),
    ((3,), [4, 2], [], 0),
    ((2, 3), [3, 2], [(0, 1)], 1),
    ((2, 3), [3], [(0, 1)], 0),
    ((2, 2, 3), [3, 2], [(0, 1), (1, 2)], 1),
    ((2, 2, 2), [3], [(0, 1), (0, 2), (1, 2)], 0),
]


@pytest.mark.parametrize("n_labels,lengths,couplings,tied", CASES)
@pytest.mark.parametrize("forbid", [False, True])
def test_loss_matches_enumeration(n_labels, lengths, couplings, tied, forbid):
    rng = np.random.default_rng(0)
    prob = make_problem(rng, n_labels, lengths, couplings, tied, forbid)
    loss, _, _ = pseudolikelihood(*prob)
    np.testing.assert_allclose(loss, brute_pl(*prob), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("n_labels,lengths,couplings,tied", CASES)
@pytest.mark.parametrize("forbid", [False, True])
def test_gradient_finite_differences(n_labels, lengths, couplings, tied, forbid):
    rng = np.random.default_rng(1)
    _check_gradient(make_problem(rng, n_labels, lengths, couplings, tied, forbid), 1e-6)


def _check_gradient(prob, atol):
    """The kernel's gradients against central finite differences of its loss."""
    graph, seq_ptr, unary, pair, edge_offset, gold = prob
    _, du, dp = pseudolikelihood(graph, seq_ptr, unary, pair, edge_offset, gold)
    eps = 1e-6

    def total(u, p):
        return pseudolikelihood(graph, seq_ptr, u, p, edge_offset, gold)[0].sum()

    num_u = np.zeros_like(unary)
    for idx in np.ndindex(unary.shape):
        up, um = unary.copy(), unary.copy()
        up[idx] += eps
        um[idx] -= eps
        num_u[idx] = (total(up, pair) - total(um, pair)) / (2 * eps)
    np.testing.assert_allclose(du, num_u, atol=atol)
    finite = np.isfinite(pair)
    num_p = np.zeros_like(pair)
    for i in np.flatnonzero(finite):
        pp, pm = pair.copy(), pair.copy()
        pp[i] += eps
        pm[i] -= eps
        num_p[i] = (total(unary, pp) - total(unary, pm)) / (2 * eps)
    np.testing.assert_allclose(dp[finite], num_p[finite], atol=atol)
    assert np.all(dp[~finite] == 0)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31), n_threads=st.sampled_from([1, 2]))
def test_threads_agree_and_loss_nonnegative(seed, n_threads):
    rng = np.random.default_rng(seed)
    prob = make_problem(rng, (3, 2), list(rng.integers(1, 6, size=5)), [(0, 1)], int(rng.integers(0, 2)))
    l1, u1, p1 = pseudolikelihood(*prob, n_threads=1)
    l2, u2, p2 = pseudolikelihood(*prob, n_threads=n_threads)
    assert np.all(l1 >= 0)
    np.testing.assert_allclose(l1, l2, rtol=1e-12)
    np.testing.assert_allclose(u1, u2, atol=1e-12)
    np.testing.assert_allclose(p1, p2, atol=1e-10)


@pytest.mark.parametrize("scale", [30.0, 400.0])
def test_extreme_potentials_use_the_log_domain_fallback(scale):
    """Products of exponentials under/overflow here; results must still be exact."""
    rng = np.random.default_rng(5)
    graph, seq_ptr, unary, pair, edge_offset, gold = make_problem(rng, (3, 2), [4, 3], [(0, 1)], 1)
    unary *= scale
    pair *= scale
    loss, _, _ = pseudolikelihood(graph, seq_ptr, unary, pair, edge_offset, gold)
    assert np.all(np.isfinite(loss))
    np.testing.assert_allclose(loss, brute_pl(graph, seq_ptr, unary, pair, edge_offset, gold),
                               rtol=1e-9)


def test_threads_agree_on_a_busy_batch():
    """Both threads work at once on long sequences (regression: scratch buffers shared)."""
    rng = np.random.default_rng(11)
    prob = make_problem(rng, (4, 9, 6), [700] * 12, [(0, 1), (1, 2)], 1)
    l1, u1, p1 = pseudolikelihood(*prob, n_threads=1)
    for _ in range(3):
        l2, u2, p2 = pseudolikelihood(*prob, n_threads=2)
        np.testing.assert_allclose(l1, l2, rtol=1e-12)
        np.testing.assert_allclose(u1, u2, atol=1e-10)
        np.testing.assert_allclose(p1, p2, rtol=1e-10, atol=1e-8)


# Tied matrices that are finite and span at most 600 build the pairwise conditionals from the
# cached exp(full score) of each variable; the others recompute the left-out scores.  The
# tests below pit the two paths against each other and against enumeration.

def _block(graph, pair, edge_offset, e):
    la, lb = graph.n_labels[graph.edge_a[e]], graph.n_labels[graph.edge_b[e]]
    return pair[edge_offset[e]:edge_offset[e] + la * lb].reshape(la, lb)


def _with_dead_label(prob, chain, value):
    """Make label 0 of ``chain`` impossible (unary -inf, never gold) and, in a copy, set every
    tied entry that involves it to ``value``.  Both problems have the same pseudolikelihood;
    with ``value`` -inf or far below the rest, every edge touching ``chain`` leaves the cached
    path."""
    graph, seq_ptr, unary, pair, edge_offset, gold = prob
    unary = unary.copy()
    unary[:, graph.label_offset[chain]] = -np.inf
    gold = gold.copy()
    gold[gold[:, chain] == 0, chain] = 1
    poisoned = pair.copy()
    for e in range(graph.n_edges):
        blk = _block(graph, poisoned, edge_offset, e)
        if graph.edge_a[e] == chain:
            blk[0, :] = value
        if graph.edge_b[e] == chain:
            blk[:, 0] = value
    return (graph, seq_ptr, unary, pair, edge_offset, gold), \
        (graph, seq_ptr, unary, poisoned, edge_offset, gold)


@pytest.mark.parametrize("value", [-np.inf, -1000.0, -5000.0])
@pytest.mark.parametrize("n_threads", [1, 2])
def test_cached_path_equals_exact_path(value, n_threads):
    rng = np.random.default_rng(3)
    prob = make_problem(rng, (4, 5, 3), [9, 1, 30, 4, 2, 17], [(0, 1), (0, 2), (1, 2)], 1)
    cached, exact = _with_dead_label(prob, 1, value)
    l1, u1, p1 = pseudolikelihood(*cached, n_threads=n_threads)
    l2, u2, p2 = pseudolikelihood(*exact, n_threads=n_threads)
    assert np.all(np.isfinite(l1)) and np.all(np.isfinite(l2))
    np.testing.assert_allclose(l1, l2, rtol=1e-12)
    np.testing.assert_allclose(u1, u2, rtol=1e-12, atol=1e-13)
    both = np.isfinite(exact[3])
    np.testing.assert_allclose(p1[both], p2[both], rtol=1e-12, atol=1e-12)
    assert np.all(p1[~both] == 0) and np.all(p2[~both] == 0)


@pytest.mark.parametrize("spread,flat", [(300.0, False), (590.0, True), (800.0, False)])
def test_wide_tied_matrices_match_enumeration(spread, flat):
    """Entries far below the rest, in play: kept on the cached path up to a span of 600,
    recomputed beyond.  ``flat``: all entries low but [0, 0] and no gold label 0, so the
    cached conditionals' products reach ~exp(2 * spread), overflow and take the log-domain
    fallback."""
    rng = np.random.default_rng(7)
    prob = make_problem(rng, (3, 2), [4, 3, 1], [(0, 1)], 1)
    graph, seq_ptr, unary, pair, edge_offset, gold = prob
    for e in range(graph.n_edges):
        blk = _block(graph, pair, edge_offset, e)
        top = blk.max()
        if flat:
            blk[:] = top - spread
            blk[0, 0] = top
        else:
            blk[1, 1] = top - spread
    if flat:
        gold[gold == 0] = 1
    loss, du, dp = pseudolikelihood(*prob)
    assert np.all(np.isfinite(loss)) and np.all(np.isfinite(du)) and np.all(np.isfinite(dp))
    np.testing.assert_allclose(loss, brute_pl(*prob), rtol=1e-10)
    _check_gradient(prob, 1e-5)


@pytest.mark.parametrize("n_threads", [1, 2])
def test_forbidden_tied_entries_get_exactly_zero_gradient(n_threads):
    """A tied entry collects the conditionals of many factor instances; at a forbidden (-inf)
    entry, the contributions they add and take away must leave exactly zero."""
    rng = np.random.default_rng(13)
    prob = make_problem(rng, (5, 4), [300, 1, 2, 250, 40], [(0, 1)], 1)
    graph, seq_ptr, unary, pair, edge_offset, gold = prob
    for s in range(len(seq_ptr) - 1):       # chain 0 never goes 0 -> 1 ...
        for g in range(seq_ptr[s] + 1, seq_ptr[s + 1]):
            if gold[g - 1, 0] == 0 and gold[g, 0] == 1:
                gold[g, 0] = 2
    gold[(gold[:, 0] == 3) & (gold[:, 1] == 2), 1] = 0    # ... and (3, 2) never co-occur
    for e in range(graph.n_edges):
        blk = _block(graph, pair, edge_offset, e)
        if graph.edge_kind[e] == 0 and graph.edge_a[e] == 0:
            blk[0, 1] = -np.inf
        elif graph.edge_a[e] == 0 and graph.edge_b[e] == 1:
            blk[3, 2] = -np.inf
    finite = np.isfinite(pair)
    assert np.sum(~finite) == 2
    loss, du, dp = pseudolikelihood(*prob, n_threads=n_threads)
    assert np.all(np.isfinite(loss)) and np.all(np.isfinite(du)) and np.all(np.isfinite(dp))
    assert np.all(dp[~finite] == 0)
