"""Exact inference over joint label states, against brute-force enumeration."""
import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import logsumexp

from skfcrf._kernels.batch import map_assign, marginals
from skfcrf._kernels.graph import COUPLING, IN_CHAIN, Graph, pair_layout
from skfcrf._kernels.joint import (
    joint_log_partition,
    joint_map,
    joint_map_and_log_partition,
    joint_marginals,
    joint_states_from_labels,
    unique_rows,
)
from skfcrf._kernels.states import sequence_pair

from brute import full_score


def problem(seed, n_labels, lengths, couplings, cpl_tied, forbid=False):
    rng = np.random.default_rng(seed)
    edges = [(c, c, IN_CHAIN, 1) for c in range(len(n_labels))]
    edges += [(a, b, COUPLING, cpl_tied) for a, b in couplings]
    graph = Graph.build(n_labels, edges)
    seq_ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    n = int(seq_ptr[-1])
    unary = rng.normal(size=(n, graph.total_labels))
    pair = rng.normal(size=int(pair_layout(graph, n)[-1]))
    if forbid:
        pair[rng.random(pair.size) < 0.2] = -np.inf
    product = np.array(list(itertools.product(*[range(L) for L in n_labels])), dtype=np.int32)
    keep = rng.random(len(product)) < 0.6
    keep[rng.integers(len(product))] = True
    return graph, seq_ptr, unary, pair, product[keep], product


def enumerate_sequence(graph, unary, pair, start, T, states):
    eo = pair_layout(graph, unary.shape[0])
    allowed = {tuple(s) for s in states}
    labs, scores = [], []
    for path in itertools.product(sorted(allowed), repeat=T):
        y = np.array(path, dtype=np.int64).reshape(T, -1)
        labs.append(y)
        scores.append(full_score(graph, unary, pair, eo, start, y))
    return labs, np.array(scores)


CASES = [([3], [], 1), ([2, 3], [(0, 1)], 1), ([2, 3], [(0, 1)], 0), ([2, 2, 3], [(0, 1), (1, 2)], 1),
         ([2, 2, 2], [(0, 1), (0, 2), (1, 2)], 0)]


def case_problem(case, seed, lengths, forbid=False):
    """:func:`problem` for the label sets and couplings of ``CASES[case]``."""
    n_labels, couplings, tied = CASES[case]
    return problem(seed, n_labels, lengths, couplings, tied, forbid)


@pytest.mark.parametrize("case", range(len(CASES)))
@pytest.mark.parametrize("forbid", [False, True])
@pytest.mark.parametrize("sparse", [None, True])
def test_map_and_marginals_equal_enumeration(case, forbid, sparse):
    lengths = [0, 1, 3, 2, 4]
    graph, seq_ptr, unary, pair, states, _ = case_problem(case, case, lengths, forbid)
    labels, score = joint_map(graph, states, seq_ptr, unary, pair, sparse=sparse)
    node, log_z = joint_marginals(graph, states, seq_ptr, unary, pair, sparse=sparse)
    for s, T in enumerate(lengths):
        lo = seq_ptr[s]
        if T == 0:
            assert score[s] == 0.0 and log_z[s] == 0.0
            continue
        labs, scores = enumerate_sequence(graph, unary, pair, lo, T, states)
        best = scores.max()
        if not np.isfinite(best):
            assert score[s] == -np.inf and log_z[s] == -np.inf
            assert np.all(node[lo:lo + T] == 0)
            continue
        assert score[s] == pytest.approx(best, abs=1e-10)
        assert full_score(graph, unary, pair, pair_layout(graph, unary.shape[0]), lo,
                          labels[lo:lo + T]) == pytest.approx(best, abs=1e-10)
        assert tuple(map(tuple, labels[lo:lo + T])) in {tuple(map(tuple, y)) for y in labs}
        assert log_z[s] == pytest.approx(logsumexp(scores), abs=1e-9)
        p = np.exp(scores - logsumexp(scores))
        for c in range(graph.n_chains):
            off = graph.label_offset[c]
            for t in range(T):
                ref = np.array([p[[y[t, c] == lab for y in labs]].sum()
                                for lab in range(graph.n_labels[c])])
                np.testing.assert_allclose(node[lo + t, off:off + graph.n_labels[c]], ref,
                                           atol=1e-10)


