"""L1 / elastic-net regularisation (``FactorialCRF(l1=...)``) trained by OWL-QN.

|w| has no derivative at 0, so there is no finite-difference check: the OWL-QN
optimum is checked against the L1 optimality (KKT) conditions and against an
independent minimiser (scipy's L-BFGS-B on the split ``w = u - v``, ``u, v >= 0``,
whose objective ``f(u - v) + l1 * sum(u + v)`` has the same minimum).
"""
import numpy as np
import pytest
from scipy.optimize import minimize
from sklearn.utils._param_validation import InvalidParameterError

from skfcrf import FactorialCRF
from skfcrf.estimators import training_problem
from skfcrf.solvers import OWLQN, ConvergenceMonitor, pseudo_gradient

from _helpers import synthetic


def one_chain(n_seq=30, seed=1, flip=0.2):
    """A one-chain task with label noise, so the weights do not all grow without bound."""
    X, y = synthetic(n_seq=n_seq, n_chains=1, seed=seed)
    rng = np.random.default_rng(seed)
    y = [[lab[0] if rng.random() > flip else "c0" for lab in seq] for seq in y]
    return X, y


def owlqn_optimum(est, X, y, tol=0.0, max_iter=3000):
    objective, theta0, _ = training_problem(est, X, y)
    result = OWLQN(est.l1, memory=5, max_iter=max_iter, tol=tol).solve(
        objective, theta0, ConvergenceMonitor())
    return objective, result.coef


def penalised(objective, theta, l1):
    return objective.loss_gradient(theta)[0] + l1 * np.abs(theta).sum()


def split_minimum(objective, n, l1):
    """min f(w) + l1 |w|_1 by L-BFGS-B over w = u - v with u, v >= 0."""
    def fun(z):
        f, g = objective.loss_gradient(z[:n] - z[n:])
        return f + l1 * z.sum(), np.concatenate([g + l1, l1 - g])

    res = minimize(fun, np.zeros(2 * n), jac=True, method="L-BFGS-B",
                   bounds=[(0, None)] * (2 * n),
                   options=dict(maxiter=10000, maxfun=20000, ftol=1e-15, gtol=1e-11, maxcor=20))
    return res.fun, res.x[:n] - res.x[n:]


@pytest.mark.parametrize("n_chains, l1", [(1, 0.05), (1, 0.5), (2, 0.3)])
def test_owlqn_optimum_satisfies_kkt_and_matches_split_lbfgsb(n_chains, l1):
    if n_chains == 1:
        X, y = one_chain()
    else:
        X, y = synthetic(n_seq=25, n_chains=2, seed=4)
    est = FactorialCRF(objective="likelihood", sigma=3.0, l1=l1, forbidden_transitions=None)
    objective, w = owlqn_optimum(est, X, y)
    grad = objective.loss_gradient(w)[1]
    zero = w == 0
    assert zero.any() and not zero.all()
    # KKT: |grad_j| <= l1 where w_j = 0, grad_j + l1 sign(w_j) = 0 elsewhere
    assert np.all(np.abs(grad[zero]) <= l1 + 1e-5)
    np.testing.assert_allclose(grad[~zero] + l1 * np.sign(w[~zero]), 0.0, atol=1e-4)
    assert np.abs(pseudo_gradient(w, grad, l1)).max() <= 1e-4
    # the same minimum as an independent minimiser
    reference, w_ref = split_minimum(objective, len(w), l1)
    ours = penalised(objective, w, l1)
    assert abs(ours - reference) <= 1e-6 * abs(reference)
    assert ours <= reference + 1e-9 * abs(reference)
    np.testing.assert_array_equal(zero, np.abs(w_ref) < 1e-6)


