"""The independent chains' objective and the per-block L-BFGS that trains it."""
import numpy as np
import pytest

from skfcrf import FactorialCRF
from skfcrf.estimators import training_problem
from skfcrf.model._inspection import weight_mask
from skfcrf.solvers import BlockLBFGS, BlockObjective, ConvergenceMonitor, SolverResult

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


@pytest.mark.parametrize("n_chains", [2, 3])
@pytest.mark.parametrize("support", SUPPORTS)
@pytest.mark.parametrize("forbid", [None, "unseen"])
@pytest.mark.parametrize("partial", [False, True])
def test_some_blocks_alone_equal_the_full_evaluation(n_chains, support, forbid, partial):
    # evaluating some chains alone (a reduced feature table, the others skipped by the
    # kernel) gives their losses and gradient bit for bit; the others' are NaN / zero
    X, y = synthetic(n_seq=8, n_chains=n_chains, length=(1, 6))
    if partial:
        y = [[tuple(None if (i + c) % 3 == 0 and s % 2 else lab for c, lab in enumerate(tok))
              for i, tok in enumerate(seq)] for s, seq in enumerate(y)]
        forbid = None       # "unseen" transitions need every label
    kw = dict(unary_features=support[0], transition_features=support[1],
              coupling_features=support[2], sigma=2.0, forbidden_transitions=forbid,
              state_transitions=False)
    indep, theta0, _ = training_problem(FactorialCRF(objective="independent", **kw), X, y)
    theta = np.random.default_rng(1).normal(scale=0.7, size=theta0.shape)
    losses, grad = indep.block_losses_gradient(theta)
    for pattern in range(1, 2 ** n_chains - 1):
        active = np.array([(pattern >> c) & 1 for c in range(n_chains)], dtype=bool)
        some, some_grad = indep.block_losses_gradient(theta, active)
        np.testing.assert_array_equal(some[active], losses[active])
        assert np.isnan(some[~active]).all()
        on = np.concatenate([indep.blocks[c] for c in np.flatnonzero(active)])
        np.testing.assert_array_equal(some_grad[on], grad[on])
        off = np.setdiff1d(np.arange(len(theta)), on)
        assert not some_grad[off].any()


@pytest.mark.parametrize("support", SUPPORTS)
@pytest.mark.parametrize("partial", [False, True])
def test_couplings_left_out_of_the_kernel_change_no_bit(support, partial):
    # at zero coupling weights the couplings add 0.0 to every unary: the kernel leaves
    # them out (couplings=False) and every loss and gradient entry keeps its bits
    X, y = synthetic(n_seq=10, n_chains=3, length=(1, 7))
    if partial:
        y = [[tuple(None if (i + c) % 3 == 0 and s % 2 else lab for c, lab in enumerate(tok))
              for i, tok in enumerate(seq)] for s, seq in enumerate(y)]
    kw = dict(unary_features=support[0], transition_features=support[1],
              coupling_features=support[2], sigma=2.0, coupling="all",
              forbidden_transitions=None if partial else "unseen", state_transitions=False)
    indep, theta0, _ = training_problem(FactorialCRF(objective="independent", **kw), X, y)
    assert indep._couplings is False
    theta = np.random.default_rng(2).normal(scale=0.7, size=theta0.shape)
    skipped = indep.loss_gradient(theta), indep.block_losses_gradient(theta)
    indep._couplings = True
    computed = indep.loss_gradient(theta), indep.block_losses_gradient(theta)
    for got, ref in zip(skipped, computed):
        assert got[0] == ref[0] if np.ndim(got[0]) == 0 else np.array_equal(got[0], ref[0])
        np.testing.assert_array_equal(got[1], ref[1])


def test_forbidden_couplings_stay_in_the_independent_objective():
    # a forbidden label combination removes labels of one chain given the other's, even
    # at zero coupling weights: the kernel keeps the couplings then
    X, y = synthetic(n_seq=10, n_chains=2)
    y = [[(c, "hi" if c == "c0" else h) for c, h in seq] for seq in y]   # never (c0, lo)
    kw = dict(sigma=2.0, state_transitions=False)
    free, theta0, _ = training_problem(FactorialCRF(objective="independent", **kw), X, y)
    forbid, _, _ = training_problem(FactorialCRF(
        objective="independent", forbidden_couplings={(0, 1): [("c0", "lo")]}, **kw), X, y)
    assert free._couplings is False and forbid._couplings is True
    theta = np.random.default_rng(3).normal(scale=0.7, size=theta0.shape)
    assert forbid.loss_gradient(theta)[0] < free.loss_gradient(theta)[0]