@pytest.mark.parametrize("case", range(len(CASES)))
def test_full_product_space_equals_exact_inference(case):
    lengths = [1, 5, 3]
    graph, seq_ptr, unary, pair, _, product = case_problem(case, 10 + case, lengths)
    labels, _ = joint_map(graph, product, seq_ptr, unary, pair)
    ref_labels, _, _ = map_assign(graph, seq_ptr, unary, pair, method="exact")
    np.testing.assert_array_equal(labels, ref_labels)
    node, log_z = joint_marginals(graph, product, seq_ptr, unary, pair)
    ref_node, _, ref_log_z, _, _ = marginals(graph, seq_ptr, unary, pair, method="exact")
    np.testing.assert_allclose(node, ref_node, atol=1e-10)
    np.testing.assert_allclose(log_z, ref_log_z, rtol=1e-12)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2 ** 20), scale=st.sampled_from([0.1, 1.0, 20.0]))
def test_map_is_optimal_and_thread_independent(seed, scale):
    graph, seq_ptr, unary, pair, states, _ = problem(seed, [2, 3], [3, 1, 4, 2], [(0, 1)], 1)
    unary *= scale
    labels, score = joint_map(graph, states, seq_ptr, unary, pair, n_threads=1)
    labels2, score2 = joint_map(graph, states, seq_ptr, unary, pair, n_threads=3)
    assert np.array_equal(labels, labels2) and np.array_equal(score, score2)
    # the sparse form of the transitions finds the same labelling (same tie-breaking)
    labels3, score3 = joint_map(graph, states, seq_ptr, unary, pair, sparse=True)
    assert np.array_equal(labels, labels3)
    np.testing.assert_allclose(score3, score, rtol=1e-12)
    for s in range(len(seq_ptr) - 1):
        lo, T = seq_ptr[s], seq_ptr[s + 1] - seq_ptr[s]
        _, scores = enumerate_sequence(graph, unary, pair, lo, T, states)
        assert score[s] == pytest.approx(scores.max(), abs=1e-9 * max(1.0, scale))


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2 ** 32 - 1), st.integers(0, 40), st.integers(1, 6),
       st.sampled_from([1, 3, 50, 2 ** 40]), st.booleans())
def test_unique_rows_is_numpys_unique_of_rows(seed, n, width, high, negative):
    # the mixed-radix fast path, the missing-label (-1) and the beyond-62-bit fallbacks
    rng = np.random.default_rng(seed)
    rows = rng.integers(-1 if negative else 0, high, size=(n, width))
    out = unique_rows(rows)
    expected = np.unique(rows, axis=0)
    assert out.dtype == rows.dtype and out.shape == expected.shape
    np.testing.assert_array_equal(out, expected)


def test_states_from_labels_and_bad_input():
    gold = np.array([[1, 0], [0, 2], [1, 0]])
    assert joint_states_from_labels(gold).tolist() == [[0, 2], [1, 0]]
    graph, seq_ptr, unary, pair, states, _ = problem(0, [2, 3], [2], [(0, 1)], 1)
    with pytest.raises(ValueError, match="states"):
        joint_map(graph, np.array([[0, 5]]), seq_ptr, unary, pair)
    with pytest.raises(ValueError, match="unary"):
        joint_map(graph, states, seq_ptr, unary[:1], pair)
    untied = Graph.build([2], [(0, 0, IN_CHAIN, 0)])
    with pytest.raises(ValueError, match="tied"):
        joint_map(untied, np.array([[0], [1]]), seq_ptr, np.zeros((2, 2)),
                  np.zeros(int(pair_layout(untied, 2)[-1])))


@pytest.mark.parametrize("case", range(1, len(CASES)))
@pytest.mark.parametrize("sparse", [False, True])
def test_pair_marginals_equal_exact_inference_on_full_space(case, sparse):
    graph, seq_ptr, unary, pair, _, product = case_problem(case, 20 + case, [1, 4, 3],
                                                           forbid=True)
    node, pmarg, log_z = joint_marginals(graph, product, seq_ptr, unary, pair, n_threads=2,
                                         pair_marginals=True, sparse=sparse)
    ref_node, ref_pmarg, ref_log_z, _, _ = marginals(graph, seq_ptr, unary, pair, method="exact")
    np.testing.assert_allclose(node, ref_node, atol=1e-10)
    np.testing.assert_allclose(pmarg, ref_pmarg, atol=1e-10)
    np.testing.assert_allclose(log_z, ref_log_z, rtol=1e-12)


