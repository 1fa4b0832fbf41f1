"""Inference kernels (skfcrf._kernels.batch) against brute-force enumeration."""
import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skfcrf._kernels.batch import MAX_PRODUCT_STATES, coupled_components, map_assign, marginals
from skfcrf._kernels.graph import COUPLING, IN_CHAIN, Graph, pair_layout

# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------


def random_model(rng, n_labels, edges, lengths, scale=1.0, coupling_scale=None,
                 p_forbid=0.0):
    """Random unary / pair log-potentials for ``graph`` and sequence lengths."""
    graph = Graph.build(n_labels, edges)
    seq_ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    N = int(seq_ptr[-1])
    unary = rng.normal(scale=scale, size=(N, graph.total_labels))
    off = pair_layout(graph, N)
    pair = np.zeros(int(off[-1]))
    for e in range(graph.n_edges):
        s = coupling_scale if (coupling_scale is not None
                               and graph.edge_kind[e] == COUPLING) else scale
        pair[off[e]:off[e + 1]] = rng.normal(scale=s, size=int(off[e + 1] - off[e]))
    if p_forbid > 0:
        for e in range(graph.n_edges):
            seg = pair[off[e]:off[e + 1]]
            seg[rng.random(seg.shape) < p_forbid] = -np.inf
        mask = rng.random(unary.shape) < p_forbid / 2
        unary[mask] = -np.inf
    return graph, seq_ptr, unary, pair


def _pair_scores(graph, pair, off, e, g):
    la = int(graph.n_labels[graph.edge_a[e]])
    lb = int(graph.n_labels[graph.edge_b[e]])
    start = off[e] if graph.edge_tied[e] else off[e] + g * la * lb
    return pair[start:start + la * lb].reshape(la, lb)


def score_function(graph, unary, pair):
    """``score(g0, T, y)``: total log-potential of labelling ``y`` (T, C)."""
    off = pair_layout(graph, unary.shape[0])
    C = graph.n_chains
    lo = graph.label_offset

    def score(g0, T, y):
        s = 0.0
        for t in range(T):
            for c in range(C):
                s += unary[g0 + t, lo[c] + y[t, c]]
        for e in range(graph.n_edges):
            a, b = graph.edge_a[e], graph.edge_b[e]
            for t in range(T):
                if graph.edge_kind[e] == IN_CHAIN:
                    if t == 0:
                        continue
                    s += _pair_scores(graph, pair, off, e, g0 + t)[y[t - 1, a], y[t, a]]
                else:
                    s += _pair_scores(graph, pair, off, e, g0 + t)[y[t, a], y[t, b]]
        return s

    return score


def brute_force(graph, seq_ptr, unary, pair):
    """Enumerate every joint labelling of every sequence.

    Returns node marginals, pair marginals (layout of ``pair``), log Z and
    the best score and the score function (to check MAP labellings).
    """
    N = unary.shape[0]
    off = pair_layout(graph, N)
    C = graph.n_chains
    lo = graph.label_offset
    node = np.zeros_like(unary)
    pout = np.zeros_like(pair)
    logz = np.zeros(len(seq_ptr) - 1)
    best = np.zeros(len(seq_ptr) - 1)
    score = score_function(graph, unary, pair)

    for si in range(len(seq_ptr) - 1):
        g0, g1 = int(seq_ptr[si]), int(seq_ptr[si + 1])
        T = g1 - g0
        ys = list(itertools.product(*[range(int(graph.n_labels[c])) for _ in range(T)
                                      for c in range(C)]))
        ys = [np.asarray(y).reshape(T, C) for y in ys]
        sc = np.array([score(g0, T, y) for y in ys])
        mx = sc.max()
        best[si] = mx
        if mx == -np.inf:
            logz[si] = -np.inf
            continue
        p = np.exp(sc - mx)
        z = p.sum()
        logz[si] = mx + np.log(z)
        p /= z
        for y, pr in zip(ys, p):
            for t in range(T):
                for c in range(C):
                    node[g0 + t, lo[c] + y[t, c]] += pr
            for e in range(graph.n_edges):
                a, b = graph.edge_a[e], graph.edge_b[e]
                la, lb = int(graph.n_labels[a]), int(graph.n_labels[b])
                for t in range(T):
                    if graph.edge_kind[e] == IN_CHAIN:
                        if t == 0:
                            continue
                        i, j = y[t - 1, a], y[t, a]
                    else:
                        i, j = y[t, a], y[t, b]
                    base = off[e] if graph.edge_tied[e] else off[e] + (g0 + t) * la * lb
                    pout[base + i * lb + j] += pr
    return node, pout, logz, best, score


