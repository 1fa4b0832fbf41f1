"""Solvers: batch L-BFGS (scipy), OWL-QN (L1), online L-BFGS, with one convergence monitor.

A solver minimises any objective of :mod:`skfcrf.estimators._objectives`
(``objective.loss_gradient(theta) -> (loss, grad)``) from a starting point and
reports every iteration (epoch, for the online solver) to a
:class:`ConvergenceMonitor`, which keeps the loss curve, prints progress and asks
the user's callback whether to stop.  ``solve`` returns a :class:`SolverResult`.

:class:`BlockLBFGS` needs more: a :class:`BlockObjective`, whose loss is a sum of
functions of disjoint weight blocks.
"""
import time
import warnings
from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize
from sklearn.exceptions import ConvergenceWarning

__all__ = ["ConvergenceMonitor", "SolverResult", "LBFGS", "BlockObjective", "BlockLBFGS",
           "OnlineLBFGS", "OWLQN",
           "SOLVERS", "pseudo_gradient", "two_loop", "warn_if_not_converged"]


class ConvergenceMonitor:
    """Loss history, progress printing and the user's stop callback.

    Parameters
    ----------
    verbose : int, default=0
        Print the loss after every iteration when > 0.
    callback : callable, optional
        ``callback(iteration, loss, coef)`` after every iteration; ``coef`` is a
        read-only view of the current weights; a return value of ``True``
        stops training.
    unit : str, default="iteration"
        What one report is (``"epoch"`` for online solvers), for printing.
    """

    def __init__(self, verbose=0, callback=None, unit="iteration"):
        self.verbose = verbose
        self.callback = callback
        self.unit = unit
        self.history = []
        self.last_coef = None           # a copy of the weights of the last iteration reported
        self.stopped_by_callback = False
        #: maps what the solver reports to all the weights (a restricted stage's
        #: ``Restricted.full``), or None
        self.expand = None
        self._start = time.perf_counter()

    @property
    def n_iter(self):
        return len(self.history)

    def report(self, theta, loss):
        """Record one iteration's loss; return True when the callback asks to stop."""
        self.history.append(float(loss))
        if self.expand is not None:
            theta = self.expand(theta)
        self.last_coef = np.array(theta, dtype=np.float64)
        if self.verbose:
            print(f"{self.unit} {self.n_iter}: loss {loss:.6g} "
                  f"({time.perf_counter() - self._start:.1f} s)", flush=True)
        if self.callback is None:
            return False
        view = np.asarray(theta).view()
        view.flags.writeable = False
        if self.callback(self.n_iter, float(loss), view) is True:
            self.stopped_by_callback = True
            return True
        return False


@dataclass
class SolverResult:
    """What a solver returns.

    Attributes
    ----------
    coef : ndarray
        The final weights.
    n_iter : int
        Iterations (epochs) run.
    converged : bool
        The solver's own stopping criterion was met.
    message : str
        Why it stopped.
    at_max_iter : bool
        It stopped because it reached its iteration budget (``max_iter``).
    """

    coef: np.ndarray
    n_iter: int
    converged: bool
    message: str
    at_max_iter: bool = False


def two_loop(g, s_list, y_list, scale):
    """``H g`` for the L-BFGS inverse-Hessian estimate ``H`` of the pairs ``(s, y)``
    (oldest first) with initial matrix ``scale * I`` (Nocedal & Wright, Alg. 7.4)."""
    q = np.array(g, dtype=np.float64)
    alphas = []
    for s, y in zip(reversed(s_list), reversed(y_list)):
        rho = 1.0 / (y @ s)
        a = rho * (s @ q)
        alphas.append((a, rho))
        q -= a * y
    r = scale * q
    for (s, y), (a, rho) in zip(zip(s_list, y_list), reversed(alphas)):
        b = rho * (y @ r)
        r += (a - b) * s
    return r