@pytest.mark.parametrize("n_chains", [2, 3])
@pytest.mark.parametrize("coupling_features", ["default", "supported"])
def test_likelihood_over_joint_states_gradient_and_value(n_chains, coupling_features):
    """Likelihood with inference='joint': finite differences, and the loss equals
    log of the enumerated partition over the observed combinations minus the gold score."""
    from skfcrf import FactorialCRF
    from skfcrf.estimators import training_problem

    from _helpers import check_gradient, synthetic

    X, y = synthetic(n_seq=5, n_chains=n_chains, length=(1, 4), noise=0.3)
    params = dict(objective="likelihood", inference="joint", sigma=2.0,
                  coupling="all" if n_chains == 3 else "adjacent",
                  coupling_features=coupling_features, state_transitions=False)
    check_gradient(FactorialCRF(**params), X, y)
    est = FactorialCRF(**{**params, "sigma": np.inf})
    objective, theta0, _ = training_problem(est, X, y)
    theta = np.random.default_rng(0).normal(size=theta0.shape)
    loss, _ = objective.loss_gradient(theta)
    b = objective.batch
    unary, pair, _ = est.layout_.potentials(theta, b.obs, 1, est.forbidden_)
    eo = pair_layout(est.graph_, unary.shape[0])
    ref = 0.0
    for s in range(b.n_sequences):
        lo, hi = b.seq_ptr[s], b.seq_ptr[s + 1]
        _, scores = enumerate_sequence(est.graph_, unary, pair, lo, hi - lo, est.joint_states_)
        ref += logsumexp(scores) - full_score(est.graph_, unary, pair, eo, lo, b.gold[lo:hi])
    assert loss == pytest.approx(ref, rel=1e-10)


def _two_tracks():
    """One chain, labels A and B that never follow each other; token 0 favours A by 800
    nats, token 2 favours B by 1700: B's forward mass underflows at token 0 in linear
    space, yet B's path dominates."""
    graph = Graph.build([2], [(0, 0, IN_CHAIN, 1)])
    unary = np.array([[800.0, 0.0], [0.0, 0.0], [0.0, 1700.0]])
    pair = np.array([0.0, -np.inf, -np.inf, 0.0])
    assert pair.shape == (int(pair_layout(graph, 3)[-1]),)
    return graph, np.array([0, 3], np.int64), unary, pair, np.array([[0], [1]], np.int32)


def test_joint_marginals_rescued_where_linear_forward_underflows():
    from skfcrf.inference import JointStateInference

    graph, seq_ptr, unary, pair, states = _two_tracks()
    _, raw = joint_marginals(graph, states, seq_ptr, unary, pair)
    assert raw[0] < 1000                         # the kernel alone loses B's path
    method = JointStateInference(graph, joint_states=states)
    expected = logsumexp([800.0, 1700.0])
    assert method.log_partition(seq_ptr, unary, pair)[0] == pytest.approx(expected)
    node, log_z, _, _ = method.sum_product(seq_ptr, unary, pair)
    assert log_z[0] == pytest.approx(expected)
    np.testing.assert_allclose(node, [[0.0, 1.0]] * 3, atol=1e-12)


@pytest.mark.parametrize("case", range(len(CASES)))
def test_rescued_sequences_equal_exact_inference(case):
    """Redoing every sequence in the log domain keeps node and pair marginals and log Z
    exact (tied and untied couplings, forbidden pairs)."""
    from skfcrf._kernels.states import rescue_sequence

    graph, seq_ptr, unary, pair, _, product = case_problem(case, 40 + case, [1, 4, 3],
                                                           forbid=True)
    node, pmarg, log_z = joint_marginals(graph, product, seq_ptr, unary, pair,
                                         pair_marginals=True)
    for s in range(len(seq_ptr) - 1):
        rescue_sequence(graph, product, seq_ptr, unary, pair, s, node, pmarg, log_z)
    ref_node, ref_pmarg, ref_log_z, _, _ = marginals(graph, seq_ptr, unary, pair, method="exact")
    np.testing.assert_allclose(node, ref_node, atol=1e-10)
    np.testing.assert_allclose(pmarg, ref_pmarg, atol=1e-10)
    np.testing.assert_allclose(log_z, ref_log_z, rtol=1e-12)


def test_training_statistics_rescued_where_linear_forward_underflows():
    from skfcrf._kernels.joint import underflowed
    from skfcrf._kernels.states import rescue_sequence

    graph, seq_ptr, unary, pair, states = _two_tracks()
    node, pmarg, log_z = joint_marginals(graph, states, seq_ptr, unary, pair,
                                         pair_marginals=True)
    gold_b = np.array([1700.0])                      # the score of the path B B B
    assert underflowed(log_z, gold_b).tolist() == [0]
    rescue_sequence(graph, states, seq_ptr, unary, pair, 0, node, pmarg, log_z)
    assert log_z[0] == pytest.approx(logsumexp([800.0, 1700.0]))
    np.testing.assert_allclose(node, [[0.0, 1.0]] * 3, atol=1e-12)
    np.testing.assert_allclose(pmarg, [0.0, 0.0, 0.0, 2.0], atol=1e-12)
    assert underflowed(log_z, gold_b).size == 0


