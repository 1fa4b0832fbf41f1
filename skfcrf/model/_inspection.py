"""Reading the weight vector back as named records (what eli5 gives CRFsuite users).

Every weight of ``theta`` (layout: :class:`~skfcrf.model._layout.ParameterLayout`)
is one :class:`WeightRecord`: the template *kind* (``"unary"``, ``"transition"``
for an in-chain pair, ``"coupling"`` for a between-chain pair), the chain or
chain pair, the observation it is conditioned on (``"bias"`` for the
observation-independent weights) and the label assignment it scores (one
label for a unary weight; ``(label at t-1, label at t)`` for a transition;
``(label of chain a, label of chain b)`` for a coupling).  A model with
joint-state transitions has one more kind, ``"state_transition"``: the weight of
one label combination of all chains at ``t - 1`` followed by one at ``t``, its
labels ``(labels at t-1, labels at t)`` (two tuples, one label per chain), its
chains all of them.  A model with back-off transitions has ``"backoff"``: the
weight of every transition of chain ``c`` into a label without a weight of its
own, its labels ``("<unseen>", label)``.
"""
from dataclasses import dataclass

import numpy as np

from skfcrf._kernels.graph import IN_CHAIN

__all__ = ["WeightRecord", "KINDS", "top_weights"]

#: The template kinds of a record.
KINDS = ("unary", "transition", "coupling", "state_transition", "backoff")


@dataclass(frozen=True)
class WeightRecord:
    """One weight of a fitted model.

    Attributes
    ----------
    kind : str
        ``"unary"``, ``"transition"``, ``"coupling"``, ``"state_transition"`` or
        ``"backoff"``.
    chains : tuple of int
        ``(c,)`` for unary and transition weights, ``(a, b)`` for couplings,
        every chain for state transitions.
    observation : str
        The observation's name (``"#j"`` for column ``j`` of matrix input), or
        ``"bias"``.
    labels : tuple
        The label assignment the weight scores.
    weight : float
    """

    kind: str
    chains: tuple
    observation: str
    labels: tuple
    weight: float


def _column_meaning(graph, layout, classes, col):
    """(kind, chains, labels) of column ``col`` of the per-token score matrix."""
    off = graph.label_offset
    if col < graph.total_labels:
        c = int(np.searchsorted(off, col, side="right") - 1)
        return "unary", (c,), (classes[c][col - off[c]],)
    for e in range(graph.n_edges):
        start = layout.edge_col[e]
        if start >= 0 and start <= col < start + graph.edge_size(e):
            return _edge_meaning(graph, classes, e, col - start)
    raise ValueError(f"column {col} is outside the score matrix")


def _edge_meaning(graph, classes, e, k):
    a, b = int(graph.edge_a[e]), int(graph.edge_b[e])
    la, lb = divmod(int(k), int(graph.n_labels[b]))
    kind = "transition" if graph.edge_kind[e] == IN_CHAIN else "coupling"
    chains = (a,) if kind == "transition" else (a, b)
    return kind, chains, (classes[a][la], classes[b][lb])


def _meaning(layout, classes, names, p):
    """(kind, chains, observation, labels) of weight ``p``."""
    graph = layout.graph
    if p < layout.n_table:
        f = int(np.searchsorted(layout.feat_ptr, p, side="right") - 1)
        kind, chains, labels = _column_meaning(graph, layout, classes, int(layout.ent_col[p]))
        obs = str(names[f]) if names is not None else f"#{f}"
        return kind, chains, obs, labels
    if p < layout.bias_edge[0]:
        col = p - layout.bias_unary
        kind, chains, labels = _column_meaning(graph, layout, classes, col)
        return kind, chains, "bias", labels
    for c, at in layout.bias_backoff.items():
        if at <= p < at + int(graph.n_labels[c]):
            return "backoff", (c,), "bias", ("<unseen>", classes[c][p - at])
    if p >= layout.bias_state:
        q = p - layout.bias_state
        ends = [tuple(classes[c][row[c]] for c in range(graph.n_chains))
                for row in (layout.state_from[q], layout.state_to[q])]
        return "state_transition", tuple(range(graph.n_chains)), "bias", tuple(ends)
    e = int(np.searchsorted(layout.bias_edge, p, side="right") - 1)
    kind, chains, labels = _edge_meaning(graph, classes, e, p - layout.bias_edge[e])
    return kind, chains, "bias", labels