def labelling_scores(graph, seq_ptr, labels, score):
    out = []
    for si in range(len(seq_ptr) - 1):
        g0, g1 = int(seq_ptr[si]), int(seq_ptr[si + 1])
        out.append(score(g0, g1 - g0, labels[g0:g1]))
    return np.array(out)


def model_zoo():
    """(n_labels, edges) of small graphs: 1-3 chains, tied/untied, several templates."""
    return [
        ([3], [(0, 0, IN_CHAIN, 1)]),
        ([2], [(0, 0, IN_CHAIN, 0)]),
        ([3], [(0, 0, IN_CHAIN, 1), (0, 0, IN_CHAIN, 0)]),
        ([2], []),
        ([2, 3], [(0, 0, IN_CHAIN, 1), (1, 1, IN_CHAIN, 1), (0, 1, COUPLING, 1)]),
        ([3, 2], [(0, 0, IN_CHAIN, 0), (1, 1, IN_CHAIN, 1), (0, 1, COUPLING, 0),
                  (0, 1, COUPLING, 1)]),
        ([2, 2], [(0, 0, IN_CHAIN, 1), (0, 1, COUPLING, 1)]),          # chain 1 no in-chain
        ([2, 3, 2], [(0, 0, IN_CHAIN, 1), (1, 1, IN_CHAIN, 0), (2, 2, IN_CHAIN, 1),
                     (0, 1, COUPLING, 1), (1, 2, COUPLING, 0)]),
        ([2, 2, 2], [(0, 0, IN_CHAIN, 1), (1, 1, IN_CHAIN, 1), (2, 2, IN_CHAIN, 1),
                     (0, 1, COUPLING, 1), (1, 2, COUPLING, 1), (0, 2, COUPLING, 1)]),
    ]


def max_lengths(n_labels):
    C = len(n_labels)
    return {1: 4, 2: 3, 3: 2}[C] if np.prod(n_labels) > 4 else {1: 4, 2: 3, 3: 3}[C]