@pytest.mark.parametrize("sparse", [True, False])
def test_log_z_and_state_pair_counts_without_the_marginals(sparse):
    """``marginals=False`` runs both passes without summing the marginals: ``log Z`` and
    the expected state pair counts are those of the full call, bit for bit (with
    joint-state transition weights, forbidden pairs, sequences with no allowed
    labelling); it needs the state pair counts."""
    rng = np.random.default_rng(3)
    lengths = rng.integers(0, 9, size=19)
    graph, seq_ptr, unary, pair, _, product = case_problem(3, 7, lengths, forbid=True)
    unary[seq_ptr[np.flatnonzero(lengths > 2)[0]] + 1, :graph.n_labels[0]] = -np.inf
    trans = rng.normal(size=(len(product),) * 2)
    node, pmarg, log_z, counts = joint_marginals(
        graph, product, seq_ptr, unary, pair, 2, pair_marginals=True, sparse=sparse,
        state_trans=trans, state_pairs=True)
    none_node, none_pmarg, alone_log_z, alone_counts = joint_marginals(
        graph, product, seq_ptr, unary, pair, 2, pair_marginals=True, sparse=sparse,
        state_trans=trans, state_pairs=True, marginals=False)
    assert none_node is None and none_pmarg is None and np.isneginf(log_z).any()
    np.testing.assert_array_equal(alone_log_z, log_z)
    np.testing.assert_array_equal(alone_counts, counts)
    with pytest.raises(ValueError, match="marginals=False needs"):
        joint_marginals(graph, product, seq_ptr, unary, pair, pair_marginals=True,
                        marginals=False)


def test_state_pair_expectations_rescue_and_fall_back(monkeypatch):
    """The joint-state transition stage's ``log Z`` and state pair counts (no marginals)
    equal :meth:`training_marginals`' where the scaled pass loses the best path (redone
    in the log domain), and where the counts come out not finite (then computed with
    the marginals, which tell the sequences apart)."""
    from skfcrf._kernels import joint
    from skfcrf.inference import JointStateInference
    from skfcrf.inference import _joint as joint_inference

    graph, seq_ptr, unary, pair, states = _two_tracks()
    method = JointStateInference(graph, joint_states=states).bind(
        state_trans=np.array([[0.5, 0.0], [0.0, -0.25]]))

    def lower():
        return np.array([1700.0 - 0.5])                 # the path B B B's score

    _, _, ref_log_z, ref_counts, _, _ = method.training_marginals(seq_ptr, unary, pair, lower)
    assert ref_log_z[0] > 1690.0                         # rescued: the kernel alone loses B
    log_z, counts = method.state_pair_expectations(seq_ptr, unary, pair, lower)
    np.testing.assert_allclose(log_z, ref_log_z, rtol=1e-12)
    np.testing.assert_allclose(counts, ref_counts, atol=1e-12)
    np.testing.assert_allclose(counts, [[0.0, 0.0], [0.0, 2.0]], atol=1e-12)

    calls = []

    def not_finite(*args, **kwargs):
        out = list(joint.joint_marginals(*args, **kwargs))
        if not kwargs.get("marginals", True):
            calls.append(1)
            out[3] = np.full_like(out[3], np.nan)
        return tuple(out)

    monkeypatch.setattr(joint_inference, "joint_marginals", not_finite)
    log_z, counts = method.state_pair_expectations(seq_ptr, unary, pair, lower)
    assert calls and np.isfinite(counts).all()
    np.testing.assert_allclose(log_z, ref_log_z, rtol=1e-12)
    np.testing.assert_allclose(counts, ref_counts, atol=1e-12)