class LBFGS:
    """Batch L-BFGS: scipy's L-BFGS-B without bounds.

    Stops when the relative loss reduction or the largest gradient component
    falls below ``tol`` (converged), at ``max_iter`` iterations, or on a failed
    line search (not converged; scipy's status and message are kept).
    """

    name = "lbfgs"

    def __init__(self, memory=3, max_iter=800, tol=1e-5):
        self.memory = memory
        self.max_iter = max_iter
        self.tol = tol

    def solve(self, objective, theta0, monitor):
        def callback(intermediate_result):
            if monitor.report(intermediate_result.x, intermediate_result.fun):
                raise StopIteration

        res = minimize(
            objective.loss_gradient, theta0, jac=True, method="L-BFGS-B", callback=callback,
            options={"maxcor": self.memory, "maxiter": self.max_iter, "ftol": self.tol,
                     "gtol": self.tol, "maxfun": max(15000, 20 * self.max_iter)},
        )
        message = res.message if isinstance(res.message, str) else res.message.decode()
        if monitor.stopped_by_callback:
            message = "stopped by the callback"
        elif res.status != 0:
            message = f"scipy L-BFGS-B status {res.status}: {message}"
        return SolverResult(res.x, int(res.nit), res.status == 0, message,
                            at_max_iter=res.status == 1 and not monitor.stopped_by_callback)


def pseudo_gradient(theta, grad, l1):
    """The orthant-wise pseudo-gradient of ``f(theta) + l1 * sum|theta|`` (Andrew & Gao 2007).

    Where ``theta_j != 0`` the gradient ``grad_j + l1 * sign(theta_j)``; where
    ``theta_j == 0`` the one-sided derivative that descends, ``grad_j + l1`` if it
    is negative, ``grad_j - l1`` if that is positive, else 0 (``|grad_j| <= l1``:
    zero is optimal along ``j``).  Zero exactly at a minimiser.
    """
    pg = grad + l1 * np.sign(theta)
    zero = theta == 0
    gz = grad[zero]
    pg[zero] = np.where(gz + l1 < 0, gz + l1, np.where(gz - l1 > 0, gz - l1, 0.0))
    return pg


