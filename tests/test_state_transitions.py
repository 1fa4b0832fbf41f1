"""Joint-state transition weights: kernels, objective and estimator against enumeration."""
import itertools

import numpy as np
import pytest
from scipy.special import logsumexp
from test_joint import case_problem

from skfcrf import FactorialCRF
from skfcrf._kernels.graph import pair_layout
from skfcrf._kernels.joint import joint_log_partition, joint_map, joint_marginals
from skfcrf._kernels.states import (
    logdomain_pair_marginals,
    state_index,
    state_nbest,
    state_path_scores,
)
from skfcrf.estimators import training_problem

from _helpers import assert_central_differences, short_fit, synthetic
from brute import full_score


def enumerate_with_transitions(graph, unary, pair, start, T, states, V):
    """Every labelling over ``states`` of the sequence at ``start``: labels, state indices
    and scores including the joint-state transition weights ``V``."""
    eo = pair_layout(graph, unary.shape[0])
    labs, paths, scores = [], [], []
    for path in itertools.product(range(len(states)), repeat=T):
        y = states[list(path)].astype(np.int64).reshape(T, -1)
        score = full_score(graph, unary, pair, eo, start, y)
        score += sum(V[path[t - 1], path[t]] for t in range(1, T))
        labs.append(y)
        paths.append(path)
        scores.append(score)
    return labs, paths, np.array(scores)


@pytest.mark.parametrize("case", [1, 2, 3, 4])
@pytest.mark.parametrize("forbid", [False, True])
@pytest.mark.parametrize("sparse", [None, True])
def test_inference_with_state_transitions_equals_enumeration(case, forbid, sparse):
    lengths = [0, 1, 3, 2, 4]
    graph, seq_ptr, unary, pair, states, _ = case_problem(case, case, lengths, forbid)
    S = len(states)
    V = np.random.default_rng(case).normal(scale=1.5, size=(S, S))
    labels, _ = joint_map(graph, states, seq_ptr, unary, pair, sparse=sparse, state_trans=V)
    node, pmarg, log_z, counts = joint_marginals(graph, states, seq_ptr, unary, pair,
                                                 pair_marginals=True, sparse=sparse,
                                                 state_trans=V, state_pairs=True)
    forward = joint_log_partition(graph, states, seq_ptr, unary, pair, sparse=sparse,
                                  state_trans=V)
    best3 = state_nbest(graph, states, seq_ptr, unary, pair, 3, state_trans=V)
    expected_counts = np.zeros((S, S))
    for s, T in enumerate(lengths):
        lo = int(seq_ptr[s])
        if T == 0:
            continue
        labs, paths, scores = enumerate_with_transitions(graph, unary, pair, lo, T, states, V)
        finite = np.isfinite(scores)
        if not finite.any():
            assert log_z[s] == -np.inf
            continue
        ref = logsumexp(scores[finite])
        assert log_z[s] == pytest.approx(ref, rel=1e-10, abs=1e-10)
        assert forward[s] == pytest.approx(ref, rel=1e-10, abs=1e-10)
        p = np.where(finite, np.exp(scores - ref), 0.0)
        # Viterbi: a labelling of the best score (ties allowed)
        got = labels[lo:lo + T]
        i = [k for k, y in enumerate(labs) if np.array_equal(y, got)][0]
        assert scores[i] == pytest.approx(scores.max(), abs=1e-9)
        # node marginals
        ref_node = np.zeros((T, graph.total_labels))
        for y, pk in zip(labs, p):
            for t in range(T):
                ref_node[t, graph.label_offset[:-1] + y[t]] += pk
        np.testing.assert_allclose(node[lo:lo + T], ref_node, atol=1e-10)
        for path, pk in zip(paths, p):
            for t in range(1, T):
                expected_counts[path[t - 1], path[t]] += pk
        # n-best: the three best scores, best first
        top = np.sort(scores[finite])[::-1][:3]
        np.testing.assert_allclose([v for _, v in best3[s]], top, atol=1e-9)
        # the log-domain reference the underflow rescue uses
        rows = np.arange(lo, lo + T)
        lz, _, _, state_counts = logdomain_pair_marginals(graph, states, unary, pair, rows, V,
                                                          state_pairs=True)
        assert lz == pytest.approx(ref, rel=1e-10)
        seq_counts = np.zeros((S, S))
        for path, pk in zip(paths, p):
            for t in range(1, T):
                seq_counts[path[t - 1], path[t]] += pk
        np.testing.assert_allclose(state_counts, seq_counts, atol=1e-10)
    np.testing.assert_allclose(counts, expected_counts, atol=1e-10)


