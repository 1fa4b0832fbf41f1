"""Exact inference on one chain or over the product label space (``inference="exact"``).

Forward-backward / Viterbi on one chain, or over the product label space of
several chains (at most :data:`~skfcrf._kernels.batch.MAX_PRODUCT_STATES`
states), each connected component of the coupled chains apart
(:func:`~skfcrf._kernels.batch.coupled_components`).  Its n-best and max-marginals
run over the same states, per component: chains no coupling joins are independent
given the observations, so a labelling's score is the sum of its components'
scores -- the ``k`` best labellings are the ``k`` best sums of the components' ``k``
best (:func:`best_sums`), and a label's max-marginal is its component's plus the
other components' best scores.
"""
import heapq

import numpy as np

from skfcrf._kernels import batch as kernels
from skfcrf._kernels.graph import pair_layout
from skfcrf._kernels.states import product_states, state_max_marginals, state_nbest
from skfcrf.inference._batch import BatchKernelMethod

__all__ = ["ExactInference", "best_sums"]


def best_sums(lists, k):
    """The ``k`` largest sums of one item from each list, best first.

    Parameters
    ----------
    lists : list of list of float
        Each list in descending order.
    k : int

    Returns
    -------
    list of (float, tuple of int)
        The sums and the index of the item taken from each list; fewer than ``k``
        when the lists have fewer combinations, none when a list is empty.

    Examples
    --------
    >>> best_sums([[5.0, 1.0], [3.0, 2.0]], 3)
    [(8.0, (0, 0)), (7.0, (0, 1)), (4.0, (1, 0))]
    """
    if any(not scores for scores in lists):
        return []
    start = (0,) * len(lists)
    heap = [(-sum(scores[0] for scores in lists), start)]
    seen = {start}
    out = []
    while heap and len(out) < k:
        neg, index = heapq.heappop(heap)
        out.append((-neg, index))
        for i, scores in enumerate(lists):
            if index[i] + 1 < len(scores):
                nxt = index[:i] + (index[i] + 1,) + index[i + 1:]
                if nxt not in seen:
                    seen.add(nxt)
                    heapq.heappush(heap, (neg + scores[index[i]] - scores[index[i] + 1], nxt))
    return out


class ExactInference(BatchKernelMethod):
    """Exact inference on one chain or over the product label space (``inference="exact"``)."""

    name = "exact"
    _kernel = "exact"

    def states(self, graph=None):
        """The states exact n-best runs over: one chain's labels or the product space
        (of ``graph``, default this method's)."""
        graph = self.graph if graph is None else graph
        if graph.n_chains == 1:
            return np.arange(int(graph.n_labels[0]), dtype=np.int32)[:, None]
        kernels._check_product_size(graph)
        return product_states(graph)

    def _components(self, unary):
        return kernels.split_components(self.graph, pair_layout(self.graph, unary.shape[0]))

    def n_best(self, seq_ptr, unary, pair, labels, k):
        parts = self._components(unary)
        if parts is None:
            return state_nbest(self.graph, self.states(), seq_ptr, unary, pair, k)
        per_part = [state_nbest(part.graph, self.states(part.graph), seq_ptr, part.unary(unary),
                                part.pair(pair), k) for part in parts]
        out = []
        for s in range(len(seq_ptr) - 1):
            lists = [found[s] for found in per_part]
            T = int(seq_ptr[s + 1] - seq_ptr[s])
            best = []
            for score, index in best_sums([[v for _, v in found] for found in lists], k):
                y = np.empty((T, self.graph.n_chains), dtype=np.int32)
                for part, found, i in zip(parts, lists, index):
                    y[:, part.chains] = found[i][0]
                best.append((y, score))
            out.append(best)
        return out

    def max_marginals(self, seq_ptr, unary, pair):
        parts = self._components(unary)
        if parts is None:
            return state_max_marginals(self.graph, self.states(), seq_ptr, unary, pair)
        out = np.empty((unary.shape[0], self.graph.total_labels))
        per_part, best = [], []
        for part in parts:
            mm = state_max_marginals(part.graph, self.states(part.graph), seq_ptr,
                                     part.unary(unary), part.pair(pair))
            per_part.append(mm)
            # the component's Viterbi score, at every token of its sequence
            width = int(part.graph.n_labels[0])
            best.append(mm[:, :width].max(axis=1))
        total = np.sum(best, axis=0)
        for part, mm, own in zip(parts, per_part, best):
            with np.errstate(invalid="ignore"):
                out[:, part.columns] = mm + (total - own)[:, None]
        out[total == -np.inf] = -np.inf
        return out
