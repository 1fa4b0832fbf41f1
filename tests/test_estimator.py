"""FactorialCRF: objectives, training, inference wiring, sklearn conventions, bad input."""
import copy
import pickle
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning, NotFittedError

from skfcrf import FactorialCRF
from skfcrf.estimators import training_problem

from _helpers import check_gradient, short_fit, synthetic
from brute import all_labellings, full_score

SUPPORTS = [("supported", "default", "default"), ("all", "supported", "supported"),
            ("default", "all", "all"), ("supported", "supported", "default")]


@pytest.mark.parametrize("objective", ["pseudolikelihood", "likelihood"])
@pytest.mark.parametrize("n_chains", [1, 2, 3])
@pytest.mark.parametrize("support", SUPPORTS)
@pytest.mark.parametrize("forbid", [False, True])
def test_gradient_finite_differences(objective, n_chains, support, forbid):
    X, y = synthetic(n_seq=5, n_chains=n_chains, length=(2, 5))
    forbidden = None
    if forbid:
        used = {(a[0], b[0]) for seq in y for a, b in zip(seq, seq[1:])}
        unused = sorted({(f"c{i}", f"c{j}") for i in range(3) for j in range(3)} - used)
        forbidden = [unused[:1]] + [None] * (n_chains - 1)
    est = FactorialCRF(objective=objective, unary_features=support[0],
                       transition_features=support[1], coupling_features=support[2],
                       inference="exact", sigma=2.0, forbidden_transitions=forbidden,
                       coupling="all" if n_chains == 3 else "adjacent")
    check_gradient(est, X, y)


def test_gradient_trp_likelihood_close():
    """With TRP converged, the Bethe objective's gradient is the beliefs' expectation."""
    X, y = synthetic(n_seq=4, n_chains=2, length=(2, 5))
    est = FactorialCRF(objective="likelihood", inference="trp", bp_tol=1e-12, bp_max_iter=5000,
                       sigma=2.0, random_state=0)
    check_gradient(est, X, y, rel=1e-3)


@pytest.mark.parametrize("n_chains", [1, 2])
def test_likelihood_loss_equals_enumeration(n_chains):
    X, y = synthetic(n_seq=3, n_chains=n_chains, length=(2, 4))
    est = FactorialCRF(objective="likelihood", inference="exact", sigma=np.inf)
    objective, theta0, _ = training_problem(est, X, y)
    batch = objective.batch
    theta = np.random.default_rng(0).normal(size=theta0.shape)
    loss, _ = objective.loss_gradient(theta)
    unary, pair, eo = est.layout_.potentials(theta, batch.obs, 1, est.forbidden_)
    ref = 0.0
    from scipy.special import logsumexp
    for s in range(len(batch.seq_ptr) - 1):
        start, stop = batch.seq_ptr[s], batch.seq_ptr[s + 1]
        scores = [full_score(est.graph_, unary, pair, eo, start, lab)
                  for lab in all_labellings(est.graph_, stop - start)]
        ref += logsumexp(scores) - full_score(est.graph_, unary, pair, eo, start,
                                              batch.gold[start:stop])
    assert loss == pytest.approx(ref, rel=1e-9)


@pytest.mark.parametrize("objective", ["pseudolikelihood", "likelihood"])
@pytest.mark.parametrize("n_chains", [1, 2, 3])
def test_recovers_separable_labels(objective, n_chains):
    X, y = synthetic(n_seq=40, n_chains=n_chains)
    est = FactorialCRF(objective=objective, max_iter=200, random_state=0).fit(X, y)
    Xt, yt = synthetic(n_seq=20, n_chains=n_chains, seed=1)
    assert est.score(Xt, yt) == 1.0
    if n_chains > 1:
        assert 0.0 <= est.inference_stats_["converged_fraction"] <= 1.0


@short_fit
def test_olbfgs_recovers_labels():
    X, y = synthetic(n_seq=80, n_chains=2)
    est = FactorialCRF(solver="olbfgs", max_iter=30, batch_size=10, random_state=0).fit(X, y)
    Xt, yt = synthetic(n_seq=20, n_chains=2, seed=1)
    assert est.score(Xt, yt) == 1.0
    assert len(est.loss_curve_) == est.n_iter_


