"""The epoch loop the online margin trainers share (perceptron, passive-aggressive, AROW).

They do not minimise an objective of :mod:`skfcrf.objectives`: they visit the
sequences one at a time in a random order and, when the model's exact decoding
of a sequence is wrong, move the weights along the difference of the gold and
the decoded labelling's feature counts.  What they read of the model is a
*sequence oracle* (:class:`skfcrf.objectives.SequenceTerms`):
``n_sequences``, ``n_params`` and ``difference(s, theta)`` -> ``(index, delta,
n_wrong, margin, n_tokens)`` on the sequence's parameters ``index``.  An oracle
whose ``compiled`` is true runs a whole epoch itself (``margin_epoch``, the same
updates in a compiled loop) for a trainer whose :meth:`MarginTrainer.rule` names one.
"""
import numpy as np

from skfcrf.solvers._monitor import SolverResult

__all__ = ["MarginTrainer"]


class MarginTrainer:
    """Base class: epochs over the sequences, a subclass's update on every wrong decoding.

    An epoch visits the sequences in a new random order; its loss is the sum of
    the subclass's per-sequence losses.  Training stops when the mean loss per
    sequence falls below ``tol`` (converged; CRFsuite's ``epsilon`` test) or after
    ``max_iter`` epochs.  With ``averaging`` the weights returned (and reported
    after every epoch) are the average of the weights after every sequence
    visited, kept in O(changed weights) per update by the usual trick: with
    ``u`` the number of the visit, an update ``w[k] += x`` also adds ``u * x`` to
    ``ws[k]`` and the average is ``w - ws / u`` (Daume 2006; CRFsuite's way): the
    average of the starting weights and the weights after every visit.  When
    training stops after an epoch without any update (every sequence decoded
    right), ``w`` itself is returned: further epochs would leave ``w`` as it is
    and move the average towards it.

    Parameters
    ----------
    max_iter : int
        Maximum number of epochs.
    tol : float
        Mean per-sequence loss below which training stops.
    averaging : bool
        Return the averaged weights.
    random_state : numpy.random.RandomState, optional
        Draws the visiting order.
    """

    averaging = True

    def __init__(self, max_iter=100, tol=0.0, random_state=None):
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state

    def start(self, theta0):
        """Set up the trainer's state before the first epoch."""

    def update(self, theta, diff):
        """Move ``theta`` (in place) for one wrongly decoded sequence; return the
        step ``x`` added at ``diff.index`` (for the average) and the sequence's loss."""
        raise NotImplementedError

    def rule(self):
        """The update as the oracle's compiled epoch names it, ``dict(rule=name,
        **options)`` (:meth:`skfcrf.objectives.SequenceTerms.margin_epoch`); None:
        :meth:`update` in Python only."""
        return None

    def solve(self, terms, theta0, monitor):
        """Train from ``theta0``; ``terms`` is the sequence oracle (module docstring)."""
        rng = self.random_state if self.random_state is not None else np.random.RandomState()
        n_seq = terms.n_sequences
        theta = np.array(theta0, dtype=np.float64)
        total = np.zeros_like(theta)          # ws: sum of u * step
        u = 1
        self.start(theta)
        # the same epoch as the loop below, compiled (one chain; SequenceTerms.compiled)
        compiled = getattr(terms, "compiled", False) and self.rule() is not None
        for epoch in range(self.max_iter):
            order = rng.permutation(n_seq)
            if compiled:
                loss, u = terms.margin_epoch(order, theta, total, u, **self.rule())
            else:
                loss = 0.0
                for s in order:
                    diff = terms.difference(s, theta)
                    if diff.n_wrong:
                        step, seq_loss = self.update(theta, diff)
                        total[diff.index] += u * step
                        loss += seq_loss
                    u += 1
            if not np.all(np.isfinite(theta)):
                return SolverResult(theta, epoch + 1, False,
                                    f"in epoch {epoch + 1} the weights became non-finite",
                                    diverged=True)
            converged = loss / max(n_seq, 1) < self.tol
            if self.averaging and not (converged and loss == 0.0):
                current = theta - total / u
            else:       # an epoch without an update: more epochs take the average to w
                current = theta.copy()
            if monitor.report(current, loss):
                return SolverResult(current, epoch + 1, False, "stopped by the callback")
            if converged:
                return SolverResult(current, epoch + 1, True,
                                    f"mean loss per sequence {loss / max(n_seq, 1):.3g} < "
                                    f"tol={self.tol:g}")
        return SolverResult(current, self.max_iter, False,
                            f"stopped at max_iter={self.max_iter} epochs", at_max_iter=True)