def weight_mask(layout, kind, chain):
    """Boolean mask over theta: weights of template ``kind`` touching ``chain`` (None: any)."""
    graph = layout.graph
    # per score-matrix column and per edge: kind code (0 unary, 1 transition, 2 coupling)
    # and the chains involved (b = a for unary and transition)
    col_kind = np.zeros(layout.score_width, dtype=np.int8)
    col_a = np.zeros(layout.score_width, dtype=np.int64)
    col_a[:graph.total_labels] = np.repeat(np.arange(graph.n_chains), graph.n_labels)
    col_b = col_a.copy()
    edge_kind = np.where(np.asarray(graph.edge_kind) == IN_CHAIN, 1, 2)
    for e in range(graph.n_edges):
        if layout.edge_col[e] >= 0:
            s = slice(layout.edge_col[e], layout.edge_col[e] + graph.edge_size(e))
            col_kind[s], col_a[s], col_b[s] = edge_kind[e], graph.edge_a[e], graph.edge_b[e]
    w_kind = np.full(layout.n_params, 3, dtype=np.int8)
    w_a = np.full(layout.n_params, -1, dtype=np.int64)
    w_b = np.full(layout.n_params, -1, dtype=np.int64)
    cols = layout.ent_col
    w_kind[:layout.n_table], w_a[:layout.n_table], w_b[:layout.n_table] = (
        col_kind[cols], col_a[cols], col_b[cols])
    u = slice(layout.bias_unary, layout.bias_edge[0])
    w_kind[u], w_a[u], w_b[u] = 0, col_a[:graph.total_labels], col_b[:graph.total_labels]
    for e in range(graph.n_edges):
        s = slice(layout.bias_edge[e], layout.bias_edge[e + 1])
        w_kind[s], w_a[s], w_b[s] = edge_kind[e], graph.edge_a[e], graph.edge_b[e]
    mask = np.ones(layout.n_params, dtype=bool)
    if kind is not None:
        mask &= w_kind == KINDS.index(kind)
    if chain is not None:
        mask &= (w_a == chain) | (w_b == chain)
    # state transitions (kind 3) involve every chain
    state = slice(layout.bias_state, layout.bias_state + layout.n_state_pairs)
    mask[state] = kind in (None, "state_transition")
    for c, at in layout.bias_backoff.items():
        mask[at:at + int(graph.n_labels[c])] = (kind in (None, "backoff")
                                                and chain in (None, c))
    return mask


def top_weights(layout, theta, classes, names, n=20, chain=None, kind=None):
    """The ``n`` largest-magnitude weights as :class:`WeightRecord`, largest first.

    ``chain`` keeps the weights whose chains include it; ``kind`` one template
    kind.  Ties are broken by position in ``theta`` (stable).
    """
    if kind is not None and kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS} or None, got {kind!r}")
    n_chains = layout.graph.n_chains
    if chain is not None and not (isinstance(chain, (int, np.integer))
                                  and -n_chains <= chain < n_chains):
        raise ValueError(f"chain must be an int in [{-n_chains}, {n_chains}), got {chain!r}")
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise ValueError(f"n must be a non-negative int, got {n!r}")
    chain = None if chain is None else int(chain) % n_chains
    candidates = np.flatnonzero(weight_mask(layout, kind, chain))
    order = candidates[np.argsort(-np.abs(theta[candidates]), kind="stable")][:n]
    records = []
    for p in order:
        kind_p, chains, obs, labels = _meaning(layout, classes, names, int(p))
        records.append(WeightRecord(kind_p, chains, obs, _plain(labels), float(theta[p])))
    return records


def _plain(labels):
    return tuple(_plain(v) if isinstance(v, tuple) else v.item() if isinstance(v, np.generic)
                 else v for v in labels)