@short_fit
def test_likelihood_loss_never_increases():
    X, y = synthetic(n_seq=30, n_chains=1, noise=0.2)
    est = FactorialCRF(objective="likelihood", max_iter=60, sigma=1.0).fit(X, y)
    curve = np.asarray(est.loss_curve_)
    assert len(curve) > 3
    assert np.all(np.diff(curve) <= 1e-9 * np.abs(curve[:-1]))


def test_one_chain_1d_labels_give_1d_predictions():
    X, y = synthetic(n_seq=20, n_chains=1)
    y1 = [[lab[0] for lab in seq] for seq in y]
    est = FactorialCRF(max_iter=100).fit(X, y1)
    pred = est.predict(X)
    assert pred[0].ndim == 1
    assert list(pred[0]) == y1[0]
    marg = est.predict_marginals(X)
    assert len(marg[0]) == 1 and marg[0][0].shape == (len(y1[0]), 3)
    np.testing.assert_allclose(marg[0][0].sum(axis=1), 1.0)


def test_forbidden_transitions_respected_in_decoding():
    # data wants c0 -> c1 often; forbid it and check predictions never contain it
    X, y = synthetic(n_seq=30, n_chains=1)
    y1 = [[lab[0] for lab in seq] for seq in y]
    X_ok, y_ok = [], []
    for xs, ys in zip(X, y1):
        if not any(a == "c0" and b == "c1" for a, b in zip(ys, ys[1:])):
            X_ok.append(xs)
            y_ok.append(ys)
    est = FactorialCRF(max_iter=100, forbidden_transitions=[("c0", "c1")]).fit(X_ok, y_ok)
    for p in est.predict(X):
        assert not any(a == "c0" and b == "c1" for a, b in zip(p, p[1:]))


@short_fit
def test_forbidden_transitions_unseen(tmp_path):
    # "unseen": exactly the in-chain transitions absent from the training labels are
    # forbidden; predictions never use one; warm start keeps earlier fits' transitions
    X, y = synthetic(n_seq=30, n_chains=2)
    X_ok, y_ok = [], []
    for xs, ys in zip(X, y):
        if not any(a[0] == "c0" and b[0] == "c1" for a, b in zip(ys, ys[1:])):
            X_ok.append(xs)
            y_ok.append(ys)
    est = FactorialCRF(max_iter=30, finetune_iter=3, forbidden_transitions="unseen")
    est.fit(X_ok, y_ok)
    for c in range(2):
        seen = {(a[c], b[c]) for ys in y_ok for a, b in zip(ys, ys[1:])}
        e = next(e for e in range(est.graph_.n_edges)
                 if est.graph_.edge_kind[e] == 0 and est.graph_.edge_a[e] == c)
        labels = list(est.classes_[c])
        expected = np.array([[(a, b) not in seen for b in labels] for a in labels])
        np.testing.assert_array_equal(est.forbidden_.get(e, np.zeros_like(expected)), expected)
    assert ("c0", "c1") not in {(a[0], b[0]) for ys in y_ok for a, b in zip(ys, ys[1:])}
    for p in est.predict(X):
        assert not any(a[0] == "c0" and b[0] == "c1" for a, b in zip(p, p[1:]))
    est.save(tmp_path / "m.npz")
    loaded = FactorialCRF.load(tmp_path / "m.npz")
    assert loaded.forbidden_transitions == "unseen"
    for p, q in zip(est.predict(X), loaded.predict(X)):
        np.testing.assert_array_equal(p, q)
    est.set_params(warm_start=True, max_iter=5).fit(X, y)      # now c0 -> c1 is seen
    assert any(a[0] == "c0" and b[0] == "c1" for p in est.predict(X) for a, b in zip(p, p[1:]))
    with pytest.raises(ValueError, match="forbidden_transitions"):
        FactorialCRF(forbidden_transitions="never").fit(X, y)


def test_forbidden_transition_in_gold_is_an_error():
    X, y = synthetic(n_seq=10, n_chains=1)
    y1 = [[lab[0] for lab in seq] for seq in y]
    pairs = {(a, b) for ys in y1 for a, b in zip(ys, ys[1:])}
    a, b = sorted(pairs)[0]
    with pytest.raises(ValueError, match="forbidden transition"):
        FactorialCRF(forbidden_transitions=[(a, b)]).fit(X, y1)


