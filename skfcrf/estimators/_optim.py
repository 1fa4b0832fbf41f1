"""Optimisers: batch L-BFGS (scipy) and online L-BFGS (Schraudolph et al. 2007)."""
import numpy as np
from scipy.optimize import minimize


def lbfgs(fun, theta0, memory, max_iter, tol, callback=None):
    """Minimise ``fun(theta) -> (loss, grad)`` with scipy's L-BFGS-B.

    Returns the scipy ``OptimizeResult``; ``callback(theta, loss)`` is called
    after every accepted step.
    """
    def _cb(intermediate_result):
        if callback is not None:
            callback(intermediate_result.x, float(intermediate_result.fun))

    return minimize(
        fun, theta0, jac=True, method="L-BFGS-B", callback=_cb,
        options={"maxcor": memory, "maxiter": max_iter, "ftol": tol, "gtol": tol,
                 "maxfun": max(15000, 20 * max_iter)},
    )


class OnlineLBFGS:
    """Online L-BFGS (oLBFGS) of Schraudolph, Yu and Guenter (AISTATS 2007).

    Each step draws a mini-batch, takes the direction ``p = -H g`` from the
    two-loop recursion over the last ``memory`` pairs (initial scaling: the
    average of ``s.y / y.y`` over the stored pairs), moves by
    ``s = (eta_t / c) p`` with ``eta_t = tau / (tau + t) * eta0``, and stores
    ``y = g(theta + s) - g(theta) + lambda * s`` with both gradients taken on
    the *same* batch.

    Parameters
    ----------
    memory : int
        Number of (s, y) pairs kept.
    eta0, tau, c, lam : float
        Step size, its decay constant, the step scaling ``c`` and the
        model-trust-region term ``lambda``.
    epsilon : float
        Plain gradient step scale used before any (s, y) pair is stored.
    """

    def __init__(self, memory=3, eta0=0.1, tau=100.0, c=1.0, lam=1.0, epsilon=1e-2):
        self.memory = memory
        self.eta0 = eta0
        self.tau = tau
        self.c = c
        self.lam = lam
        self.epsilon = epsilon
        self.s_list = []
        self.y_list = []
        self.t = 0

    def direction(self, g):
        """``-H g`` by the two-loop recursion with oLBFGS's initial scaling."""
        if not self.s_list:
            return -self.epsilon * g
        q = g.copy()
        alphas = []
        for s, y in zip(reversed(self.s_list), reversed(self.y_list)):
            rho = 1.0 / (y @ s)
            a = rho * (s @ q)
            alphas.append((a, rho))
            q -= a * y
        scale = np.mean([(s @ y) / (y @ y) for s, y in zip(self.s_list, self.y_list)])
        r = scale * q
        for (s, y), (a, rho) in zip(zip(self.s_list, self.y_list), reversed(alphas)):
            b = rho * (y @ r)
            r += (a - b) * s
        return -r

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
