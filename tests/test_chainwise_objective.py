"""Chain-wise (blocked) pseudolikelihood: enumeration, finite differences, thread invariance."""
import itertools
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import logsumexp
from sklearn.exceptions import ConvergenceWarning

from skfcrf import FactorialCRF
from skfcrf.estimators import training_problem
from skfcrf.objectives import allowed_by_joint_states

from _helpers import assert_central_differences, check_gradient, synthetic
from brute import full_score

SUPPORTS = [("supported", "default", "default"), ("all", "supported", "supported"),
            ("default", "all", "all"), ("supported", "supported", "default")]


def forbidden_for(y, n_chains):
    used = {(a[0], b[0]) for seq in y for a, b in zip(seq, seq[1:])}
    labels = sorted({t[0] for seq in y for t in seq})
    unused = sorted({(i, j) for i in labels for j in labels} - used)
    return [unused[:1]] + [None] * (n_chains - 1)


def enumerated(est, objective, theta, joint_states=None):
    """sum_s sum_c -log p(y_c | y_-c, x) by enumerating chain c's labellings."""
    b = objective.batch
    unary, pair, eo = est.layout_.potentials(theta, b.obs, 1, est.forbidden_)
    graph = est.graph_
    total = 0.0
    for s in range(b.n_sequences):
        lo, hi = b.seq_ptr[s], b.seq_ptr[s + 1]
        gold = b.gold[lo:hi]
        for c in range(graph.n_chains):
            scores = []
            for lab in itertools.product(range(graph.n_labels[c]), repeat=hi - lo):
                y = gold.copy()
                y[:, c] = lab
                if joint_states is not None and not all(
                        any((row == st_).all() for st_ in joint_states) for row in y):
                    continue
                scores.append(full_score(graph, unary, pair, eo, lo, y))
            total += logsumexp(scores) - full_score(graph, unary, pair, eo, lo, gold)
    return total


@pytest.mark.parametrize("n_chains", [1, 2, 3])
@pytest.mark.parametrize("support", SUPPORTS[:2])
@pytest.mark.parametrize("forbid", [False, True])
def test_loss_equals_enumerated_conditionals(n_chains, support, forbid):
    X, y = synthetic(n_seq=4, n_chains=n_chains, length=(1, 4))
    # inference="trp": the objective over the full label space (no joint-state restriction)
    est = FactorialCRF(objective="chainwise", unary_features=support[0], inference="trp",
                       transition_features=support[1], coupling_features=support[2],
                       sigma=np.inf, coupling="all" if n_chains == 3 else "adjacent",
                       forbidden_transitions=forbidden_for(y, n_chains) if forbid else None)
    objective, theta0, _ = training_problem(est, X, y)
    theta = np.random.default_rng(1).normal(size=theta0.shape)
    loss, _ = objective.loss_gradient(theta)
    assert loss == pytest.approx(enumerated(est, objective, theta), rel=1e-10)


def test_one_chain_equals_likelihood():
    X, y = synthetic(n_seq=6, n_chains=1)
    cw = training_problem(FactorialCRF(objective="chainwise"), X, y)
    ll = training_problem(FactorialCRF(objective="likelihood"), X, y)
    theta = np.random.default_rng(0).normal(size=cw.theta0.shape)
    a, ga = cw.objective.loss_gradient(theta)
    b, gb = ll.objective.loss_gradient(theta)
    assert a == pytest.approx(b, rel=1e-12)
    np.testing.assert_allclose(ga, gb, rtol=1e-9, atol=1e-9)


def test_joint_state_restriction_equals_enumeration():
    X, y = synthetic(n_seq=4, n_chains=3, length=(1, 4))
    est = FactorialCRF(objective="chainwise", coupling="all", sigma=np.inf, inference="trp",
                       transition_features="supported")
    objective, theta0, _ = training_problem(est, X, y)
    states = np.unique(objective.batch.gold, axis=0)
    restricted = type(objective)(objective.batch, joint_states=states, sigma=np.inf,
                                 forbidden=est.forbidden_)
    theta = np.random.default_rng(2).normal(size=theta0.shape)
    loss, _ = restricted.loss_gradient(theta)
    assert loss == pytest.approx(enumerated(est, objective, theta, states), rel=1e-10)
    assert loss < objective.loss_gradient(theta)[0]