def test_state_index_and_path_scores():
    states = np.array([[0, 0], [0, 2], [1, 1]], np.int32)
    labels = np.array([[1, 1], [0, 2], [0, 0], [5, 5], [0, 0]])
    assert state_index(states, labels).tolist() == [2, 1, 0, -1, 0]
    V = np.arange(9.0).reshape(3, 3)
    # sequences [0, 3) and [3, 5): 2->1, 1->0 in the first; the second starts outside
    assert state_path_scores(states, np.array([0, 3, 5]), labels, V).tolist() == [7.0 + 3.0, 0.0]


def _params(n_chains, **kw):
    return dict(objective="likelihood", inference="joint", sigma=2.0,
                coupling="all" if n_chains == 3 else "adjacent", state_transitions=True, **kw)


@pytest.mark.parametrize("n_chains", [2, 3])
@pytest.mark.parametrize("coupling_features", ["default", "supported"])
@pytest.mark.parametrize("forbid", [None, "unseen"])
def test_likelihood_gradient_and_value_with_state_transitions(n_chains, coupling_features, forbid):
    """Finite differences on every state-transition weight (and a sample of the others),
    and the loss equals the enumerated ``log Z`` minus the gold score, both with V."""
    X, y = synthetic(n_seq=5, n_chains=n_chains, length=(1, 4), noise=0.3)
    est = FactorialCRF(**_params(n_chains, coupling_features=coupling_features,
                                 forbidden_transitions=forbid))
    objective, theta0, _ = training_problem(est, X, y)
    layout = est.layout_
    assert layout.n_state_pairs > 0
    rng = np.random.default_rng(n_chains)
    theta = rng.normal(scale=0.5, size=theta0.shape)
    loss, grad = objective.loss_gradient(theta)
    idx = np.concatenate([np.arange(layout.bias_state, layout.n_params),
                          rng.choice(layout.bias_state, size=min(20, layout.bias_state),
                                     replace=False)])
    assert_central_differences(objective.loss_gradient, theta, grad, idx)
    # the value, without the prior, by enumeration
    plain = FactorialCRF(**{**est.get_params(), "sigma": np.inf})
    objective, _, _ = training_problem(plain, X, y)
    data_loss, _ = objective.loss_gradient(theta)
    b, states = objective.batch, plain.joint_states_
    V = layout.state_transitions(theta, states)
    unary, pair, eo = layout.potentials(theta, b.obs, 1, plain.forbidden_)
    ref = 0.0
    for s in range(b.n_sequences):
        lo, hi = b.seq_ptr[s], b.seq_ptr[s + 1]
        _, _, scores = enumerate_with_transitions(plain.graph_, unary, pair, lo, hi - lo,
                                                  states, V)
        gold = b.gold[lo:hi]
        gold_score = full_score(plain.graph_, unary, pair, eo, lo, gold)
        gold_score += state_path_scores(states, np.array([0, hi - lo]), gold, V)[0]
        ref += logsumexp(scores[np.isfinite(scores)]) - gold_score
    assert data_loss == pytest.approx(ref, rel=1e-10)


def test_partial_labels_gradient_with_state_transitions():
    X, y = synthetic(n_seq=6, n_chains=2, length=(2, 5), noise=0.3)
    y = [list(seq) for seq in y]
    y[0][1] = (None, y[0][1][1])
    y[2][0] = (y[2][0][0], None)
    est = FactorialCRF(**_params(2))
    objective, theta0, _ = training_problem(est, X, y)
    assert est.layout_.n_state_pairs > 0 and objective.batch.known is not None
    theta = np.random.default_rng(0).normal(scale=0.5, size=theta0.shape)
    loss, grad = objective.loss_gradient(theta)
    assert_central_differences(objective.loss_gradient, theta, grad,
                               range(est.layout_.bias_state - 5, est.layout_.n_params))