def test_forbidden_couplings():
    X, y = synthetic(n_seq=60, n_chains=2)
    keep = [i for i, seq in enumerate(y) if ("c1", "hi") not in seq]
    est = FactorialCRF(max_iter=100, forbidden_couplings={(0, 1): [("c1", "hi")]})
    est.fit([X[i] for i in keep], [y[i] for i in keep])
    for p in est.predict(X):
        assert not any(a == "c1" and b == "hi" for a, b in p)
    with pytest.raises(ValueError, match="not a label"):
        FactorialCRF(forbidden_couplings={(0, 1): [("nope", "hi")]}).fit(X, y)
    with pytest.raises(ValueError, match="forbidden coupling"):
        FactorialCRF(forbidden_couplings={(0, 1): [("c1", "hi")]}).fit(X, y)


@short_fit
def test_min_instance_freq_prunes():
    X = [[{"a": 1, "rare": 1}], [{"a": 1}], [{"a": 1, "b": 1}], [{"b": 1}]]
    y = [["x"], ["x"], ["y"], ["y"]]
    assert FactorialCRF(min_instance_freq=1, max_iter=5).fit(X, y).n_features_in_ == 3
    est = FactorialCRF(min_instance_freq=2, max_iter=5).fit(X, y)
    assert est.n_features_in_ == 2
    assert sorted(est.observation_names_) == ["a", "b"]
    assert FactorialCRF(min_instance_freq=0.75, max_iter=5).fit(X, y).n_features_in_ == 1


@short_fit
def test_sparse_and_name_list_inputs_agree():
    X, y = synthetic(n_seq=20, n_chains=2)
    names = sorted({k for seq in X for tok in seq for k in tok})
    col = {n: i for i, n in enumerate(names)}
    X_sparse = []
    for seq in X:
        m = sp.lil_matrix((len(seq), len(names)))
        for t, tok in enumerate(seq):
            for k, v in tok.items():
                m[t, col[k]] = v
        X_sparse.append(m.tocsr())
    X_lists = [[sorted(tok) for tok in seq] for seq in X]
    a = FactorialCRF(max_iter=50).fit(X, y)
    b = FactorialCRF(max_iter=50).fit(X_sparse, y)
    c = FactorialCRF(max_iter=50).fit(X_lists, y)
    # same model up to the column order of observations: same loss curve
    np.testing.assert_allclose(a.loss_curve_, b.loss_curve_, rtol=1e-8)
    np.testing.assert_allclose(a.loss_curve_, c.loss_curve_, rtol=1e-8)
    for pa, pb in zip(a.predict(X), b.predict(X_sparse)):
        assert (pa == pb).all()


@short_fit
def test_unseen_observations_and_empty_tokens_at_predict():
    X, y = synthetic(n_seq=20, n_chains=2)
    est = FactorialCRF(max_iter=50).fit(X, y)
    pred = est.predict([[{"never-seen": 1.0}, {}], []])
    assert pred[0].shape == (2, 2)
    assert pred[1].shape == (0, 2)


