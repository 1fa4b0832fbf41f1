"""Solvers and the convergence monitor: callback contract, stopping, converged_, warnings."""
import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from skfcrf import FactorialCRF
from skfcrf.solvers import LBFGS, ConvergenceMonitor, OnlineLBFGS

from _helpers import sequences


@pytest.mark.parametrize("solver", ["lbfgs", "olbfgs"])
def test_callback_sees_every_iteration_with_read_only_weights(solver):
    X, y = sequences()
    seen = []

    def callback(iteration, loss, coef):
        seen.append((iteration, loss, coef.copy()))
        with pytest.raises(ValueError):
            coef[0] = 1.0           # a read-only view

    est = FactorialCRF(solver=solver, max_iter=15, tol=1e-4, random_state=0, callback=callback)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est.fit(X, y)
    assert [s[0] for s in seen] == list(range(1, est.n_iter_ + 1))
    assert [s[1] for s in seen] == est.loss_curve_
    assert np.array_equal(seen[-1][2], est.coef_)


@pytest.mark.parametrize("solver", ["lbfgs", "olbfgs"])
def test_callback_returning_true_stops_without_warning(solver):
    X, y = sequences()
    est = FactorialCRF(solver=solver, max_iter=100, tol=1e-12, random_state=0,
                       callback=lambda it, loss, coef: it >= 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        est.fit(X, y)
    assert est.n_iter_ == 3 and len(est.loss_curve_) == 3
    assert est.converged_ is False


def test_callback_stop_matches_max_iter_weights():
    """Stopping by callback at iteration k gives the weights of max_iter=k."""
    X, y = sequences()
    stopped = FactorialCRF(max_iter=100, random_state=0,
                           callback=lambda it, loss, coef: it >= 4).fit(X, y)
    with pytest.warns(ConvergenceWarning, match=r"raise max_iter \(now 4\)"):
        capped = FactorialCRF(max_iter=4, random_state=0, finetune_iter=0,
                              state_transitions=True).fit(X, y)
    assert np.array_equal(stopped.coef_, capped.coef_)


def test_converged_when_tolerance_met():
    X, y = sequences()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        est = FactorialCRF(max_iter=500, tol=1e-3, random_state=0).fit(X, y)
    assert est.converged_ is True and est.n_iter_ < 500


class _WrongGradient:
    """An objective whose gradient points uphill: every line search fails."""

    def loss_gradient(self, theta):
        return float(theta @ theta), -2.0 * theta


def test_lbfgs_reports_failed_line_search():
    result = LBFGS(max_iter=50).solve(_WrongGradient(), np.ones(4), ConvergenceMonitor())
    assert not result.converged
    assert "line search failed" in result.message
    assert np.array_equal(result.coef, np.ones(4))      # the start: no step was accepted


def test_monitor_prints_progress(capsys):
    monitor = ConvergenceMonitor(verbose=1, unit="epoch")
    assert monitor.report(np.zeros(2), 1.5) is False
    assert "epoch 1: loss 1.5" in capsys.readouterr().out
    assert monitor.history == [1.5] and monitor.n_iter == 1


def test_online_lbfgs_epochs_and_stall_rule():
    X, y = sequences(n_seq=20)
    est = FactorialCRF(solver="olbfgs", max_iter=200, tol=0.5, batch_size=5,
                       random_state=0).fit(X, y)
    assert est.converged_ and est.n_iter_ >= 2
    assert isinstance(OnlineLBFGS().direction(np.ones(3)), np.ndarray)


@pytest.mark.parametrize("solver", ["lbfgs", "olbfgs"])
def test_keyboard_interrupt_keeps_last_completed_iteration(solver):
    """Ctrl-C (raised here from the callback) leaves the weights of the last completed
    iteration, converged_ False, and propagates."""
    X, y = sequences()
    seen = {}

    def interrupt(iteration, loss, coef):
        seen[iteration] = coef.copy()
        if iteration == 3:
            raise KeyboardInterrupt

    import threading
    # threads other tests leave for the process's lifetime (e.g. distributed's offload
    # executor after tests/test_dask.py) are not this fit's
    before = set(threading.enumerate())
    est = FactorialCRF(solver=solver, max_iter=50, tol=1e-12, random_state=0, callback=interrupt)
    with pytest.raises(KeyboardInterrupt):
        est.fit(X, y)
    assert est.converged_ is False and est.n_iter_ == 3 and len(est.loss_curve_) == 3
    assert np.array_equal(est.coef_, seen[3])
    assert len(est.predict(X)) == len(X)            # a usable model
    assert set(threading.enumerate()) <= before     # no thread left running


def test_likelihood_finetuning_stage():
    """After the chain-wise stage, finetune_iter iterations of the exact (joint-state)
    likelihood continue from its weights: the likelihood falls, the loss curve covers
    both stages, and reaching finetune_iter gives no warning."""
    from skfcrf.estimators import training_problem

    X, y = sequences(n_seq=20)
    first = FactorialCRF(max_iter=500, tol=1e-3, finetune_iter=0, random_state=0,
                         state_transitions=True).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tuned = FactorialCRF(max_iter=500, tol=1e-3, finetune_iter=5, random_state=0,
                             state_transition_iter=0).fit(X, y)
    assert first.n_iter_ < tuned.n_iter_ <= first.n_iter_ + 5
    assert len(tuned.loss_curve_) == tuned.n_iter_
    lik, _, _ = training_problem(FactorialCRF(objective="likelihood"), X, y)
    assert lik.loss_gradient(tuned.coef_)[0] < lik.loss_gradient(first.coef_)[0]
    trp = FactorialCRF(max_iter=500, tol=1e-3, finetune_iter=5, inference="trp").fit(X, y)
    assert trp.n_iter_ == first.n_iter_          # no exact likelihood: no fine-tuning


class _Quadratic:
    """``sum_i 0.5 * a * (theta - 1) ** 2`` over ``n`` sequences, as a solver sees an objective;
    ``nan_after`` evaluations return NaN from then on."""

    def __init__(self, a=1.0, n=8, nan_after=None):
        self.a, self.nan_after, self.calls = a, nan_after, 0
        self.batch = type("Batch", (), {"n_sequences": n})()

    def subset(self, idx):
        return self

    def loss_gradient(self, theta):
        self.calls += 1
        if self.nan_after is not None and self.calls > self.nan_after:
            return float("nan"), np.full_like(theta, np.nan)
        d = theta - 1.0
        return 0.5 * self.a * float(d @ d), self.a * d


def test_online_lbfgs_converges_on_a_quadratic():
    result = OnlineLBFGS(max_iter=200, batch_size=8, eta0=0.5, random_state=np.random.RandomState(0)
                         ).solve(_Quadratic(), np.zeros(3), ConvergenceMonitor())
    assert result.converged and not result.diverged
    np.testing.assert_allclose(result.coef, 1.0, atol=1e-2)


def test_online_lbfgs_reports_a_rising_loss_as_divergence_with_the_best_weights():
    # steps far too long for the curvature: the loss grows every epoch
    monitor = ConvergenceMonitor()
    result = OnlineLBFGS(max_iter=50, batch_size=8, eta0=1.0, epsilon=30.0,
                         random_state=np.random.RandomState(0)).solve(
        _Quadratic(a=1.0), np.zeros(2), monitor)
    assert result.diverged and not result.converged and "rose" in result.message
    assert np.all(np.isfinite(result.coef))
    assert 0.5 * float((result.coef - 1) @ (result.coef - 1)) <= min(monitor.history) + 1e-12


def test_online_lbfgs_compares_the_first_epochs_with_the_starting_loss():
    # one sequence per batch and a first step far too long: the first epoch's later
    # batches blow the loss up, and the next epochs fall back only slowly.  Measured
    # against the first epoch alone, the fall looked like progress (issue 29's
    # dictation fit: loss 4.3e5 at the start, 2.6e9 after one epoch, no warning)
    start = _Quadratic(a=1000.0)
    start_loss = start.loss_gradient(np.zeros(1))[0]
    monitor = ConvergenceMonitor()
    result = OnlineLBFGS(max_iter=5, batch_size=1, eta0=0.1, epsilon=30.0,
                         random_state=np.random.RandomState(0)).solve(
        _Quadratic(a=1000.0), np.zeros(1), monitor)
    assert monitor.history[0] > 1e3 * start_loss and monitor.history[1] < monitor.history[0]
    assert result.diverged and not result.converged
    assert "starting weights" in result.message and result.n_iter == 2
    np.testing.assert_array_equal(result.coef, np.zeros(1))


def test_online_lbfgs_stops_at_a_non_finite_loss_with_the_last_finite_weights():
    result = OnlineLBFGS(max_iter=10, batch_size=8, random_state=np.random.RandomState(0)).solve(
        _Quadratic(nan_after=5), np.zeros(2), ConvergenceMonitor())
    assert result.diverged and "non-finite" in result.message
    assert np.all(np.isfinite(result.coef))


def test_olbfgs_divergence_warns_and_leaves_a_usable_model():
    # issue 29's reproduction: this fit used to leave NaN weights and say "raise max_iter"
    from skfcrf.datasets import make_dictations
    from skfcrf.transformers import make_dictation_features

    X, y = make_dictations(16, "rcg", random_state=0)
    F = make_dictation_features().fit_transform(X)
    est = FactorialCRF(solver="olbfgs", objective="chainwise", max_iter=4, finetune_iter=0,
                       batch_size=4, random_state=0)
    with pytest.warns(ConvergenceWarning, match="training diverged"):
        est.fit(F, y)
    assert not est.converged_ and np.all(np.isfinite(est.coef_))
    assert len(est.predict(F[:2])) == 2


def test_a_model_with_non_finite_weights_refuses_to_decode():
    X, y = sequences()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est = FactorialCRF(max_iter=5, finetune_iter=0).fit(X, y)
    est.coef_ = est.coef_.copy()
    est.coef_[0] = np.nan
    with pytest.raises(ValueError, match="not all finite"):
        est.predict(X)


class _Function:
    def __init__(self, f, g):
        self.f, self.g, self.n = f, g, 0

    def loss_gradient(self, x):
        self.n += 1
        return self.f(x), self.g(x)


@pytest.mark.parametrize("problem", ["quadratic", "rosenbrock"])
@pytest.mark.parametrize("max_iter", [1, 5, 30])
def test_lbfgs_takes_scipy_lbfgsb_steps(problem, max_iter):
    """Without bounds, LBFGS is scipy's L-BFGS-B algorithm: the same iterates (up to
    rounding) after any number of iterations, the same loss evaluations."""
    from scipy.optimize import minimize, rosen, rosen_der
    rng = np.random.RandomState(0)
    if problem == "quadratic":
        A = rng.randn(20, 20)
        A = A @ A.T + np.eye(20)
        b = rng.randn(20)
        f, g, x0 = (lambda x: 0.5 * x @ A @ x - b @ x), (lambda x: A @ x - b), np.zeros(20)
    else:
        f, g, x0 = rosen, rosen_der, np.full(8, -1.2)
    ref = minimize(lambda x: (f(x), g(x)), x0, jac=True, method="L-BFGS-B",
                   options=dict(maxcor=4, maxiter=max_iter, ftol=1e-14, gtol=1e-14))
    ours = _Function(f, g)
    result = LBFGS(memory=4, max_iter=max_iter, tol=1e-14).solve(ours, x0, ConvergenceMonitor())
    assert result.n_iter == ref.nit
    assert ours.n == ref.nfev
    np.testing.assert_allclose(result.coef, ref.x, rtol=1e-7, atol=1e-9)


def test_lbfgs_steps_back_from_a_non_finite_loss():
    """A trial point where the loss is not finite (an overflow) is too far: the step
    is halved, and the run goes on to the minimum."""
    def f(x):
        return np.inf if np.abs(x).max() > 3.0 else float(((x - 1.0) ** 2).sum())

    ours = _Function(f, lambda x: 2.0 * (x - 1.0))
    result = LBFGS(max_iter=50, tol=1e-12).solve(ours, np.full(3, 2.9) * [1, -1, 1],
                                                 ConvergenceMonitor())
    assert result.converged
    np.testing.assert_allclose(result.coef, 1.0, atol=1e-6)


def test_lbfgs_without_more_thuente_backtracks(monkeypatch):
    """A scipy without More and Thuente's search: a backtracking search, the same minimum."""
    import skfcrf.solvers._lbfgs as lbfgs
    monkeypatch.setattr(lbfgs, "_more_thuente", None)
    rng = np.random.RandomState(1)
    A = rng.randn(10, 10)
    A = A @ A.T + np.eye(10)
    b = rng.randn(10)
    result = LBFGS(memory=5, max_iter=200, tol=1e-14).solve(
        _Function(lambda x: 0.5 * x @ A @ x - b @ x, lambda x: A @ x - b), np.zeros(10),
        ConvergenceMonitor())
    np.testing.assert_allclose(result.coef, np.linalg.solve(A, b), rtol=1e-6)


def test_lbfgs_stops_at_max_fun():
    from scipy.optimize import rosen, rosen_der
    ours = _Function(rosen, rosen_der)
    result = LBFGS(max_iter=1000, tol=0.0, max_fun=12).solve(ours, np.full(4, -1.2),
                                                             ConvergenceMonitor())
    assert ours.n == 12 and not result.converged and "max_fun=12" in result.message
    assert rosen(result.coef) < rosen(np.full(4, -1.2))


def test_olbfgs_constants_are_solver_options():
    # issue 29: oLBFGS's constants besides eta0, tau and batch_size reach the solver
    X, y = sequences()
    fit = dict(solver="olbfgs", max_iter=3, batch_size=2, random_state=0, finetune_iter=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        default = FactorialCRF(**fit).fit(X, y).coef_
        same = FactorialCRF(**fit, solver_options={"c": 1.0, "lam": 1.0}).fit(X, y).coef_
        scaled = FactorialCRF(**fit, solver_options={"epsilon": 0.5, "c": 2.0}).fit(X, y).coef_
    np.testing.assert_array_equal(same, default)
    assert not np.allclose(scaled, default)


@pytest.mark.parametrize("options, named", [
    ({"c": 0.0}, "c must be a positive"),
    ({"epsilon": -1.0}, "epsilon must be a positive"),
    ({"divergence": np.nan}, "divergence must be a positive"),
    ({"lam": -0.5}, "lam must be a number >= 0"),
    ({"gamma": 1.0}, r"\['gamma'\] are not options of solver='olbfgs'"),
    ({"batch_size": 4}, r"\['batch_size'\]"),
])
def test_bad_olbfgs_options_raise(options, named):
    X, y = sequences()
    with pytest.raises(ValueError, match=named):
        FactorialCRF(solver="olbfgs", max_iter=2, solver_options=options).fit(X, y)


def _bfgs_inverse_hessian(pairs, scale):
    """The L-BFGS inverse-Hessian estimate as a dense matrix: BFGS updates of
    ``scale * I`` by the pairs, oldest first (Nocedal & Wright, eq. 7.19)."""
    n = len(pairs[0][0])
    H = scale * np.eye(n)
    for s, y in pairs:
        rho = 1.0 / (y @ s)
        V = np.eye(n) - rho * np.outer(y, s)
        H = V.T @ H @ V + rho * np.outer(s, s)
    return H


@pytest.mark.parametrize("memory", [1, 3])
def test_curvature_pairs_direction_is_minus_the_bfgs_inverse_hessian_times_g(memory):
    from skfcrf.solvers._lbfgs import CurvaturePairs, two_loop

    rng = np.random.default_rng(0)
    A = rng.normal(size=(6, 6))
    A = A @ A.T + 6 * np.eye(6)             # a convex quadratic's Hessian: s.y > 0
    pairs = CurvaturePairs(memory)
    kept = []
    for _ in range(5):
        s = rng.normal(size=6)
        y = A @ s
        pairs.add(s, y)
        kept = (kept + [(s, y)])[-memory:]
    assert len(pairs) == memory
    g = rng.normal(size=6)
    g_before = g.copy()
    scale = (kept[-1][0] @ kept[-1][1]) / (kept[-1][1] @ kept[-1][1])
    expected = -_bfgs_inverse_hessian(kept, scale) @ g
    np.testing.assert_allclose(pairs.direction(g), expected, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(-two_loop(g, [s for s, _ in kept], [y for _, y in kept], scale),
                               expected, rtol=1e-12, atol=1e-14)
    np.testing.assert_array_equal(g, g_before)          # the recursion works on a copy
    pairs.clear()
    assert not pairs


def test_axpy_updates_in_place_and_refuses_what_it_cannot_update():
    from skfcrf._blas import axpy

    y = np.arange(4.0)
    axpy(np.ones(4), y, 2.0)
    np.testing.assert_array_equal(y, [2.0, 3.0, 4.0, 5.0])
    with pytest.raises(ValueError, match="C-contiguous float64"):
        axpy(np.ones(2), np.arange(4.0)[::2], 1.0)
    with pytest.raises(ValueError, match="C-contiguous float64"):
        axpy(np.ones(4), np.arange(4), 1.0)
    with pytest.raises(ValueError, match="shape"):
        axpy(np.ones(3), np.zeros(4), 1.0)