class OWLQN:
    """Orthant-wise limited-memory quasi-Newton (OWL-QN; Andrew & Gao, ICML 2007).

    Minimises ``F(theta) = f(theta) + l1 * sum|theta|`` where ``f`` is the
    objective's smooth loss (``objective.loss_gradient``, the Gaussian prior
    included: elastic net when both are on).  Every iteration:

    * the pseudo-gradient ``v`` (:func:`pseudo_gradient`) takes the place of the
      gradient: the direction is ``d = -H v`` by the two-loop recursion over the
      last ``memory`` pairs ``(s, y)`` of the *smooth* gradient's changes (initial
      scaling ``s.y / y.y`` of the newest pair), with the components that do not
      descend along ``-v`` (``d_j v_j >= 0``) set to 0;
    * the orthant is that of ``theta`` (of ``-v`` where ``theta_j = 0``); a trial
      point ``theta + t d`` is projected onto it (a component that would change
      sign is set to 0);
    * backtracking from ``t = 1`` (``1 / |v|`` on the first iteration and after a
      restart) by halving, until ``F(trial) <= F + 1e-4 v.(trial - theta)``, at most
      ``max_backtracks`` times -- libLBFGS's OWL-QN line search, as CRFsuite runs it.

    Stops when the relative reduction of ``F`` or the largest pseudo-gradient
    component falls below ``tol`` (converged; ``tol=0`` leaves stopping to the
    monitor), at ``max_iter`` iterations, or when the line search fails (not
    converged).  ``l1=0`` is L-BFGS with this backtracking line search (the
    estimator uses :class:`LBFGS` then).  The monitor receives ``F``.

    Parameters
    ----------
    l1 : float
        L1 weight per unit of ``|theta_j|``.
    memory, max_iter, tol : as :class:`LBFGS`.
    max_backtracks : int, default=20
        Loss evaluations per line search beyond the first trial.
    offset : float, default=0.0
        Constant added to the reported loss (the L1 penalty of weights a
        :class:`~skfcrf.estimators._objectives.Restricted` objective holds).

    Attributes
    ----------
    last_pg_norm : float
        ``||v||`` at the last accepted point (CRFsuite's stopping test uses it).
    n_evaluations : int
        Loss evaluations made.
    """

    name = "owlqn"

    def __init__(self, l1, memory=3, max_iter=800, tol=1e-5, max_backtracks=20, offset=0.0):
        self.l1 = float(l1)
        self.memory = memory
        self.max_iter = max_iter
        self.tol = tol
        self.max_backtracks = max_backtracks
        self.offset = offset
        self.last_pg_norm = None
        self.n_evaluations = 0

    def _evaluate(self, objective, theta):
        self.n_evaluations += 1
        f, g = objective.loss_gradient(theta)
        return float(f) + self.l1 * float(np.abs(theta).sum()), np.asarray(g, dtype=np.float64)

    def solve(self, objective, theta0, monitor):
        l1 = self.l1
        theta = np.array(theta0, dtype=np.float64)
        F, g = self._evaluate(objective, theta)
        pg = pseudo_gradient(theta, g, l1)
        self.last_pg_norm = float(np.linalg.norm(pg))
        s_list, y_list = [], []
        if np.abs(pg).max(initial=0.0) <= self.tol:
            return SolverResult(theta, 0, True, "the pseudo-gradient is zero at the start")
        for it in range(1, self.max_iter + 1):
            d = None
            if s_list:
                d = -two_loop(pg, s_list, y_list, (s_list[-1] @ y_list[-1])
                              / (y_list[-1] @ y_list[-1]))
                d[d * pg >= 0] = 0.0                  # keep the descending components only
                step = 1.0
                if not pg @ d < 0:
                    d = None
            if d is None:                             # first iteration, or restart
                s_list.clear(), y_list.clear()
                d = -pg
                step = 1.0 / max(np.linalg.norm(pg), 1e-300)
            orthant = np.where(theta != 0, np.sign(theta), -np.sign(pg))
            for _ in range(self.max_backtracks + 1):
                trial = theta + step * d
                trial[np.sign(trial) != orthant] = 0.0
                F_new, g_new = self._evaluate(objective, trial)
                if np.isfinite(F_new) and F_new <= F + 1e-4 * (pg @ (trial - theta)):
                    break
                step *= 0.5
            else:
                return SolverResult(theta, it - 1, False,
                                    "the line search found no lower loss")
            s_vec, y_vec = trial - theta, g_new - g
            if s_vec @ y_vec > 1e-10 * (s_vec @ s_vec):
                s_list.append(s_vec), y_list.append(y_vec)
                if len(s_list) > self.memory:
                    s_list.pop(0), y_list.pop(0)
            reduction = (F - F_new) / max(abs(F), abs(F_new), 1.0)
            theta, F, g = trial, F_new, g_new
            pg = pseudo_gradient(theta, g, l1)
            self.last_pg_norm = float(np.linalg.norm(pg))
            if monitor.report(theta, F + self.offset):
                return SolverResult(theta, it, False, "stopped by the callback")
            if reduction <= self.tol:
                return SolverResult(theta, it, True, "relative reduction of the loss <= tol")
            if np.abs(pg).max(initial=0.0) <= self.tol:
                return SolverResult(theta, it, True, "pseudo-gradient <= tol")
        return SolverResult(theta, self.max_iter, False,
                            f"stopped at max_iter={self.max_iter} iterations", at_max_iter=True)


