"""Convergence monitoring: the loss curve, progress, the user's callback, and the
convergence warning.
"""
import time
import warnings
from dataclasses import dataclass

import numpy as np
from sklearn.exceptions import ConvergenceWarning

__all__ = ["ConvergenceMonitor", "SolverResult", "warn_if_not_converged"]


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
    diverged : bool
        It stopped because the loss rose or became non-finite; ``coef`` are then
        the last finite weights (the online solver's best epoch's).
    """

    coef: np.ndarray
    n_iter: int
    converged: bool
    message: str
    at_max_iter: bool = False
    diverged: bool = False


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
    if result.diverged:
        message = f"training diverged: {result.message}"
    elif result.at_max_iter:
        if designed_budget:
            return
        message = (f"stopped after {result.n_iter} {unit} before converging; raise max_iter "
                   f"(now {max_iter}) or tol (now {tol:g})")
    else:
        message = (f"stopped after {result.n_iter} {unit} before converging: no step lowered "
                   "the loss any further (the weights are the last that did); a larger tol "
                   f"(now {tol:g}) accepts them as converged")
    warnings.warn(message, ConvergenceWarning, stacklevel=5)   # the caller of fit
