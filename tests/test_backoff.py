"""Back-off transitions: the grouped joint-state kernels against the dense ones and
enumeration, the deleted-likelihood estimate of the back-off weights, and the
estimator's ``forbidden_transitions="backoff"``."""
import itertools

import numpy as np
import pytest
from scipy.special import logsumexp

from skfcrf import FactorialCRF
from skfcrf._kernels import joint
from skfcrf._kernels.graph import IN_CHAIN, pair_layout
from skfcrf._kernels.joint import (
    backoff_cancels,
    joint_log_partition,
    joint_map,
    joint_map_and_log_partition,
    joint_marginals,
)
from skfcrf.model._building import NEW_TRANSITION_RATE
from skfcrf.model._labels import encode_labels
from skfcrf.model._layout import build_graph

from _helpers import assert_central_differences, short_fit, synthetic
from brute import full_score


def _problem(rng, n_labels, lengths, couplings="default", below=False, state_trans=False):
    """A random tiny model over a random subset of the label combinations whose in-chain
    potentials share a back-off weight per target label on random pairs, with a few
    forbidden pairs; ``below``: the seen pairs score below the back-off (Viterbi's
    relaxation is then loose and the dense fallback decodes)."""
    C = len(n_labels)
    graph = build_graph(n_labels, [(a, a + 1) for a in range(C - 1)], "default", couplings)
    every = np.array(list(itertools.product(*[range(n) for n in n_labels])), np.int32)
    keep = rng.random(len(every)) < 0.7
    keep[0] = True
    states = every[keep]
    seq_ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    n = int(seq_ptr[-1])
    unary = rng.normal(size=(n, graph.total_labels))
    eo = pair_layout(graph, n)
    pair = rng.normal(size=int(eo[-1]))
    backoff = {}
    for e in range(graph.n_edges):
        if graph.edge_kind[e] != IN_CHAIN:
            continue
        c = int(graph.edge_a[e])
        L = n_labels[c]
        block = pair[eo[e]:eo[e] + L * L].reshape(L, L)
        unseen = rng.random((L, L)) < 0.5
        block[unseen] = np.broadcast_to(rng.normal(size=L) - 1.0, (L, L))[unseen]
        forbid = (rng.random((L, L)) < 0.15) & ~unseen
        block[forbid] = -np.inf
        if below:
            block[~unseen & ~forbid] = np.minimum(block[~unseen & ~forbid], -3.0)
        backoff[c] = unseen
    st = None
    if state_trans and C > 1:
        S = len(states)
        weighted = rng.random((S, S)) < 0.3
        for e in range(graph.n_edges):
            if graph.edge_kind[e] == IN_CHAIN:
                c, L = int(graph.edge_a[e]), n_labels[int(graph.edge_a[e])]
                block = pair[eo[e]:eo[e] + L * L].reshape(L, L)
                i, j = states[:, c][:, None], states[:, c][None, :]
                weighted &= ~backoff[c][i, j] & np.isfinite(block[i, j])
        st = np.where(weighted, rng.normal(size=(S, S)), 0.0)
    return graph, states, seq_ptr, unary, pair, eo, backoff, st


CASES = [((3, 2), "default", False, False), ((2, 3, 2), "all", False, True),
         ((3, 3), "all", True, False), ((2, 2, 2), "default", True, True), ((4,), "default", False, False),
         # four chains: a projection tree three levels deep
         ((2, 3, 2, 2), "default", False, True), ((2, 2, 3, 2), "all", True, False)]


@pytest.fixture(params=["chosen", "every chain"])
def split(request, monkeypatch):
    """The grouped tables with the chains :func:`split_chains` chooses split off, and
    with every back-off chain split (its choice on larger models; on these tiny ones
    it never splits them all)."""
    if request.param == "every chain":
        monkeypatch.setattr(joint, "split_chains",
                            lambda graph, states, pair, eo, backoff: tuple(sorted(backoff)))
    return request.param


def test_split_chains_keeps_a_mostly_seen_chain_whole():
    """A chain with two labels and one back-off pair would only double the terms:
    the grouped tables keep it whole, and split the others (the dense kernels agree
    with both: the tests above)."""
    rng = np.random.default_rng(5)
    graph, states, seq_ptr, unary, pair, eo, backoff, _ = _problem(
        rng, [2, 5, 4], [3, 4], "default")
    e0 = [e for e in range(graph.n_edges) if graph.edge_kind[e] == IN_CHAIN
          and graph.edge_a[e] == 0][0]
    pair[eo[e0]:eo[e0] + 4] = rng.normal(size=4)
    backoff[0] = np.array([[False, True], [False, False]])
    split = joint.split_chains(graph, states, pair, eo, backoff)
    assert split and 0 not in split


@pytest.mark.parametrize("n_labels,couplings,below,state_trans", CASES[:4])
def test_grouped_lanes_equal_each_sequence_alone(n_labels, couplings, below, state_trans, split):
    """The grouped form runs four sequences in interleaved lanes: every sequence's
    marginals and log Z have the bits of the same sequence run alone, whatever
    the sequences beside it (empty and shorter ones)."""
    from skfcrf._kernels.states import sequence_pair

    rng = np.random.default_rng(7)
    lengths = rng.integers(0, 6, size=11)
    graph, states, seq_ptr, unary, pair, eo, backoff, st = _problem(
        rng, list(n_labels), lengths, couplings, below, state_trans)
    node, log_z = joint_marginals(graph, states, seq_ptr, unary, pair, 2, state_trans=st,
                                  backoff=backoff)
    for s, T in enumerate(lengths):
        rows = np.arange(seq_ptr[s], seq_ptr[s + 1])
        n1, z1 = joint_marginals(graph, states, np.array([0, T], np.int64), unary[rows],
                                 sequence_pair(graph, pair, eo, rows), state_trans=st,
                                 backoff=backoff)
        assert z1[0] == log_z[s]
        np.testing.assert_array_equal(n1, node[rows])


@pytest.mark.parametrize("n_labels,couplings,below,state_trans", CASES)
def test_grouped_viterbi_lanes_equal_each_sequence_alone(monkeypatch, n_labels, couplings,
                                                         below, state_trans, split):
    """The grouped form's Viterbi runs four sequences in interleaved lanes: every
    sequence's labels and score are those of the same sequence decoded alone, whatever
    the sequences beside it (empty and shorter ones) -- the kernel's relaxed ones too,
    before the exact fallback -- and the scores are the dense decoding's (the exact
    optimum)."""
    import skfcrf._kernels.joint as joint
    from skfcrf._kernels.states import sequence_pair

    kernel, raw = joint._kernel(), []

    class Recording:        # the kernel's own labels and (relaxed) scores, before the
        def __getattr__(self, name):     # wrapper's exact fallback could mend them
            return getattr(kernel, name)

        def joint_viterbi(self, tables, seq_ptr, unary, pair, labels, score, n_threads):
            kernel.joint_viterbi(tables, seq_ptr, unary, pair, labels, score, n_threads)
            raw.append((labels.copy(), score.copy()))

    rng = np.random.default_rng(3)
    lengths = rng.integers(0, 7, size=13)
    graph, states, seq_ptr, unary, pair, eo, backoff, st = _problem(
        rng, list(n_labels), lengths, couplings, below, state_trans)
    monkeypatch.setattr(joint, "_kernel", Recording)
    labels, score = joint_map(graph, states, seq_ptr, unary, pair, 2, state_trans=st,
                              backoff=backoff)
    raw_labels, raw_score = raw[0]
    _, dense = joint_map(graph, states, seq_ptr, unary, pair, sparse=False, state_trans=st)
    np.testing.assert_allclose(score, dense, rtol=1e-12, atol=1e-12)
    for s, T in enumerate(lengths):
        rows = np.arange(seq_ptr[s], seq_ptr[s + 1])
        raw.clear()
        l1, s1 = joint_map(graph, states, np.array([0, T], np.int64), unary[rows],
                           sequence_pair(graph, pair, eo, rows), state_trans=st,
                           backoff=backoff)
        assert s1[0] == score[s]
        np.testing.assert_array_equal(l1, labels[rows])
        assert raw[0][1][0] == raw_score[s]
        np.testing.assert_array_equal(raw[0][0], raw_labels[rows])