@pytest.mark.parametrize("n_chains", [1, 2, 3])
@pytest.mark.parametrize("support", SUPPORTS)
@pytest.mark.parametrize("forbid", [False, True])
def test_gradient_finite_differences(n_chains, support, forbid):
    X, y = synthetic(n_seq=5, n_chains=n_chains, length=(2, 5))
    est = FactorialCRF(objective="chainwise", unary_features=support[0],
                       transition_features=support[1], coupling_features=support[2],
                       sigma=2.0, coupling="all" if n_chains == 3 else "adjacent",
                       forbidden_transitions=forbidden_for(y, n_chains) if forbid else None,
                       forbidden_couplings={(0, 1): [("c0", "hi")]} if n_chains > 1 else None)
    if n_chains > 1:
        y = [[t for t in seq] for seq in y]
        # keep the forbidden coupling out of the gold labels
        y = [[(t[0], "lo", *t[2:]) if t[:2] == ("c0", "hi") else t for t in seq] for seq in y]
    check_gradient(est, X, y)


def test_gradient_with_joint_states():
    X, y = synthetic(n_seq=5, n_chains=3, length=(2, 5))
    est = FactorialCRF(objective="chainwise", sigma=2.0, coupling="all")
    objective, theta0, _ = training_problem(est, X, y)
    obj = type(objective)(objective.batch, joint_states=np.unique(objective.batch.gold, axis=0),
                          sigma=2.0)
    rng = np.random.default_rng(3)
    theta = rng.normal(scale=0.5, size=theta0.shape)
    _, grad = obj.loss_gradient(theta)
    for i in rng.choice(len(theta), size=30, replace=False):
        step = np.zeros_like(theta)
        step[i] = 1e-5
        num = (obj.loss_gradient(theta + step)[0] - obj.loss_gradient(theta - step)[0]) / 2e-5
        assert abs(num - grad[i]) <= 1e-4 * max(1.0, abs(num))


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2 ** 16), n_seq=st.integers(1, 30), n_chains=st.integers(1, 3))
def test_same_result_for_every_thread_count(seed, n_seq, n_chains):
    X, y = synthetic(n_seq=n_seq, n_chains=n_chains, seed=seed, length=(1, 9))
    objective, theta0, _ = training_problem(
        FactorialCRF(objective="chainwise", transition_features="supported"), X, y)
    theta = np.random.default_rng(seed).normal(scale=0.7, size=theta0.shape)
    objective.n_threads = 1
    ref = objective.loss_gradient(theta)
    for n_threads in (2, 3):
        objective.n_threads = n_threads
        got = objective.loss_gradient(theta)
        assert got[0] == ref[0] and np.array_equal(got[1], ref[1])


def test_allowed_by_joint_states():
    gold = np.array([[0, 1], [1, 0], [1, 1]], dtype=np.int32)
    states = np.array([[0, 1], [1, 1], [1, 0]], dtype=np.int32)
    allowed = allowed_by_joint_states(gold, states, np.array([0, 2, 4]))
    # token 0: chain 0 given chain 1 = 1 -> labels {0, 1}; chain 1 given chain 0 = 0 -> {1}
    assert allowed[0].tolist() == [1, 1, 0, 1]
    assert allowed[1].tolist() == [0, 1, 1, 1]
    assert allowed[2].tolist() == [1, 1, 1, 1]


@pytest.mark.parametrize("support", SUPPORTS[:2])
def test_extreme_weights_fall_back_to_the_log_domain(support):
    """Weights so far apart that the scaled forward pass loses labellings (the gold one
    among them, or a label whose beta would overflow): the term is redone in the log
    domain, so the loss still equals the enumerated one -- never negative -- and the
    gradient is finite and matches central differences."""
    X, y = synthetic(n_seq=4, n_chains=2, length=(2, 5))
    est = FactorialCRF(objective="chainwise", unary_features=support[0], inference="trp",
                       transition_features=support[1], coupling_features=support[2],
                       sigma=np.inf, forbidden_transitions=forbidden_for(y, 2))
    objective, theta0, _ = training_problem(est, X, y)
    rng = np.random.default_rng(5)
    theta = rng.normal(scale=400.0, size=theta0.shape)
    loss, grad = objective.loss_gradient(theta)
    assert np.isfinite(loss) and loss >= 0.0 and np.all(np.isfinite(grad))
    assert loss == pytest.approx(enumerated(est, objective, theta), rel=1e-9)
    idx = rng.choice(len(theta), size=min(len(theta), 30), replace=False)
    assert_central_differences(objective.loss_gradient, theta, grad, idx, rel=1e-4)