# ---------------------------------------------------------------------------
# exact inference == enumeration
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("zoo_index", range(len(model_zoo())))
@pytest.mark.parametrize("p_forbid", [0.0, 0.25])
def test_exact_matches_enumeration(zoo_index, p_forbid):
    n_labels, edges = model_zoo()[zoo_index]
    rng = np.random.default_rng(100 + zoo_index)
    Tmax = max_lengths(n_labels)
    lengths = [1] + list(range(1, Tmax + 1))
    graph, seq_ptr, unary, pair = random_model(rng, n_labels, edges, lengths, scale=1.5,
                                               p_forbid=p_forbid)
    node_bf, pair_bf, logz_bf, best_bf, score = brute_force(graph, seq_ptr, unary, pair)
    node, pm, logz, conv, nit = marginals(graph, seq_ptr, unary, pair, method="exact")
    assert conv.all()
    np.testing.assert_allclose(logz, logz_bf, rtol=1e-10, atol=1e-10)
    ok = np.repeat(np.isfinite(logz_bf), np.diff(seq_ptr))
    np.testing.assert_allclose(node[ok], node_bf[ok], atol=1e-10)
    if ok.all():
        np.testing.assert_allclose(pm, pair_bf, atol=1e-10)
    labels, conv, _ = map_assign(graph, seq_ptr, unary, pair, method="exact")
    assert labels.dtype == np.int32 and labels.shape == (unary.shape[0], graph.n_chains)
    got = labelling_scores(graph, seq_ptr, labels, score)
    fin = np.isfinite(best_bf)
    np.testing.assert_allclose(got[fin], best_bf[fin], rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("n_labels, edges, parts", [
    ([2, 3, 2], [(0, 0, IN_CHAIN, 1), (1, 1, IN_CHAIN, 0), (2, 2, IN_CHAIN, 1),
                 (0, 1, COUPLING, 1)], [[0, 1], [2]]),
    ([2, 2, 3], [(0, 0, IN_CHAIN, 0), (2, 2, IN_CHAIN, 1), (1, 1, IN_CHAIN, 1)],
     [[0], [1], [2]]),
    ([3, 2, 2], [(0, 0, IN_CHAIN, 1), (1, 1, IN_CHAIN, 1), (0, 2, COUPLING, 0),
                 (2, 2, IN_CHAIN, 0)], [[0, 2], [1]]),
])
@pytest.mark.parametrize("p_forbid", [0.0, 0.3])
def test_exact_over_uncoupled_components_matches_enumeration(n_labels, edges, parts,
                                                             p_forbid):
    """Chains no coupling joins are inferred apart, as exactly as over the product.
    Sequences one component allows no labelling add nothing anywhere (brute force)."""
    rng = np.random.default_rng(31 + int(10 * p_forbid) + len(edges))
    graph, seq_ptr, unary, pair = random_model(rng, n_labels, edges, [1, 2, 3, 3, 2],
                                               scale=1.5, p_forbid=p_forbid)
    assert coupled_components(graph) == parts
    if p_forbid:
        # the last chain allows sequence 3 no label at its first token
        unary[seq_ptr[3], graph.label_offset[-2]:] = -np.inf
    node_bf, pair_bf, logz_bf, best_bf, score = brute_force(graph, seq_ptr, unary, pair)
    assert np.isfinite(logz_bf).any() and np.isinf(logz_bf).any() == bool(p_forbid)
    node, pm, logz, conv, nit = marginals(graph, seq_ptr, unary, pair, method="exact")
    assert conv.all() and (nit == 1).all()
    np.testing.assert_allclose(logz, logz_bf, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(node, node_bf, atol=1e-10)
    np.testing.assert_allclose(pm, pair_bf, atol=1e-10)
    labels, _, _ = map_assign(graph, seq_ptr, unary, pair, method="exact")
    fin = np.isfinite(best_bf)
    np.testing.assert_allclose(labelling_scores(graph, seq_ptr, labels, score)[fin],
                               best_bf[fin], rtol=1e-10, atol=1e-10)


def test_exact_over_components_beyond_the_product_limit():
    """Three uncoupled chains of 7, 72 and 44 labels (22,176 product states) run as
    three chains; each chain's results are its own one-chain model's."""
    rng = np.random.default_rng(41)
    n_labels = [7, 72, 44]
    graph, seq_ptr, unary, pair = random_model(
        rng, n_labels, [(c, c, IN_CHAIN, 1) for c in range(3)], [5, 1, 8], p_forbid=0.1)
    assert int(np.prod(n_labels)) > MAX_PRODUCT_STATES
    node, pm, logz, _, _ = marginals(graph, seq_ptr, unary, pair, method="exact", n_threads=2)
    labels, _, _ = map_assign(graph, seq_ptr, unary, pair, method="exact")
    off, eoff = graph.label_offset, pair_layout(graph, unary.shape[0])
    total = np.zeros(len(seq_ptr) - 1)
    for c in range(3):
        one = Graph.build([n_labels[c]], [(0, 0, IN_CHAIN, 1)])
        u = np.ascontiguousarray(unary[:, off[c]:off[c + 1]])
        n1, pm1, lz1, _, _ = marginals(one, seq_ptr, u, pair[eoff[c]:eoff[c + 1]])
        total += lz1
        live = np.repeat(np.isfinite(logz), np.diff(seq_ptr))
        np.testing.assert_allclose(node[live, off[c]:off[c + 1]], n1[live], atol=1e-12)
        lab1, _, _ = map_assign(one, seq_ptr, u, pair[eoff[c]:eoff[c + 1]])
        np.testing.assert_array_equal(labels[:, c], lab1[:, 0])
    np.testing.assert_allclose(logz, total)


def test_exact_single_chain_untied_and_forbidden_with_fallback():
    """Huge score gaps force the log-space fallback; results stay exact."""
    rng = np.random.default_rng(3)
    graph, seq_ptr, unary, pair = random_model(rng, [3], [(0, 0, IN_CHAIN, 0)], [4, 3])
    unary[1, 0] = 0.0
    unary[1, 1:] = 2000.0       # the row max is far above label 0 ...
    off = pair_layout(graph, unary.shape[0])
    m = pair[off[0]:off[1]].reshape(-1, 3, 3)
    m[2, :, 1:] = -np.inf       # ... but only label 0 may follow at token 1 -> 2
    m[1, :, :] = -np.inf
    m[1, :, 0] = 0.0            # token 1 must be label 0 (so the 2000s are unreachable)
    node_bf, pair_bf, logz_bf, best_bf, score = brute_force(graph, seq_ptr, unary, pair)
    node, pm, logz, _, _ = marginals(graph, seq_ptr, unary, pair)
    np.testing.assert_allclose(logz, logz_bf, rtol=1e-12)
    np.testing.assert_allclose(node, node_bf, atol=1e-10)
    np.testing.assert_allclose(pm, pair_bf, atol=1e-10)
    labels, _, _ = map_assign(graph, seq_ptr, unary, pair)
    np.testing.assert_allclose(labelling_scores(graph, seq_ptr, labels, score), best_bf)


def test_no_allowed_assignment_gives_minus_inf_logz():
    rng = np.random.default_rng(4)
    for n_labels, edges in [([2], [(0, 0, IN_CHAIN, 1)]),
                            ([2, 2], [(0, 0, IN_CHAIN, 1), (1, 1, IN_CHAIN, 1),
                                      (0, 1, COUPLING, 1)])]:
        graph, seq_ptr, unary, pair = random_model(rng, n_labels, edges, [3, 2])
        unary[1, :2] = -np.inf     # chain 0 has no label at token 1 (sequence 0)
        for method in ("exact", "trp"):
            node, pm, logz, _, _ = marginals(graph, seq_ptr, unary, pair, method=method)
            assert logz[0] == -np.inf and np.isfinite(logz[1])
            assert np.isfinite(node).all() and np.isfinite(pm).all()
            labels, _, _ = map_assign(graph, seq_ptr, unary, pair, method=method)
            assert labels.min() >= 0


# ---------------------------------------------------------------------------
# TRP
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("tied", [0, 1])
def test_trp_single_chain_equals_exact(tied):
    rng = np.random.default_rng(5 + tied)
    graph, seq_ptr, unary, pair = random_model(rng, [4], [(0, 0, IN_CHAIN, tied)],
                                               [1, 5, 30, 2], scale=2.0, p_forbid=0.2)
    ex = marginals(graph, seq_ptr, unary, pair, method="exact")
    tr = marginals(graph, seq_ptr, unary, pair, method="trp")
    fin = np.isfinite(ex[2])
    ok = np.repeat(fin, np.diff(seq_ptr))
    np.testing.assert_allclose(tr[0][ok], ex[0][ok], atol=1e-9)
    np.testing.assert_allclose(tr[2][fin], ex[2][fin], rtol=1e-9, atol=1e-9)
    if fin.all():
        np.testing.assert_allclose(tr[1], ex[1], atol=1e-9)
    assert tr[3].all() and (tr[4] == 1).all()
    lab_ex, _, _ = map_assign(graph, seq_ptr, unary, pair, method="exact")
    lab_tr, conv, _ = map_assign(graph, seq_ptr, unary, pair, method="trp")
    score = score_function(graph, unary, pair)
    np.testing.assert_allclose(labelling_scores(graph, seq_ptr, lab_tr, score)[fin],
                               labelling_scores(graph, seq_ptr, lab_ex, score)[fin],
                               rtol=1e-12)
    assert conv.all()


def test_trp_forest_without_in_chain_edges_is_exact():
    """Only coupling edges: every token is a separate tree."""
    rng = np.random.default_rng(8)
    graph, seq_ptr, unary, pair = random_model(
        rng, [2, 3, 2], [(0, 1, COUPLING, 1), (1, 2, COUPLING, 0)], [3, 2])
    ex = marginals(graph, seq_ptr, unary, pair, method="exact")
    tr = marginals(graph, seq_ptr, unary, pair, method="trp")
    for a, b in zip(ex[:3], tr[:3]):
        np.testing.assert_allclose(b, a, atol=1e-9)
    assert (tr[4] == 1).all()


@pytest.mark.parametrize("zoo_index", [4, 5, 6, 7, 8])
def test_trp_close_to_enumeration_weak_coupling(zoo_index):
    n_labels, edges = model_zoo()[zoo_index]
    rng = np.random.default_rng(200 + zoo_index)
    lengths = [max_lengths(n_labels)] * 3
    graph, seq_ptr, unary, pair = random_model(rng, n_labels, edges, lengths, scale=1.0,
                                               coupling_scale=0.3)
    node_bf, pair_bf, logz_bf, best_bf, score = brute_force(graph, seq_ptr, unary, pair)
    node, pm, logz, conv, nit = marginals(graph, seq_ptr, unary, pair, method="trp")
    assert conv.all()
    assert (nit >= 1).all() and (nit < 1000).all()
    np.testing.assert_allclose(node, node_bf, atol=0.05)
    np.testing.assert_allclose(logz, logz_bf, atol=0.1)
    labels, conv, nit = map_assign(graph, seq_ptr, unary, pair, method="trp")
    assert conv.all()
    np.testing.assert_allclose(labelling_scores(graph, seq_ptr, labels, score), best_bf,
                               atol=1e-9)


def test_trp_seeds_reproducible_and_reported():
    rng = np.random.default_rng(9)
    n_labels, edges = model_zoo()[7]
    graph, seq_ptr, unary, pair = random_model(rng, n_labels, edges, [20, 15],
                                               coupling_scale=0.5)
    a = marginals(graph, seq_ptr, unary, pair, method="trp", seeds=[1, 2])
    b = marginals(graph, seq_ptr, unary, pair, method="trp", seeds=np.array([1, 2], np.uint64))
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    c = marginals(graph, seq_ptr, unary, pair, method="trp", seeds=[3, 4])
    np.testing.assert_allclose(c[0], a[0], atol=1e-4)   # same fixed point
    assert a[4].dtype == np.int32 and a[3].dtype == bool


def test_trp_not_converged_at_max_iter():
    rng = np.random.default_rng(10)
    n_labels, edges = model_zoo()[8]
    graph, seq_ptr, unary, pair = random_model(rng, n_labels, edges, [6], scale=1.0)
    node, pm, logz, conv, nit = marginals(graph, seq_ptr, unary, pair, method="trp",
                                          max_iter=1, tol=0.0)
    assert not conv[0] and nit[0] == 1
    assert np.isfinite(node).all()
    np.testing.assert_allclose(node.sum(axis=1), graph.n_chains)


# ---------------------------------------------------------------------------
# stability, threads, validation
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["exact", "trp"])
def test_long_sequence_stability(method):
    rng = np.random.default_rng(11)
    T = 20000
    if method == "exact":
        n_labels, edges = [5], [(0, 0, IN_CHAIN, 1)]
    else:
        n_labels, edges = [3, 4], [(0, 0, IN_CHAIN, 1), (1, 1, IN_CHAIN, 1),
                                   (0, 1, COUPLING, 1)]
    graph, seq_ptr, unary, pair = random_model(rng, n_labels, edges, [T], scale=50.0)
    node, pm, logz, conv, nit = marginals(graph, seq_ptr, unary, pair, method=method,
                                          max_iter=50)
    assert np.isfinite(node).all() and np.isfinite(pm).all() and np.isfinite(logz).all()
    np.testing.assert_allclose(node.sum(axis=1), graph.n_chains, rtol=1e-9)
    np.testing.assert_allclose(pm.sum(), (T - 1) * graph.n_chains + T * (graph.n_chains - 1),
                               rtol=1e-9)
    labels, _, _ = map_assign(graph, seq_ptr, unary, pair, method=method, max_iter=50)
    assert labels.min() >= 0 and (labels < np.asarray(graph.n_labels)).all()
    if method == "exact":
        # scaled forward-backward agrees with the Viterbi score bound
        assert logz[0] > 0


@pytest.mark.parametrize("method", ["exact", "trp"])
def test_threads_give_same_results(method):
    rng = np.random.default_rng(12)
    n_labels, edges = model_zoo()[5] if method == "exact" else model_zoo()[7]
    lengths = rng.integers(1, 40, size=37)
    graph, seq_ptr, unary, pair = random_model(rng, n_labels, edges, lengths,
                                               coupling_scale=0.5)
    one = marginals(graph, seq_ptr, unary, pair, method=method, n_threads=1)
    two = marginals(graph, seq_ptr, unary, pair, method=method, n_threads=2)
    for x, y in zip(one, two):
        np.testing.assert_allclose(x, y, rtol=1e-12, atol=1e-12)
    l1 = map_assign(graph, seq_ptr, unary, pair, method=method, n_threads=1)
    l2 = map_assign(graph, seq_ptr, unary, pair, method=method, n_threads=2)
    for x, y in zip(l1, l2):
        np.testing.assert_array_equal(x, y)


def test_chain_threads_same():
    rng = np.random.default_rng(13)
    graph, seq_ptr, unary, pair = random_model(rng, [6], [(0, 0, IN_CHAIN, 1)],
                                               rng.integers(1, 50, size=50))
    one = marginals(graph, seq_ptr, unary, pair, n_threads=1)
    two = marginals(graph, seq_ptr, unary, pair, n_threads=2)
    for x, y in zip(one, two):
        np.testing.assert_allclose(x, y, rtol=1e-12, atol=1e-12)


def test_bad_inputs_raise():
    rng = np.random.default_rng(14)
    graph, seq_ptr, unary, pair = random_model(rng, [2, 3], model_zoo()[4][1], [3, 2])
    with pytest.raises(ValueError, match="unary"):
        marginals(graph, seq_ptr, unary[:, :-1], pair)
    with pytest.raises(ValueError, match="unary"):
        marginals(graph, seq_ptr, unary[:-1], pair)
    with pytest.raises(ValueError, match="seq_ptr"):
        marginals(graph, np.array([0, 4, 3, 5]), unary, pair)
    with pytest.raises(ValueError, match="seq_ptr"):
        map_assign(graph, np.array([1, 5]), unary, pair)
    with pytest.raises(ValueError, match="pair"):
        marginals(graph, seq_ptr, unary, pair[:-1])
    with pytest.raises(ValueError, match="method"):
        marginals(graph, seq_ptr, unary, pair, method="gibbs")
    with pytest.raises(ValueError, match="seeds"):
        marginals(graph, seq_ptr, unary, pair, method="trp", seeds=[1])
    bad = unary.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        marginals(graph, seq_ptr, bad, pair)
    with pytest.raises(ValueError, match="max_iter"):
        marginals(graph, seq_ptr, unary, pair, method="trp", max_iter=0)
    big = Graph.build([20, 20, 20], [(0, 1, COUPLING, 1), (1, 2, COUPLING, 1)])
    sp = np.array([0, 2])
    u = np.zeros((2, 60))
    p = np.zeros(int(pair_layout(big, 2)[-1]))
    with pytest.raises(ValueError, match="product state space"):
        marginals(big, sp, u, p, method="exact")
    with pytest.raises(ValueError, match="product state space"):
        map_assign(big, sp, u, p, method="exact")
    assert 20 ** 3 > MAX_PRODUCT_STATES
    lab, conv, _ = map_assign(big, sp, u, p, method="trp")   # TRP handles it
    assert lab.shape == (2, 3)


def test_empty_sequences_and_batch():
    rng = np.random.default_rng(15)
    graph, seq_ptr, unary, pair = random_model(rng, [2, 2], model_zoo()[6][1], [0, 3, 0])
    for method in ("exact", "trp"):
        node, pm, logz, conv, nit = marginals(graph, seq_ptr, unary, pair, method=method)
        assert logz[0] == 0.0 and logz[2] == 0.0 and conv.all()
        labels, _, _ = map_assign(graph, seq_ptr, unary, pair, method=method)
        assert labels.shape == (3, 2)


def test_trp_convergence_needs_every_edge_recomputed():
    """Regression: a spanning tree drawn twice in a row reproduces its own messages
    exactly; that must not count as convergence while other edges are stale."""
    rng = np.random.default_rng(16)
    n_labels, edges = [3, 2], [(0, 0, IN_CHAIN, 1), (1, 1, IN_CHAIN, 1), (0, 1, COUPLING, 1)]
    graph, seq_ptr, unary, pair = random_model(rng, n_labels, edges, [2] * 20)  # 4-cycles
    ref = marginals(graph, seq_ptr, unary, pair, method="trp", tol=1e-12, seeds=np.arange(20))
    assert ref[3].all()
    for shift in (100, 200):
        other = marginals(graph, seq_ptr, unary, pair, method="trp", tol=1e-12,
                          seeds=np.arange(20) + shift)
        np.testing.assert_allclose(other[0], ref[0], atol=1e-9)
        np.testing.assert_allclose(other[2], ref[2], atol=1e-9)


@pytest.mark.parametrize("tied", [True, False])
def test_exact_nbest_and_max_marginals_over_components_equal_enumeration(tied):
    """Two components (chains 0-1 coupled, chain 2 alone; one transition forbidden per
    chain): the k best labellings are the enumeration's k best scores, distinct; a
    label's max-marginal is the best score through it; a sequence with no allowed
    labelling has none."""
    from skfcrf.inference import ExactInference

    from brute import all_labellings, full_score, make_problem

    rng = np.random.default_rng(7 + tied)
    graph, seq_ptr, unary, pair, eo, _ = make_problem(rng, [2, 3, 2], [3, 1, 2, 0, 2],
                                                      [(0, 1)], tied, forbid=True)
    unary[seq_ptr[4], graph.label_offset[2]:] = -np.inf     # sequence 4: chain 2 has no label
    assert coupled_components(graph) == [[0, 1], [2]]
    method = ExactInference(graph)
    k = 7
    found = method.n_best(seq_ptr, unary, pair, None, k)
    mm = method.max_marginals(seq_ptr, unary, pair)
    for s in range(len(seq_ptr) - 1):
        start, T = int(seq_ptr[s]), int(seq_ptr[s + 1] - seq_ptr[s])
        ys = list(all_labellings(graph, T))
        scores = np.array([full_score(graph, unary, pair, eo, start, y) for y in ys])
        allowed = np.sort(scores[np.isfinite(scores)])[::-1]
        got = np.array([v for _, v in found[s]])
        assert len(got) == min(k, len(allowed))
        np.testing.assert_allclose(got, allowed[:len(got)], rtol=1e-10, atol=1e-10)
        assert len({y.tobytes() for y, _ in found[s]}) == len(got)
        for y, v in found[s]:
            assert y.shape == (T, 3) and np.isclose(full_score(graph, unary, pair, eo, start, y), v)
        ref = np.full((T, graph.total_labels), -np.inf)
        for y, v in zip(ys, scores):
            for t, c in itertools.product(range(T), range(3)):
                col = graph.label_offset[c] + y[t, c]
                ref[t, col] = max(ref[t, col], v)
        block = mm[start:start + T]
        assert np.array_equal(np.isfinite(block), np.isfinite(ref))
        np.testing.assert_allclose(block[np.isfinite(ref)], ref[np.isfinite(ref)], atol=1e-10)
    assert found[4] == [] and np.isinf(mm[seq_ptr[4]:seq_ptr[5]]).all()
    assert found[3][0][0].shape == (0, 3) and found[3][0][1] == 0.0     # the empty sequence


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 6).flatmap(lambda n: st.tuples(
    st.just(n), st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=8))))
def test_coupled_components_partition_the_chains_into_connected_parts(case):
    """Every chain in exactly one part, each part ascending and the parts in the order
    of their first chain; every coupling inside one part; and no part splits into two
    with no coupling between them."""
    n, pairs = case
    couplings = sorted({(min(a, b), max(a, b)) for a, b in pairs if a != b})
    graph = Graph.build([2] * n, [(c, c, IN_CHAIN, 1) for c in range(n)]
                        + [(a, b, COUPLING, 1) for a, b in couplings])
    parts = coupled_components(graph)
    assert sorted(c for part in parts for c in part) == list(range(n))
    assert all(part == sorted(part) for part in parts)
    assert [part[0] for part in parts] == sorted(part[0] for part in parts)
    where = {c: i for i, part in enumerate(parts) for c in part}
    assert all(where[a] == where[b] for a, b in couplings)
    for part in parts:          # connected: a search from its first chain reaches all of it
        reached, todo = {part[0]}, [part[0]]
        while todo:
            c = todo.pop()
            for a, b in couplings:
                for x, y in ((a, b), (b, a)):
                    if x == c and y not in reached:
                        reached.add(y)
                        todo.append(y)
        assert reached == set(part)
