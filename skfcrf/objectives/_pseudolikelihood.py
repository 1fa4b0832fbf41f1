"""Factor-based pseudolikelihood (``objective="pseudolikelihood"``).
"""

from skfcrf.objectives._base import Objective

__all__ = ["PseudoLikelihood"]


class PseudoLikelihood(Objective):
    """Factor-based pseudolikelihood: every factor conditioned on its gold Markov blanket.

    Computed by the fused kernel of :mod:`skfcrf._kernels._pseudolikelihood`, one
    sequence at a time; bit-identical for every ``n_threads``.  Needs every
    label (``ValueError`` with missing ones).
    """

    supports_partial_labels = False

    def __init__(self, batch, **kwargs):
        super().__init__(batch, **kwargs)
        self._tables = self.layout.kernel_tables(self.forbidden)

    def _data_loss_gradient(self, theta):
        b = self.batch
        losses, grad = self.layout.pseudolikelihood(theta, b.obs, b.gold, self.n_threads,
                                                    tables=self._tables)
        return float(losses.sum()), grad
