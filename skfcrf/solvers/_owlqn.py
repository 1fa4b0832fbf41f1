"""OWL-QN (Andrew & Gao 2007): L-BFGS for an L1-penalised objective.
"""

import numpy as np

from skfcrf.solvers._lbfgs import CurvaturePairs
from skfcrf.solvers._monitor import SolverResult

__all__ = ["OWLQN", "pseudo_gradient"]


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
    converged).  ``l1=0`` is L-BFGS with this backtracking line search, no
    orthant and no component set to 0 (the estimator uses :class:`LBFGS` then).  The monitor receives ``F``.

    Parameters
    ----------
    l1 : float
        L1 weight per unit of ``|theta_j|``.
    memory, max_iter, tol : as :class:`LBFGS`.
    max_backtracks : int, default=20
        Loss evaluations per line search beyond the first trial.
    offset : float, default=0.0
        Constant added to the reported loss (the L1 penalty of weights a
        :class:`~skfcrf.objectives.Restricted` objective holds).

    Attributes
    ----------
    last_pg_norm : float
        ``||v||`` at the last accepted point (CRFsuite's stopping test uses it).
    n_evaluations : int
        Loss evaluations made.
    """


    def __init__(self, l1, memory=3, max_iter=100, tol=1e-5, max_backtracks=20, offset=0.0):
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
        pairs = CurvaturePairs(self.memory)
        if np.abs(pg).max(initial=0.0) <= self.tol:
            return SolverResult(theta, 0, True, "the pseudo-gradient is zero at the start")
        for it in range(1, self.max_iter + 1):
            d = None
            if pairs:
                d = pairs.direction(pg)
                if l1 > 0:
                    d[d * pg >= 0] = 0.0              # keep the descending components only
                step = 1.0
                if not pg @ d < 0:
                    d = None
            if d is None:                             # first iteration, or restart
                pairs.clear()
                d = -pg
                step = 1.0 / max(np.linalg.norm(pg), 1e-300)
            orthant = np.where(theta != 0, np.sign(theta), -np.sign(pg))
            for _ in range(self.max_backtracks + 1):
                trial = theta + step * d
                if l1 > 0:
                    trial[np.sign(trial) != orthant] = 0.0
                F_new, g_new = self._evaluate(objective, trial)
                if np.isfinite(F_new) and F_new <= F + 1e-4 * (pg @ (trial - theta)):
                    break
                step *= 0.5
            else:
                return SolverResult(theta, it - 1, False,
                                    "the line search found no lower loss")
            s_vec, y_vec = trial - theta, g_new - g
            sy = float(s_vec @ y_vec)
            if sy > 1e-10 * (s_vec @ s_vec):
                pairs.add(s_vec, y_vec, sy)
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