@pytest.mark.parametrize("n_threads", [1, 2])
def test_lockstep_blocks_equal_one_sequence_at_a_time(n_threads):
    """The dense form runs blocks of sequences in lockstep (matrix-matrix steps), the
    sparse form blocks of four interleaved lanes: same marginals, log Z and state
    pair counts, over more sequences than a block holds, of many lengths (empty
    ones, and some with no allowed labelling)."""
    rng = np.random.default_rng(5)
    lengths = rng.integers(0, 12, size=75)
    graph, seq_ptr, unary, pair, _, product = case_problem(3, 7, lengths, forbid=True)
    for s in np.flatnonzero(lengths > 2)[:4]:        # no allowed label at a middle token
        unary[seq_ptr[s] + 1, :graph.n_labels[0]] = -np.inf
    out = [joint_marginals(graph, product, seq_ptr, unary, pair, n_threads=n_threads,
                           pair_marginals=True, state_pairs=True, sparse=sparse)
           for sparse in (False, True)]
    (node, pmarg, log_z, pairs), (ref_node, ref_pmarg, ref_log_z, ref_pairs) = out
    assert np.isneginf(ref_log_z).any() and (lengths == 0).any()
    np.testing.assert_array_equal(np.isneginf(log_z), np.isneginf(ref_log_z))
    finite = np.isfinite(ref_log_z)
    np.testing.assert_allclose(log_z[finite], ref_log_z[finite], rtol=1e-12)
    np.testing.assert_allclose(node, ref_node, atol=1e-12)
    np.testing.assert_allclose(pmarg, ref_pmarg, atol=1e-10)
    np.testing.assert_allclose(pairs, ref_pairs, atol=1e-10)


def test_lanes_with_more_unary_columns_than_interleaved_agree_with_dense():
    """The lanes' state scores interleave the tokens' unary rows up to 512 columns
    and read them one by one beyond: with 560 columns (two chains of 300 and 260
    labels, 40 states) the sparse form's log Z, marginals and Viterbi agree with the
    dense form's."""
    rng = np.random.default_rng(3)
    n_labels = [300, 260]
    graph = Graph.build(n_labels, [(0, 0, IN_CHAIN, 1), (1, 1, IN_CHAIN, 1),
                                   (0, 1, COUPLING, 1)])
    lengths = [5, 0, 3, 7, 1, 4]
    seq_ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    n = int(seq_ptr[-1])
    unary = rng.normal(size=(n, graph.total_labels))
    pair = rng.normal(size=int(pair_layout(graph, n)[-1]))
    states = np.unique(np.column_stack([rng.integers(0, L, 40) for L in n_labels]),
                       axis=0).astype(np.int32)
    assert graph.total_labels > 512
    out = [joint_marginals(graph, states, seq_ptr, unary, pair, sparse=sparse)
           for sparse in (False, True)]
    np.testing.assert_allclose(out[1][1], out[0][1], rtol=1e-12)
    np.testing.assert_allclose(out[1][0], out[0][0], atol=1e-12)
    maps = [joint_map(graph, states, seq_ptr, unary, pair, sparse=sparse)
            for sparse in (False, True)]
    np.testing.assert_array_equal(maps[1][0], maps[0][0])
    np.testing.assert_allclose(maps[1][1], maps[0][1], rtol=1e-12)