def test_block_costs_follow_the_work():
    # one evaluation's estimated work per chain: positive, and the chain with three
    # labels and more feature-table entries costs more than the two-label one
    X, y = synthetic(n_seq=20, n_chains=2)
    indep, _, _ = training_problem(
        FactorialCRF(objective="independent", unary_features="all"), X, y)
    costs = indep.block_costs()
    assert costs.shape == (2,) and (costs > 0).all() and costs[0] > costs[1]


def test_kernel_rejects_a_chain_mask_of_the_wrong_length():
    X, y = synthetic(n_seq=4, n_chains=2)
    indep, theta0, _ = training_problem(FactorialCRF(objective="independent"), X, y)
    with pytest.raises(ValueError, match="chain_on has 3 entries for 2 chains"):
        indep._chain_losses_gradient(theta0, np.array([True, False, True]))


class _Separable(BlockObjective):
    """sum_b 0.5 * a_b * |theta_b - c_b|^2 with very different curvatures a_b; with
    ``costs``, the work of evaluating each block (``block_costs``)."""

    def __init__(self, scales, size=4, seed=0, costs=None):
        rng = np.random.default_rng(seed)
        self.blocks = [np.arange(b * size, (b + 1) * size) for b in range(len(scales))]
        self.scales = np.asarray(scales, dtype=float)
        self.center = rng.normal(size=len(scales) * size)
        self.evaluations = np.zeros(len(scales), dtype=int)
        if costs is not None:
            self.block_costs = lambda: np.asarray(costs, dtype=float)

    def block_losses_gradient(self, theta, active=None):
        active = np.ones(len(self.blocks), bool) if active is None else active
        self.evaluations += active
        diff = theta - self.center
        losses = np.array([0.5 * a * diff[blk] @ diff[blk] if on else np.nan
                           for a, blk, on in zip(self.scales, self.blocks, active)])
        grad = np.concatenate([a * diff[blk] * on
                               for a, blk, on in zip(self.scales, self.blocks, active)])
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


class _Interleaved(BlockObjective):
    """Two quadratic blocks interleaved over ten weights, weights 2 and 8 in neither;
    block 1's loss is infinite anywhere but at its start (its line search fails)."""

    def __init__(self, theta0):
        self.blocks = [np.array([0, 3, 5, 6]), np.array([9, 1, 7, 4])]
        self.center = np.arange(10.0)
        self.start = theta0[self.blocks[1]].copy()

    def block_losses_gradient(self, theta, active=None):
        active = np.ones(2, bool) if active is None else active
        d = theta - self.center
        losses, grad = np.full(2, np.nan), np.zeros_like(theta)
        for b in np.flatnonzero(active):
            blk = self.blocks[b]
            grad[blk] = (b + 1.0) * d[blk]
            losses[b] = 0.5 * (b + 1.0) * d[blk] @ d[blk]
            if b == 1 and not np.array_equal(theta[blk], self.start):
                losses[b] = np.inf
        return losses, grad


def test_block_lbfgs_with_interleaved_blocks_and_weights_in_none():
    """The blocks' weights are moved side by side and scattered back for every
    evaluation: weights in no block keep their start, a block whose line search fails
    keeps its weights, and every iteration reports the weights it has."""
    theta0 = np.linspace(-1.0, 1.0, 10)
    problem = _Interleaved(theta0)
    reported = []
    monitor = ConvergenceMonitor(callback=lambda it, loss, coef: reported.append(coef.copy()))
    result = BlockLBFGS(max_iter=50, tol=1e-12, max_backtracks=3).solve(problem, theta0,
                                                                         monitor)
    assert not result.converged and "line search failed for blocks [1]" in result.message
    np.testing.assert_array_equal(result.coef[[2, 8]], theta0[[2, 8]])
    np.testing.assert_array_equal(result.coef[problem.blocks[1]], problem.start)
    np.testing.assert_allclose(result.coef[problem.blocks[0]], problem.blocks[0], atol=1e-6)
    for coef in reported:                       # block 1 never moves, from the first report
        np.testing.assert_array_equal(coef[problem.blocks[1]], problem.start)
        np.testing.assert_array_equal(coef[[2, 8]], theta0[[2, 8]])
    np.testing.assert_array_equal(reported[-1], result.coef)


def _slow_problem(costs=None):
    # ill-conditioned blocks: L-BFGS needs many iterations on each
    rng = np.random.default_rng(5)
    problem = _Separable([1.0, 1.0], size=30, costs=costs)
    problem.scales = None
    curv = [np.logspace(0, 4, 30), np.logspace(0, 4, 30)[::-1]]
    problem.block_losses_gradient = _quadratic(problem, curv, rng.normal(size=60))
    return problem


