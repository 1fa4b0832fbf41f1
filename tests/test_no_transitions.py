"""``transition_features="none"``: models without in-chain transitions (IML / CML of
Marcheggiani 2014, section 3.2).

Without in-chain templates no factor joins two tokens, so a sequence's distribution is
the product of its tokens': every quantity of a sequence (log-probability, marginals,
decoding) equals that of its tokens taken one by one as one-token sequences.  That is
the brute-force reference here; a model with transitions fails it (checked, so the
reference can fail).
"""
import numpy as np
import pytest

from skfcrf import FactorialCRF
from skfcrf._kernels.graph import IN_CHAIN

from _helpers import check_gradient, short_fit, synthetic

pytestmark = short_fit


def _tokens(X, y):
    """Every token of ``X`` / ``y`` as a one-token sequence."""
    return ([[obs] for seq in X for obs in seq], [[lab] for seq in y for lab in seq])


@pytest.fixture(scope="module")
def data():
    X, y = synthetic(n_seq=30, n_chains=3, seed=4, noise=0.1)
    return X[:20], y[:20], X[20:], y[20:]


@pytest.mark.parametrize("kwargs", [
    dict(),
    dict(coupling="none"),
    dict(coupling="all", objective="likelihood"),
    dict(objective="pseudolikelihood", inference="trp"),
    dict(objective="chainwise", coupling_features="supported"),
])
def test_sequence_is_product_of_its_tokens(data, kwargs):
    Xtr, ytr, Xte, yte = data
    est = FactorialCRF(transition_features="none", max_iter=30, **kwargs).fit(Xtr, ytr)
    assert not any(est.graph_.edge_kind[e] == IN_CHAIN for e in range(est.graph_.n_edges))
    assert est.layout_.n_state_pairs == 0
    Xt, yt = _tokens(Xtr, ytr)
    lp = est.log_prob(Xtr, ytr)
    per_token = est.log_prob(Xt, yt)
    ptr = np.cumsum([0] + [len(s) for s in Xtr])
    np.testing.assert_allclose(lp, np.add.reduceat(per_token, ptr[:-1]), rtol=1e-9, atol=1e-9)
    pred = np.vstack(est.predict(Xte))
    np.testing.assert_array_equal(pred, np.vstack(est.predict(_tokens(Xte, yte)[0])))
    marg = est.predict_marginals(Xte)
    marg_t = est.predict_marginals(_tokens(Xte, yte)[0])
    for c in range(3):
        np.testing.assert_allclose(np.vstack([m[c] for m in marg]),
                                   np.vstack([m[c] for m in marg_t]), atol=1e-9)


def test_reference_fails_with_transitions(data):
    Xtr, ytr, _, _ = data
    est = FactorialCRF(transition_features="default", forbidden_transitions=None,
                       state_transitions=False, max_iter=30).fit(Xtr, ytr)
    Xt, yt = _tokens(Xtr, ytr)
    ptr = np.cumsum([0] + [len(s) for s in Xtr])
    per_token = np.add.reduceat(est.log_prob(Xt, yt), ptr[:-1])
    assert np.abs(est.log_prob(Xtr, ytr) - per_token).max() > 1e-3


def test_fewer_parameters_than_with_transitions(data):
    Xtr, ytr, _, _ = data
    with_t = FactorialCRF(max_iter=5, state_transitions=False).fit(Xtr, ytr)
    without = FactorialCRF(transition_features="none", max_iter=5).fit(Xtr, ytr)
    n_transitions = sum(len(c) ** 2 for c in with_t.classes_)
    assert with_t.coef_.size - without.coef_.size == n_transitions
    assert without.top_weights(n=1000, kind="transition") == []


@pytest.mark.parametrize("objective", ["likelihood", "pseudolikelihood", "chainwise"])
def test_gradient(objective):
    X, y = synthetic(n_seq=8, n_chains=2, seed=1)
    check_gradient(FactorialCRF(transition_features="none", objective=objective), X, y)


def test_model_file_round_trip(tmp_path, data):
    Xtr, ytr, Xte, _ = data
    for coupling in ("adjacent", "none"):
        est = FactorialCRF(transition_features="none", coupling=coupling, max_iter=10)
        est.fit(Xtr, ytr)
        est.save(tmp_path / "m.skfcrf")
        back = FactorialCRF.load(tmp_path / "m.skfcrf")
        assert back.transition_features == "none"
        np.testing.assert_array_equal(np.vstack(back.predict(Xte)), np.vstack(est.predict(Xte)))


@pytest.mark.parametrize("kwargs, match", [
    (dict(forbidden_transitions="backoff"), "forbidden_transitions='backoff'"),
    (dict(forbidden_transitions="unseen"), "forbidden_transitions='unseen'"),
    (dict(forbidden_transitions=[[("c0", "c1")], [], []]), "does not have"),
    (dict(state_transitions=True), "state_transitions=True"),
])
def test_transition_settings_refused(data, kwargs, match):
    Xtr, ytr, _, _ = data
    with pytest.raises(ValueError, match=match):
        FactorialCRF(transition_features="none", **kwargs).fit(Xtr, ytr)


def test_tokenwise_inference_matches_whole_sequences(data):
    """Joint-state inference runs such a model token by token; the kernels over the
    whole sequences (with zero transition scores) give the same results."""
    from skfcrf._kernels.joint import joint_log_partition, joint_map, joint_marginals

    Xtr, ytr, Xte, _ = data
    est = FactorialCRF(transition_features="none", max_iter=30).fit(Xtr, ytr)
    seq_ptr, unary, pair, method = est._inference_inputs(Xte)
    assert method.name == "joint" and method._tokenwise(seq_ptr) is not None
    graph, states = est.graph_, est.joint_states_
    node, log_z = joint_marginals(graph, states, seq_ptr, unary, pair)
    got_node, got_log_z = method.sum_product(seq_ptr, unary, pair)[:2]
    np.testing.assert_allclose(got_log_z, log_z, rtol=1e-12)
    np.testing.assert_allclose(got_node, node, atol=1e-12)
    np.testing.assert_allclose(method.log_partition(seq_ptr, unary, pair),
                               joint_log_partition(graph, states, seq_ptr, unary, pair),
                               rtol=1e-12)
    labels, best = joint_map(graph, states, seq_ptr, unary, pair)
    got_labels, got_best = method._viterbi(seq_ptr, unary, pair)
    np.testing.assert_array_equal(got_labels, labels)
    np.testing.assert_allclose(got_best, best, rtol=1e-12)
    training = method.training_marginals(seq_ptr, unary, pair)
    np.testing.assert_allclose(training[2], log_z, rtol=1e-12)
