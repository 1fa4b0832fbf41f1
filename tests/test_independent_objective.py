"""The independent chains' objective and the per-block L-BFGS that trains it."""
import numpy as np
import pytest

from skfcrf import FactorialCRF
from skfcrf.estimators import training_problem
from skfcrf.estimators._inspection import weight_mask
from skfcrf.estimators._solvers import BlockLBFGS, ConvergenceMonitor, SolverResult

from _helpers import check_gradient, synthetic

SUPPORTS = [("supported", "default", "default"), ("all", "supported", "supported")]


@pytest.mark.parametrize("n_chains", [1, 2, 3])
@pytest.mark.parametrize("support", SUPPORTS)
@pytest.mark.parametrize("forbid", [None, "unseen"])
def test_equals_the_exact_likelihood_without_couplings(n_chains, support, forbid):
    # the coupling-free model's likelihood over the full product space is the sum of
    # the chains' own likelihoods: the objective must equal it at any weights whose
    # couplings are zeroed, and ignore the coupling weights it is given
    X, y = synthetic(n_seq=6, n_chains=n_chains, length=(1, 5))
    kw = dict(unary_features=support[0], transition_features=support[1],
              coupling_features=support[2], sigma=2.0, forbidden_transitions=forbid,
              coupling="all" if n_chains == 3 else "adjacent", state_transitions=False)
    indep, theta0, _ = training_problem(FactorialCRF(objective="independent", **kw), X, y)
    exact, _, _ = training_problem(
        FactorialCRF(objective="likelihood", inference="exact", **kw), X, y)
    coupling = weight_mask(indep.layout, "coupling", None)
    rng = np.random.default_rng(n_chains)
    theta = rng.normal(scale=0.7, size=theta0.shape)
    loss, grad = indep.loss_gradient(theta)
    plain = np.where(coupling, 0.0, theta)
    ref_loss, ref_grad = exact.loss_gradient(plain)
    assert loss == pytest.approx(ref_loss, rel=1e-10)
    np.testing.assert_allclose(grad[~coupling], ref_grad[~coupling], rtol=1e-8, atol=1e-10)
    assert not grad[coupling].any()
    # per-block losses add up to the loss; blocks are disjoint and cover the rest
    losses, grad_b = indep.block_losses_gradient(theta)
    assert losses.shape == (n_chains,)
    assert losses.sum() == pytest.approx(loss, rel=1e-12)
    np.testing.assert_array_equal(grad_b, grad)
    covered = np.concatenate(indep.blocks)
    assert len(covered) == len(np.unique(covered)) == (~coupling).sum()


@pytest.mark.parametrize("n_chains", [1, 2, 3])
def test_gradient_finite_differences(n_chains):
    X, y = synthetic(n_seq=5, n_chains=n_chains, length=(2, 5))
    est = FactorialCRF(objective="independent", sigma=2.0, unary_features="all")
    check_gradient(est, X, y)


class _Separable:
    """sum_b 0.5 * a_b * |theta_b - c_b|^2 with very different curvatures a_b."""

    def __init__(self, scales, size=4, seed=0):
        rng = np.random.default_rng(seed)
        self.blocks = [np.arange(b * size, (b + 1) * size) for b in range(len(scales))]
        self.scales = np.asarray(scales, dtype=float)
        self.center = rng.normal(size=len(scales) * size)
        self.evaluations = 0

    def block_losses_gradient(self, theta):
        self.evaluations += 1
        diff = theta - self.center
        losses = np.array([0.5 * a * diff[blk] @ diff[blk]
                           for a, blk in zip(self.scales, self.blocks)])
        grad = np.concatenate([a * diff[blk] for a, blk in zip(self.scales, self.blocks)])
        return losses, grad


def test_block_lbfgs_reaches_every_block_optimum():
    problem = _Separable([1e-3, 1.0, 1e3])
    result = BlockLBFGS(memory=3, max_iter=100, tol=1e-10).solve(
        problem, np.zeros(12), ConvergenceMonitor())
    assert isinstance(result, SolverResult) and result.converged
    np.testing.assert_allclose(result.coef, problem.center, atol=1e-4)


def test_block_lbfgs_stops_at_max_iter_and_on_callback():
    problem = _Separable([1.0, 10.0])
    result = BlockLBFGS(max_iter=1, tol=1e-12).solve(problem, np.zeros(8),
                                                     ConvergenceMonitor())
    assert result.n_iter == 1 and not result.converged and "max_iter" in result.message
    monitor = ConvergenceMonitor(callback=lambda it, loss, coef: it >= 2)
    result = BlockLBFGS(max_iter=50, tol=1e-12).solve(_Separable([1.0, 10.0]), np.zeros(8),
                                                      monitor)
    assert result.n_iter == 2 and not result.converged and monitor.n_iter == 2


def test_estimator_trains_each_chain_like_a_one_chain_model():
    # with no fine-tuning, objective="independent" reaches the optimum of every chain's
    # own likelihood: the chain's weights match a one-chain model's on that chain
    X, y = synthetic(n_seq=30, n_chains=2, length=(2, 8))
    joint = FactorialCRF(objective="independent", finetune_iter=0, tol=1e-9, max_iter=500,
                         sigma=1.0, forbidden_transitions=None).fit(X, y)
    assert joint.converged_
    single = FactorialCRF(objective="likelihood", tol=1e-9, max_iter=500, sigma=1.0).fit(
        X, [[t[0] for t in seq] for seq in y])
    joint_loss = training_problem(
        FactorialCRF(objective="independent", sigma=1.0, forbidden_transitions=None,
                     state_transitions=False), X, y
    ).objective.block_losses_gradient(joint.coef_)[0][0]
    single_loss = training_problem(
        FactorialCRF(objective="likelihood", sigma=1.0), X, [[t[0] for t in seq] for seq in y]
    ).objective.loss_gradient(single.coef_)[0]
    assert joint_loss == pytest.approx(single_loss, rel=1e-6)
