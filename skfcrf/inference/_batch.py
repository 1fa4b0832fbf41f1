"""The base of the methods that run the batch kernels of :mod:`skfcrf._kernels.batch`.

Those kernels run on the non-empty sequences of a batch; empty ones get
``log Z = 0``, status ``"exact"`` and no iterations.  Subclasses name their
kernel (``_kernel``: ``"exact"`` or ``"trp"``).
"""
import numpy as np

from skfcrf._kernels import batch as kernels
from skfcrf.inference._method import InferenceMethod, nonempty

__all__ = ["BatchKernelMethod"]


class BatchKernelMethod(InferenceMethod):
    """The methods of :mod:`skfcrf._kernels.batch`, selected by ``_kernel``."""

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

    def training_marginals(self, seq_ptr, unary, pair, lower=None, out=None):
        node, pmarg, log_z, converged, n_iter = kernels.marginals(
            self.graph, seq_ptr, unary, pair, method=self._kernel, max_iter=self.max_iter,
            tol=self.tol, seeds=self.seeds, n_threads=self.n_threads)
        return node, pmarg, log_z, None, converged, n_iter
