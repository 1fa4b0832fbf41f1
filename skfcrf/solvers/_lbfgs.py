"""Batch L-BFGS and the two-loop recursion.

:class:`LBFGS` is the algorithm of scipy's L-BFGS-B without bounds -- the
two-loop recursion over the last ``memory`` pairs ``(s, y)`` and More and
Thuente's line search (``dcsrch``, which scipy's L-BFGS-B runs with the same
constants) -- written over numpy vectors.  It takes the same steps as
``scipy.optimize.minimize(method="L-BFGS-B")`` without bounds (equal up to
rounding), without that routine's compact-form bookkeeping: on CoNLL-2000
chunking (698,083 weights, memory 6) that bookkeeping took about 20 ms an
iteration, 10% of the training time (``benchmarks/ab_lbfgs.py``).
"""

import numpy as np

from skfcrf.solvers._monitor import SolverResult

try:    # More and Thuente's search, as L-BFGS-B runs it (not public in scipy)
    from scipy.optimize._linesearch import scalar_search_wolfe1 as _more_thuente
except ImportError:                     # pragma: no cover - a scipy without it
    _more_thuente = None                # backtracking then (_backtracking)

__all__ = ["LBFGS", "two_loop"]

#: L-BFGS-B's line search constants: sufficient decrease, curvature, interval tolerance,
#: largest step.
LINE_SEARCH = dict(c1=1e-3, c2=0.9, xtol=0.1, amin=0.0, amax=1e10)


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


class _TooManyEvaluations(Exception):
    pass


class _NotFinite(Exception):
    def __init__(self, alpha):
        self.alpha = alpha


class _LineFunction:
    """``f(theta + alpha d)`` and its derivative in ``alpha``, each point evaluated
    once (the search asks for the value, then the slope, at the same step)."""

    def __init__(self, objective, theta, d, budget):
        self.objective, self.theta, self.d, self.budget = objective, theta, d, budget
        self.alpha, self.n_evaluations = None, 0
        self.strict = True      # a non-finite loss raises _NotFinite (else reads as inf)

    def _at(self, alpha):
        if alpha != self.alpha:
            if self.n_evaluations >= self.budget:
                raise _TooManyEvaluations
            self.n_evaluations += 1
            x = self.theta + alpha * self.d
            f, g = self.objective.loss_gradient(x)
            self.alpha, self.x, self.f = alpha, x, float(f)
            self.g = np.asarray(g, dtype=np.float64)
        return self

    def value(self, alpha):
        f = self._at(alpha).f
        if not np.isfinite(f):
            if self.strict:
                raise _NotFinite(alpha)
            return np.inf
        return f

    def slope(self, alpha):
        return float(self._at(alpha).g @ self.d)


