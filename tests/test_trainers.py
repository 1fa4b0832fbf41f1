"""CRFsuite's online trainers: SGD, averaged perceptron, passive-aggressive, AROW."""
import numpy as np
import pytest

from skfcrf import FactorialCRF
from skfcrf.crfsuite import CRF, metrics
from skfcrf.estimators import training_problem
from skfcrf.inference import ExactInference
from skfcrf.objectives import SequenceTerms
from skfcrf.solvers import (
    AROW,
    SGD,
    AveragedPerceptron,
    ConvergenceMonitor,
    PassiveAggressive,
)

ONLINE = ("sgd", "perceptron", "passive_aggressive", "arow")

#: word -> (tag, chunk): each label a function of the word (linearly separable)
WORDS = {"the": ("DT", "B-NP"), "a": ("DT", "B-NP"), "big": ("JJ", "I-NP"),
         "red": ("JJ", "I-NP"), "dog": ("NN", "I-NP"), "cat": ("NN", "I-NP"),
         "runs": ("VB", "B-VP"), "sleeps": ("VB", "B-VP")}


def toy(n=30, seed=0, chains=1):
    """Sentences DT (JJ) NN VB, one observation per token (its word)."""
    rng = np.random.RandomState(seed)
    by_tag = {}
    for w, (t, _) in WORDS.items():
        by_tag.setdefault(t, []).append(w)
    X, y = [], []
    for _ in range(n):
        tags = ["DT"] + (["JJ"] if rng.rand() < 0.5 else []) + ["NN", "VB"]
        words = [by_tag[t][rng.randint(len(by_tag[t]))] for t in tags]
        X.append([[f"w={w}"] for w in words])
        y.append([WORDS[w] if chains == 2 else WORDS[w][0] for w in words])
    return X, y


def same(y_pred, y):
    return all(np.array_equal(np.asarray(p, dtype=object), np.asarray(t, dtype=object))
               for p, t in zip(y_pred, y))


# the margin trainers stop at zero errors; SGD may use its whole budget on a toy problem
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("solver", ONLINE)
@pytest.mark.parametrize("chains", [1, 2])
def test_learns_separable_problem(solver, chains):
    X, y = toy(chains=chains)
    crf = FactorialCRF(solver=solver, objective="likelihood", max_iter=30, random_state=0,
                       sigma=10.0).fit(X, y)
    assert same(crf.predict(X), y)
    if chains == 2:
        assert {d.status for d in crf.decode(X)} == {"exact"}
    X_new, y_new = toy(10, seed=1, chains=chains)
    assert same(crf.predict(X_new), y_new)


def tiny_terms():
    """Two one-token sequences ``x -> A``, ``y -> B`` and their sequence terms; the
    starting weights decode ``x`` as A whatever happens (``(x, A) = 5``) and ``y``
    wrongly as A (bias of A 0.5); also the indices of the weights that move."""
    X, y = [[["x"]], [["y"]]], [["A"], ["B"]]
    est = FactorialCRF(objective="likelihood", solver="perceptron")
    objective, _, _ = training_problem(est, X, y)
    layout = objective.batch.layout
    terms = SequenceTerms(objective.batch, ExactInference(layout.graph),
                          forbidden=est.forbidden_)
    x, yy = (list(est.observation_names_).index(n) for n in ("x", "y"))
    A, B = (list(est.classes_[0]).index(lab) for lab in ("A", "B"))

    def entry(feature, label):
        cols = layout.ent_col[layout.feat_ptr[feature]:layout.feat_ptr[feature + 1]]
        return layout.feat_ptr[feature] + int(np.flatnonzero(cols == label)[0])

    theta0 = np.zeros(layout.n_params)
    theta0[entry(x, A)] = 5.0
    theta0[layout.bias_unary + A] = 0.5
    moved = dict(yB=entry(yy, B), biasA=layout.bias_unary + A, biasB=layout.bias_unary + B)
    delta = np.zeros(layout.n_params)
    delta[[moved["yB"], moved["biasB"]]] = 1.0
    delta[moved["biasA"]] = -1.0
    return terms, theta0, delta


def test_difference_of_a_wrong_decoding():
    terms, theta0, delta = tiny_terms()
    diff = terms.difference(1, theta0)
    full = np.zeros_like(theta0)
    full[diff.index] = diff.delta
    np.testing.assert_array_equal(full, delta)
    assert (diff.n_wrong, diff.margin, diff.n_tokens) == (1, pytest.approx(0.5), 1)
    assert terms.difference(0, theta0).n_wrong == 0