def test_forbidden_transitions_keep_the_loss_a_likelihood():
    # issue 29's reproduction: the scaled forward pass lost the gold path, the loss went
    # negative (151 -> -816 -> -3.4e6) and the weights beyond 1e3; then NaN gradients
    # from an overflowing beta stopped L-BFGS at loss 137
    from skfcrf.datasets import make_dictations
    from skfcrf.transformers import make_dictation_features

    X, y = make_dictations(10, "rcg", random_state=9)
    F = make_dictation_features().fit_transform(X)
    est = FactorialCRF(objective="chainwise", finetune_iter=0, max_iter=60, tol=1e-7)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est.fit(F[:7], y[:7])
    assert min(est.loss_curve_) > 0 and est.n_iter_ == 60
    # the trained weights; the back-off weights "auto" adds after training come last (a
    # label the held-out folds never enter gets one far below zero)
    trained = est.coef_[:est.coef_.size - est.layout_.n_backoff]
    assert np.abs(trained).max() < 50
    assert np.all(np.isfinite(est.coef_[trained.size:]))
    objective, _, _ = training_problem(est, F[:7], y[:7])
    assert np.all(np.isfinite(objective.loss_gradient(trained)[1]))


def _cycling_chains(n_seq, seed, n_labels=16):
    """Two chains: a 3-label class per token and ``n_labels`` labels that mostly step
    to the next one (few of the n_labels^2 transitions are seen: "unseen" forbids the
    rest, leaving a sparse transition matrix)."""
    rng = np.random.default_rng(seed)
    X, y = [], []
    for _ in range(n_seq):
        T = int(rng.integers(1, 12))
        state = int(rng.integers(n_labels))
        seq_x, seq_y = [], []
        for _ in range(T):
            state = (state + (1 if rng.random() < 0.8 else 0)) % n_labels
            cls = int(rng.integers(3))
            seq_x.append({f"w{state}": 1.0, f"c{cls}": 1.0, f"n{int(rng.integers(5))}": 0.5})
            seq_y.append((f"k{cls}", f"s{state}"))
        X.append(seq_x)
        y.append(seq_y)
    return X, y


@pytest.mark.parametrize("objective, variant", [
    ("chainwise", "plain"), ("chainwise", "joint_states"), ("independent", "plain"),
    ("independent", "partial"), ("independent", "joint_states")])   # chain-wise: every label
@pytest.mark.parametrize("scale", [0.5, 30.0])
def test_sparse_transitions_change_no_bit(monkeypatch, objective, scale, variant):
    # a chain whose allowed transitions are few is multiplied as a sparse matrix; every
    # output is summed in the dense products' order, so loss and gradient keep their
    # bits -- with large weights too (the log-domain fallback), partial labels, and
    # labels restricted to the seen combinations
    from skfcrf._kernels import _chainwise
    X, y = _cycling_chains(25, seed=int(scale))
    if variant == "partial":
        y = [[(None, s) if (i + k) % 4 == 0 else (c, s) for i, (c, s) in enumerate(seq)]
             for k, seq in enumerate(y)]
    forbid = "unseen"
    if variant == "partial":            # "unseen" needs every label: chain 1's, listed
        seen = {(a[1], b[1]) for seq in y for a, b in zip(seq, seq[1:])}
        labels = sorted({t[1] for seq in y for t in seq})
        forbid = [None, [(a, b) for a in labels for b in labels if (a, b) not in seen]]
    est = FactorialCRF(objective=objective, sigma=2.0, state_transitions=False,
                       forbidden_transitions=forbid, n_jobs=2)
    obj, theta0, _ = training_problem(est, X, y)
    if variant == "joint_states":
        obj = type(obj)(obj.batch, joint_states=np.unique(obj.batch.gold, axis=0),
                        sigma=2.0, forbidden=obj.forbidden, n_threads=2)
    theta = np.random.default_rng(7).normal(scale=scale, size=theta0.shape)
    results = {}
    for threshold in (-1.0, 1.0):       # no chain sparse / every chain sparse
        monkeypatch.setattr(_chainwise, "SPARSE_TRANSITIONS", threshold)
        monkeypatch.setattr(_chainwise, "LANE_TRANSITIONS", threshold)
        results[threshold] = obj.loss_gradient(theta)
    assert np.isfinite(results[1.0][0])
    assert results[1.0][0] == results[-1.0][0]
    np.testing.assert_array_equal(results[1.0][1], results[-1.0][1])


def _cycling_tables():
    """The kernel tables of a closed independent-chains model of 40 cycling sequences
    (a 3-label chain with every transition seen, a 16-label one with few) and its tied
    transitions at the initial weights."""
    X, y = _cycling_chains(40, seed=1)
    est = FactorialCRF(objective="independent", forbidden_transitions="unseen",
                       state_transitions=False)
    obj, theta0, _ = training_problem(est, X, y)
    tables = obj.terms.tables
    return tables, np.array(tables.chain_transitions(theta0)[1])