@pytest.mark.parametrize("n_labels,couplings,below,state_trans", CASES)
def test_grouped_map_and_log_partition_in_one_sweep_equal_the_two_passes(
        monkeypatch, n_labels, couplings, below, state_trans, split):
    """The Viterbi path and ``log Z`` of a back-off model in one sweep over the tokens
    (both in the grouped form) are :func:`joint_map`'s and :func:`joint_log_partition`'s
    bit for bit -- the relaxed search's exact fallback included (``below``)."""
    import skfcrf._kernels.joint as joint

    kernel, swept = joint._kernel(), []

    class Recording:
        def __getattr__(self, name):
            return getattr(kernel, name)

        def joint_decode(self, *args):
            swept.append(True)
            kernel.joint_decode(*args)

    rng = np.random.default_rng(7)
    lengths = rng.integers(0, 7, size=13)
    graph, states, seq_ptr, unary, pair, eo, backoff, st = _problem(
        rng, list(n_labels), lengths, couplings, below, state_trans)
    monkeypatch.setattr(joint, "_kernel", Recording)
    labels, score, log_z = joint_map_and_log_partition(graph, states, seq_ptr, unary, pair, 2,
                                                       state_trans=st, backoff=backoff)
    ref_labels, ref_score = joint_map(graph, states, seq_ptr, unary, pair, 2, state_trans=st,
                                      backoff=backoff)
    ref_z = joint_log_partition(graph, states, seq_ptr, unary, pair, 2, state_trans=st,
                                backoff=backoff)
    assert swept == [joint._backoff_form(graph, states, seq_ptr, pair, st, backoff)
                     is not None]
    np.testing.assert_array_equal(labels, ref_labels)
    np.testing.assert_array_equal(score, ref_score)
    np.testing.assert_array_equal(log_z, ref_z)

