"""SGD on the L2-penalised likelihood with a calibrated step size (``solver="sgd"``,
CRFsuite's ``l2sgd``).
"""
import numpy as np

from skfcrf.solvers._monitor import SolverResult

__all__ = ["SGD"]


class SGD:
    """Per-sequence SGD on the L2-penalised negative log-likelihood (CRFsuite's ``l2sgd``).

    The loss is ``sum_i l_i(w) + l2 / 2 * ||w||^2``, one term per sequence; with
    ``lambda = l2 / N`` (``N`` sequences) a step on sequence ``i`` at step
    ``t`` (counted over all epochs) is

        ``w <- (1 - eta_t * lambda) * w - eta_t * grad l_i(w)``,
        ``eta_t = 1 / (lambda * (t0 + t))``,

    the shrinkage applied lazily through a common scale factor so that a step
    costs only the sequence's own weights (Bottou's SGD; Shalev-Shwartz et al.
    2007 for the step-size schedule).  ``t0 = 1 / (lambda * eta)`` comes from
    the calibration (CRFsuite's): from zero weights, one epoch over
    ``calibration_samples`` sequences for each candidate ``eta``, starting at
    ``eta0`` and multiplied by ``calibration_rate`` while it lowers the
    sample's loss below its starting value (at most ``calibration_candidates``
    that do), then divided by it from ``eta0 / calibration_rate`` down (again
    at most ``calibration_candidates``), ``calibration_max_trials`` epochs in
    all; the ``eta`` of the lowest loss is kept (``calibrated_eta_``).

    Training visits the sequences in a new random order every epoch and stops
    when the epoch loss improved by less than ``delta`` (relative) over the
    last ``period`` epochs (converged) or after ``max_iter`` epochs; the
    weights of the epoch with the lowest loss are returned.

    Parameters
    ----------
    l2 : float
        Coefficient of the L2 penalty (``1 / sigma**2``), > 0.
    max_iter : int, default=1000
    period : int, default=10
    delta : float, default=1e-6
    eta0 : float, default=0.1
        The first candidate step size of the calibration.
    calibration_rate : float, default=2.0
    calibration_samples : int, default=1000
    calibration_candidates : int, default=10
    calibration_max_trials : int, default=20
    random_state : numpy.random.RandomState, optional

    The sequence oracle ``terms`` of :meth:`solve` has ``n_sequences`` and
    ``loss_gradient(s, theta) -> (index, loss, grad)`` on the sequence's
    parameters (:class:`skfcrf.objectives.SequenceTerms`); one whose ``compiled``
    is true runs the epochs itself (``sgd_epoch``, ``sequence_losses``: the same
    steps in a compiled loop).
    """

    def __init__(self, l2, max_iter=1000, period=10, delta=1e-6, eta0=0.1,
                 calibration_rate=2.0, calibration_samples=1000, calibration_candidates=10,
                 calibration_max_trials=20, random_state=None):
        if not (l2 > 0 and np.isfinite(l2)):
            raise ValueError(f"SGD needs an L2 penalty: its step size 1 / (lambda * (t0 + t)) "
                             f"divides by it (got l2={l2!r}; a finite sigma, or c2 > 0)")
        for name, value in (("eta0", eta0), ("delta", delta)):
            if not value > 0:
                raise ValueError(f"{name} must be > 0, got {value!r}")
        if not calibration_rate > 1:
            raise ValueError(f"calibration_rate must be > 1, got {calibration_rate!r}")
        for name, value in (("calibration_samples", calibration_samples),
                            ("calibration_candidates", calibration_candidates),
                            ("calibration_max_trials", calibration_max_trials),
                            ("period", period)):
            if not (isinstance(value, (int, np.integer)) and value >= 1):
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
        self.l2 = float(l2)
        self.max_iter = max_iter
        self.period = period
        self.delta = delta
        self.eta0 = eta0
        self.calibration_rate = calibration_rate
        self.calibration_samples = calibration_samples
        self.calibration_candidates = calibration_candidates
        self.calibration_max_trials = calibration_max_trials
        self.random_state = random_state

    def _epoch(self, terms, w, order, lam, t0, t, n):
        """One epoch over the sequences ``order`` from the weights ``w`` (changed in
        place), the step count at ``t``; returns the epoch loss (the penalty
        ``lam / 2 * ||w||^2 * n`` included) and the new step count."""
        if getattr(terms, "compiled", False):     # the same loop, compiled (one chain)
            loss, t, scale = terms.sgd_epoch(order, w, lam, t0, t)
        else:
            scale, loss = 1.0, 0.0
            for s in order:
                eta = 1.0 / (lam * (t0 + t))
                scale *= 1.0 - eta * lam
                index, seq_loss, grad = terms.loss_gradient(s, w, scale)
                w[index] -= (eta / scale) * grad
                loss += seq_loss
                t += 1
        w *= scale
        return loss + 0.5 * lam * float(w @ w) * n, t

    def calibrate(self, terms, lam, rng):
        """The calibrated ``eta`` (class docstring); sets ``calibrated_eta_`` and
        ``calibration_`` (the ``(eta, loss)`` of every trial)."""
        sample = rng.permutation(terms.n_sequences)[:self.calibration_samples]
        zero = np.zeros(terms.n_params)
        if getattr(terms, "compiled", False):
            start_loss = terms.sequence_losses(sample, zero)
        else:
            start_loss = sum(terms.loss_gradient(s, zero)[1] for s in sample)
        rate, eta = self.calibration_rate, self.eta0
        best_loss, best_eta = np.inf, self.eta0
        left, down = self.calibration_candidates, False
        self.calibration_ = []
        for _ in range(self.calibration_max_trials - 1):
            loss, _ = self._epoch(terms, np.zeros(terms.n_params), sample, lam,
                                  1.0 / (lam * eta), 0, len(sample))
            self.calibration_.append((eta, loss))
            ok = np.isfinite(loss) and loss < start_loss
            if ok:
                left -= 1
            if np.isfinite(loss) and loss < best_loss:
                best_loss, best_eta = loss, eta
            if not down:
                if ok and left > 0:
                    eta *= rate
                else:
                    down, left, eta = True, self.calibration_candidates, self.eta0 / rate
            else:
                eta /= rate
            if down and left <= 0:
                break
        self.calibrated_eta_ = best_eta
        return best_eta

    def solve(self, terms, theta0, monitor):
        rng = self.random_state if self.random_state is not None else np.random.RandomState()
        n = terms.n_sequences
        lam = self.l2 / n
        t0 = 1.0 / (lam * self.calibrate(terms, lam, rng))
        w = np.array(theta0, dtype=np.float64)
        best_loss, best_w = np.inf, w.copy()
        past = []
        t = 0
        for epoch in range(1, self.max_iter + 1):
            loss, t = self._epoch(terms, w, rng.permutation(n), lam, t0, t, n)
            if not np.isfinite(loss):
                return SolverResult(best_w, epoch, False,
                                    f"in epoch {epoch} the loss became non-finite (the "
                                    "weights are the best epoch's)", diverged=True)
            if loss < best_loss:
                best_loss, best_w = loss, w.copy()
            if monitor.report(w, loss):
                return SolverResult(best_w, epoch, False, "stopped by the callback")
            past.append(loss)
            if epoch > self.period:
                earlier = past[-self.period - 1]
                if (earlier - loss) / loss < self.delta:
                    return SolverResult(best_w, epoch, True,
                                        f"relative improvement over {self.period} epochs "
                                        f"< delta={self.delta:g}")
        return SolverResult(best_w, self.max_iter, False,
                            f"stopped at max_iter={self.max_iter} epochs", at_max_iter=True)
