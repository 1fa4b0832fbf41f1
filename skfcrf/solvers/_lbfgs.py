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

from skfcrf._blas import axpy
from skfcrf.solvers._monitor import SolverResult

try:    # More and Thuente's search, as L-BFGS-B runs it (not public in scipy)
    from scipy.optimize._linesearch import scalar_search_wolfe1 as _more_thuente
except ImportError:                     # pragma: no cover - a scipy without it
    _more_thuente = None                # backtracking then (_backtracking)

__all__ = ["CurvaturePairs", "LBFGS", "two_loop"]

#: L-BFGS-B's line search constants: sufficient decrease, curvature, interval tolerance,
#: largest step.
LINE_SEARCH = dict(c1=1e-3, c2=0.9, xtol=0.1, amin=0.0, amax=1e10)


def two_loop(g, s_list, y_list, scale, rhos=None):
    """``H g`` for the L-BFGS inverse-Hessian estimate ``H`` of the pairs ``(s, y)``
    (oldest first) with initial matrix ``scale * I`` (Nocedal & Wright, Alg. 7.4).

    ``rhos`` (optional): each pair's ``1 / (y . s)``, computed here when not given.
    The updates run in place (BLAS ``axpy``): one pass over a pair's vector each,
    without temporaries, which matters at a million weights."""
    if rhos is None:
        rhos = [1.0 / (y @ s) for s, y in zip(s_list, y_list)]
    q = np.array(g, dtype=np.float64)
    alphas = []
    for s, y, rho in zip(reversed(s_list), reversed(y_list), reversed(rhos)):
        a = rho * (s @ q)
        alphas.append(a)
        axpy(y, q, -a)
    q *= scale
    for s, y, rho, a in zip(s_list, y_list, rhos, reversed(alphas)):
        axpy(s, q, a - rho * (y @ q))
    return q


class CurvaturePairs:
    """The last ``memory`` L-BFGS pairs ``(s, y)`` and the direction they give.

    Keeps each pair's ``1 / (s . y)`` and the newest pair's initial scaling
    ``s . y / y . y``, so that :meth:`direction` computes no dot product twice.
    The solvers decide which pairs to keep (:meth:`add`); all of them share
    this one recursion.
    """

    def __init__(self, memory):
        self.memory = int(memory)
        self.s, self.y, self.rho = [], [], []
        self.scale = 1.0

    def __len__(self):
        return len(self.s)

    def clear(self):
        self.s, self.y, self.rho = [], [], []

    def add(self, s, y, sy=None, yy=None):
        """Keep the pair (forgetting the oldest beyond ``memory``); ``sy = s . y`` and
        ``yy = y . y`` when the caller has them."""
        sy = float(s @ y) if sy is None else sy
        yy = float(y @ y) if yy is None else yy
        self.s.append(s), self.y.append(y), self.rho.append(1.0 / sy)
        if len(self.s) > self.memory:
            del self.s[0], self.y[0], self.rho[0]
        self.scale = sy / yy

    def direction(self, g):
        """``-H g`` (the two-loop recursion over the kept pairs); needs at least one."""
        d = two_loop(g, self.s, self.y, self.scale, self.rho)
        d *= -1.0
        return d


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
            x = self.d * alpha
            x += self.theta
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
        pairs = CurvaturePairs(self.memory)
        eps = np.finfo(np.float64).eps
        for it in range(1, self.max_iter + 1):
            if _largest_magnitude(g) <= self.tol:
                return SolverResult(theta, it - 1, True, "the largest gradient component <= tol")
            found = None
            if pairs:
                d = pairs.direction(g)
                if g @ d < 0:
                    found = self._search(objective, theta, f, g, d)
                if found is None and self._out_of_budget:
                    return SolverResult(theta, it - 1, False, self._budget_message)
            if found is None:                   # first iteration, or restart along -g
                pairs.clear()
                found = self._search(objective, theta, f, g,
                                     -g / max(np.linalg.norm(g), 1e-300))
                if found is None:
                    return SolverResult(theta, it - 1, False, self._budget_message
                                        if self._out_of_budget else "the line search failed "
                                        "along the steepest descent")
            x, f_new, g_new = found
            s_vec, y_vec = x - theta, g_new - g
            sy, yy = float(s_vec @ y_vec), float(y_vec @ y_vec)
            if sy > eps * yy:
                pairs.add(s_vec, y_vec, sy, yy)
            reduction = (f - f_new) / max(abs(f), abs(f_new), 1.0)
            theta, f, g = x, f_new, g_new
            if monitor.report(theta, f):
                return SolverResult(theta, it, False, "stopped by the callback")
            if reduction <= self.tol:
                return SolverResult(theta, it, True, "relative reduction of the loss <= tol")
            if self._out_of_budget:
                return SolverResult(theta, it, False, self._budget_message)
        if _largest_magnitude(g) <= self.tol:
            return SolverResult(theta, self.max_iter, True, "the largest gradient component <= tol")
        return SolverResult(theta, self.max_iter, False,
                            f"stopped at max_iter={self.max_iter} iterations", at_max_iter=True)


def _largest_magnitude(v):
    """``max |v_i|`` (0 for an empty vector) without an ``|v|`` temporary."""
    return max(float(v.max(initial=0.0)), -float(v.min(initial=0.0)))


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