def test_likelihood_keeps_one_marginals_array_between_evaluations():
    """The likelihood over the joint states hands the inference the same node
    marginals array at every evaluation (not a new ``(N, Ltot)`` one, which the
    operating system clears each time), and computes the scores into one array
    too; what they held before changes nothing."""
    X, y = synthetic(n_seq=6, n_chains=2, length=(1, 5), noise=0.3)
    objective, theta0, _ = training_problem(FactorialCRF(**_params(2)), X, y)
    a, b = np.random.default_rng(1).normal(scale=0.5, size=(2,) + theta0.shape)
    first = objective.data_loss_gradient(a)
    kept, scores = objective._node, objective._scores
    assert kept is not None and kept.shape == (objective.batch.seq_ptr[-1],
                                               objective.layout.graph.total_labels)
    assert scores is not None and scores.shape == (objective.batch.seq_ptr[-1],
                                                   objective.layout.score_width)
    objective.data_loss_gradient(b)
    again = objective.data_loss_gradient(a)
    assert objective._node is kept and objective._scores is scores
    assert first[0] == again[0]
    np.testing.assert_array_equal(first[1], again[1])


def test_other_objectives_leave_state_transitions_alone():
    """The independent chains and the pseudolikelihoods neither use nor move V: the loss
    does not depend on it and the gradient there is zero (plus the prior's for PL)."""
    X, y = synthetic(n_seq=8, n_chains=2, length=(2, 6), noise=0.3)
    for objective_name in ("independent", "chainwise", "pseudolikelihood"):
        est = FactorialCRF(objective=objective_name, sigma=np.inf, state_transitions=True)
        objective, theta0, _ = training_problem(est, X, y)
        start = est.layout_.bias_state
        assert est.layout_.n_state_pairs > 0
        theta = np.random.default_rng(1).normal(size=theta0.shape)
        without = theta.copy()
        without[start:] = 0.0
        loss, grad = objective.loss_gradient(theta)
        assert loss == pytest.approx(objective.loss_gradient(without)[0], rel=1e-12)
        assert not grad[start:].any()


@short_fit
def test_auto_rules_and_errors():
    X, y = synthetic(n_seq=20, n_chains=2, length=(2, 6), noise=0.2)
    assert FactorialCRF(max_iter=5, finetune_iter=2).fit(X, y).layout_.n_state_pairs > 0
    for params in (dict(finetune_iter=0), dict(inference="trp"), dict(state_transitions=False)):
        assert FactorialCRF(max_iter=5, **params).fit(X, y).layout_.n_state_pairs == 0
    one = [[t[0] for t in seq] for seq in y]
    assert FactorialCRF(max_iter=5).fit(X, one).layout_.n_state_pairs == 0
    with pytest.raises(ValueError, match="state_transitions=True needs several chains"):
        FactorialCRF(max_iter=5, state_transitions=True).fit(X, one)
    with pytest.raises(ValueError, match="inference 'trp'"):
        FactorialCRF(max_iter=5, inference="trp", state_transitions=True).fit(X, y)
    with pytest.raises(ValueError, match="state_transitions"):
        FactorialCRF(state_transitions="yes").fit(X, y)
    # a fitted model's weights are only usable by joint inference
    est = FactorialCRF(max_iter=5, finetune_iter=2).fit(X, y)
    est.set_params(inference="trp")
    with pytest.raises(ValueError, match="joint-state transition weights"):
        est.predict(X)