@short_fit
def test_n_jobs_gives_same_model():
    X, y = synthetic(n_seq=40, n_chains=2)
    # the chain-wise and pseudolikelihood objectives sum their gradients per fixed block of
    # sequences: bit for bit (the likelihood fine-tuning stage is checked below)
    for objective in ("chainwise", "pseudolikelihood"):
        a = FactorialCRF(objective=objective, max_iter=30, n_jobs=1, finetune_iter=0).fit(X, y)
        b = FactorialCRF(objective=objective, max_iter=30, n_jobs=2, finetune_iter=0).fit(X, y)
        assert np.array_equal(a.coef_, b.coef_)
        c = FactorialCRF(objective=objective, max_iter=30, n_jobs=2, finetune_iter=0).fit(X, y)
        assert np.array_equal(b.coef_, c.coef_)
    a = FactorialCRF(max_iter=20, n_jobs=1).fit(X, y)
    b = FactorialCRF(max_iter=20, n_jobs=2).fit(X, y)
    np.testing.assert_allclose(a.coef_, b.coef_, rtol=1e-6, atol=1e-8)
    # the likelihood objective's sums still depend on the thread count (rounding only)
    a = FactorialCRF(objective="likelihood", max_iter=10, n_jobs=1).fit(X, y)
    b = FactorialCRF(objective="likelihood", max_iter=10, n_jobs=2).fit(X, y)
    np.testing.assert_allclose(a.coef_, b.coef_, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("n_chains, inference", [(1, "auto"), (2, "joint"), (2, "exact"),
                                                   (2, "trp")])
def test_likelihood_is_the_same_in_every_run(n_chains, inference):
    # the likelihood's kernels add per-thread sums (marginal counts, the feature
    # gradient); threads take the sequences round-robin, so with a given thread count
    # every evaluation gives the same bits (on demand, the order of the terms varied
    # between runs: 2.5e-10 apart on 120 dictations)
    X, y = synthetic(n_seq=300, n_chains=n_chains, length=(1, 12))
    objective, theta0, _ = training_problem(
        FactorialCRF(objective="likelihood", inference=inference, n_jobs=2,
                     unary_features="all", bp_max_iter=20), X, y)
    theta = np.random.default_rng(5).normal(scale=0.5, size=theta0.shape)
    first = objective.loss_gradient(theta)
    for _ in range(4):
        again = objective.loss_gradient(theta)
        assert again[0] == first[0]
        np.testing.assert_array_equal(again[1], first[1])


# ------------------------------------------------------------------ sklearn conventions
def test_clone_get_set_params():
    est = FactorialCRF(sigma=3.0, coupling=[(0, 1)])
    params = est.get_params()
    assert params["sigma"] == 3.0
    c = clone(est)
    assert c.get_params() == params
    c.set_params(sigma=5.0, objective="likelihood")
    assert c.sigma == 5.0 and est.sigma == 3.0


def test_not_fitted_error():
    with pytest.raises(NotFittedError):
        FactorialCRF().predict([[{"a": 1}]])
    with pytest.raises(NotFittedError):
        FactorialCRF().save("/tmp/never.npz")


@short_fit
def test_input_not_mutated():
    X, y = synthetic(n_seq=10, n_chains=2)
    X0, y0 = copy.deepcopy(X), copy.deepcopy(y)
    est = FactorialCRF(max_iter=20).fit(X, y)
    est.predict(X)
    est.score(X, y)
    assert X == X0 and y == y0


def test_pickle_and_save_load_roundtrip(tmp_path):
    X, y = synthetic(n_seq=120, n_chains=2, length=(3, 6))
    keep = [i for i, seq in enumerate(y)
            if not any(a[0] == "c0" == b[0] for a, b in zip(seq, seq[1:]))
            and not any(lab == ("c1", "hi") for lab in seq)]
    assert len(keep) > 10
    est = FactorialCRF(max_iter=40, forbidden_transitions={0: [("c0", "c0")]},
                       forbidden_couplings={(1, 0): [("hi", "c1")]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est.fit([X[i] for i in keep], [y[i] for i in keep])
    pred = est.predict(X)
    for p in pred:
        assert not any(lab[0] == "c1" and lab[1] == "hi" for lab in p)
    for loaded in (pickle.loads(pickle.dumps(est)), FactorialCRF.load(_save(est, tmp_path))):
        np.testing.assert_array_equal(loaded.coef_, est.coef_)
        assert loaded.get_params() == est.get_params()
        for a, b in zip(loaded.predict(X), pred):
            assert (a == b).all()
        assert [list(c) for c in loaded.classes_] == [list(c) for c in est.classes_]


def _save(est, tmp_path):
    path = tmp_path / "model.npz"
    est.save(path)
    return path


def test_load_rejects_foreign_file(tmp_path):
    text = tmp_path / "model.txt"
    text.write_text("not a model")
    with pytest.raises(ValueError, match="not an skfcrf model"):
        FactorialCRF.load(text)
    path = tmp_path / "x.npz"
    np.savez(path, header=np.frombuffer(b'{"format": "other"}', dtype=np.uint8))
    with pytest.raises(ValueError, match="not an skfcrf model"):
        FactorialCRF.load(path)


def test_warm_start_continues():
    X, y = synthetic(n_seq=20, n_chains=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est = FactorialCRF(max_iter=3, warm_start=True).fit(X, y)
        first = est.loss_curve_[-1]
        est.fit(X, y)
    assert est.loss_curve_[-1] < first


def test_convergence_warning_at_max_iter():
    """A max_iter the user set, reached: a warning in the parameters' words."""
    X, y = synthetic(n_seq=20, n_chains=2)
    with pytest.warns(ConvergenceWarning, match=r"^stopped after \d+ iterations before "
                      r"converging; raise max_iter \(now 2\) or tol") as record:
        FactorialCRF(max_iter=2).fit(X, y)
    assert not any("block" in str(w.message) or "budget" in str(w.message) for w in record)
    with pytest.warns(ConvergenceWarning, match=r"raise max_iter \(now 2\)"):
        FactorialCRF(max_iter=2, objective="pseudolikelihood").fit(X, y)


def test_designed_budget_gives_no_warning(monkeypatch, capsys):
    """The staged default's first stage reaching the default max_iter is by design: no
    warning; converged_ says it, and verbose prints why it stopped."""
    import skfcrf.estimators._fcrf as fcrf

    X, y = synthetic(n_seq=20, n_chains=2)
    monkeypatch.setattr(fcrf, "DEFAULT_MAX_ITER", 2)     # a default budget the fit reaches
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        est = FactorialCRF(max_iter=2, verbose=1).fit(X, y)
    assert est.converged_ is False
    assert "stopped before converging: stopped at max_iter=2" in capsys.readouterr().out
    with pytest.warns(ConvergenceWarning, match=r"now 2"):   # not the staged default
        FactorialCRF(max_iter=2, objective="chainwise").fit(X, y)


# ------------------------------------------------------------------ bad input
@pytest.mark.parametrize("params,match", [
    ({"sigma": 0}, "sigma"), ({"sigma": -1.0}, "sigma"), ({"objective": "ml"}, "objective"),
    ({"solver": "sgd"}, "solver"), ({"max_iter": 0}, "max_iter"), ({"tol": -1}, "tol"),
    ({"lbfgs_memory": 1.5}, "lbfgs_memory"), ({"min_instance_freq": 0}, "min_instance_freq"),
    ({"min_instance_freq": 1.5}, "min_instance_freq"), ({"unary_features": "some"}, "unary_features"),
    ({"coupling": "ring"}, "coupling"), ({"coupling": [(0, 0)]}, "coupling"),
    ({"coupling": [(0, 5)]}, "coupling"), ({"inference": "gibbs"}, "inference"),
    ({"bp_max_iter": 0}, "bp_max_iter"), ({"forbidden_transitions": [("zz", "c0")], "coupling": "none"},
                                           "forbidden_transitions"),
])
def test_bad_params(params, match):
    X, y = synthetic(n_seq=5, n_chains=2)
    with pytest.raises(ValueError, match=match):
        FactorialCRF(**params).fit(X, y)


def test_bad_input_messages():
    X, y = synthetic(n_seq=5, n_chains=2)
    est = FactorialCRF(max_iter=5)
    with pytest.raises(ValueError, match="different numbers of sequences"):
        est.fit(X[:4], y)
    with pytest.raises(ValueError, match="sequence 2: X has"):
        est.fit(X[:2] + [X[2][:-1]] + X[3:], y)
    with pytest.raises(ValueError, match="ragged"):
        est.fit(X, y[:2] + [[lab[:1] for lab in y[2]]] + y[3:])
    with pytest.raises(ValueError, match="empty"):
        est.fit([], [])
    with pytest.raises(ValueError, match=r"y\[1\] is an empty sequence"):
        est.fit([X[0], []], [y[0], []])
    bad = copy.deepcopy(X)
    bad[3][1]["w=0"] = float("nan")
    with pytest.raises(ValueError, match=r"X\[3\] token 1.*finite"):
        est.fit(bad, y)
    bad[3][1]["w=0"] = float("inf")
    with pytest.raises(ValueError, match=r"X\[3\] token 1"):
        est.fit(bad, y)
    bad = copy.deepcopy(X)
    bad[2][0]["w=0"] = "high"
    with pytest.raises(ValueError, match=r"X\[2\] token 0.*numbers"):
        est.fit(bad, y)
    with pytest.raises(ValueError, match="X must be"):
        est.fit("not a list", y)
    with pytest.raises(ValueError, match="token 0"):
        est.fit([[1, 2]] + X[1:], y)
    with pytest.raises(ValueError, match="y is required"):
        est.fit(X, None)


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_predictions_are_valid_labels(seed):
    X, y = synthetic(n_seq=8, n_chains=2, seed=seed)
    est = FactorialCRF(max_iter=20, random_state=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est.fit(X, y)
    for p, t in zip(est.predict(X), y):
        assert p.shape == (len(t), 2)
        assert set(p[:, 0]) <= set(est.classes_[0]) and set(p[:, 1]) <= set(est.classes_[1])


@short_fit
def test_joint_decoding_is_exact_and_default_for_several_chains(tmp_path):
    """inference='auto' decodes several chains exactly over the observed label combinations;
    the result is the best labelling among those combinations (TRP's labelling never scores
    higher) and survives save/load."""
    X, y = synthetic(n_seq=30, n_chains=3, noise=0.3)
    # compared with TRP below, which has no joint-state transitions
    est = FactorialCRF(max_iter=30, coupling="all", random_state=0,
                       state_transitions=False).fit(X, y)
    assert est.joint_states_.shape[1] == 3
    decoded = est.decode(X)
    assert all(d.status == "exact" for d in decoded)
    trp = FactorialCRF(**{**est.get_params(), "inference": "trp"})
    trp.__dict__.update({k: v for k, v in est.__dict__.items() if k.endswith("_")})
    trp._one_chain = est._one_chain
    Xm, seq_ptr = est.encoder_.transform(X)
    unary, pair, eo = est.layout_.potentials(est.coef_, est.layout_.observation_rows(Xm, seq_ptr),
                                             1, est.forbidden_)
    index = [{lab: i for i, lab in enumerate(c)} for c in est.classes_]
    for s, (d, t) in enumerate(zip(decoded, trp.predict(X))):
        def lab(rows):
            return np.array([[index[c][v] for c, v in enumerate(r)] for r in rows])

        joint_score = full_score(est.graph_, unary, pair, eo, seq_ptr[s], lab(d.labels))
        if all(tuple(r) in {tuple(x) for x in est.joint_states_} for r in lab(t)):
            assert joint_score >= full_score(est.graph_, unary, pair, eo, seq_ptr[s],
                                             lab(t)) - 1e-9
    path = tmp_path / "m.npz"
    est.save(path)
    again = FactorialCRF.load(path)
    assert np.array_equal(again.joint_states_, est.joint_states_)
    assert all(np.array_equal(a.labels, b.labels) for a, b in zip(again.decode(X), decoded))
    marg = est.predict_marginals(X[:3])
    assert all(np.allclose(m.sum(axis=1), 1.0) for seq in marg for m in seq)


@short_fit
@pytest.mark.parametrize("inference,expected", [("joint", {"exact"}),
                                                ("trp", {"converged", "approximate"})])
def test_marginals_report_status(inference, expected):
    X, y = synthetic(n_seq=12, n_chains=2)
    est = FactorialCRF(max_iter=20, inference=inference, bp_max_iter=30).fit(X, y)
    marg, status = est.predict_marginals(X + [[]], return_status=True)
    assert len(status) == len(X) + 1 and status[-1] == "exact"
    assert set(status[:-1]) <= expected
    assert all(np.allclose(m.sum(axis=1), 1.0) for seq in marg[:-1] for m in seq)


def test_unknown_label_messages_say_what_happened():
    """A label the model never saw: log_prob says it was not in the training data (it
    spoke of a warm start that never happened); only a warm refit names warm_start."""
    X = [[{"a": 1}, {"b": 1}]] * 3
    y = [np.array([["A"], ["B"]], dtype=object)] * 3
    est = FactorialCRF(random_state=0).fit(X, y)
    new = [np.array([["A"], ["C"]], dtype=object)]
    with pytest.raises(ValueError, match=r"label 'C' is not a label of the model \(it was not "
                       r"in the training data; log_prob scores") as info:
        est.log_prob(X[:1], new)
    assert "warm" not in str(info.value)
    with pytest.raises(ValueError, match="warm_start=True keeps the labels of the first fit"):
        est.set_params(warm_start=True).fit(X[:1], new)
