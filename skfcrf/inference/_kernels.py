"""Exact inference on chains and product spaces, and TRP: methods over the batch kernels.

Both run the kernels of :mod:`skfcrf._bp.inference` on the non-empty
sequences of a batch (empty ones get ``log Z = 0``, status ``"exact"`` and no
iterations).  :class:`ExactInference` is forward-backward / Viterbi on one
chain, or over the product label space of several chains (at most
:data:`~skfcrf._bp.inference.MAX_PRODUCT_STATES` states); its n-best and
max-marginals run over the same states.  :class:`TRPInference` is loopy
belief propagation with the tree-based reparameterisation schedule: Bethe
``log Z``, statuses ``"converged"`` / ``"approximate"``, chain-wise n-best and
max-marginals around its labelling, estimates capped at 0.
"""
import numpy as np

from skfcrf._bp import inference as kernels
from skfcrf._bp.nbest import (
    chainwise_nbest,
    conditional_max_marginals,
    product_states,
    state_max_marginals,
    state_nbest,
)
from skfcrf.inference._method import InferenceMethod, nonempty

__all__ = ["ExactInference", "TRPInference"]


class _BatchKernels(InferenceMethod):
    """The methods of :mod:`skfcrf._bp.inference`, selected by ``_kernel``."""

    _kernel = None

    def _options(self, keep):
        return dict(method=self._kernel, max_iter=self.max_iter, tol=self.tol,
                    seeds=None if self.seeds is None else self.seeds[keep],
                    n_threads=self.n_threads)

    def _per_sequence(self, n_seq, keep, converged, n_it):
        """Status and iteration count of every sequence, empty ones included."""
        status = np.full(n_seq, "exact", dtype=object)
        n_iter = np.zeros(n_seq, dtype=np.int64)
        n_iter[keep] = n_it
        if not self.exact:
            status[keep] = np.where(converged, "converged", "approximate")
        return status, n_iter

    def map(self, seq_ptr, unary, pair):
        ptr, keep = nonempty(seq_ptr)
        labels, converged, n_it = kernels.map_assign(self.graph, ptr, unary, pair,
                                                     **self._options(keep))
        return (labels, *self._per_sequence(len(seq_ptr) - 1, keep, converged, n_it))

    def sum_product(self, seq_ptr, unary, pair):
        ptr, keep = nonempty(seq_ptr)
        node, _, lz, converged, n_it = kernels.marginals(self.graph, ptr, unary, pair,
                                                         **self._options(keep))
        status, n_iter = self._per_sequence(len(seq_ptr) - 1, keep, converged, n_it)
        log_z = np.zeros(len(seq_ptr) - 1)
        log_z[keep] = lz
        return node, log_z, status, n_iter

    def training_marginals(self, seq_ptr, unary, pair, lower=None):
        node, pmarg, log_z, converged, n_iter = kernels.marginals(
            self.graph, seq_ptr, unary, pair, method=self._kernel, max_iter=self.max_iter,
            tol=self.tol, seeds=self.seeds, n_threads=self.n_threads)
        return node, pmarg, log_z, None, converged, n_iter


class ExactInference(_BatchKernels):
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


class TRPInference(_BatchKernels):
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
