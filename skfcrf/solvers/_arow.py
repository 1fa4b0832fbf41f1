"""Adaptive regularization of weights (``solver="arow"``, CRFsuite's ``arow``).
"""
import numpy as np

from skfcrf.solvers._margin import MarginTrainer

__all__ = ["AROW"]


class AROW(MarginTrainer):
    """AROW with a diagonal covariance (Crammer, Kulesza and Dredze, NIPS 2009).

    Every weight has a mean ``mu`` (the weights; starting at ``theta0``) and a
    variance ``Sigma`` (starting at ``variance``).  For every sequence in a
    random order, decoded exactly as ``z``; if ``z`` is not the gold labelling
    ``y``, with ``delta = Phi(x, y) - Phi(x, z)`` and the cost
    ``l = score(z) - score(y) + (number of wrong labels)``:

        ``alpha = l / (gamma + sum(Sigma * delta**2))``,
        ``mu <- mu + alpha * Sigma * delta``,
        ``Sigma <- 1 / (1 / Sigma + delta**2 / gamma)``

    (as CRFsuite's ``train_arow.c``).  The means are returned, not averaged.
    An epoch's loss is the sum of the costs.

    Parameters
    ----------
    variance : float, default=1.0
        Initial variance of every weight, > 0.
    gamma : float, default=1.0
        Trade-off ``r`` between the update and the confidence, > 0.
    max_iter : int, default=100
    tol : float, default=0.0
    random_state : numpy.random.RandomState, optional
    """

    averaging = False

    def __init__(self, variance=1.0, gamma=1.0, max_iter=100, tol=0.0, random_state=None):
        super().__init__(max_iter=max_iter, tol=tol, random_state=random_state)
        if not variance > 0:
            raise ValueError(f"variance must be > 0, got {variance!r}")
        if not gamma > 0:
            raise ValueError(f"gamma must be > 0, got {gamma!r}")
        self.variance = float(variance)
        self.gamma = float(gamma)

    def start(self, theta0):
        self.covariance = np.full(theta0.shape, self.variance)

    def rule(self):
        return dict(rule="arow", gamma=self.gamma, covariance=self.covariance)

    def update(self, theta, diff):
        cost = diff.margin + diff.n_wrong
        sq = diff.delta * diff.delta
        cov = self.covariance[diff.index]
        alpha = cost / (self.gamma + float(sq @ cov))
        step = alpha * cov * diff.delta
        theta[diff.index] += step
        self.covariance[diff.index] = 1.0 / (1.0 / cov + sq / self.gamma)
        return step, cost
