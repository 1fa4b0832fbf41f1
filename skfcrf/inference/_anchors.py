"""Anchors: a chain's own confident labels, kept while the chains are decoded jointly.

Joint MAP decoding over the label combinations and transitions seen in training
lets one chain's evidence overrule another's: a missed section start on the
section chain, with the transition to the next section never seen, forces the
sentence chain to call the heading an ordinary sentence, though the sentence
chain alone is sure of it.  An *anchored* chain keeps, at every token where its
own factors are sure (marginal of its best label at least ``threshold``), that
label; the joint decoding then runs given those labels (``decode(fixed=...)``).

A chain's *own factors* are its unary scores and its in-chain transition scores
taken from the model's potentials, without the couplings, the joint-state
transitions or the other chains: the chain as a linear-chain CRF of its own
(with the default's first stage, which trains every chain alone, nearly the
chain's independent model).

Layouts are :mod:`skfcrf._kernels.graph`'s: ``unary`` ``(N, Ltot)`` and the flat
``pair`` of the model's graph over the stacked sequences ``seq_ptr``.  Anchored
labels come back as label indices ``(N, C)``, ``-1`` where a token's chain is
free (not anchored, or not sure).
"""
import numpy as np

from skfcrf._kernels import batch
from skfcrf._kernels.graph import IN_CHAIN, Graph, pair_layout

#: How sure a chain's own factors must be of a token's label for an anchor to keep it.
ANCHOR_THRESHOLD = 0.99


def chain_marginals(graph, seq_ptr, unary, pair, chain, n_threads=1):
    """Node marginals of one chain under its own factors.

    Parameters
    ----------
    graph : skfcrf._kernels.graph.Graph
    seq_ptr : int64 ndarray of shape (S + 1,)
    unary : float64 ndarray of shape (N, Ltot)
    pair : float64 ndarray
        The model's log-potentials in the layouts of ``graph``.
    chain : int
    n_threads : int, default=1

    Returns
    -------
    ndarray of shape (N, n_labels[chain])
        Forward-backward marginals of the chain's unary and in-chain transition
        scores alone (its columns of ``unary``; its in-chain edge's matrices of
        ``pair``, when it has one).
    """
    lo, hi = int(graph.label_offset[chain]), int(graph.label_offset[chain + 1])
    u = np.ascontiguousarray(unary[:, lo:hi])
    offsets = pair_layout(graph, unary.shape[0])
    edges = [e for e in range(graph.n_edges)
             if graph.edge_kind[e] == IN_CHAIN and int(graph.edge_a[e]) == chain]
    own = Graph.build([hi - lo], [(0, 0, IN_CHAIN, int(graph.edge_tied[e])) for e in edges])
    p = np.concatenate([pair[offsets[e]:offsets[e + 1]] for e in edges] + [np.zeros(0)])
    return batch.marginals(own, seq_ptr, u, p, method="exact", n_threads=n_threads)[0]


def anchored_labels(graph, seq_ptr, unary, pair, chains, threshold=ANCHOR_THRESHOLD,
                    n_threads=1):
    """The labels the anchored ``chains`` keep: label indices ``(N, C)``, -1 where free.

    A token's label on an anchored chain is kept where that chain's own
    marginal (:func:`chain_marginals`) of its best label is at least
    ``threshold``.
    """
    n_tokens = unary.shape[0]
    kept = np.full((n_tokens, graph.n_chains), -1, np.int32)
    for c in chains:
        node = chain_marginals(graph, seq_ptr, unary, pair, int(c), n_threads)
        if not n_tokens:
            continue
        best = np.argmax(node, axis=1)
        sure = node[np.arange(n_tokens), best] >= threshold
        kept[sure, c] = best[sure]
    return kept
