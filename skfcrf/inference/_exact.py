"""Exact inference on one chain or over the product label space (``inference="exact"``).

Forward-backward / Viterbi on one chain, or over the product label space of
several chains (at most :data:`~skfcrf._kernels.batch.MAX_PRODUCT_STATES`
states), each connected component of the coupled chains apart
(:func:`~skfcrf._kernels.batch.coupled_components`); its n-best and
max-marginals run over the whole product's states.
"""
import numpy as np

from skfcrf._kernels import batch as kernels
from skfcrf._kernels.states import product_states, state_max_marginals, state_nbest
from skfcrf.inference._batch import BatchKernelMethod

__all__ = ["ExactInference"]


class ExactInference(BatchKernelMethod):
    """Exact inference on one chain or over the product label space (``inference="exact"``)."""

    name = "exact"
    _kernel = "exact"

    def states(self):
        """The states exact n-best runs over: one chain's labels or the product space."""
        graph = self.graph
        if graph.n_chains == 1:
            return np.arange(int(graph.n_labels[0]), dtype=np.int32)[:, None]
        kernels._check_product_size(graph)
        return product_states(graph)

    def n_best(self, seq_ptr, unary, pair, labels, k):
        return state_nbest(self.graph, self.states(), seq_ptr, unary, pair, k)

    def max_marginals(self, seq_ptr, unary, pair):
        return state_max_marginals(self.graph, self.states(), seq_ptr, unary, pair)