class OnlineLBFGS:
    """Online L-BFGS (oLBFGS) of Schraudolph, Yu and Guenter (AISTATS 2007).

    Each step draws a mini-batch, takes the direction ``p = -H g`` from the
    two-loop recursion over the last ``memory`` pairs (initial scaling: the
    average of ``s.y / y.y`` over the stored pairs), moves by
    ``s = (eta_t / c) p`` with ``eta_t = tau / (tau + t) * eta0``, and stores
    ``y = g(theta + s) - g(theta) + lambda * s`` with both gradients taken on
    the *same* batch.  An epoch is one pass over the sequences in a random
    order; training stops when the epoch loss improves by less than ``tol``
    (relative) twice in a row (converged) or after ``max_iter`` epochs.

    Parameters
    ----------
    memory : int
        Number of (s, y) pairs kept.
    max_iter : int
        Maximum number of epochs.
    tol : float
        Relative epoch-loss improvement below which an epoch stalls.
    batch_size : int
        Sequences per mini-batch.
    eta0, tau, c, lam : float
        Step size, its decay constant, the step scaling ``c`` and the
        model-trust-region term ``lambda``.
    epsilon : float
        Plain gradient step scale used before any (s, y) pair is stored.
    random_state : numpy.random.RandomState
        Draws the batch order.
    """

    name = "olbfgs"

    def __init__(self, memory=3, max_iter=800, tol=1e-5, batch_size=32, eta0=0.1, tau=100.0,
                 c=1.0, lam=1.0, epsilon=1e-2, random_state=None):
        self.memory = memory
        self.max_iter = max_iter
        self.tol = tol
        self.batch_size = batch_size
        self.eta0 = eta0
        self.tau = tau
        self.c = c
        self.lam = lam
        self.epsilon = epsilon
        self.random_state = random_state
        self.s_list = []
        self.y_list = []
        self.t = 0

    def direction(self, g):
        """``-H g`` by the two-loop recursion with oLBFGS's initial scaling."""
        if not self.s_list:
            return -self.epsilon * g
        scale = np.mean([(s @ y) / (y @ y) for s, y in zip(self.s_list, self.y_list)])
        return -two_loop(g, self.s_list, self.y_list, scale)

    def step(self, theta, batch_fun):
        """One oLBFGS step on the batch objective ``batch_fun``; returns (theta, loss)."""
        loss, g = batch_fun(theta)
        p = self.direction(g)
        eta = self.tau / (self.tau + self.t) * self.eta0
        s = (eta / self.c) * p
        theta_new = theta + s
        _, g_new = batch_fun(theta_new)
        y = g_new - g + self.lam * s
        if y @ s > 1e-12 * (np.linalg.norm(y) * np.linalg.norm(s) + 1e-300):
            self.s_list.append(s)
            self.y_list.append(y)
            if len(self.s_list) > self.memory:
                self.s_list.pop(0)
                self.y_list.pop(0)
        self.t += 1
        return theta_new, loss

    def solve(self, objective, theta0, monitor):
        rng = self.random_state if self.random_state is not None else np.random.RandomState()
        n_seq = objective.batch.n_sequences
        size = min(self.batch_size, n_seq)
        theta = theta0
        best = np.inf
        stalls = 0
        for epoch in range(self.max_iter):
            order = rng.permutation(n_seq)
            epoch_loss = 0.0
            for lo in range(0, n_seq, size):
                idx = order[lo:lo + size]
                theta, loss = self.step(theta, objective.subset(idx).loss_gradient)
                epoch_loss += loss * len(idx) / n_seq
            if monitor.report(theta, epoch_loss):
                return SolverResult(theta, epoch + 1, False, "stopped by the callback")
            if epoch_loss > best - self.tol * max(abs(best), 1.0):
                stalls += 1
                if stalls >= 2:
                    return SolverResult(theta, epoch + 1, True,
                                        "epoch loss stalled twice in a row")
            else:
                stalls = 0
            best = min(best, epoch_loss)
        return SolverResult(theta, self.max_iter, False,
                            f"stopped at max_iter={self.max_iter} epochs", at_max_iter=True)


class BlockObjective:
    """The contract of :class:`BlockLBFGS`: a loss that is a sum of one function per
    block of weights, the blocks disjoint.

    Subclasses (such as the independent chains' likelihoods,
    :class:`~skfcrf.estimators._objectives.IndependentChains`) provide

    ``blocks``
        List of int index arrays into ``theta``, one per block.
    ``block_losses_gradient(theta, active=None) -> (losses, grad)``
        Per block its loss, and the gradient of their sum; ``active`` (bool per
        block): only those blocks are evaluated, the others' losses are NaN and
        their gradient zero.
    ``block_costs()``
        Estimated cost of evaluating each block alone (any unit), or None when
        unknown (the default): the blocks then get equal iteration budgets.
    ``loss_gradient(theta)``
        The summed loss, as every objective has.
    """

    blocks = ()

    def block_losses_gradient(self, theta, active=None):
        raise NotImplementedError

    def block_costs(self):
        return None