@pytest.mark.parametrize("chains", [1, 2])
def test_difference_is_the_gradient_of_the_score_gap(chains):
    # scores are linear in the weights: score(decoded) - score(gold) = -delta . w,
    # joint-state transition weights (two chains) included
    X, y = toy(12, chains=chains)
    est = FactorialCRF(objective="likelihood", solver="perceptron")
    objective, _, _ = training_problem(est, X, y)
    terms = SequenceTerms(objective.batch, objective.method, forbidden=est.forbidden_,
                          joint_states=est.joint_states_)
    assert (est.layout_.n_state_pairs > 0) == (chains == 2)
    theta = np.random.RandomState(0).normal(size=est.layout_.n_params)
    checked = 0
    for s in range(terms.n_sequences):
        diff = terms.difference(s, theta)
        if diff.n_wrong:
            assert diff.margin == pytest.approx(-diff.delta @ theta[diff.index])
            assert diff.margin >= 0
            checked += 1
    assert checked > 3


def test_averaged_perceptron_by_hand():
    terms, theta0, delta = tiny_terms()
    order = np.random.RandomState(3).permutation(2)
    solver = AveragedPerceptron(max_iter=1, random_state=np.random.RandomState(3))
    result = solver.solve(terms, theta0, ConvergenceMonitor())
    # one update, +delta, at visit u (1-based) of sequence 1; the average of the
    # starting weights and the weights after both visits is w - u * delta / 3
    u = int(np.flatnonzero(order == 1)[0]) + 1
    np.testing.assert_allclose(result.coef, theta0 + delta - u * delta / 3)
    assert result.n_iter == 1


@pytest.mark.parametrize("pa_type, tau", [(0, 1.5 / 3), (1, 0.25), (2, 1.5 / (3 + 0.5 / 0.25))])
def test_passive_aggressive_step_closed_form(pa_type, tau):
    terms, theta0, delta = tiny_terms()
    # cost = margin 0.5 + sqrt(1 wrong label); ||delta||^2 = 3; c = 0.25
    solver = PassiveAggressive(pa_type=pa_type, c=0.25, averaging=False, max_iter=1,
                               random_state=np.random.RandomState(0))
    assert solver.step_size(1.5, 3.0) == pytest.approx(tau)
    result = solver.solve(terms, theta0, ConvergenceMonitor())
    np.testing.assert_allclose(result.coef, theta0 + tau * delta)


def test_passive_aggressive_error_insensitive_cost():
    terms, theta0, delta = tiny_terms()
    solver = PassiveAggressive(pa_type=0, error_sensitive=False, averaging=False, max_iter=1,
                               random_state=np.random.RandomState(0))
    monitor = ConvergenceMonitor()
    solver.solve(terms, theta0, monitor)
    assert monitor.history == [pytest.approx(0.5 + 1.0)]


def test_arow_one_step_by_hand():
    terms, theta0, delta = tiny_terms()
    solver = AROW(variance=2.0, gamma=1.0, max_iter=1, random_state=np.random.RandomState(0))
    result = solver.solve(terms, theta0, ConvergenceMonitor())
    # cost 0.5 + 1 wrong label; alpha = 1.5 / (gamma + sum(2 * delta**2)) = 1.5 / 7
    np.testing.assert_allclose(result.coef, theta0 + 1.5 / 7 * 2.0 * delta)
    expected = np.full(theta0.shape, 2.0)
    expected[delta != 0] = 1.0 / (1.0 / 2.0 + 1.0)
    np.testing.assert_allclose(solver.covariance, expected)


def test_sgd_calibrates_and_lowers_the_loss():
    X, y = toy(40)
    est = FactorialCRF(objective="likelihood", solver="sgd", sigma=3.0)
    objective, theta0, _ = training_problem(est, X, y)
    terms = SequenceTerms(objective.batch, objective.method, forbidden=est.forbidden_)
    solver = SGD(1 / 9.0, max_iter=8, calibration_samples=20,
                 random_state=np.random.RandomState(0))
    monitor = ConvergenceMonitor()
    result = solver.solve(terms, theta0, monitor)
    etas = [eta for eta, _ in solver.calibration_]
    losses = [loss for _, loss in solver.calibration_]
    assert len(set(etas)) > 2 and solver.calibrated_eta_ == etas[int(np.argmin(losses))]
    assert monitor.history[-1] < monitor.history[0]
    # the epoch loss estimates the penalised likelihood: close to it at the end
    start, _ = objective.loss_gradient(theta0)
    final, _ = objective.loss_gradient(result.coef)
    assert final < 0.2 * start