def test_sparse_transitions_are_taken_where_few():
    # the 16-label chain's seen transitions are under 15% of its pairs, the 3-label
    # chain's are not: only the first is multiplied as a sparse matrix
    from skfcrf._kernels._chainwise import _sparse_transitions
    tables, tied_exp = _cycling_tables()
    on, ptr_off, off, row_ptr, col, val, col_ptr, row, cval = _sparse_transitions(
        tables, tied_exp)
    assert list(on) == [0, 1]
    L, o = tables.n_labels[1], tables.chain_tied[1]
    E = np.asarray(tied_exp[o:o + L * L]).reshape(L, L)
    nnz = int((E != 0).sum())
    assert nnz <= 0.15 * L * L
    ptr = row_ptr[ptr_off[1]:ptr_off[1] + L + 1]
    rebuilt = np.zeros((L, L))
    for i in range(L):
        rebuilt[i, col[off[1] + ptr[i]:off[1] + ptr[i + 1]]] = val[off[1] + ptr[i]:
                                                                  off[1] + ptr[i + 1]]
    np.testing.assert_array_equal(rebuilt, E)
    cptr = col_ptr[ptr_off[1]:ptr_off[1] + L + 1]
    rebuilt[:] = 0.0
    for j in range(L):
        rebuilt[row[off[1] + cptr[j]:off[1] + cptr[j + 1]], j] = cval[off[1] + cptr[j]:
                                                                     off[1] + cptr[j + 1]]
    np.testing.assert_array_equal(rebuilt, E)


def test_lanes_take_the_sparse_form_up_to_half_nonzero():
    # where the sequences run in lanes, a chain with at most LANE_TRANSITIONS of its
    # transitions nonzero takes the sparse form (its passes then run in lockstep);
    # one sequence at a time, only one with at most SPARSE_TRANSITIONS does
    from skfcrf._kernels._chainwise import LANE_TRANSITIONS, SPARSE_TRANSITIONS, _sparse_transitions
    tables, tied_exp = _cycling_tables()
    L, o = tables.n_labels[0], tables.chain_tied[0]
    assert L == 3
    for n_nonzero, lanes_sparse in ((4, True), (5, False)):    # 44% and 56% of 9
        E = np.zeros(L * L)
        E[:n_nonzero] = 1.0
        tied_exp[o:o + L * L] = E
        assert SPARSE_TRANSITIONS < 4 / 9 <= LANE_TRANSITIONS < 5 / 9
        assert list(_sparse_transitions(tables, tied_exp)[0]) == [0, 1]
        assert list(_sparse_transitions(tables, tied_exp, True)[0]) == [int(lanes_sparse), 1]


@pytest.mark.parametrize("objective", ["chainwise", "independent"])
@pytest.mark.parametrize("scale", [0.5, 30.0])
def test_lanes_give_each_sequence_its_own_bits(monkeypatch, objective, scale):
    # sparse chains run four sequences of a block in lockstep (_chain_terms_lanes); each
    # sequence's terms must be those of it alone (one live lane: the one-sequence pass),
    # bit for bit, over lengths from 1 up and with weights large enough for the
    # log-domain fallback; the gradient sums the same terms in another order
    from skfcrf._kernels import _chainwise
    monkeypatch.setattr(_chainwise, "SPARSE_TRANSITIONS", 1.0)     # every chain sparse
    monkeypatch.setattr(_chainwise, "LANE_TRANSITIONS", 1.0)
    X, y = _cycling_chains(23, seed=3)
    X, y = X + [X[0][:1], X[1][:2]], y + [y[0][:1], y[1][:2]]
    est = FactorialCRF(objective=objective, sigma=2.0, state_transitions=False,
                       forbidden_transitions="unseen", coupling_features="all")
    obj, theta0, _ = training_problem(est, X, y)
    terms, batch = obj.terms, obj.batch
    theta = np.random.default_rng(5).normal(scale=scale, size=theta0.shape)
    assert np.all(np.asarray(_chainwise._sparse_transitions(
        terms.tables, terms.tables.chain_transitions(theta)[1])[0]))
    whole, grad = _chainwise.chainwise_objective(terms.tables, batch.obs, batch.gold, theta,
                                                 2, None, None, terms.dense)
    alone = np.zeros_like(whole)
    summed = np.zeros_like(grad)
    for s in range(batch.n_sequences):
        one = batch.subset([s])
        losses, g = _chainwise.chainwise_objective(terms.tables, one.obs, one.gold, theta, 1,
                                                   None, None, terms.dense)
        alone[s] = losses[0]
        summed += g
    assert np.all(np.isfinite(whole))
    np.testing.assert_array_equal(whole, alone)
    np.testing.assert_allclose(grad, summed, rtol=1e-9, atol=1e-9 * np.abs(summed).max())