class BlockLBFGS:
    """L-BFGS on a loss that is a sum of functions of disjoint weight blocks.

    For a :class:`BlockObjective`, such as the independent chains'
    likelihoods: every block keeps its own L-BFGS memory,
    step length and stopping test, and all blocks move in the same
    evaluations (one evaluation gives every block's loss, so their line
    searches run in lockstep).  One L-BFGS over the summed loss shares one
    step length and one curvature estimate among the blocks, and the small
    ones converge slowly: on the dictation benchmark, 150 iterations over the
    sum leave the 7-label sentence chain at WindowDiff .026, where 150 on that
    chain alone reach .018.

    Budget: ``max_iter`` iterations for a block that costs more than half as
    much per evaluation as the costliest (``objective.block_costs()``, when
    the objective knows them); a block that costs at most ``1/k`` of the costliest
    may run ``k * max_iter``, no more work than the costliest block's
    ``max_iter`` (whole multiples: a block is not run on for a fraction of
    the stage).  Once the costlier blocks have stopped, the evaluations are
    of the remaining blocks alone (``block_losses_gradient(theta, active)``).
    On the dictation benchmark the 7-label sentence chain, evaluated alone,
    costs a quarter of the 72-label subsection chain; 100 iterations leave
    its loss at 15 times its optimum and its WindowDiff at .019, where
    convergence reaches .017.  ``equal_work=False``: ``max_iter`` for every
    block.

    Line search: backtracking from the unit step (the first iteration from
    ``1 / |g|``) under the Armijo condition, each time to the minimiser of the
    quadratic that fits the loss, its slope and the failed trial (kept within a
    tenth and a half of the step), up to ``max_backtracks`` times; a block whose
    search fails keeps its weights and stops.  A block converges when its relative
    loss reduction or its largest
    gradient component falls below ``tol`` (scipy's ``ftol``/``gtol`` tests).
    """

    name = "block-lbfgs"

    def __init__(self, memory=3, max_iter=800, tol=1e-5, max_backtracks=20, equal_work=True):
        self.memory = memory
        self.max_iter = max_iter
        self.tol = tol
        self.max_backtracks = max_backtracks
        self.equal_work = equal_work

    def block_iterations(self, objective):
        """Iterations each block may run (see the class docstring)."""
        n_blocks = len(objective.blocks)
        costs = objective.block_costs() if self.equal_work else None
        if costs is None:
            return np.full(n_blocks, self.max_iter, dtype=np.int64)
        costs = np.maximum(np.asarray(costs, dtype=np.float64), 1e-300)
        return self.max_iter * np.floor(costs.max() / costs).astype(np.int64)

    def solve(self, objective, theta0, monitor):
        if not isinstance(objective, BlockObjective):
            raise TypeError(f"BlockLBFGS minimises a BlockObjective, not a "
                            f"{type(objective).__name__}")
        blocks = objective.blocks
        n_blocks = len(blocks)
        caps = self.block_iterations(objective)
        theta = np.array(theta0, dtype=np.float64)
        f, g = objective.block_losses_gradient(theta)
        pairs = [([], []) for _ in range(n_blocks)]
        active = np.array([np.abs(g[blk]).max(initial=0.0) > self.tol for blk in blocks])
        failed = np.zeros(n_blocks, dtype=bool)
        capped = np.zeros(n_blocks, dtype=bool)
        n_iter = 0
        for it in range(1, int(caps.max(initial=0)) + 1):
            capped |= active & (caps < it)
            active &= caps >= it
            if not active.any():
                break
            directions, steps, slopes = {}, np.zeros(n_blocks), np.zeros(n_blocks)
            for b in np.flatnonzero(active):
                gb = g[blocks[b]]
                s_list, y_list = pairs[b]
                if s_list:
                    d = -two_loop(gb, s_list, y_list, (s_list[-1] @ y_list[-1])
                                  / (y_list[-1] @ y_list[-1]))
                    steps[b] = 1.0
                else:
                    d = -gb
                    steps[b] = 1.0 / max(np.linalg.norm(gb), 1e-300)
                if not gb @ d < 0:                     # not a descent direction: restart
                    s_list.clear(), y_list.clear()
                    d = -gb
                    steps[b] = 1.0 / max(np.linalg.norm(gb), 1e-300)
                directions[b], slopes[b] = d, gb @ d
            trial = theta.copy()
            pending = active.copy()
            f_new, g_new = f.copy(), g.copy()
            for _ in range(self.max_backtracks + 1):
                for b in np.flatnonzero(pending):
                    trial[blocks[b]] = theta[blocks[b]] + steps[b] * directions[b]
                f_eval, g_eval = objective.block_losses_gradient(
                    trial, None if pending.all() else pending)
                ok = pending & np.isfinite(f_eval) & (f_eval <= f + 1e-4 * steps * slopes)
                for b in np.flatnonzero(ok):
                    f_new[b], g_new[blocks[b]] = f_eval[b], g_eval[blocks[b]]
                pending &= ~ok
                if not pending.any():
                    break
                # minimiser of the quadratic through f, the slope and f_eval, kept
                # within [0.1, 0.5] of the step (halving when f_eval is not finite)
                with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
                    curve = f_eval - f - steps * slopes
                    quad = -slopes * steps ** 2 / (2.0 * curve)
                quad = np.where(np.isfinite(quad), quad, 0.5 * steps)
                steps[pending] = np.clip(quad, 0.1 * steps, 0.5 * steps)[pending]
            for b in np.flatnonzero(pending):          # line search failed: keep the weights
                trial[blocks[b]] = theta[blocks[b]]
                active[b], failed[b] = False, True
            for b in np.flatnonzero(active):
                blk = blocks[b]
                s_vec, y_vec = trial[blk] - theta[blk], g_new[blk] - g[blk]
                if s_vec @ y_vec > 1e-10 * (s_vec @ s_vec):
                    s_list, y_list = pairs[b]
                    s_list.append(s_vec), y_list.append(y_vec)
                    if len(s_list) > self.memory:
                        s_list.pop(0), y_list.pop(0)
                reduction = (f[b] - f_new[b]) / max(abs(f[b]), abs(f_new[b]), 1.0)
                if reduction <= self.tol or np.abs(g_new[blk]).max(initial=0.0) <= self.tol:
                    active[b] = False
            theta, f, g = trial, f_new, g_new
            n_iter = it
            if monitor.report(theta, f.sum()):
                return SolverResult(theta, it, False, "stopped by the callback")
        capped |= active        # still active after the last iteration
        if capped.any():
            return SolverResult(theta, n_iter, False,
                                f"stopped at max_iter={self.max_iter} iterations (blocks "
                                f"{np.flatnonzero(capped).tolist()} at their budgets "
                                f"{caps[capped].tolist()})", at_max_iter=True)
        return SolverResult(theta, n_iter, not failed.any(), self._message(failed))

    @staticmethod
    def _message(failed):
        if failed.any():
            return f"the line search failed for blocks {np.flatnonzero(failed).tolist()}"
        return "every block converged"


