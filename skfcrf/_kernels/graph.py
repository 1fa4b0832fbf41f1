"""The factor-graph layout shared by every kernel in :mod:`skfcrf._kernels`.

A *batch* is a list of sequences stacked along the token axis: ``N`` tokens in
all, sequence ``s`` owning global token rows ``seq_ptr[s]:seq_ptr[s + 1]``.
Every sequence has the same ``C`` label chains; chain ``c`` has ``n_labels[c]``
labels, and the per-token label blocks are laid side by side, chain ``c``
owning columns ``label_offset[c]:label_offset[c + 1]`` of ``Ltot`` columns.

Potentials are *log*-potentials (scores); ``-inf`` means a forbidden
assignment (zero potential).

``unary`` : float64 ``(N, Ltot)``
    Unary score of chain ``c`` taking label ``l`` at token ``g``:
    ``unary[g, label_offset[c] + l]``.

Pairwise *edge templates* ``e = 0 .. E-1``:

``edge_a[e], edge_b[e]`` : chains joined by the edge.
``edge_kind[e]`` : ``IN_CHAIN`` (0): joins ``(a, t-1)`` and ``(a, t)``, so
    ``a == b``; ``COUPLING`` (1): joins ``(a, t)`` and ``(b, t)``, ``a < b``.
``edge_tied[e]`` : 1 when one ``L_a x L_b`` matrix serves every position,
    0 when every token has its own matrix.

``pair`` : float64, flat
    Edge ``e``'s matrices start at ``edge_offset[e]`` (see
    :func:`pair_layout`).  A matrix is row-major ``[l_a, l_b]`` (for an in-chain
    edge: ``[label at t-1, label at t]``).  For an untied edge the matrix for
    global token ``g`` starts at ``edge_offset[e] + g * L_a * L_b``; for an
    in-chain edge the matrix of a sequence's first token is unused.  For a tied
    edge there is one matrix at ``edge_offset[e]``.

Outputs of marginal inference use the same layouts: node marginals
``(N, Ltot)``; pair marginals in a flat array laid out like ``pair``, where a
tied edge holds the *sum over positions* of its marginals (expected counts)
and an untied edge holds one marginal matrix per position (zeros where unused).
"""
from dataclasses import dataclass

import numpy as np

IN_CHAIN = 0
COUPLING = 1


@dataclass(frozen=True)
class Graph:
    """Structure of an FCRF: label counts per chain and pairwise edge templates.

    Parameters
    ----------
    n_labels : sequence of int
        Number of labels of each chain.
    edges : sequence of tuple (a, b, kind, tied)
        Edge templates; see the module docstring.
    """

    n_labels: np.ndarray
    label_offset: np.ndarray
    edge_a: np.ndarray
    edge_b: np.ndarray
    edge_kind: np.ndarray
    edge_tied: np.ndarray

    @classmethod
    def build(cls, n_labels, edges):
        n_labels = np.asarray(n_labels, dtype=np.int32)
        label_offset = np.zeros(len(n_labels) + 1, dtype=np.int32)
        np.cumsum(n_labels, out=label_offset[1:])
        edges = list(edges)
        cols = [np.asarray([e[i] for e in edges], dtype=np.int32).reshape(-1) for i in range(4)]
        for a, b, kind, _ in edges:
            if kind == IN_CHAIN and a != b:
                raise ValueError("an in-chain edge joins a chain to itself")
            if kind == COUPLING and not a < b:
                raise ValueError("a coupling edge needs chain a < chain b")
        return cls(n_labels, label_offset, *cols)

    @property
    def n_chains(self):
        return len(self.n_labels)

    @property
    def n_edges(self):
        return len(self.edge_a)

    @property
    def total_labels(self):
        return int(self.label_offset[-1])

    def edge_size(self, e):
        """Number of entries of one matrix of edge ``e`` (``L_a * L_b``)."""
        return int(self.n_labels[self.edge_a[e]] * self.n_labels[self.edge_b[e]])


def pair_layout(graph, n_tokens):
    """Offsets of each edge template's matrices in the flat ``pair`` array.

    Returns
    -------
    edge_offset : int64 ndarray of shape (E + 1,)
        ``edge_offset[e]`` is where edge ``e`` starts, ``edge_offset[E]`` the
        total length.
    """
    sizes = [
        graph.edge_size(e) * (1 if graph.edge_tied[e] else n_tokens)
        for e in range(graph.n_edges)
    ]
    edge_offset = np.zeros(graph.n_edges + 1, dtype=np.int64)
    np.cumsum(sizes, out=edge_offset[1:])
    return edge_offset


def following_tokens(seq_ptr, n):
    """Rows of the ``n`` stacked tokens whose predecessor (the row before) is in the
    same sequence, ascending."""
    seq_ptr = np.asarray(seq_ptr, np.int64)
    starts = np.zeros(n, bool)
    starts[seq_ptr[:-1][seq_ptr[:-1] < n]] = True
    return np.flatnonzero(~starts)