@short_fit
def test_fitted_model_decodes_saves_and_explains(tmp_path):
    X, y = synthetic(n_seq=20, n_chains=2, length=(2, 5), noise=0.3)
    est = FactorialCRF(max_iter=10, finetune_iter=5, sigma=2.0).fit(X, y)
    layout = est.layout_
    assert np.abs(est.coef_[layout.bias_state:]).max() > 0      # learnt by the fine-tuning
    decoded = est.decode(X[:4], n_best=3)
    Xm, seq_ptr = est.encoder_.transform(X[:4])
    unary, pair, eo = layout.potentials(est.coef_, layout.observation_rows(Xm, seq_ptr), 1,
                                        est.forbidden_)
    states = est.joint_states_
    V = layout.state_transitions(est.coef_, states)
    index = [{lab: i for i, lab in enumerate(c)} for c in est.classes_]
    for s, d in enumerate(decoded):
        lo, T = int(seq_ptr[s]), int(seq_ptr[s + 1] - seq_ptr[s])
        labs, _, scores = enumerate_with_transitions(est.graph_, unary, pair, lo, T, states, V)
        log_z = logsumexp(scores[np.isfinite(scores)])
        order = np.argsort(-scores, kind="stable")
        for rank, alt in enumerate(d.ranked):
            got = np.array([[index[c][v] for c, v in enumerate(r)] for r in alt.labels])
            assert alt.log_prob == pytest.approx(scores[order[rank]] - log_z, abs=1e-9)
            k = [i for i, lab in enumerate(labs) if np.array_equal(lab, got)][0]
            assert scores[k] == pytest.approx(scores[order[rank]], abs=1e-9)
    path = tmp_path / "m.npz"
    est.save(path)
    again = FactorialCRF.load(path)
    np.testing.assert_array_equal(again.layout_.state_from, layout.state_from)
    np.testing.assert_array_equal(again.layout_.state_to, layout.state_to)
    for a, b in zip(again.decode(X[:4], n_best=3), decoded):
        assert np.array_equal(a.labels, b.labels) and a.log_prob == b.log_prob
    top = est.top_weights(n=5, kind="state_transition")
    assert len(top) == 5 and all(r.kind == "state_transition" for r in top)
    assert all(len(r.labels) == 2 and len(r.labels[0]) == 2 for r in top)
    assert top[0].chains == (0, 1) and top[0].observation == "bias"
    kinds = {r.kind for r in est.top_weights(n=layout.n_params)}
    assert kinds == {"unary", "transition", "coupling", "state_transition"}


@short_fit
def test_damaged_state_pairs_are_refused(tmp_path):
    X, y = synthetic(n_seq=10, n_chains=2, length=(2, 5))
    est = FactorialCRF(max_iter=3, finetune_iter=1).fit(X, y)
    path = tmp_path / "m.npz"
    est.save(path)
    with np.load(path) as data:
        arrays = dict(data)
    bad = dict(arrays, state_to=arrays["state_to"] + 100)
    np.savez(tmp_path / "bad.npz", **bad)
    with pytest.raises(ValueError, match="state_to: label indices of chain 0 out of range"):
        FactorialCRF.load(tmp_path / "bad.npz")
    alone = {k: v for k, v in arrays.items() if k != "state_to"}
    np.savez(tmp_path / "alone.npz", **alone)
    with pytest.raises(ValueError, match="state_from and state_to go together"):
        FactorialCRF.load(tmp_path / "alone.npz")


@short_fit
def test_models_pickled_before_state_transitions_still_predict():
    import pickle

    X, y = synthetic(n_seq=10, n_chains=2, length=(2, 5))
    est = FactorialCRF(max_iter=3, finetune_iter=1, state_transitions=False).fit(X, y)
    for key in ("state_from", "state_to", "bias_state"):      # as an older version wrote it
        del est.layout_.__dict__[key]
    again = pickle.loads(pickle.dumps(est))
    assert again.layout_.n_state_pairs == 0
    expected = FactorialCRF(max_iter=3, finetune_iter=1, state_transitions=False).fit(X, y)
    assert all(np.array_equal(a, b) for a, b in zip(again.predict(X), expected.predict(X)))