@pytest.mark.parametrize("n_threads", [1, 2])
def test_sparse_lanes_equal_each_sequence_alone(n_threads):
    """The sparse form runs four sequences in interleaved lanes: every sequence's
    marginals and log Z have the bits of the same sequence run alone (one lane of
    its block), whatever the sequences beside it -- empty, shorter, or with no
    allowed labelling -- and the pair marginals (summed over the block) agree."""
    rng = np.random.default_rng(11)
    lengths = rng.integers(0, 9, size=23)
    graph, seq_ptr, unary, pair, _, product = case_problem(3, 7, lengths, forbid=True)
    for s in np.flatnonzero(lengths > 2)[:3]:        # no allowed label at a middle token
        unary[seq_ptr[s] + 1, :graph.n_labels[0]] = -np.inf
    node, pmarg, log_z = joint_marginals(graph, product, seq_ptr, unary, pair, n_threads,
                                         pair_marginals=True, sparse=True)
    edge_offset = pair_layout(graph, int(seq_ptr[-1]))
    total = np.zeros_like(pmarg)
    for s, T in enumerate(lengths):
        rows = np.arange(seq_ptr[s], seq_ptr[s + 1])
        own = sequence_pair(graph, pair, edge_offset, rows)
        n1, p1, z1 = joint_marginals(graph, product, np.array([0, T], np.int64), unary[rows],
                                     own, pair_marginals=True, sparse=True)
        assert z1[0] == log_z[s] or (np.isneginf(z1[0]) and np.isneginf(log_z[s]))
        np.testing.assert_array_equal(n1, node[rows])
        local = pair_layout(graph, T)
        for e in range(graph.n_edges):
            start = int(edge_offset[e]) + (0 if graph.edge_tied[e] else
                                           int(seq_ptr[s]) * graph.edge_size(e))
            part = p1[local[e]:local[e + 1]]
            total[start:start + part.size] += part
    np.testing.assert_allclose(pmarg, total, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("n_threads", [1, 2])
def test_sparse_viterbi_lanes_equal_each_sequence_alone(n_threads):
    """The sparse form's Viterbi runs four sequences in interleaved lanes: every
    sequence's labels and score are those of the same sequence decoded alone, whatever
    the sequences beside it -- empty, shorter, with ties, or with no allowed labelling
    (score -inf, state 0's labels) -- and the best over the enumerated labellings."""
    rng = np.random.default_rng(5)
    lengths = rng.integers(0, 7, size=27)
    graph, seq_ptr, unary, pair, states, _ = case_problem(3, 4, lengths, forbid=True)
    unary = np.round(unary, 1)              # ties between labellings
    for s in np.flatnonzero(lengths > 2)[:3]:        # no allowed label at a middle token
        unary[seq_ptr[s] + 1, :graph.n_labels[0]] = -np.inf
    labels, score = joint_map(graph, states, seq_ptr, unary, pair, n_threads, sparse=True)
    dense_labels, dense_score = joint_map(graph, states, seq_ptr, unary, pair, sparse=False)
    np.testing.assert_array_equal(labels, dense_labels)
    np.testing.assert_array_equal(score, dense_score)
    edge_offset = pair_layout(graph, int(seq_ptr[-1]))
    for s, T in enumerate(lengths):
        rows = np.arange(seq_ptr[s], seq_ptr[s + 1])
        own = sequence_pair(graph, pair, edge_offset, rows)
        l1, s1 = joint_map(graph, states, np.array([0, T], np.int64), unary[rows], own,
                           sparse=True)
        assert s1[0] == score[s] or (np.isneginf(s1[0]) and np.isneginf(score[s]))
        np.testing.assert_array_equal(l1, labels[rows])
        if 0 < T <= 4:
            _, scores = enumerate_sequence(graph, unary[rows], own, 0, T, states)
            best = scores.max()
            assert score[s] == pytest.approx(best) or (np.isneginf(best)
                                                      and np.isneginf(score[s]))


@pytest.mark.parametrize("n_threads", [1, 2])
@pytest.mark.parametrize("sparse", [True, False])
def test_map_and_log_partition_in_one_sweep_equal_the_two_passes(sparse, n_threads):
    """One sweep over the tokens for the Viterbi path and ``log Z`` (the sparse form;
    the dense one runs the two passes) gives the labels,
    scores and ``log Z`` of :func:`joint_map` and :func:`joint_log_partition` bit for
    bit, whatever the sequences in the lanes beside each (empty, shorter, tied, with
    no allowed labelling), with and without joint-state transition weights; ``log Z``
    is the enumerated one."""
    rng = np.random.default_rng(11)
    lengths = rng.integers(0, 7, size=23)
    graph, seq_ptr, unary, pair, states, _ = case_problem(3, 4, lengths, forbid=True)
    unary = np.round(unary, 1)
    for s in np.flatnonzero(lengths > 2)[:2]:
        unary[seq_ptr[s] + 1, :graph.n_labels[0]] = -np.inf
    S = len(states)
    for state_trans in (None, rng.normal(size=(S, S))):
        labels, score, log_z = joint_map_and_log_partition(
            graph, states, seq_ptr, unary, pair, n_threads, sparse, state_trans=state_trans)
        ref_labels, ref_score = joint_map(graph, states, seq_ptr, unary, pair, n_threads,
                                          sparse, state_trans=state_trans)
        ref_z = joint_log_partition(graph, states, seq_ptr, unary, pair, n_threads, sparse,
                                    state_trans=state_trans)
        np.testing.assert_array_equal(labels, ref_labels)
        np.testing.assert_array_equal(score, ref_score)
        np.testing.assert_array_equal(log_z, ref_z)
    _, _, log_z = joint_map_and_log_partition(graph, states, seq_ptr, unary, pair, n_threads,
                                              sparse)
    edge_offset = pair_layout(graph, int(seq_ptr[-1]))
    for s, T in enumerate(lengths):
        if 0 < T <= 4:
            rows = np.arange(seq_ptr[s], seq_ptr[s + 1])
            own = sequence_pair(graph, pair, edge_offset, rows)
            _, scores = enumerate_sequence(graph, unary[rows], own, 0, T, states)
            assert log_z[s] == pytest.approx(logsumexp(scores), rel=1e-9, abs=1e-9)

@pytest.mark.parametrize("sparse", [False, True])
def test_forward_shifts_by_the_best_reachable_state(sparse):
    """The forward pass shifts each token's scores by the best score of a state that
    mass reaches: a state no allowed transition leads to, however high its score,
    leaves the reachable ones their mass (log Z finite, the enumerated one; marginals
    too), in every lane of a block and in the one-sweep decoding."""
    rng = np.random.default_rng(2)
    graph = Graph.build([3], [(0, 0, IN_CHAIN, 1)])
    lengths = [3, 2, 4, 3, 1]
    seq_ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    unary = rng.normal(size=(int(seq_ptr[-1]), 3))
    pair = rng.normal(size=9)
    pair[0 * 3 + 2] = -np.inf                   # label 2 never follows label 0
    states = np.arange(3, dtype=np.int32)[:, None]
    for start, T in zip(seq_ptr, lengths):
        unary[start, 1:] = -np.inf              # every sequence starts with label 0
        if T > 1:
            unary[start + 1, 2] = 2000.0        # unreachable there, however high
    log_z = joint_log_partition(graph, states, seq_ptr, unary, pair, 2, sparse)
    node, z2 = joint_marginals(graph, states, seq_ptr, unary, pair, 2, sparse=sparse)
    _, _, z3 = joint_map_and_log_partition(graph, states, seq_ptr, unary, pair, 2, sparse)
    for s, (start, T) in enumerate(zip(seq_ptr, lengths)):
        _, scores = enumerate_sequence(graph, unary, pair, start, T, states)
        assert log_z[s] == pytest.approx(logsumexp(scores), abs=1e-9)
        assert z2[s] == pytest.approx(log_z[s], abs=1e-9) and z3[s] == log_z[s]
        if T > 1:
            assert node[start + 1, 2] == 0.0 and node[start + 1].sum() == pytest.approx(1.0)

@pytest.mark.parametrize("sparse", [False, True])
def test_marginals_into_out_overwrite_whatever_it_held(sparse):
    """``out`` receives the node marginals, every entry written: an array full of
    NaN (empty sequences, ones with no allowed labelling) gives what a new one
    does; an array of the wrong shape, type or layout is refused."""
    rng = np.random.default_rng(3)
    lengths = rng.integers(0, 7, size=13)
    graph, seq_ptr, unary, pair, _, product = case_problem(3, 2, lengths, forbid=True)
    unary[seq_ptr[np.flatnonzero(lengths > 1)[0]] + 1, :graph.n_labels[0]] = -np.inf
    ref = joint_marginals(graph, product, seq_ptr, unary, pair, pair_marginals=True,
                          sparse=sparse)
    out = np.full(ref[0].shape, np.nan)
    got = joint_marginals(graph, product, seq_ptr, unary, pair, pair_marginals=True,
                          sparse=sparse, out=out)
    assert got[0] is out
    for a, b in zip(got, ref):
        np.testing.assert_array_equal(a, b)
    for bad in (np.zeros((ref[0].shape[0] + 1, ref[0].shape[1])),
                np.zeros(ref[0].shape, np.float32), np.zeros(ref[0].shape[::-1]).T):
        with pytest.raises(ValueError, match="out must be"):
            joint_marginals(graph, product, seq_ptr, unary, pair, sparse=sparse, out=bad)


def test_lockstep_blocks_cover_every_sequence_longest_first():
    from skfcrf._kernels._joint import lockstep_blocks

    lengths = np.array([3, 0, 40, 7, 7, 1, 12, 5] * 9)
    seq_ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    for dense, max_bytes, lanes in [(True, 32 << 20, False), (True, 4 * 8 * 10 * 60, False),
                                    (False, 32 << 20, False), (False, 32 << 20, True)]:
        seqs, ptr, rows = lockstep_blocks(seq_ptr, 10, dense, max_bytes, lanes)
        assert sorted(seqs) == list(range(len(lengths)))
        assert np.all(np.diff(lengths[seqs]) <= 0)
        sizes = np.diff(ptr)
        assert sizes.min() >= 1 and sizes.max() <= (32 if dense else 4 if lanes else 1)
        longest = np.maximum(lengths[seqs[ptr[:-1]]], 1)
        # a block of lanes takes four rows per token however many sequences it holds
        assert rows == ((4 if lanes else sizes) * longest).max()
        # the buffers stay within the budget unless one sequence alone needs more
        assert rows * 4 * 8 * 10 <= max(max_bytes, 4 * 8 * 10 * lengths.max())
    assert lockstep_blocks(seq_ptr, 10, True, 4 * 8 * 10 * 60)[1].size > 3


def _large_problem(seed, scale, lengths):
    """Two chains of 12 and 14 labels over their full product (168 states, dense)."""
    rng = np.random.default_rng(seed)
    graph = Graph.build([12, 14], [(0, 0, IN_CHAIN, 1), (1, 1, IN_CHAIN, 1), (0, 1, COUPLING, 1)])
    seq_ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    n = int(seq_ptr[-1])
    unary = scale * rng.normal(size=(n, graph.total_labels))
    pair = scale * rng.normal(size=int(pair_layout(graph, n)[-1]))
    product = np.array(list(itertools.product(range(12), range(14))), dtype=np.int32)
    return graph, seq_ptr, unary, pair, product


def _both_precisions(monkeypatch, graph, states, seq_ptr, unary, pair, n_threads=1):
    import skfcrf._kernels.joint as joint

    assert len(states) >= joint.SINGLE_PRECISION_STATES
    out = []
    for limit in (joint.SINGLE_PRECISION_STATES, len(states) + 1):   # single, then double
        monkeypatch.setattr(joint, "SINGLE_PRECISION_STATES", limit)
        out.append(joint_marginals(graph, states, seq_ptr, unary, pair, n_threads=n_threads,
                                   pair_marginals=True, state_pairs=True, sparse=False))
    return out


@pytest.mark.parametrize("scale", [0.3, 3.0])
@pytest.mark.parametrize("n_threads", [1, 2])
def test_single_precision_steps_agree_with_double(monkeypatch, scale, n_threads):
    """Dense transitions over many states step in single precision: log Z,
    marginals and state pair counts as in double precision, to single's accuracy."""
    lengths = np.random.default_rng(1).integers(0, 30, size=50)
    graph, seq_ptr, unary, pair, states = _large_problem(2, scale, lengths)
    (node, pmarg, log_z, pairs), (node64, pmarg64, log_z64, pairs64) = _both_precisions(
        monkeypatch, graph, states, seq_ptr, unary, pair, n_threads)
    assert not np.array_equal(log_z, log_z64)           # the single path did run
    np.testing.assert_allclose(log_z, log_z64, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(node, node64, atol=1e-5)
    np.testing.assert_allclose(pmarg, pmarg64, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(pairs, pairs64, rtol=1e-4, atol=1e-4)


def test_single_precision_falls_back_where_it_would_lose_the_best_state(monkeypatch):
    """A label reached only through a transition below single precision's range but
    scored far above the rest: single precision would miss it (log Z off by tens
    of nats); the kernel sees the range and runs that block in double precision."""
    lengths = [6] * 40
    graph, seq_ptr, unary, pair, states = _large_problem(3, 0.5, lengths)
    eo = pair_layout(graph, unary.shape[0])
    block = pair[eo[0]:eo[1]].reshape(12, 12)
    block[:, 0] = -120.0                               # into label 0 of chain 0: e^-120
    unary[seq_ptr[5] + 3, 0] = 150.0                   # one token strongly wants it
    (node, _, log_z, pairs), (node64, _, log_z64, pairs64) = _both_precisions(
        monkeypatch, graph, states, seq_ptr, unary, pair)
    assert node64[seq_ptr[5] + 3, 0] > 0.99
    np.testing.assert_allclose(log_z, log_z64, rtol=1e-6)
    np.testing.assert_allclose(node, node64, atol=1e-5)
    np.testing.assert_allclose(pairs, pairs64, rtol=1e-4, atol=1e-4)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 6), st.integers(0, 2**31 - 1), st.floats(0.0, 1.0))
def test_allowed_pairs_log_sum_exps_equal_dense_ones(S, seed, p_forbidden):
    """The log-domain fallback's steps over the allowed pairs alone equal scipy's
    log-sum-exp over the dense ``S x S`` matrix with ``-inf`` where forbidden: states
    without an allowed pair, and runs whose messages are all ``-inf``, give ``-inf``."""
    from skfcrf._kernels.states import _AllowedPairs

    rng = np.random.default_rng(seed)
    trans = np.where(rng.random((S, S)) < p_forbidden, -np.inf, rng.normal(scale=30, size=(S, S)))
    msg = np.where(rng.random(S) < 0.3, -np.inf, rng.normal(scale=500, size=S))
    allowed = _AllowedPairs(trans)
    assert len(allowed.src) == np.isfinite(trans).sum()
    with np.errstate(divide="ignore", invalid="ignore"):
        into = logsumexp(msg[:, None] + trans, axis=0)
        out_of = logsumexp(trans + msg[None, :], axis=1)
        got_into = allowed.into_targets(msg[allowed.src] + allowed.val)
        got_out = allowed.from_sources(allowed.val + msg[allowed.dst])
    for got, ref in ((got_into, into), (got_out, out_of)):
        np.testing.assert_array_equal(np.isneginf(got), np.isneginf(ref))
        finite = np.isfinite(ref)
        np.testing.assert_allclose(got[finite], ref[finite], rtol=1e-12, atol=1e-9)
