"""Structured passive-aggressive learning (``solver="passive_aggressive"``, CRFsuite's ``pa``).
"""
import math

from skfcrf.solvers._margin import MarginTrainer

__all__ = ["PassiveAggressive"]


class PassiveAggressive(MarginTrainer):
    """Structured passive-aggressive learning (Crammer et al., JMLR 2006), PA, PA-I, PA-II.

    For every sequence in a random order, decoded exactly as ``z``; if ``z`` is
    not the gold labelling ``y``, with ``delta = Phi(x, y) - Phi(x, z)`` and the
    cost

        ``l = score(z) - score(y) + rho(y, z)``,

    ``rho`` = the square root of the number of wrong labels with
    ``error_sensitive`` (CRFsuite's cost-sensitive variant), else 1, the
    weights move by ``w <- w + tau * delta`` with

    * PA (``pa_type=0``): ``tau = l / ||delta||^2``;
    * PA-I (``pa_type=1``): ``tau = min(c, l / ||delta||^2)``;
    * PA-II (``pa_type=2``): ``tau = l / (||delta||^2 + 1 / (2 c))``.

    With ``averaging`` the averaged weights are returned (:class:`MarginTrainer`).
    An epoch's loss is the sum of the costs ``l``.  A wrong decoding with the
    same features as the gold labelling (``delta = 0``) cannot be corrected and
    is skipped.

    Parameters
    ----------
    pa_type : {0, 1, 2}, default=1
    c : float, default=1.0
        Aggressiveness (PA-I, PA-II), > 0.
    error_sensitive : bool, default=True
    averaging : bool, default=True
    max_iter : int, default=100
    tol : float, default=0.0
    random_state : numpy.random.RandomState, optional
    """

    def __init__(self, pa_type=1, c=1.0, error_sensitive=True, averaging=True, max_iter=100,
                 tol=0.0, random_state=None):
        super().__init__(max_iter=max_iter, tol=tol, random_state=random_state)
        if pa_type not in (0, 1, 2) or isinstance(pa_type, bool):
            raise ValueError(f"pa_type must be 0 (PA), 1 (PA-I) or 2 (PA-II), got {pa_type!r}")
        if not c > 0:
            raise ValueError(f"c (the aggressiveness) must be > 0, got {c!r}")
        self.pa_type = pa_type
        self.c = float(c)
        self.error_sensitive = bool(error_sensitive)
        self.averaging = bool(averaging)

    def step_size(self, cost, norm2):
        """``tau`` of the PA variant for the cost ``l`` and ``||delta||^2``."""
        if self.pa_type == 0:
            return cost / norm2
        if self.pa_type == 1:
            return min(self.c, cost / norm2)
        return cost / (norm2 + 0.5 / self.c)

    def rule(self):
        return dict(rule="passive_aggressive", pa_type=self.pa_type, c=self.c,
                    error_sensitive=self.error_sensitive)

    def update(self, theta, diff):
        cost = diff.margin + (math.sqrt(diff.n_wrong) if self.error_sensitive else 1.0)
        norm2 = float(diff.delta @ diff.delta)
        if norm2 == 0.0:
            return 0.0 * diff.delta, cost
        step = self.step_size(cost, norm2) * diff.delta
        theta[diff.index] += step
        return step, cost