def test_larger_l1_is_sparser_and_large_l1_zeroes_every_weight():
    X, y = one_chain()
    counts = []
    for l1 in (0.0, 0.02, 0.1, 0.5, 2.0, 8.0):
        est = FactorialCRF(objective="likelihood", sigma=3.0, l1=l1, tol=1e-9,
                           max_iter=1000).fit(X, y)
        counts.append(est.n_nonzero_)
    assert counts == sorted(counts, reverse=True)
    assert counts[0] == est.coef_.size > counts[2]
    # beyond the largest gradient component at zero, zero is the optimum
    objective, theta0, _ = training_problem(est, X, y)
    big = np.abs(objective.loss_gradient(theta0)[1]).max() * 1.01
    est = FactorialCRF(objective="likelihood", sigma=3.0, l1=big).fit(X, y)
    assert est.n_nonzero_ == 0 and est.converged_


def test_l1_zero_reproduces_the_default_fit_exactly():
    X, y = synthetic(n_seq=30, n_chains=2, seed=2)
    for objective in ("independent", "likelihood"):
        plain = FactorialCRF(objective=objective).fit(X, y)
        zero = FactorialCRF(objective=objective, l1=0.0).fit(X, y)
        np.testing.assert_array_equal(plain.coef_, zero.coef_)
        assert plain.loss_curve_ == zero.loss_curve_
        assert plain.n_nonzero_ == np.count_nonzero(plain.coef_)


@pytest.mark.parametrize("objective", ["independent", "likelihood", "pseudolikelihood",
                                       "chainwise"])
def test_every_objective_trains_with_l1(objective):
    X, y = synthetic(n_seq=30, n_chains=2, seed=2)
    dense = FactorialCRF(objective=objective).fit(X, y)
    sparse = FactorialCRF(objective=objective, l1=0.5).fit(X, y)
    assert sparse.n_nonzero_ < dense.n_nonzero_
    assert sparse.score(X, y) == 1.0
    # the loss curve is the penalised loss, L1 included: it decreases within a stage
    curve = np.asarray(sparse.loss_curve_)
    assert curve[-1] < curve[0]


def test_elastic_net_staged_default_reaches_the_likelihood_optimum_with_enough_iterations():
    # the independent stage then the joint fine-tuning, both OWL-QN: one chain, where
    # the two objectives are the same, gives the likelihood's L1 optimum
    X, y = one_chain()
    staged = FactorialCRF(sigma=3.0, l1=0.1, tol=1e-10, max_iter=2000).fit(X, y)
    objective, w = owlqn_optimum(FactorialCRF(objective="likelihood", sigma=3.0, l1=0.1), X, y)
    assert penalised(objective, staged.coef_, 0.1) == pytest.approx(
        penalised(objective, w, 0.1), rel=1e-6)


@pytest.mark.parametrize("value", [-0.1, np.inf, np.nan, "0.1"])
def test_l1_is_validated(value):
    X, y = synthetic(n_seq=5, n_chains=1, seed=0)
    with pytest.raises(InvalidParameterError, match="'l1'"):
        FactorialCRF(l1=value).fit(X, y)


def test_l1_with_the_online_solver_is_refused():
    X, y = synthetic(n_seq=5, n_chains=1, seed=0)
    with pytest.raises(ValueError, match="l1=0.1 .*solver='olbfgs'"):
        FactorialCRF(l1=0.1, solver="olbfgs").fit(X, y)


def test_n_nonzero_before_fit_is_an_attribute_error():
    assert not hasattr(FactorialCRF(), "n_nonzero_")


def test_without_l1_no_orthant_constrains_the_step():
    """l1=0 is plain L-BFGS: a step that crosses zero is taken whole (OWL-QN's orthant
    projection would set those components to 0)."""
    from skfcrf.solvers import OWLQN, ConvergenceMonitor
    c = np.array([1.0, -1.0])

    class Quadratic:
        def loss_gradient(self, x):
            return 0.5 * float((x - c) @ (x - c)), x - c

    x0 = np.array([-0.5, 0.5])
    g = x0 - c
    one = OWLQN(0.0, max_iter=1, tol=0.0).solve(Quadratic(), x0, ConvergenceMonitor())
    np.testing.assert_allclose(one.coef, x0 - g / np.linalg.norm(g))
    full = OWLQN(0.0, max_iter=50, tol=1e-14).solve(Quadratic(), x0, ConvergenceMonitor())
    np.testing.assert_allclose(full.coef, c, atol=1e-7)
