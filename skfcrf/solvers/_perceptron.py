"""The averaged structured perceptron (``solver="perceptron"``, CRFsuite's ``ap``).
"""
from skfcrf.solvers._margin import MarginTrainer

__all__ = ["AveragedPerceptron"]


class AveragedPerceptron(MarginTrainer):
    """Averaged structured perceptron (Collins, EMNLP 2002).

    For every sequence in a random order: decode it exactly with the current
    weights ``w``; if the decoding ``z`` differs from the gold labelling ``y``,

        ``w <- w + Phi(x, y) - Phi(x, z)``

    (``Phi``: the feature counts of a labelling).  The weights returned are the
    average of ``w`` over all the visits (:class:`MarginTrainer`).  An epoch's
    loss is the sum over sequences of the fraction of wrong labels, as CRFsuite
    reports it.  No regularisation.

    Parameters
    ----------
    max_iter : int, default=100
        Epochs.
    tol : float, default=0.0
        Stop when the mean per-sequence loss falls below it.
    random_state : numpy.random.RandomState, optional
    """

    def rule(self):
        return dict(rule="perceptron")

    def update(self, theta, diff):
        theta[diff.index] += diff.delta
        return diff.delta, diff.n_wrong / diff.n_tokens