@short_fit
def test_state_transition_stage_moves_only_those_weights():
    X, y = synthetic(n_seq=20, n_chains=2, length=(2, 6), noise=0.3)
    seen = []
    base = dict(max_iter=6, finetune_iter=3, sigma=2.0, random_state=0, tol=1e-12)
    before = FactorialCRF(**base, state_transition_iter=0).fit(X, y)
    after = FactorialCRF(**base, state_transition_iter=4,
                         callback=lambda it, loss, coef: seen.append(coef.copy())).fit(X, y)
    start = before.layout_.bias_state
    assert after.n_iter_ == before.n_iter_ + 4 and len(after.loss_curve_) == after.n_iter_
    np.testing.assert_array_equal(after.coef_[:start], before.coef_[:start])
    assert not np.array_equal(after.coef_[start:], before.coef_[start:])
    assert all(c.shape == after.coef_.shape for c in seen)         # the callback sees all weights
    np.testing.assert_array_equal(seen[-1], after.coef_)
    assert after.loss_curve_[-1] < before.loss_curve_[-1]          # the same likelihood, lower


@pytest.mark.parametrize("partial", [False, True])
@pytest.mark.parametrize("n_chains", [2, 3])
def test_state_transition_stage_equals_the_likelihood(partial, n_chains):
    """The stage's loss is the likelihood's at the full weights, its gradient the
    likelihood's on the joint-state transition weights (and finite differences agree),
    with and without partial labels (the clamped part held too)."""
    from skfcrf.objectives import StateTransitionStage

    X, y = synthetic(n_seq=6, n_chains=n_chains, length=(2, 5), noise=0.3)
    if partial:
        y = [list(seq) for seq in y]
        y[0][1] = (None,) + tuple(y[0][1][1:])
        y[2][0] = tuple(y[2][0][:-1]) + (None,)
    objective, theta0, _ = training_problem(FactorialCRF(**_params(n_chains)), X, y)
    assert (objective.batch.known is not None) == partial
    theta = np.random.default_rng(n_chains).normal(scale=0.5, size=theta0.shape)
    stage = StateTransitionStage(objective, theta)
    first = objective.layout.bias_state
    np.testing.assert_array_equal(stage.start, theta[first:])
    v = stage.start + np.random.default_rng(1).normal(scale=0.3, size=stage.start.shape)
    loss, grad = stage.loss_gradient(v)
    full_loss, full_grad = objective.loss_gradient(stage.full(v))
    assert loss == pytest.approx(full_loss, rel=1e-12)
    np.testing.assert_allclose(grad, full_grad[first:], rtol=1e-10, atol=1e-12)
    # the held potentials are the stage's own: the likelihood's evaluations at other
    # weights (into the arrays it keeps) leave them alone
    objective.loss_gradient(theta + 1.0)
    assert stage.loss_gradient(v)[0] == loss
    np.testing.assert_array_equal(stage.full(v)[:first], theta[:first])
    assert_central_differences(stage.loss_gradient, v, grad, range(v.size), eps=1e-6, rel=1e-5)


def test_state_transition_stage_needs_those_weights():
    from skfcrf.objectives import StateTransitionStage

    X, y = synthetic(n_seq=4, n_chains=2, length=(2, 4), noise=0.3)
    objective, theta0, _ = training_problem(
        FactorialCRF(**(_params(2) | {"state_transitions": False})), X, y)
    with pytest.raises(ValueError, match="joint-state transition"):
        StateTransitionStage(objective, theta0)


def test_restricted_objective():
    """The generic restriction (the Dask model's stage): the objective's loss at the full
    weights and its gradient on the free ones."""
    from skfcrf.objectives import Restricted

    X, y = synthetic(n_seq=6, n_chains=2, length=(2, 5), noise=0.3)
    objective, theta0, _ = training_problem(FactorialCRF(**_params(2)), X, y)
    theta = np.random.default_rng(0).normal(size=theta0.shape)
    free = np.zeros(theta.size, bool)
    free[::3] = True
    stage = Restricted(objective, free, theta)
    np.testing.assert_array_equal(stage.start, theta[free])
    u = stage.start + 0.1
    loss, grad = stage.loss_gradient(u)
    full_loss, full_grad = objective.loss_gradient(stage.full(u))
    assert loss == full_loss and np.array_equal(grad, full_grad[free])
    assert np.array_equal(stage.full(u)[~free], theta[~free])
