"""Batch L-BFGS (scipy's L-BFGS-B) and the two-loop recursion.
"""

import numpy as np
from scipy.optimize import minimize

from skfcrf.solvers._monitor import SolverResult

__all__ = ["LBFGS", "two_loop"]


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


    def __init__(self, memory=3, max_iter=100, tol=1e-5):
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