#: ``solver=`` name -> solver class.
SOLVERS = {"lbfgs": LBFGS, "olbfgs": OnlineLBFGS}


def warn_if_not_converged(result, stopped_by_user, *, max_iter, tol, unit="iterations",
                          designed_budget=False, verbose=0):
    """Warn, in the user's words, when a fit's solver stopped before converging.

    No warning when it converged, when the user's callback (or early stopping) stopped
    it, or when it reached a budget the estimator chose by design (``designed_budget``:
    the default ``max_iter`` of the staged default fit, whose later stages continue).
    Reaching a ``max_iter`` the user set warns with the iterations run and what to
    change; a failed line search warns that the loss could not be lowered further.
    With ``verbose`` the solver's own reason is printed in every case.
    """
    if result.converged or stopped_by_user:
        return
    if verbose:
        print(f"stopped before converging: {result.message}", flush=True)
    if result.at_max_iter:
        if designed_budget:
            return
        message = (f"stopped after {result.n_iter} {unit} before converging; raise max_iter "
                   f"(now {max_iter}) or tol (now {tol:g})")
    else:
        message = (f"stopped after {result.n_iter} {unit} before converging: no step lowered "
                   "the loss any further (the weights are the last that did); a larger tol "
                   f"(now {tol:g}) accepts them as converged")
    warnings.warn(message, ConvergenceWarning, stacklevel=5)   # the caller of fit
