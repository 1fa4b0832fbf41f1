"""The compiled epochs of the online trainers (skfcrf._kernels._online) against the
per-sequence Python path of SequenceTerms: the same weights, losses and calibration
after the same visits, for every trainer and the one-chain models the kernel takes."""
import numpy as np
import pytest

from skfcrf import FactorialCRF
from skfcrf.estimators import training_problem
from skfcrf.objectives import SequenceTerms
from skfcrf.solvers import (
    AROW,
    SGD,
    AveragedPerceptron,
    ConvergenceMonitor,
    PassiveAggressive,
)

LABELS = ("A", "B", "C", "D")
#: transitions the labels of :func:`noisy` never make
NEVER = [("A", "A"), ("D", "B")]


def noisy(n=25, seed=0):
    """Sequences of 1-9 tokens, a few weighted observations each, labels only loosely
    tied to them (so that training keeps making mistakes)."""
    rng = np.random.RandomState(seed)
    never = {(LABELS.index(a), LABELS.index(b)) for a, b in NEVER}
    X, y = [], []
    for _ in range(n):
        T = rng.randint(1, 10)
        labels = rng.randint(len(LABELS), size=T)
        for t in range(1, T):
            while (labels[t - 1], labels[t]) in never:
                labels[t] = (labels[t] + 1) % len(LABELS)
        X.append([{f"w{(lab + rng.randint(3)) % 7}": 1.0, f"v{rng.randint(5)}": rng.rand() + 0.5,
                   "bias": 1.0} for lab in labels])
        y.append([LABELS[lab] for lab in labels])
    return X, y


def terms_pair(transition_features="default", forbidden=None, free=False, seed=0):
    """The same problem's SequenceTerms twice, compiled and not, and random weights."""
    X, y = noisy(seed=seed)
    est = FactorialCRF(objective="likelihood", solver="perceptron",
                       transition_features=transition_features,
                       forbidden_transitions=forbidden)
    objective, _, _ = training_problem(est, X, y)
    n = est.layout_.n_params
    rng = np.random.RandomState(seed + 1)
    mask = rng.rand(n) < 0.8 if free else None
    made = [SequenceTerms(objective.batch, objective.method, forbidden=est.forbidden_,
                          joint_states=est.joint_states_, free=mask, compiled=flag)
            for flag in (True, False)]
    assert made[0].compiled and not made[1].compiled
    theta0 = rng.normal(scale=0.5, size=n)
    if mask is not None:
        theta0[~mask] = 0.0
    return made, theta0


MODELS = [dict(), dict(transition_features="supported"), dict(transition_features="all"),
          dict(transition_features="none"), dict(free=True),
          dict(forbidden=NEVER)]

TRAINERS = [
    lambda rng: AveragedPerceptron(max_iter=3, random_state=rng),
    lambda rng: PassiveAggressive(pa_type=0, max_iter=3, random_state=rng),
    lambda rng: PassiveAggressive(pa_type=1, c=0.3, max_iter=3, random_state=rng),
    lambda rng: PassiveAggressive(pa_type=2, c=0.3, error_sensitive=False, averaging=False,
                                  max_iter=3, random_state=rng),
    lambda rng: AROW(variance=0.7, gamma=2.0, max_iter=3, random_state=rng),
]


def train(make, terms, theta0):
    solver = make(np.random.RandomState(7))
    monitor = ConvergenceMonitor()
    result = solver.solve(terms, theta0, monitor)
    return solver, result, monitor.history


@pytest.mark.parametrize("model", MODELS, ids=lambda m: ",".join(map(str, m.values())) or "crfsuite")
@pytest.mark.parametrize("make", TRAINERS, ids=["ap", "pa", "pa1", "pa2", "arow"])
def test_margin_epochs_match_python(model, make):
    (fast, slow), theta0 = terms_pair(**model)
    s_fast, r_fast, h_fast = train(make, fast, theta0)
    s_slow, r_slow, h_slow = train(make, slow, theta0)
    assert h_slow[0] > 0      # there were mistakes to correct
    np.testing.assert_allclose(h_fast, h_slow, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(r_fast.coef, r_slow.coef, rtol=1e-9, atol=1e-9)
    assert (r_fast.n_iter, r_fast.converged) == (r_slow.n_iter, r_slow.converged)
    if isinstance(s_fast, AROW):
        np.testing.assert_allclose(s_fast.covariance, s_slow.covariance, rtol=1e-12)


@pytest.mark.parametrize("model", MODELS, ids=lambda m: ",".join(map(str, m.values())) or "crfsuite")
def test_sgd_epochs_match_python(model):
    (fast, slow), theta0 = terms_pair(**model)
    runs = []
    for terms in (fast, slow):
        solver = SGD(0.5, max_iter=3, calibration_samples=10, calibration_max_trials=6,
                     random_state=np.random.RandomState(3))
        monitor = ConvergenceMonitor()
        result = solver.solve(terms, theta0, monitor)
        runs.append((solver, result, monitor.history))
    (s_fast, r_fast, h_fast), (s_slow, r_slow, h_slow) = runs
    assert s_fast.calibrated_eta_ == s_slow.calibrated_eta_
    np.testing.assert_allclose(s_fast.calibration_, s_slow.calibration_, rtol=1e-10)
    np.testing.assert_allclose(h_fast, h_slow, rtol=1e-10)
    np.testing.assert_allclose(r_fast.coef, r_slow.coef, rtol=1e-9, atol=1e-9)


def test_sequence_losses_match_loss_gradient():
    (fast, slow), theta0 = terms_pair(transition_features="supported")
    order = np.arange(fast.n_sequences)[::-1]
    expected = sum(slow.loss_gradient(s, theta0)[1] for s in order)
    assert fast.sequence_losses(order, theta0) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("solver", ["sgd", "perceptron", "passive_aggressive", "arow"])
def test_estimator_fits_one_chain_by_the_compiled_epochs(solver, monkeypatch):
    calls = []
    for name in ("margin_epoch", "sgd_epoch"):
        original = getattr(SequenceTerms, name)
        monkeypatch.setattr(SequenceTerms, name,
                            lambda self, *a, _f=original, **k: calls.append(1) or _f(self, *a, **k))
    X, y = noisy()
    crf = FactorialCRF(solver=solver, objective="likelihood", max_iter=2, random_state=0,
                       solver_options=dict(calibration_samples=5) if solver == "sgd" else None)
    with pytest.warns(Warning):       # the two epochs stop before convergence
        crf.fit(X, y)
    assert len(calls) >= 2


def test_not_compiled_for_several_chains():
    X = [[["x"], ["y"]], [["y"]]]
    y = [[("A", "a"), ("B", "b")], [("B", "a")]]
    est = FactorialCRF(objective="likelihood", solver="perceptron")
    objective, _, _ = training_problem(est, X, y)
    terms = SequenceTerms(objective.batch, objective.method, forbidden=est.forbidden_,
                          joint_states=est.joint_states_)
    assert not terms.compiled


def test_epoch_refuses_bad_input():
    (fast, _), theta0 = terms_pair()
    with pytest.raises(ValueError, match="out of range"):
        fast.margin_epoch([fast.n_sequences], theta0.copy(), np.zeros_like(theta0), 1,
                          "perceptron")
    with pytest.raises(ValueError, match="theta"):
        fast.sgd_epoch([0], theta0[:-1].copy(), 0.1, 10.0, 0)