@pytest.mark.parametrize("params, named", [
    (dict(solver="perceptron"), "objective='likelihood'"),
    (dict(solver="arow", objective="likelihood", l1=0.1), "l1"),
    (dict(solver="arow", objective="likelihood", solver_options={"c": 1.0}), r"\['c'\]"),
    (dict(solver="lbfgs", solver_options={"gamma": 1.0}), "solver_options"),
    (dict(solver="passive_aggressive", objective="likelihood",
          solver_options={"pa_type": 3}), "pa_type"),
    (dict(solver="passive_aggressive", objective="likelihood", solver_options={"c": 0.0}),
     "aggressiveness"),
    (dict(solver="arow", objective="likelihood", solver_options={"variance": -1.0}),
     "variance"),
    (dict(solver="sgd", objective="likelihood", sigma=np.inf), "L2"),
    (dict(solver="perceptron", objective="likelihood", inference="trp"), "approximate"),
])
def test_bad_parameters_raise(params, named):
    X, y = toy(6, chains=2 if params.get("inference") == "trp" else 1)
    with pytest.raises(ValueError, match=named):
        FactorialCRF(**params).fit(X, y)


def test_partial_labels_refused():
    X, y = toy(6)
    y[0] = list(y[0])
    y[0][1] = None
    with pytest.raises(ValueError, match="every label"):
        FactorialCRF(solver="perceptron", objective="likelihood").fit(X, y)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("solver", ONLINE)
def test_deterministic_with_random_state(solver):
    X, y = toy(20)
    fits = [FactorialCRF(solver=solver, objective="likelihood", max_iter=3, random_state=7,
                         tol=1e-12) for _ in range(2)]
    for crf in fits:
        crf.fit(X, y)
    np.testing.assert_array_equal(fits[0].coef_, fits[1].coef_)


def crfsuite_toy(n=30):
    X, y = toy(n)
    return [[{"word": tok[0][2:], "bias": 1.0} for tok in seq] for seq in X], y


@pytest.mark.parametrize("algorithm", ["l2sgd", "ap", "pa", "arow"])
def test_crfsuite_wrapper_trains_every_algorithm(algorithm):
    X, y = crfsuite_toy()
    params = dict(max_iterations=20)
    if algorithm == "l2sgd":
        params.update(c2=0.1, calibration_samples=20)
    crf = CRF(algorithm=algorithm, **params).fit(X, y)
    # not 1.0: without a stopping test (epsilon=0) the averaged perceptron's weights
    # leave a tie of the last weights broken either way (CRFsuite's too, 0.91 at 100
    # epochs on this problem)
    assert metrics.flat_accuracy_score(y, crf.predict(X)) >= 0.95
    log = crf.training_log_
    assert 1 <= len(log.iterations) <= 20 and log.message
    # CRFsuite's features only: no label bias
    assert "bias" in {a for a, _ in crf.state_features_}
    again = CRF(algorithm=algorithm, **params).fit(X, y)
    np.testing.assert_array_equal(crf.crf_.coef_, again.crf_.coef_)
    biases = crf.crf_.coef_[crf.crf_.layout_.bias_unary:crf.crf_.layout_.bias_edge[0]]
    assert np.all(biases == 0)


def test_crfsuite_wrapper_passes_trainer_parameters():
    X, y = crfsuite_toy()
    a = CRF(algorithm="pa", pa_type=0, error_sensitive=False, averaging=False,
            max_iterations=2).fit(X, y)
    b = CRF(algorithm="pa", pa_type=2, c=0.01, max_iterations=2).fit(X, y)
    assert not np.array_equal(a.crf_.coef_, b.crf_.coef_)
    c = CRF(algorithm="arow", variance=0.1, gamma=10.0, max_iterations=2).fit(X, y)
    d = CRF(algorithm="arow", max_iterations=2).fit(X, y)
    assert not np.array_equal(c.crf_.coef_, d.crf_.coef_)


def test_saved_model_keeps_solver_options(tmp_path):
    X, y = toy(12)
    crf = FactorialCRF(solver="passive_aggressive", objective="likelihood", max_iter=5,
                       random_state=0, solver_options={"pa_type": 2, "c": 0.5}).fit(X, y)
    crf.save(tmp_path / "pa.model")
    loaded = FactorialCRF.load(tmp_path / "pa.model")
    assert loaded.solver_options == {"pa_type": 2, "c": 0.5}
    assert same(loaded.predict(X), crf.predict(X))
