"""Online L-BFGS over mini-batches (``solver="olbfgs"``).
"""

import numpy as np

from skfcrf.solvers._lbfgs import two_loop
from skfcrf.solvers._monitor import SolverResult

__all__ = ["OnlineLBFGS"]


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

    Divergence is detected and reported, never taken for convergence: a
    non-finite batch loss or weight stops at once with the last weights whose
    loss was finite, and an epoch loss that exceeds the best so far by more
    than ``divergence`` times its magnitude, twice in a row, stops with the
    weights the best epoch started from (its loss was measured along the epoch
    from them); either returns ``converged=False, diverged=True``.  The best so
    far starts as the loss of the starting weights over all the sequences (one
    evaluation before the first epoch), so steps that blow the loss up in the
    first epoch are caught too, not taken as the reference the next epochs
    improve on.

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
    divergence : float
        Relative rise of the epoch loss over the best epoch's that counts as
        diverging (see above).
    random_state : numpy.random.RandomState
        Draws the batch order.
    """


    def __init__(self, memory=3, max_iter=100, tol=1e-5, batch_size=32, eta0=0.1, tau=1000.0,
                 c=1.0, lam=1.0, epsilon=1e-2, divergence=0.5, random_state=None):
        for name, value in (("c", c), ("epsilon", epsilon), ("divergence", divergence)):
            if not (np.isfinite(value) and value > 0):
                raise ValueError(f"OnlineLBFGS's {name} must be a positive number, got {value!r}")
        if not (np.isfinite(lam) and lam >= 0):
            raise ValueError(f"OnlineLBFGS's lam must be a number >= 0, got {lam!r}")
        self.memory = memory
        self.max_iter = max_iter
        self.tol = tol
        self.batch_size = batch_size
        self.eta0 = eta0
        self.tau = tau
        self.c = c
        self.lam = lam
        self.epsilon = epsilon
        self.divergence = divergence
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
        theta = last_finite = theta0
        best, best_theta = objective.loss_gradient(theta0)[0], theta0
        if not np.isfinite(best):      # the first batch with such a loss stops the run
            best = np.inf
        described = "the starting weights' loss"
        stalls = rises = 0
        for epoch in range(self.max_iter):
            order = rng.permutation(n_seq)
            epoch_loss, start = 0.0, theta
            for lo in range(0, n_seq, size):
                idx = order[lo:lo + size]
                new_theta, loss = self.step(theta, objective.subset(idx).loss_gradient)
                if not np.isfinite(loss):        # theta itself: back to the weights before it
                    return self._diverged(last_finite, epoch + 1, "the loss became non-finite")
                last_finite = theta
                if not np.all(np.isfinite(new_theta)):
                    return self._diverged(theta, epoch + 1, "the weights became non-finite")
                theta = new_theta
                epoch_loss += loss * len(idx) / n_seq
            if monitor.report(theta, epoch_loss):
                return SolverResult(theta, epoch + 1, False, "stopped by the callback")
            if epoch_loss > best + self.divergence * abs(best):
                rises += 1
                if rises >= 2:
                    return self._diverged(
                        best_theta, epoch + 1,
                        f"the epoch loss rose from {described} {best:.6g} to "
                        f"{epoch_loss:.6g}; the weights are those that loss was measured from")
            elif epoch_loss > best - self.tol * max(abs(best), 1.0):
                stalls += 1
                rises = 0
                if stalls >= 2:
                    return SolverResult(theta, epoch + 1, True,
                                        "epoch loss stalled twice in a row")
            else:
                stalls = rises = 0
            if epoch_loss < best:         # the epoch's loss was measured from its start
                best, best_theta = epoch_loss, start
                described = f"epoch {epoch + 1}'s"
        return SolverResult(theta, self.max_iter, False,
                            f"stopped at max_iter={self.max_iter} epochs", at_max_iter=True)

    def _diverged(self, theta, n_iter, what):
        return SolverResult(theta, n_iter, False,
                            f"in epoch {n_iter} {what} (lower eta0, raise tau, or use "
                            "solver='lbfgs')", diverged=True)
