"""Property tests (hypothesis) of the inference kernels over random potentials."""
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from skfcrf._kernels.batch import map_assign, marginals
from skfcrf._kernels.graph import COUPLING, IN_CHAIN, Graph, pair_layout

SETTINGS = settings(max_examples=40, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


@st.composite
def models(draw, max_chains=3, max_labels=4, max_len=6, forbid=True):
    C = draw(st.integers(1, max_chains))
    n_labels = draw(st.lists(st.integers(1, max_labels), min_size=C, max_size=C))
    edges = []
    for c in range(C):
        if draw(st.booleans()) or C == 1:
            edges.append((c, c, IN_CHAIN, int(draw(st.booleans()))))
    for a in range(C):
        for b in range(a + 1, C):
            if b == a + 1 or draw(st.booleans()):
                edges.append((a, b, COUPLING, int(draw(st.booleans()))))
    lengths = draw(st.lists(st.integers(0, max_len), min_size=1, max_size=4))
    seed = draw(st.integers(0, 2**32 - 1))
    scale = draw(st.sampled_from([0.1, 1.0, 5.0]))
    p_forbid = draw(st.sampled_from([0.0, 0.2])) if forbid else 0.0
    rng = np.random.default_rng(seed)
    graph = Graph.build(n_labels, edges)
    seq_ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    N = int(seq_ptr[-1])
    unary = rng.normal(scale=scale, size=(N, graph.total_labels))
    off = pair_layout(graph, N)
    pair = rng.normal(scale=scale, size=int(off[-1]))
    if p_forbid:
        # forbid only off-diagonal in-chain transitions and some unary entries
        # that leave label 0 allowed, so an allowed assignment always exists
        for e in range(graph.n_edges):
            if graph.edge_kind[e] != IN_CHAIN:
                continue
            L = int(graph.n_labels[graph.edge_a[e]])
            m = pair[off[e]:off[e + 1]].reshape(-1, L, L)
            mask = rng.random(m.shape) < p_forbid
            mask[:, np.arange(L), np.arange(L)] = False
            m[mask] = -np.inf
        mask = rng.random(unary.shape) < p_forbid
        mask[:, graph.label_offset[:-1]] = False
        unary[mask] = -np.inf
    return graph, seq_ptr, unary, pair


def _chain_sums(graph, node):
    lo = graph.label_offset
    return np.stack([node[:, lo[c]:lo[c + 1]].sum(axis=1) for c in range(graph.n_chains)],
                    axis=1)


def _check_pair_consistency(graph, seq_ptr, node, pm, atol):
    N = node.shape[0]
    off = pair_layout(graph, N)
    lo = graph.label_offset
    starts = set(int(x) for x in seq_ptr[:-1])
    for e in range(graph.n_edges):
        a, b = int(graph.edge_a[e]), int(graph.edge_b[e])
        la, lb = int(graph.n_labels[a]), int(graph.n_labels[b])
        na = node[:, lo[a]:lo[a + 1]]
        nb = node[:, lo[b]:lo[b + 1]]
        if graph.edge_kind[e] == IN_CHAIN:
            rows = [g for g in range(N) if g not in starts]
            prev = [g - 1 for g in rows]
            exp_row = na[prev]
            exp_col = na[rows]
        else:
            rows = list(range(N))
            exp_row = na[rows]
            exp_col = nb[rows]
        if graph.edge_tied[e]:
            m = pm[off[e]:off[e + 1]].reshape(la, lb)
            np.testing.assert_allclose(m.sum(axis=1), exp_row.sum(axis=0), atol=atol * (N + 1))
            np.testing.assert_allclose(m.sum(axis=0), exp_col.sum(axis=0), atol=atol * (N + 1))
        else:
            m = pm[off[e]:off[e + 1]].reshape(N, la, lb)
            np.testing.assert_allclose(m[rows].sum(axis=2), exp_row, atol=atol)
            np.testing.assert_allclose(m[rows].sum(axis=1), exp_col, atol=atol)
            if graph.edge_kind[e] == IN_CHAIN:
                assert not m[sorted(starts & set(range(N)))].any()


def _score(graph, seq_ptr, unary, pair, labels):
    N = unary.shape[0]
    off = pair_layout(graph, N)
    lo = graph.label_offset
    starts = seq_ptr[:-1]
    seq_of = np.repeat(np.arange(len(seq_ptr) - 1), np.diff(seq_ptr))
    total = np.zeros(len(seq_ptr) - 1)
    for g in range(N):
        s = sum(unary[g, lo[c] + labels[g, c]] for c in range(graph.n_chains))
        for e in range(graph.n_edges):
            a, b = int(graph.edge_a[e]), int(graph.edge_b[e])
            la, lb = int(graph.n_labels[a]), int(graph.n_labels[b])
            base = off[e] if graph.edge_tied[e] else off[e] + g * la * lb
            if graph.edge_kind[e] == IN_CHAIN:
                if g in starts:
                    continue
                s += pair[base + labels[g - 1, a] * lb + labels[g, a]]
            else:
                s += pair[base + labels[g, a] * lb + labels[g, b]]
        total[seq_of[g]] += s
    return total


@SETTINGS
@given(models())
def test_exact_marginals_are_distributions_and_consistent(model):
    graph, seq_ptr, unary, pair = model
    node, pm, logz, conv, nit = marginals(graph, seq_ptr, unary, pair, method="exact")
    assert np.isfinite(logz).all() and conv.all()
    np.testing.assert_allclose(_chain_sums(graph, node), 1.0, atol=1e-9)
    assert (node >= 0).all() and (pm >= 0).all()
    _check_pair_consistency(graph, seq_ptr, node, pm, atol=1e-9)
    # forbidden entries get no mass
    assert not node[np.isneginf(unary)].any()
    assert not pm[np.isneginf(pair)].any()
    # MAP is an allowed labelling whose score is below log Z
    labels, _, _ = map_assign(graph, seq_ptr, unary, pair, method="exact")
    sc = _score(graph, seq_ptr, unary, pair, labels)
    assert np.isfinite(sc).all()
    assert (sc <= logz + 1e-9).all()


@SETTINGS
@given(models(max_labels=3, max_len=5))
def test_trp_marginals_are_distributions(model):
    graph, seq_ptr, unary, pair = model
    node, pm, logz, conv, nit = marginals(graph, seq_ptr, unary, pair, method="trp",
                                          max_iter=200)
    assert np.isfinite(node).all() and np.isfinite(pm).all() and np.isfinite(logz).all()
    np.testing.assert_allclose(_chain_sums(graph, node), 1.0, atol=1e-9)
    assert not node[np.isneginf(unary)].any()
    assert not pm[np.isneginf(pair)].any()
    nonempty = np.diff(seq_ptr) > 0
    assert (nit[nonempty] >= 1).all() and (nit <= 200).all() and not nit[~nonempty].any()
    labels, _, _ = map_assign(graph, seq_ptr, unary, pair, method="trp", max_iter=200)
    assert np.isfinite(_score(graph, seq_ptr, unary, pair, labels)).all()


@SETTINGS
@given(models(), st.floats(-50, 50), st.data())
def test_marginals_invariant_to_unary_row_shift(model, shift, data):
    graph, seq_ptr, unary, pair = model
    N = unary.shape[0]
    if N == 0:
        return
    g = data.draw(st.integers(0, N - 1))
    c = data.draw(st.integers(0, graph.n_chains - 1))
    lo = graph.label_offset
    shifted = unary.copy()
    shifted[g, lo[c]:lo[c + 1]] += shift
    for method in ("exact", "trp"):
        a = marginals(graph, seq_ptr, unary, pair, method=method)
        b = marginals(graph, seq_ptr, shifted, pair, method=method)
        if method == "trp" and not (a[3].all() and b[3].all()):
            continue
        atol = 1e-8 if method == "exact" else 1e-5   # TRP: same fixed point up to tol
        np.testing.assert_allclose(b[0], a[0], atol=atol)
        np.testing.assert_allclose(b[1], a[1], atol=atol * (N + 1))
        s = int(np.searchsorted(seq_ptr, g, side="right") - 1)
        expect = a[2].copy()
        expect[s] += shift
        np.testing.assert_allclose(b[2], expect, rtol=1e-9, atol=atol * (N + 1))
        if method == "trp":
            continue
        la = map_assign(graph, seq_ptr, unary, pair, method=method)[0]
        lb = map_assign(graph, seq_ptr, shifted, pair, method=method)[0]
        np.testing.assert_allclose(_score(graph, seq_ptr, unary, pair, lb),
                                   _score(graph, seq_ptr, unary, pair, la), atol=1e-8)


@SETTINGS
@given(models(max_chains=1, max_labels=5, max_len=12))
def test_single_chain_trp_equals_exact(model):
    graph, seq_ptr, unary, pair = model
    ex = marginals(graph, seq_ptr, unary, pair, method="exact")
    tr = marginals(graph, seq_ptr, unary, pair, method="trp")
    np.testing.assert_allclose(tr[0], ex[0], atol=1e-9)
    np.testing.assert_allclose(tr[1], ex[1], atol=1e-9 * (unary.shape[0] + 1))
    np.testing.assert_allclose(tr[2], ex[2], rtol=1e-9, atol=1e-9)
    le = map_assign(graph, seq_ptr, unary, pair, method="exact")[0]
    lt = map_assign(graph, seq_ptr, unary, pair, method="trp")[0]
    np.testing.assert_allclose(_score(graph, seq_ptr, unary, pair, lt),
                               _score(graph, seq_ptr, unary, pair, le), atol=1e-9)
