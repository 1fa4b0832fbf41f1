"""Loopy belief propagation with the tree-based reparameterisation schedule (``inference="trp"``).

Bethe ``log Z``, statuses ``"converged"`` / ``"approximate"``, chain-wise n-best
and max-marginals around its labelling
(:func:`~skfcrf._kernels.states.chainwise_nbest`,
:func:`~skfcrf._kernels.states.conditional_max_marginals`); log-probability
estimates are capped at 0.
"""
import numpy as np

from skfcrf._kernels.states import chainwise_nbest, conditional_max_marginals
from skfcrf.inference._batch import BatchKernelMethod

__all__ = ["TRPInference"]


class TRPInference(BatchKernelMethod):
    """Loopy belief propagation with the TRP schedule (``inference="trp"``)."""

    name = "trp"
    exact = False
    _kernel = "trp"

    def n_best(self, seq_ptr, unary, pair, labels, k):
        return chainwise_nbest(self.graph, seq_ptr, unary, pair, labels, k)

    def max_marginals(self, seq_ptr, unary, pair):
        labels, _, _ = self.map(seq_ptr, unary, pair)
        return conditional_max_marginals(self.graph, seq_ptr, unary, pair, labels)

    def bound(self, values):
        return np.minimum(values, 0.0)