@pytest.mark.parametrize("n_labels,couplings,below,state_trans", CASES)
@pytest.mark.parametrize("seed", range(4))
def test_grouped_kernels_match_dense(n_labels, couplings, below, state_trans, seed, split):
    rng = np.random.default_rng(seed)
    graph, states, seq_ptr, unary, pair, eo, backoff, st = _problem(
        rng, list(n_labels), rng.integers(1, 6, size=4), couplings, below, state_trans)
    _, dense_score = joint_map(graph, states, seq_ptr, unary, pair, sparse=False, state_trans=st)
    labels, score = joint_map(graph, states, seq_ptr, unary, pair, state_trans=st,
                              backoff=backoff)
    np.testing.assert_allclose(score, dense_score, rtol=1e-10, atol=1e-10)
    node0, pmarg0, log_z0 = joint_marginals(graph, states, seq_ptr, unary, pair,
                                            pair_marginals=True, sparse=False, state_trans=st)
    node, pmarg, log_z, unseen = joint_marginals(graph, states, seq_ptr, unary, pair,
                                                 pair_marginals=True, state_trans=st,
                                                 backoff=backoff)
    np.testing.assert_allclose(log_z, log_z0, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(joint_log_partition(graph, states, seq_ptr, unary, pair,
                                                   state_trans=st, backoff=backoff),
                               log_z0, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(node, node0, atol=1e-9)
    for e in range(graph.n_edges):
        block, block0 = pmarg[eo[e]:eo[e + 1]], pmarg0[eo[e]:eo[e + 1]]
        if graph.edge_kind[e] == IN_CHAIN:
            c = int(graph.edge_a[e])
            mask = backoff[c].ravel()
            np.testing.assert_allclose(block, np.where(mask, 0.0, block0), atol=1e-8)
            L = n_labels[c]
            np.testing.assert_allclose(unseen[c], (block0 * mask).reshape(L, L).sum(axis=0),
                                       atol=1e-8)
        else:
            np.testing.assert_allclose(block, block0, atol=1e-9)


def _full_first(graph, states, pair, eo, st, backoff):
    from skfcrf._kernels._joint import _full_term_split
    from skfcrf._kernels.joint import grouped_tables

    tr = grouped_tables(graph, states, pair, eo, st, backoff, False)[0]
    return _full_term_split(*(tr[k] for k in (
        "group", "member_ptr", "out_ptr", "out_idx", "in_ptr", "in_idx", "down_ptr",
        "down_row", "down_idx", "up_ptr", "up_row", "up_idx")))[0]


@pytest.mark.parametrize("n_labels,couplings,below,state_trans", CASES)
def test_grouped_full_term_in_place_or_copied(n_labels, couplings, below, state_trans, split):
    """States in sorted order: the full term's groups are the states' rows, which the
    grouped step reads and writes in place (``_split_step``); in another order they
    are copied to and from the groups.  Both give the same marginals and log Z."""
    rng = np.random.default_rng(11)
    graph, states, seq_ptr, unary, pair, eo, backoff, st = _problem(
        rng, list(n_labels), rng.integers(0, 7, size=9), couplings, below, state_trans)
    perm = rng.permutation(len(states))
    perm[:2] = perm[1::-1] if perm[0] < perm[1] else perm[:2]     # not the sorted order
    st_p = None if st is None else st[perm][:, perm]
    ff = _full_first(graph, states, pair, eo, st, backoff)
    assert ff >= 0
    assert _full_first(graph, states[perm], pair, eo, st_p, backoff) == -1
    direct = joint_marginals(graph, states, seq_ptr, unary, pair, pair_marginals=True,
                             state_trans=st, backoff=backoff)
    copied = joint_marginals(graph, states[perm], seq_ptr, unary, pair, pair_marginals=True,
                             state_trans=st_p, backoff=backoff)
    for a, b in zip(direct, copied):
        if isinstance(a, dict):
            for c in a:
                np.testing.assert_allclose(a[c], b[c], rtol=1e-12, atol=1e-14)
        else:
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("without", [0, 1, 2])
def test_grouped_kernels_with_a_chain_without_backoff(without, split):
    """A chain with no back-off pairs: the terms that would give it the back-off
    weight are left out, and the others' projection tree still reaches the full term."""
    rng = np.random.default_rng(without)
    graph, states, seq_ptr, unary, pair, eo, backoff, st = _problem(
        rng, [2, 3, 2], rng.integers(1, 6, size=4), "default", False, True)
    del backoff[without]
    _, dense_score = joint_map(graph, states, seq_ptr, unary, pair, sparse=False, state_trans=st)
    _, score = joint_map(graph, states, seq_ptr, unary, pair, state_trans=st, backoff=backoff)
    np.testing.assert_allclose(score, dense_score, rtol=1e-10, atol=1e-10)
    node0, log_z0 = joint_marginals(graph, states, seq_ptr, unary, pair, sparse=False,
                                    state_trans=st)
    node, log_z = joint_marginals(graph, states, seq_ptr, unary, pair, state_trans=st,
                                  backoff=backoff)
    np.testing.assert_allclose(log_z, log_z0, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(node, node0, atol=1e-9)


def test_backoff_far_above_seen_transitions_stays_exact():
    """Back-off weights 40 nats above the seen transitions into their labels: the
    grouped form would cancel ``exp(b)`` against ``exp(T) - exp(b)``, so the marginals
    come from the dense kernel, and match it."""
    rng = np.random.default_rng(5)
    graph, states, seq_ptr, unary, pair, eo, backoff, st = _problem(
        rng, [2, 3, 2], rng.integers(1, 6, size=4), "default", False, True)
    for e in range(graph.n_edges):
        if graph.edge_kind[e] == IN_CHAIN:
            c, L = int(graph.edge_a[e]), [2, 3, 2][int(graph.edge_a[e])]
            block = pair[eo[e]:eo[e] + L * L].reshape(L, L)
            block[backoff[c]] += 40.0
    assert backoff_cancels(graph, pair, eo, backoff)
    node0, pmarg0, log_z0 = joint_marginals(graph, states, seq_ptr, unary, pair,
                                            pair_marginals=True, sparse=False, state_trans=st)
    node, pmarg, log_z, unseen = joint_marginals(graph, states, seq_ptr, unary, pair,
                                                 pair_marginals=True, state_trans=st,
                                                 backoff=backoff)
    np.testing.assert_allclose(log_z, log_z0, rtol=1e-10)
    np.testing.assert_allclose(node, node0, atol=1e-9)
    for e in range(graph.n_edges):
        if graph.edge_kind[e] == IN_CHAIN:
            c = int(graph.edge_a[e])
            L = [2, 3, 2][c]
            mask = backoff[c]
            block0 = pmarg0[eo[e]:eo[e + 1]].reshape(L, L)
            np.testing.assert_allclose(unseen[c], np.where(mask, block0, 0).sum(axis=0),
                                       atol=1e-8)
            np.testing.assert_allclose(pmarg[eo[e]:eo[e + 1]].reshape(L, L),
                                       np.where(mask, 0.0, block0), atol=1e-8)


@pytest.mark.parametrize("seed", range(3))
def test_grouped_kernels_match_enumeration(seed, split):
    """Over the allowed combinations only: log Z and the best labelling's score."""
    rng = np.random.default_rng(seed)
    graph, states, seq_ptr, unary, pair, eo, backoff, _ = _problem(
        rng, [2, 3], [3, 2], below=seed == 2)
    _, log_z = joint_marginals(graph, states, seq_ptr, unary, pair, backoff=backoff)
    labels, best = joint_map(graph, states, seq_ptr, unary, pair, backoff=backoff)
    allowed = {tuple(s) for s in states}
    for q in range(len(seq_ptr) - 1):
        start, T = int(seq_ptr[q]), int(seq_ptr[q + 1] - seq_ptr[q])
        scores = [full_score(graph, unary, pair, eo, start, np.array(y).reshape(T, 2))
                  for y in itertools.product(*[list(allowed)] * T)]
        assert log_z[q] == pytest.approx(logsumexp(scores), rel=1e-10)
        assert best[q] == pytest.approx(max(scores), rel=1e-10)
        assert full_score(graph, unary, pair, eo, start, labels[start:start + T]) == \
            pytest.approx(best[q], rel=1e-10)


@pytest.mark.parametrize("seed", range(4))
def test_grouped_state_pair_counts(seed, split):
    """The expected counts of the state pairs whose transitions are all seen (the ones
    joint-state transition weights may weight) match the dense kernel's."""
    rng = np.random.default_rng(seed)
    graph, states, seq_ptr, unary, pair, eo, backoff, st = _problem(
        rng, [2, 3, 2], rng.integers(1, 6, size=4), "all", seed % 2 == 0, True)
    *_, dense = joint_marginals(graph, states, seq_ptr, unary, pair, pair_marginals=True,
                                sparse=False, state_trans=st, state_pairs=True)
    *_, grouped = joint_marginals(graph, states, seq_ptr, unary, pair, pair_marginals=True,
                                  state_trans=st, state_pairs=True, backoff=backoff)
    seen = np.ones(dense.shape, bool)
    for c in range(3):
        seen &= ~backoff[c][states[:, c][:, None], states[:, c][None, :]]
    np.testing.assert_allclose(grouped, np.where(seen, dense, 0.0), atol=1e-9)


@pytest.mark.parametrize("seed", range(4))
def test_fold_state_pair_counts_by_brute_force(seed):
    """In how many folds every pair of states follows another, against a loop over
    the tokens; pairs with a missing label or a combination outside the states count
    nowhere."""
    from skfcrf.objectives._backoff import fold_state_pair_counts

    rng = np.random.default_rng(seed)
    every = np.array(list(itertools.product(range(3), range(2))), np.int32)
    states = every[rng.permutation(len(every))[:4]]
    lengths = rng.integers(0, 6, size=7)
    seq_ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    gold = every[rng.integers(0, len(every), size=int(seq_ptr[-1]))]
    gold[rng.random(gold.shape) < 0.1] = -1
    n_folds = 1 + seed % 3
    expected = np.zeros((len(states), len(states)), int)
    row = {tuple(s): k for k, s in enumerate(states.tolist())}
    for k in range(n_folds):
        seen = set()
        for i in range(k, len(lengths), n_folds):
            for t in range(seq_ptr[i] + 1, seq_ptr[i + 1]):
                a, b = tuple(gold[t - 1].tolist()), tuple(gold[t].tolist())
                if a in row and b in row:
                    seen.add((row[a], row[b]))
        for a, b in seen:
            expected[a, b] += 1
    got = fold_state_pair_counts(states, seq_ptr, gold, n_folds)
    np.testing.assert_array_equal(got, expected)


def test_deleted_likelihood_gradient():
    from skfcrf.estimators import training_problem

    X, y = _dictations(6)
    est = FactorialCRF(forbidden_transitions="backoff", finetune_iter=2)
    objective, _, _ = training_problem(est, X, y)
    deleted = est._deleted_likelihood(objective)
    layout = deleted.layout
    assert layout.n_backoff > 0
    rng = np.random.default_rng(0)
    theta = rng.normal(scale=0.3, size=layout.n_params)
    loss, grad = deleted.loss_gradient(theta)
    assert np.isfinite(loss)
    idx = np.concatenate([rng.choice(layout.bias_state, 25, replace=False),
                          np.arange(layout.bias_state, layout.n_params)[::5]])
    assert_central_differences(deleted.loss_gradient, theta, grad, idx)


def test_deleted_likelihood_with_a_backoff_weight_beyond_the_scaled_range():
    """A back-off weight 800 nats above every other potential: the scaled
    forward-backward loses every path through the other transitions (``log Z``
    ``-inf``, which made the loss ``-inf``); those sequences are redone in the log
    domain, so every fold's loss stays a negative log-likelihood (at least 0) and
    the gradient is the slope."""
    rng = np.random.default_rng(0)
    deleted = _tiny_deleted(rng)
    layout = deleted.layout
    theta = rng.normal(scale=0.5, size=layout.n_params)
    first = layout.bias_state + layout.n_state_pairs

    def lost(theta):
        """Sequences whose scaled pass loses every path, over the folds."""
        n = 0
        for part, masks, _ in deleted.folds:
            unary, pair, eo = deleted._fold_potentials(theta, part, masks)
            _, raw_log_z = joint_marginals(layout.graph, deleted.joint_states, part.seq_ptr,
                                           unary, pair, backoff=masks)
            n += int(np.sum(raw_log_z == -np.inf))
        return n

    # the first back-off weight whose label no path reaches by back-off transitions alone
    for k in range(layout.n_backoff):
        high = theta.copy()
        high[first + k] += 800.0
        if lost(high):
            break
    else:
        pytest.fail("no back-off weight loses a sequence")
    theta = high
    for fold in deleted.folds:
        unary, pair, eo = deleted._fold_potentials(theta, fold[0], fold[1])
        fold_loss, *_, grad_state = deleted._fold_loss(theta, fold, unary, pair, eo)
        assert np.isfinite(fold_loss) and fold_loss >= 0.0
        # the held stage's fold terms (no marginals) redo the same sequences
        gold = fold[0].gold_stats(eo).scores(unary, pair)
        held_loss, held_grad = deleted._fold_state_loss(theta, fold, unary, pair, eo, gold)
        assert held_loss == pytest.approx(fold_loss, rel=1e-12)
        np.testing.assert_allclose(held_grad, grad_state, rtol=1e-10, atol=1e-12)
    loss, grad = deleted.loss_gradient(theta)
    assert np.isfinite(loss) and np.isfinite(grad).all()
    # the loss is about 1e4: steps of 1e-3 keep its rounding out of the differences
    assert_central_differences(deleted.loss_gradient, theta, grad,
                               np.arange(first, layout.n_params), eps=1e-3)


@pytest.mark.parametrize("seed,raised", [(0, "every"), (1, "every"), (2, "one label")])
def test_grouped_marginals_beyond_the_scaled_range_are_rescued(seed, raised, split):
    """Back-off weights (every one, or those into one label of chain 1) 800 nats above
    the seen transitions: the kernels' scaled passes lose every path of some
    sequences; ``rescue_sequences`` (the best labelling's score as the bound) redoes
    those in the log domain, and log Z, the node and pair marginals, the back-off
    expectations and the state pair counts are then those of the log-domain pass
    over every sequence."""
    from skfcrf._kernels.joint import split_backoff_counts
    from skfcrf._kernels.states import logdomain_pair_marginals, rescue_sequences

    rng = np.random.default_rng(seed)
    graph, states, seq_ptr, unary, pair, eo, backoff, st = _problem(
        rng, [2, 3], [4, 3, 5], "default", False, True)
    for e in range(graph.n_edges):
        if graph.edge_kind[e] == IN_CHAIN:
            c, L = int(graph.edge_a[e]), [2, 3][int(graph.edge_a[e])]
            block = pair[eo[e]:eo[e] + L * L].reshape(L, L)
            if raised == "every":
                block[backoff[c]] += 800.0
            elif c == 1:
                j = np.flatnonzero(backoff[c].any(axis=0))[0]
                block[backoff[c][:, j], j] += 800.0
    node, pmarg, log_z, unseen, counts = joint_marginals(
        graph, states, seq_ptr, unary, pair, pair_marginals=True, state_trans=st,
        state_pairs=True, backoff=backoff)
    _, best = joint_map(graph, states, seq_ptr, unary, pair, state_trans=st, backoff=backoff)
    redo = rescue_sequences(graph, states, seq_ptr, unary, pair, node, pmarg, log_z, best,
                            state_trans=st, state_counts=counts, backoff=backoff,
                            unseen=unseen)
    assert len(redo) > 0
    ref_pmarg, ref_counts = np.zeros_like(pmarg), np.zeros_like(counts)
    for q in range(len(seq_ptr) - 1):
        rows = np.arange(seq_ptr[q], seq_ptr[q + 1])
        z, n, pc, sc = logdomain_pair_marginals(graph, states, unary, pair, rows, st,
                                                state_pairs=True)
        assert log_z[q] == pytest.approx(z, rel=1e-10)
        np.testing.assert_allclose(node[rows], n, atol=1e-9)
        local = pair_layout(graph, len(rows))
        for e in range(graph.n_edges):
            block = pc[local[e]:local[e + 1]]
            if graph.edge_tied[e]:
                ref_pmarg[eo[e]:eo[e + 1]] += block
            else:
                size = graph.edge_size(e)
                ref_pmarg[eo[e] + rows[0] * size:eo[e] + rows[0] * size + block.size] = block
        ref_counts += sc
    ref_unseen, ref_counts = split_backoff_counts(graph, states, ref_pmarg, eo, backoff,
                                                  ref_counts)
    np.testing.assert_allclose(pmarg, ref_pmarg, atol=1e-8)
    np.testing.assert_allclose(counts, ref_counts, atol=1e-8)
    for c in backoff:
        np.testing.assert_allclose(unseen[c], ref_unseen[c], atol=1e-8)


@pytest.mark.parametrize("n_labels,couplings,below,state_trans",
                         [case for case in CASES if case[3]])
def test_grouped_state_pair_counts_without_the_marginals(monkeypatch, n_labels, couplings,
                                                         below, state_trans, split):
    """Without the marginals (the joint-state transition stage) the grouped backward
    pass adds up the full term's counts alone: ``log Z`` and the state pair counts are
    the full call's, bit for bit."""
    monkeypatch.setattr(joint, "DENSE_BACKOFF_BLOCK", 10 ** 6)        # grouped
    rng = np.random.default_rng(13)
    lengths = rng.integers(0, 7, size=12)
    graph, states, seq_ptr, unary, pair, eo, backoff, st = _problem(
        rng, list(n_labels), lengths, couplings, below, state_trans)
    assert joint._backoff_form(graph, states, seq_ptr, pair, st, backoff) is not None
    _, _, log_z, _, counts = joint_marginals(graph, states, seq_ptr, unary, pair, 2,
                                             pair_marginals=True, state_trans=st,
                                             backoff=backoff, state_pairs=True)
    _, _, alone_log_z, _, alone_counts = joint_marginals(
        graph, states, seq_ptr, unary, pair, 2, pair_marginals=True, state_trans=st,
        backoff=backoff, state_pairs=True, marginals=False)
    assert np.count_nonzero(counts) > 0
    np.testing.assert_array_equal(alone_log_z, log_z)
    np.testing.assert_array_equal(alone_counts, counts)


def test_held_stage_is_the_deleted_likelihood_restricted():
    """The held stage (joint-state transition weights) gives the deleted likelihood's
    loss and gradient at the same weights; the gradient is the slope."""
    from skfcrf.estimators import training_problem
    from skfcrf.objectives._base import Restricted

    X, y = _dictations(6)
    est = FactorialCRF(forbidden_transitions="backoff", finetune_iter=2)
    objective, _, _ = training_problem(est, X, y)
    deleted = est._deleted_likelihood(objective)
    rng = np.random.default_rng(1)
    theta = rng.normal(scale=0.3, size=deleted.layout.n_params)
    stage = deleted.held_stage(theta)
    assert stage.start.size == deleted.layout.n_state_pairs > 0
    v = stage.start + rng.normal(scale=0.5, size=stage.start.size)
    loss, grad = stage.loss_gradient(v)
    ref_loss, ref_grad = Restricted(deleted, stage.free, theta).loss_gradient(v)
    assert loss == pytest.approx(ref_loss, rel=1e-10)
    np.testing.assert_allclose(grad, ref_grad, rtol=1e-8, atol=1e-8)
    assert_central_differences(stage.loss_gradient, v, grad,
                               range(0, v.size, max(1, v.size // 12)))


def _tiny_deleted(rng):
    """The deleted likelihood of random labels over few short sequences (many
    transitions seen in one fold only), small enough to enumerate."""
    from skfcrf.estimators import training_problem

    X, y = [], []
    for _ in range(10):
        n = int(rng.integers(2, 5))
        X.append([{f"w{int(rng.integers(5))}": 1.0} for _ in range(n)])
        y.append([(f"a{int(rng.integers(4))}", f"b{int(rng.integers(2))}") for _ in range(n)])
    est = FactorialCRF(forbidden_transitions="backoff", finetune_iter=2)
    objective, _, _ = training_problem(est, X, y)
    return est._deleted_likelihood(objective)


def _chain_stage(n_reports=6, seed=1):
    from skfcrf.estimators import training_problem

    X, y = _dictations(n_reports)
    est = FactorialCRF(forbidden_transitions="backoff", finetune_iter=2)
    objective, _, _ = training_problem(est, X, y)
    deleted = est._deleted_likelihood(objective)
    rng = np.random.default_rng(seed)
    theta = rng.normal(scale=0.3, size=deleted.layout.n_params)
    return deleted, theta, deleted.chain_backoff_stage(theta), rng


def test_chain_backoff_stage_gradient_is_the_slope():
    deleted, theta, stage, rng = _chain_stage()
    assert stage.start.size == deleted.layout.n_backoff > 0
    v = stage.start + rng.normal(scale=0.5, size=stage.start.size)
    loss, grad = stage.loss_gradient(v)
    assert np.isfinite(loss) and loss > 0
    assert_central_differences(stage.loss_gradient, v, grad,
                               range(0, v.size, max(1, v.size // 15)))


@pytest.mark.parametrize("above", [0.0, 800.0])
def test_chain_backoff_stage_is_each_chain_alone_by_enumeration(above):
    """A chain's loss is, fold by fold and sequence by sequence, ``log Z - score(gold)``
    of the chain's linear-chain model alone (its unary and in-chain potentials, the
    fold's back-off transitions at ``b``), ``log Z`` by enumerating every labelling.
    ``above``: each chain's back-off weight into its label 1 that far above the
    rest, beyond the scaled forward-backward's range (the sequences it loses are
    redone in the log domain)."""
    from skfcrf.objectives._backoff import _in_chain_edges

    rng = np.random.default_rng(4)
    deleted = _tiny_deleted(rng)
    layout, graph = deleted.layout, deleted.layout.graph
    assert layout.n_backoff > 0
    theta = rng.normal(scale=0.5, size=layout.n_params)
    stage = deleted.chain_backoff_stage(theta)
    edges = _in_chain_edges(graph)
    v = rng.normal(size=stage.start.size)
    for lo, _ in stage._spans().values():
        v[lo + 1] += above
    lost = 0
    for c, b in layout.backoff_weights(stage.full(v)).items():
        L, lo = int(graph.n_labels[c]), int(graph.label_offset[c])
        expected = 0.0
        for part, masks, _ in deleted.folds:
            unary, pair, eo = deleted._fold_potentials(theta, part, masks)
            block = np.array(pair[eo[edges[c]]:eo[edges[c]] + L * L]).reshape(L, L)
            block[masks[c]] = np.broadcast_to(b, (L, L))[masks[c]]
            for s in range(part.n_sequences):
                rows = np.arange(part.seq_ptr[s], part.seq_ptr[s + 1])
                u = unary[rows, lo:lo + L]

                def score(lab, u=u, block=block):
                    return (u[np.arange(len(lab)), list(lab)].sum()
                            + sum(block[lab[t - 1], lab[t]] for t in range(1, len(lab))))

                every = [score(lab) for lab in itertools.product(range(L), repeat=len(rows))]
                expected += logsumexp(every) - score(part.gold[rows, c])
            chain_graph, states = stage._chain_graphs[c]
            _, raw_log_z = joint_marginals(chain_graph, states, part.seq_ptr,
                                           np.ascontiguousarray(unary[:, lo:lo + L]),
                                           block.ravel(), backoff={0: masks[c]})
            lost += int(np.sum(raw_log_z == -np.inf))
        loss, grad = stage.chain_loss_gradient(c, np.array(b))
        assert loss == pytest.approx(deleted.scale * expected, rel=1e-9)
        assert_central_differences(lambda x, c=c: stage.chain_loss_gradient(c, x),
                                   np.array(b), grad, range(L))
    assert (lost > 0) == (above > 0)


def test_chain_backoff_rare_start():
    """The one-step start: per label with gold back-off transitions ``K exp(b) = G``,
    per label without them ``K exp(b) = -b / sigma**2`` (``K`` the expected back-off
    transitions at the old weights over ``exp`` of them), and every chain's penalised
    loss lower than at the old weights."""
    deleted, theta, stage, _ = _chain_stage()
    iv = deleted.inv_var
    for c, (lo, hi) in stage._spans().items():
        b0 = np.full(hi - lo, -5.0)
        loss0, grad0 = stage.chain_loss_gradient(c, b0)
        gold = deleted.scale * sum(part[5] for part in stage._parts[c])
        K = (grad0 + gold) * np.exp(-b0)
        b1 = stage.rare_start(c, b0)
        seen, never = (K > 0) & (gold > 0), (K > 0) & (gold == 0)
        assert seen.any() and never.any()
        np.testing.assert_allclose(K[seen] * np.exp(b1[seen]), gold[seen], rtol=1e-9)
        np.testing.assert_allclose(K[never] * np.exp(b1[never]), -b1[never] * iv, rtol=1e-9)
        np.testing.assert_array_equal(b1[K == 0], b0[K == 0])
        loss1, _ = stage.chain_loss_gradient(c, b1)
        assert loss1 + 0.5 * iv * b1 @ b1 < loss0 + 0.5 * iv * b0 @ b0


def test_chain_backoff_stage_solve_lowers_every_chain():
    """``solve`` moves each chain's back-off weights to a lower penalised loss and
    holds every other weight."""
    deleted, theta, stage, _ = _chain_stage()
    before, _ = stage.loss_gradient(stage.start)
    v, n_iter = stage.solve(max_iter=30, tol=1e-7)
    after, grad = stage.loss_gradient(v)
    assert after < before and n_iter > 0
    full = stage.full(v)
    np.testing.assert_array_equal(full[~stage.free], theta[~stage.free])
    # near a minimum: the gradient is small next to where it started
    assert np.abs(grad).max() < 0.1 * np.abs(stage.loss_gradient(stage.start)[1]).max()


def test_chain_backoff_stage_solve_stops_at_the_count_tolerance(monkeypatch):
    """Each chain stops once no back-off weight's gradient exceeds
    ``BACKOFF_COUNT_TOL`` expected transitions; without it (zero) only the loss
    reduction stops it, further down."""
    from skfcrf.objectives import _backoff
    deleted, theta, stage, _ = _chain_stage()
    inv_var = deleted.inv_var

    def worst(v):
        return max(np.abs(g + inv_var * v[lo:hi]).max()
                   for c, (lo, hi) in stage._spans().items()
                   for g in [stage.chain_loss_gradient(c, v[lo:hi])[1]])

    monkeypatch.setattr(_backoff, "BACKOFF_COUNT_TOL", 1.0)
    loose, _ = stage.solve(max_iter=200, tol=0.0)
    assert worst(loose) <= 1.0 * deleted.scale
    monkeypatch.setattr(_backoff, "BACKOFF_COUNT_TOL", 0.0)
    tight, _ = stage.solve(max_iter=200, tol=1e-12)
    assert worst(tight) < worst(loose)
    assert stage.loss_gradient(tight)[0] <= stage.loss_gradient(loose)[0]


def _dictations(n):
    from skfcrf.datasets import make_dictations
    X, y = make_dictations(n, "rcg", random_state=3)
    return [[{"w=" + w.lower(): 1.0} for w in seq] for seq in X], y


def _fitted(**params):
    X, y = _dictations(8)
    return FactorialCRF(finetune_iter=3, forbidden_transitions="backoff",
                        **params).fit(X, y), X, y


def _with_unseen_transition(crf, y):
    """A training labelling with one token's combination replaced by another seen one,
    so that some in-chain transition was never seen in training."""
    states = crf.joint_states_
    for seq in y:
        labels = np.array([[list(crf.classes_[c]).index(v) for c, v in enumerate(tok)]
                           for tok in seq])
        for t in range(1, len(labels)):
            for s in states:
                if any(crf.layout_.backoff.get(c, np.zeros((1, 1), bool))[
                        labels[t - 1, c], s[c]] for c in range(crf.n_chains_)):
                    out = [tuple(tok) for tok in seq]
                    out[t] = tuple(crf.classes_[c][s[c]] for c in range(crf.n_chains_))
                    return y.index(seq), out
    raise AssertionError("no labelling with an unseen transition")


def test_backoff_model_scores_unseen_transitions():
    crf, X, y = _fitted()
    closed = FactorialCRF(finetune_iter=3, forbidden_transitions="unseen").fit(X, y)
    assert 0 < crf.layout_.n_backoff <= sum(len(c) for c in crf.classes_)
    assert not any(crf.graph_.edge_kind[e] == IN_CHAIN for e in crf.forbidden_)
    q, labelling = _with_unseen_transition(crf, y)
    assert closed.log_prob([X[q]], [labelling])[0] == -np.inf
    lp = crf.log_prob([X[q]], [labelling])[0]
    assert np.isfinite(lp) and lp < 0
    decoded = crf.decode([X[q]], fixed=[labelling])[0]
    assert [tuple(t) for t in decoded.labels] == labelling


def test_backoff_probabilities_sum_to_one_and_roundtrip(tmp_path):
    crf, X, y = _fitted()
    marg = crf.predict_marginals(X[:3])
    for m in marg:
        for chain in m:
            np.testing.assert_allclose(chain.sum(axis=1), 1.0)
    path = tmp_path / "m.npz"
    crf.save(path)
    back = FactorialCRF.load(path)
    assert back.layout_.n_backoff == crf.layout_.n_backoff
    np.testing.assert_array_equal(back.coef_, crf.coef_)
    np.testing.assert_allclose(back.log_prob(X[:5], y[:5]), crf.log_prob(X[:5], y[:5]))
    assert [p.tolist() for p in back.predict(X[:5])] == [p.tolist() for p in crf.predict(X[:5])]


def test_backoff_weights_inspected_and_warm_start():
    crf, X, y = _fitted(warm_start=True)
    table = crf.top_weights(n=5, kind="backoff")
    assert len(table) == 5 and all(r.kind == "backoff" for r in table)
    n_params = crf.layout_.n_params
    crf.fit(X, y)
    assert crf.layout_.n_params == n_params and np.all(np.isfinite(crf.coef_))


def test_backoff_needs_joint_states_and_fine_tuning():
    X, y = synthetic(n_seq=10, n_chains=1, seed=0)
    with pytest.raises(ValueError, match="backoff"):
        FactorialCRF(max_iter=5, forbidden_transitions="backoff").fit(X, y)
    X, y = synthetic(n_seq=10, n_chains=2, seed=0)
    for params in (dict(finetune_iter=0), dict(objective="likelihood")):
        with pytest.raises(ValueError, match="fine-tuning"):
            FactorialCRF(max_iter=5, forbidden_transitions="backoff", **params).fit(X, y)
    y[0] = [(a, None) for a, _ in y[0]]
    with pytest.raises(ValueError, match="every\\s+label given|every label given"):
        FactorialCRF(max_iter=5, forbidden_transitions="backoff").fit(X, y)


@short_fit
def test_auto_trains_and_decodes_the_seen_transitions_and_scores_the_unseen():
    """``forbidden_transitions="auto"`` (the default), several chains over joint states
    with every label given and at least ``BACKOFF_FOLDS`` sequences: the weights and
    predictions of the closed world (``"unseen"``) bit for bit, plus back-off weights
    for the unseen transitions, so a labelling through one has a finite ``log_prob``
    (``-inf`` under ``"unseen"``) and fixed labels that need one decode; with or without
    the fine-tuning.  The closed world alone with fewer sequences; None for one chain or
    missing labels."""
    from skfcrf.model._building import BACKOFF_FOLDS

    X, y = _sections(BACKOFF_FOLDS, strict_classes=True)
    differs = []
    for params in (dict(finetune_iter=2), dict(finetune_iter=0), dict(objective="likelihood")):
        auto = FactorialCRF(max_iter=5, **params).fit(X, y)
        closed = FactorialCRF(max_iter=5, forbidden_transitions="unseen", **params).fit(X, y)
        assert auto.transitions_["world"] == "seen+backoff", params
        assert auto.transitions_["decoding"] == "seen"
        assert closed.transitions_["world"] == "seen"
        in_chain = {int(closed.graph_.edge_a[e]): m for e, m in closed.forbidden_.items()
                    if closed.graph_.edge_kind[e] == IN_CHAIN}
        assert sorted(auto.layout_.backoff) == sorted(in_chain) == [0, 1]
        for c, mask in in_chain.items():
            np.testing.assert_array_equal(auto.layout_.backoff[c], mask)
        assert auto.transitions_["unseen"] == [int(in_chain[c].sum()) for c in (0, 1)]
        assert not [e for e in auto.forbidden_ if auto.graph_.edge_kind[e] == IN_CHAIN]
        n = closed.coef_.size
        np.testing.assert_array_equal(auto.coef_[:n], closed.coef_)
        assert auto.coef_.size == n + auto.layout_.n_backoff
        assert np.all(auto.coef_[n:] < 0)
        for a, b in zip(auto.predict(X), closed.predict(X)):
            np.testing.assert_array_equal(a, b)
        for a, b in zip(auto.decode(X), closed.decode(X)):
            np.testing.assert_array_equal(a.labels, b.labels)
        # observations in reverse: decoded over the seen transitions as the closed
        # world does, where the back-off model's own MAP takes unseen ones
        backwards = [X[0][::-1]]
        np.testing.assert_array_equal(auto.predict(backwards)[0], closed.predict(backwards)[0])
        np.testing.assert_array_equal(auto.decode(backwards)[0].labels,
                                      closed.predict(backwards)[0])
        seq_ptr, unary, pair, method = auto._inference_inputs(backwards)
        open_map = auto.classes_[1][method.map(seq_ptr, unary, pair)[0][:, 1]]
        differs.append(not np.array_equal(open_map, auto.predict(backwards)[0][:, 1]))
    assert differs[0]           # the case is one where the spaces disagree
    # the sections in reverse order: impossible in the closed world, improbable here
    reverse = [(f"c{15 - int(b[1:])}", f"s{15 - int(b[1:]):02d}") for _, b in y[0]]
    assert np.isfinite(auto.log_prob([X[0]], [reverse])).all()
    assert np.isneginf(closed.log_prob([X[0]], [reverse])).all()
    assert auto.log_prob(X[:1], y[:1])[0] > auto.log_prob([X[0]], [reverse])[0]
    # fixed labels that need unseen transitions decode over the back-off model, per
    # sequence; the other sequences over the seen transitions as before
    fixed = np.full((len(y[0]), 2), None, dtype=object)
    fixed[:, 1] = [b for _, b in reverse]
    both = auto.decode([X[0], X[1]], fixed=[fixed, None])
    np.testing.assert_array_equal(both[0].labels[:, 1], fixed[:, 1])
    assert np.isfinite(both[0].log_prob)
    np.testing.assert_array_equal(both[1].labels, auto.predict([X[1]])[0])
    with pytest.raises(ValueError):
        closed.decode([X[0]], fixed=[fixed])
    with pytest.raises(ValueError):            # a bad fixed is refused as before
        auto.decode([X[0], X[1]], fixed=[fixed])
    # fewer sequences than folds: the closed world; one chain or a missing label: open
    few = FactorialCRF(max_iter=5).fit(X[:BACKOFF_FOLDS - 1], y[:BACKOFF_FOLDS - 1])
    assert few.layout_.n_backoff == 0 and few.transitions_["world"] == "seen"
    assert any(few.graph_.edge_kind[e] == IN_CHAIN for e in few.forbidden_)
    X1, y1 = synthetic(n_seq=BACKOFF_FOLDS, n_chains=1, seed=0)
    one = FactorialCRF(max_iter=5).fit(X1, y1)
    assert not one.forbidden_ and one.transitions_["world"] == "open"
    y[0] = [(a, None) for a, _ in y[0]]
    partial = FactorialCRF(max_iter=5).fit(X, y)
    assert partial.layout_.n_backoff == 0 and not partial.forbidden_
    assert partial.transitions_["world"] == "open"


@short_fit
def test_auto_choice_round_trips_through_the_model_file(tmp_path):
    """The model file keeps ``transitions_`` and with it the decoding over the seen
    transitions: predictions, ``log_prob`` and the choice equal after loading; a file
    without the key (written before it existed) decodes over every allowed
    transition, as such a model did; a malformed one is refused."""
    from skfcrf.estimators import _persistence

    X, y = _sections(6, strict_classes=True)
    auto = FactorialCRF(max_iter=5, finetune_iter=2).fit(X, y)
    path = tmp_path / "m.npz"
    auto.save(path)
    back = FactorialCRF.load(path)
    assert back.transitions_ == auto.transitions_ and back._decodes_seen()
    for a, b in zip(auto.predict(X), back.predict(X)):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(back.log_prob(X, y), auto.log_prob(X, y))
    header, arrays = _persistence._model_contents(auto)
    del header["transitions"]
    with open(tmp_path / "old.npz", "wb") as fh:
        _persistence._write_npz(fh, header, arrays)
    old = FactorialCRF.load(tmp_path / "old.npz")
    assert old.transitions_ is None and not old._decodes_seen()
    for bad in (dict(auto.transitions_, decoding="sometimes"), dict(auto.transitions_, unseen=[1]),
                {"world": "seen"}):
        header["transitions"] = bad
        with open(tmp_path / "bad.npz", "wb") as fh:
            _persistence._write_npz(fh, header, arrays)
        with pytest.raises(ValueError, match="transitions must be"):
            FactorialCRF.load(tmp_path / "bad.npz")


@short_fit
def test_explicit_backoff_needs_two_sequences():
    X, y = synthetic(n_seq=2, n_chains=2, seed=0)
    with pytest.raises(ValueError, match="at least two, got 1"):
        FactorialCRF(max_iter=5, forbidden_transitions="backoff").fit(X[:1], y[:1])
    crf = FactorialCRF(max_iter=5, finetune_iter=2, forbidden_transitions="backoff").fit(X, y)
    assert crf.layout_.n_backoff > 0 and np.all(np.isfinite(crf.coef_))


def test_nonfinite_kernel_marginals_are_redone_in_the_log_domain(monkeypatch):
    """A sequence whose scaled marginals came out non-finite (seen once on a dictation
    report, the backward pass overflowing) is redone in the log domain by the joint
    inference method, not returned as NaN."""
    import skfcrf.inference._joint as joint_method
    from skfcrf._kernels.states import logdomain_state_marginals
    from skfcrf.inference import resolve_method

    rng = np.random.default_rng(7)
    graph, states, seq_ptr, unary, pair, eo, backoff, _ = _problem(rng, [2, 3], [3, 4, 2])
    method = resolve_method("joint", graph, states)
    real = joint_method.joint_marginals

    def broken(*args, **kwargs):
        node, *rest = real(*args, **kwargs)
        node[seq_ptr[1]:seq_ptr[2]] = np.nan
        return (node, *rest)

    monkeypatch.setattr(joint_method, "joint_marginals", broken)
    node, log_z, *_ = method.sum_product(seq_ptr, unary, pair)
    assert np.isfinite(node).all()
    rows = np.arange(seq_ptr[1], seq_ptr[2])
    ref_z, ref_node = logdomain_state_marginals(graph, states, unary, pair, rows)
    np.testing.assert_allclose(node[rows], ref_node, atol=1e-10)
    assert log_z[1] == pytest.approx(ref_z)


def test_many_short_sequences_take_the_dense_kernel(monkeypatch):
    """Where the dense products in lockstep blocks are cheaper (many short sequences,
    few states) back-off marginals come from the dense kernel, with the grouped
    kernel's results."""
    import skfcrf._kernels.joint as joint

    rng = np.random.default_rng(3)
    graph, states, seq_ptr, unary, pair, eo, backoff, st = _problem(
        rng, [3, 3], rng.integers(1, 6, size=40), state_trans=True)
    calls = []
    dense = joint._dense_backoff_marginals
    monkeypatch.setattr(joint, "_dense_backoff_marginals",
                        lambda *a, **k: calls.append(1) or dense(*a, **k))
    out = joint_marginals(graph, states, seq_ptr, unary, pair, pair_marginals=True,
                          state_trans=st, backoff=backoff, state_pairs=True)
    assert calls
    log_z = joint_log_partition(graph, states, seq_ptr, unary, pair, state_trans=st,
                                backoff=backoff)
    assert len(calls) == 1                  # the forward pass builds its dense tables itself
    monkeypatch.setattr(joint, "DENSE_BACKOFF_BLOCK", 10 ** 6)        # grouped
    np.testing.assert_allclose(joint_log_partition(graph, states, seq_ptr, unary, pair,
                                                   state_trans=st, backoff=backoff),
                               log_z, rtol=1e-10)
    ref = joint_marginals(graph, states, seq_ptr, unary, pair, pair_marginals=True,
                          state_trans=st, backoff=backoff, state_pairs=True)
    assert len(calls) == 1
    for a, b in zip(out[:3], ref[:3]):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-9)
    for c in backoff:
        np.testing.assert_allclose(out[3][c], ref[3][c], atol=1e-9)
    np.testing.assert_allclose(out[4], ref[4], atol=1e-9)


def _sections(n_seq, n_sections=16, seed=0, strict_classes=False, rare=True):
    """Two chains: chain 0 the token's class (3 labels, every transition but
    ``c0 -> c2`` seen, each in many sequences; ``rare``: a fourth class ``c3`` at one
    token of the first sequence, so its transitions are seen in that sequence alone:
    a loose grammar), chain 1 a run of sections in a fixed order (only ``s_i -> s_i``
    and ``s_i -> s_{i+1}`` seen: 31 of 256 transitions, a strict one).
    ``strict_classes``: chain 0's class is the section's number instead (strict
    too)."""
    rng = np.random.default_rng(seed)
    X, y = [], []
    for i in range(n_seq):
        obs, labels, t = [], [], -1
        for s in range(n_sections):
            for _ in range(int(rng.integers(1, 4))):
                drawn = int(rng.integers(0, 3))
                t = 1 if t == 0 and drawn == 2 else drawn
                if strict_classes:
                    t = s
                elif rare and i == 0 and len(labels) == 2:
                    t = 3
                obs.append({f"w{t}": 1.0, f"sec{s}": 1.0})
                labels.append((f"c{t}", f"s{s:02d}"))
        X.append(obs)
        y.append(labels)
    return X, y


def test_transition_sequence_counts_count_sequences_and_merge_by_sum():
    """Per in-chain edge, the sequences each transition occurs in (a transition twice
    in one sequence counts once; a missing label shows none), by brute force; the
    counts of a split of the sequences add up to those of the whole."""
    from skfcrf.model._labels import seen_transitions, transition_sequence_counts

    graph = build_graph([3, 2], [(0, 1)], "default", "default")
    gold = np.array([[0, 0], [1, 1], [0, 0], [1, 1],      # 0 -> 1 twice in sequence 0
                     [0, 1], [1, -1], [2, 0],             # chain 1: no pair through -1
                     [2, 1], [2, 1]], dtype=np.int32)
    seq_ptr = np.array([0, 4, 7, 9])
    counts = transition_sequence_counts(graph, seq_ptr, gold)
    seen = seen_transitions(graph, seq_ptr, gold)
    for e, n in counts.items():
        c = int(graph.edge_a[e])
        brute = np.zeros_like(n)
        for k in range(3):
            pairs = {(int(a), int(b)) for a, b in zip(gold[seq_ptr[k]:seq_ptr[k + 1] - 1, c],
                                                      gold[seq_ptr[k] + 1:seq_ptr[k + 1], c])
                     if a >= 0 and b >= 0}
            for a, b in pairs:
                brute[a, b] += 1
        np.testing.assert_array_equal(n, brute)
        np.testing.assert_array_equal(n > 0, seen[e])
    chain0 = next(e for e in counts if graph.edge_a[e] == 0)
    assert counts[chain0][0, 1] == 2 and counts[chain0][2, 2] == 1
    first = transition_sequence_counts(graph, seq_ptr[:2], gold[:4])
    rest = transition_sequence_counts(graph, seq_ptr[1:] - 4, gold[4:])
    for e in counts:
        np.testing.assert_array_equal(first[e] + rest[e], counts[e])


def _loose_task(n_seq, seed, n_labels=12, length=12, noise=0.3):
    """Two chains: chain 0 labels drawn at random at every token (every transition
    possible, a loose grammar: 25 training sequences see few of the 144 transitions
    twice), observed through noise; chain 1 the label's third, all of whose
    transitions occur."""
    rng = np.random.default_rng(seed)
    X, y = [], []
    for _ in range(n_seq):
        labels = rng.integers(0, n_labels, length)
        X.append([{f"w{a if rng.random() > noise else rng.integers(0, n_labels)}": 1.0,
                   f"third{a // 4}": 1.0} for a in labels])
        y.append([(f"p{a}", f"t{a // 4}") for a in labels])
    return X, y


def _strict_task(n_seq, seed, n_sections=6, noise=0.45):
    """Two chains: sections in a fixed order (chain 0) and their pairs (chain 1), each
    seen in every sequence, observed through noise: a strict grammar."""
    rng = np.random.default_rng(seed)
    X, y = [], []
    for _ in range(n_seq):
        obs, labels = [], []
        for s in range(n_sections):
            for _ in range(int(rng.integers(2, 5))):
                shown = s if rng.random() > noise else int(rng.integers(0, n_sections))
                obs.append({f"w{shown}": 1.0})
                labels.append((f"s{s}", f"g{s // 2}"))
        X.append(obs)
        y.append(labels)
    return X, y


@short_fit
@pytest.mark.parametrize("task, n_train, winner", [(_loose_task, 25, None),
                                                   (_strict_task, 60, "unseen")])
def test_auto_chooses_the_world_that_wins_on_a_task_built_for_it(task, n_train, winner):
    """On a task whose chain 0 is a loose grammar (new transitions at test time) the
    open world wins and ``"auto"`` leaves the chain open; on a strict one the closed
    world wins and ``"auto"`` closes it: its predictions are the winner's, whose
    joint accuracy on 200 new sequences beats the other world's."""
    from skfcrf.metrics import joint_accuracy

    X, y = task(n_train, 0)
    X_test, y_test = task(200, 1)
    fits = {ft: FactorialCRF(max_iter=30, forbidden_transitions=ft).fit(X, y)
            for ft in ("auto", "unseen", None)}
    scores = {ft: joint_accuracy(y_test, m.predict(X_test)) for ft, m in fits.items()}
    loser = "unseen" if winner is None else None
    assert scores[winner] > scores[loser]
    for a, b in zip(fits["auto"].predict(X_test), fits[winner].predict(X_test)):
        np.testing.assert_array_equal(a, b)
    choice = fits["auto"].transitions_
    assert choice["open"] == ([0] if winner is None else [])
    rates = choice["new_rate"]
    assert (rates[0] > NEW_TRANSITION_RATE) == (winner is None) and rates[1] == 0.0


@short_fit
def test_new_transition_rate_counts_the_transitions_of_one_sequence():
    """:func:`new_transition_rate`: the transitions seen in exactly one sequence over
    the consecutive token pairs, by brute force; merged statistics give the whole
    set's rate."""
    from skfcrf.model._building import StructureStatistics, new_transition_rate

    X, y = _loose_task(9, 3)
    crf = FactorialCRF(max_iter=1).fit(X, y)
    Xm, seq_ptr = crf.encoder_.transform(X)
    gold = encode_labels(crf.classes_, [np.asarray(s, dtype=object) for s in y])
    stats = StructureStatistics.collect(crf.graph_, Xm, seq_ptr, gold)
    halves = StructureStatistics.merge([
        StructureStatistics.collect(crf.graph_, Xm[:seq_ptr[4]], seq_ptr[:5], gold[:seq_ptr[4]]),
        StructureStatistics.collect(crf.graph_, Xm[seq_ptr[4]:], seq_ptr[4:] - seq_ptr[4],
                                    gold[seq_ptr[4]:])])
    for e in stats.transition_sequences:
        c = int(crf.graph_.edge_a[e])
        in_seqs = {}
        for i, seq in enumerate(y):
            for a, b in zip(seq[:-1], seq[1:]):
                in_seqs.setdefault((a[c], b[c]), set()).add(i)
        brute = sum(len(v) == 1 for v in in_seqs.values()) / sum(len(s) - 1 for s in y)
        assert new_transition_rate(crf.graph_, e, stats) == pytest.approx(brute)
        assert new_transition_rate(crf.graph_, e, halves) == pytest.approx(brute)


@short_fit
def test_grid_search_chooses_among_the_worlds():
    """``GridSearchCV`` over ``forbidden_transitions`` (the default and the explicit
    worlds) fits and scores every one; on the strict task of
    :func:`_strict_task` the refitted best model is a closed one, and it keeps
    ``transitions_``."""
    from sklearn.model_selection import GridSearchCV, KFold

    X, y = _strict_task(30, 0)
    grid = {"forbidden_transitions": ["auto", "unseen", "backoff", None]}
    search = GridSearchCV(FactorialCRF(max_iter=10), grid, cv=KFold(3)).fit(X, y)
    scores = search.cv_results_["mean_test_score"]
    assert np.all(np.isfinite(scores)) and len(scores) == 4
    assert search.best_params_["forbidden_transitions"] is not None
    assert search.best_estimator_.transitions_["world"] in ("seen+backoff", "seen", "backoff")
    # "auto" and "unseen" decode alike: the same cross-validated score
    assert scores[0] == scores[1]