def _quadratic(problem, curvatures, center):
    def evaluate(theta, active=None):
        active = np.ones(2, bool) if active is None else active
        problem.evaluations += active
        losses, grad = np.full(2, np.nan), np.zeros_like(theta)
        for b in np.flatnonzero(active):
            blk = problem.blocks[b]
            d = theta[blk] - center[blk]
            losses[b] = 0.5 * (curvatures[b] * d) @ d
            grad[blk] = curvatures[b] * d
        return losses, grad
    return evaluate


def test_block_lbfgs_gives_a_cheap_block_the_same_work():
    # the block that costs a quarter per evaluation may run four times the
    # iterations; the costly one stops at max_iter, and its evaluations with it
    problem = _slow_problem(costs=[4.0, 1.0])
    seen = {}
    monitor = ConvergenceMonitor(
        callback=lambda it, loss, coef: seen.setdefault(it, problem.evaluations.copy()) is None)
    result = BlockLBFGS(max_iter=10, tol=1e-14).solve(problem, np.zeros(60), monitor)
    assert BlockLBFGS(max_iter=10).block_iterations(problem).tolist() == [10, 40]
    assert result.n_iter == monitor.n_iter == 40 and not result.converged
    assert "blocks [0, 1] at their budgets [10, 40]" in result.message
    # after its 10 iterations the costly block is no longer evaluated
    assert problem.evaluations[0] == seen[10][0] < problem.evaluations[1]
    # whole multiples: a block that costs more than half the costliest runs max_iter
    assert BlockLBFGS(max_iter=10).block_iterations(
        _slow_problem(costs=[3.0, 1.6])).tolist() == [10, 10]
    assert BlockLBFGS(max_iter=10).block_iterations(
        _slow_problem(costs=[3.0, 1.0])).tolist() == [10, 30]
    # without equal_work, every block stops at max_iter
    plain = _slow_problem(costs=[4.0, 1.0])
    result = BlockLBFGS(max_iter=10, tol=1e-14, equal_work=False).solve(
        plain, np.zeros(60), ConvergenceMonitor())
    assert result.n_iter == 10 and plain.evaluations[0] == plain.evaluations[1]
    # a block that converges stops early; the message then names the capped one only
    easy = _Separable([1.0, 1.0], costs=[4.0, 1.0])
    result = BlockLBFGS(max_iter=10, tol=1e-10).solve(easy, np.zeros(8), ConvergenceMonitor())
    assert result.converged and result.n_iter <= 10


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


@pytest.mark.parametrize("transitions", ["default", "supported"])
def test_reduced_score_columns_change_no_bit(monkeypatch, transitions):
    # some chains alone clear, bias and running-sum only the score columns their terms,
    # their reduced feature table and its dense rows touch; doing every column instead
    # changes no bit -- with differenced (window) observations, whose running sums
    # cross the columns, and untied transitions (observation-dependent: their own
    # columns)
    from skfcrf._kernels import _chainwise
    from skfcrf.datasets import make_dictations
    from skfcrf.transformers import make_dictation_features
    X, y = make_dictations(6, "rcg", random_state=3)
    F = make_dictation_features().fit_transform(X)
    indep, theta0, _ = training_problem(FactorialCRF(
        objective="independent", transition_features=transitions, sigma=2.0, n_jobs=2), F, y)
    if transitions == "default":
        assert indep.batch.obs.diff is not None
    else:                               # (too many columns for differencing to pay)
        assert (np.asarray(indep.terms.tables.e_col) >= 0).any()
    theta = np.random.default_rng(4).normal(scale=0.3, size=theta0.shape)
    columns = _chainwise._score_columns
    for active in ([True, False, False], [False, True, False], [False, False, True],
                   [True, False, True]):
        active = np.array(active)
        _, tables, dense = indep.terms._table_of(active)
        ranges, _ = columns(tables, active.astype(np.uint8), (int(dense[2]), int(dense[3])))
        assert 0 < np.diff(ranges)[::2].sum() < tables.width      # some columns skipped
        some = indep.block_losses_gradient(theta, active)
        monkeypatch.setattr(_chainwise, "_score_columns",
                            lambda t, on, span: columns(t, None, span))
        every = indep.block_losses_gradient(theta, active)
        monkeypatch.undo()
        np.testing.assert_array_equal(some[0], every[0])
        np.testing.assert_array_equal(some[1], every[1])