class LBFGS:
    """Batch L-BFGS (the algorithm of scipy's L-BFGS-B without bounds).

    Every iteration the direction is ``d = -H g`` by the two-loop recursion over
    the last ``memory`` pairs ``(s, y)`` (initial scaling ``s.y / y.y`` of the
    newest; a pair with ``s.y <= eps y.y`` is not kept), and More and Thuente's
    line search finds a step meeting the strong Wolfe conditions (sufficient
    decrease ``1e-3``, curvature ``0.9``) from ``1`` -- from ``1 / |g|`` along
    ``-g`` on the first iteration and after a restart.  When the search fails
    the memory is dropped and the iteration restarts along ``-g``; a failure
    from there ends the run.

    Stops when the relative loss reduction ``(f_k - f_{k+1}) / max(|f_k|,
    |f_{k+1}|, 1)`` or the largest gradient component falls below ``tol``
    (converged), at ``max_iter`` iterations or ``max_fun`` loss evaluations, or
    when the line search fails along ``-g`` (not converged).

    Parameters
    ----------
    memory : int, default=3
        Number of ``(s, y)`` pairs kept.
    max_iter : int, default=100
    tol : float, default=1e-5
    max_linesearch : int, default=20
        Loss evaluations per line search.
    max_fun : int, optional
        Loss evaluations in all; ``max(15000, 20 * max_iter)`` by default.

    Attributes
    ----------
    n_evaluations : int
        Loss evaluations of the last :meth:`solve`.
    """

    def __init__(self, memory=3, max_iter=100, tol=1e-5, max_linesearch=20, max_fun=None):
        self.memory = memory
        self.max_iter = max_iter
        self.tol = tol
        self.max_linesearch = max_linesearch
        self.max_fun = max(15000, 20 * max_iter) if max_fun is None else max_fun
        self.n_evaluations = 0

    @property
    def _out_of_budget(self):
        return self.n_evaluations >= self.max_fun

    @property
    def _budget_message(self):
        return f"stopped at max_fun={self.max_fun} loss evaluations"

    def _search(self, objective, theta, f, g, d):
        """``(x, f, g)`` at the step the line search along ``d`` accepts, or None."""
        line = _LineFunction(objective, theta, d,
                             min(self.max_linesearch, self.max_fun - self.n_evaluations))
        slope = float(g @ d)
        try:
            try:
                step = _step(line, f, slope)
            except _NotFinite as stop:      # too far: halve from there
                line.strict = False
                step = _backtracking(line, f, slope, 0.5 * stop.alpha)
            if step is not None:
                line._at(step)
        except _TooManyEvaluations:
            step = None
        self.n_evaluations += line.n_evaluations
        if step is None or not np.isfinite(line.f):
            return None
        return line.x, line.f, line.g

    def solve(self, objective, theta0, monitor):
        theta = np.array(theta0, dtype=np.float64)
        f, g = objective.loss_gradient(theta)
        f, g = float(f), np.asarray(g, dtype=np.float64)
        self.n_evaluations = 1
        if not np.isfinite(f):
            return SolverResult(theta, 0, False, "the loss is not finite at the start")
        s_list, y_list = [], []
        eps = np.finfo(np.float64).eps
        for it in range(1, self.max_iter + 1):
            if np.abs(g).max(initial=0.0) <= self.tol:
                return SolverResult(theta, it - 1, True, "the largest gradient component <= tol")
            found = None
            if s_list:
                d = -two_loop(g, s_list, y_list, (s_list[-1] @ y_list[-1])
                              / (y_list[-1] @ y_list[-1]))
                if g @ d < 0:
                    found = self._search(objective, theta, f, g, d)
                if found is None and self._out_of_budget:
                    return SolverResult(theta, it - 1, False, self._budget_message)
            if found is None:                   # first iteration, or restart along -g
                s_list, y_list = [], []
                found = self._search(objective, theta, f, g,
                                     -g / max(np.linalg.norm(g), 1e-300))
                if found is None:
                    return SolverResult(theta, it - 1, False, self._budget_message
                                        if self._out_of_budget else "the line search failed "
                                        "along the steepest descent")
            x, f_new, g_new = found
            s_vec, y_vec = x - theta, g_new - g
            if s_vec @ y_vec > eps * (y_vec @ y_vec):
                s_list.append(s_vec), y_list.append(y_vec)
                if len(s_list) > self.memory:
                    s_list.pop(0), y_list.pop(0)
            reduction = (f - f_new) / max(abs(f), abs(f_new), 1.0)
            theta, f, g = x, f_new, g_new
            if monitor.report(theta, f):
                return SolverResult(theta, it, False, "stopped by the callback")
            if reduction <= self.tol:
                return SolverResult(theta, it, True, "relative reduction of the loss <= tol")
            if self._out_of_budget:
                return SolverResult(theta, it, False, self._budget_message)
        if np.abs(g).max(initial=0.0) <= self.tol:
            return SolverResult(theta, self.max_iter, True, "the largest gradient component <= tol")
        return SolverResult(theta, self.max_iter, False,
                            f"stopped at max_iter={self.max_iter} iterations", at_max_iter=True)


def _step(line, f0, slope0):
    """The step of More and Thuente's search on ``line`` from ``1``, or None."""
    if _more_thuente is not None:
        return _more_thuente(line.value, line.slope, f0, None, slope0, **LINE_SEARCH)[0]
    return _backtracking(line, f0, slope0)


def _backtracking(line, f0, slope0, step=1.0):
    """The first of ``step, step/2, step/4, ...`` with sufficient decrease on ``line``
    (after a non-finite loss, or a scipy without More and Thuente's search); the
    line's evaluation budget ends it."""
    line.strict = False
    while True:
        if line.value(step) <= f0 + LINE_SEARCH["c1"] * step * slope0:
            return step
        step *= 0.5
