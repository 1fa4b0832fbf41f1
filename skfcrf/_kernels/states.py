"""Computations over a chain of label states: n-best, max-marginals, ``log Z``, scores.

The k best labellings of a sequence, max-marginals, the forward ``log Z``
and its log-domain fallbacks over a set of joint label states, and the score
of given labellings.

Log-domain fallbacks (:func:`logdomain_state_marginals`,
:func:`logdomain_pair_marginals`, :func:`rescue_sequence`): forward-backward of one
sequence with log messages, for the sequences whose scaled forward pass lost mass.
Each step is a log-sum-exp per target (forward) or source (backward) state over the
allowed (finite) transitions only, held as flat ``src``, ``dst``, ``val`` arrays in
target order with a permutation to source order (:class:`_AllowedPairs`), so a
closed model's step costs its few thousand allowed pairs, not ``S**2``.

Inputs are those of :func:`skfcrf._kernels.batch.marginals` (layout in
:mod:`skfcrf._kernels.graph`).  Labellings are int32 label-index arrays
``(T, C)``; a labelling's *score* is the sum of its log-potentials.

Exact k-best (:func:`state_nbest`): a factorial model restricted to a set of
joint label *states* (rows of an int32 ``(S, C)`` array: every label of one
chain; the label combinations a model allows, as in :mod:`skfcrf._kernels.joint`;
or the whole product space) is a linear chain over the states, so A* search
with backward Viterbi values as its heuristic
(:func:`skfcrf._kernels._nbest.kbest_astar`) gives the exact ``k`` best
labellings.  The per-token state scores ``(T, S)`` are gathered here with
numpy; transitions between states are one ``S x S`` matrix when the in-chain
templates are tied, else one per token.  (``log Z`` over the same states by the
forward pass alone: :func:`skfcrf._kernels.joint.joint_log_partition`.)

Max-marginals (:func:`state_max_marginals`): forward and backward Viterbi
over the same chain of states (:func:`skfcrf._kernels._nbest.max_marginals`) give,
for every token and label of every chain, the score of the best labelling with
that label there -- exact, ``O(T S^2)``.  For loopy models
:func:`conditional_max_marginals` gives the chain-wise counterpart around a
given labelling (each chain's max-marginals with the other chains held fixed).

Approximate k-best (:func:`chainwise_nbest`), for loopy models: a best-first
search over *chain-wise moves* from a given labelling.  The neighbours of a
labelling are, for every chain, the ``k`` best labellings of that chain with
the other chains' labels held fixed (exact list Viterbi on the chain's
conditional model); starting from the given labelling, the best labelling
found and not yet taken is taken and its neighbours added, until ``k`` are
taken.  A labelling that differs from all those taken in two chains at once
is reached only through a series of such moves, so some of the true ``k``
best can be missed (on one chain the result is exact).
"""
import heapq
import itertools

import numpy as np

from skfcrf._kernels.graph import COUPLING, IN_CHAIN, following_tokens, pair_layout
from skfcrf._kernels.joint import (
    joint_marginals,
    nonfinite_sequences,
    split_backoff_counts,
    state_index,
    state_transition_scores,
    underflowed,
)

__all__ = ["labelling_scores", "product_states", "state_nbest", "chainwise_nbest", "sequence_pair",
           "state_max_marginals", "conditional_max_marginals",
           "logdomain_state_marginals", "state_index", "state_path_scores", "state_steps",
           "following_tokens", "rescue_sequence", "rescue_sequences", "sub_batch",
           "MAX_UNTIED_TRANSITION_ENTRIES"]

#: Most entries (``T * S * S``) of the per-token transition matrices
#: :func:`state_nbest` builds for one sequence when in-chain templates are untied
#: and there are several chains.
MAX_UNTIED_TRANSITION_ENTRIES = 1 << 25


def _kernel():
    from skfcrf._kernels import _nbest
    return _nbest


def _edge_values(graph, pair, edge_offset, e, rows, la, lb):
    """Potentials of edge ``e`` at global token ``rows`` for label indices ``la``, ``lb``."""
    nb = int(graph.n_labels[graph.edge_b[e]])
    idx = np.asarray(la, np.int64) * nb + lb
    if not graph.edge_tied[e]:
        idx = idx + np.asarray(rows, np.int64) * graph.edge_size(e)
    return pair[edge_offset[e] + idx]


def labelling_scores(graph, seq_ptr, unary, pair, labels):
    """Score of the labelling ``labels`` ``(N, C)`` of every sequence, ``(n_seq,)``.

    ``-inf`` when the labelling uses a forbidden assignment; empty sequences
    score 0.
    """
    seq_ptr = np.asarray(seq_ptr, np.int64)
    n = int(seq_ptr[-1])
    labels = np.asarray(labels, np.int64)
    edge_offset = pair_layout(graph, n)
    seq_of = np.repeat(np.arange(len(seq_ptr) - 1), np.diff(seq_ptr))
    rows = np.arange(n)
    per_token = unary[rows[:, None], graph.label_offset[:-1][None, :] + labels].sum(axis=1)
    inner = following_tokens(seq_ptr, n)
    for e in range(graph.n_edges):
        a, b = int(graph.edge_a[e]), int(graph.edge_b[e])
        if graph.edge_kind[e] == IN_CHAIN:
            r = inner
            per_token[r] += _edge_values(graph, pair, edge_offset, e, r, labels[r - 1, a],
                                         labels[r, a])
        else:
            per_token += _edge_values(graph, pair, edge_offset, e, rows, labels[:, a],
                                      labels[:, b])
    out = np.zeros(len(seq_ptr) - 1)
    with np.errstate(invalid="ignore"):
        np.add.at(out, seq_of, per_token)
    return out


def state_steps(states, seq_ptr, labels):
    """The steps of the labelling ``labels`` ``(N, C)`` between consecutive tokens of a
    sequence whose label combinations are both among ``states``: the later tokens'
    rows and the two state indices, ``(rows, prev, cur)``."""
    index = state_index(states, labels)
    rows = following_tokens(seq_ptr, len(index))
    rows = rows[(index[rows] >= 0) & (index[rows - 1] >= 0)]
    return rows, index[rows - 1], index[rows]


def state_path_scores(states, seq_ptr, labels, state_trans):
    """Per sequence the joint-state transition weights ``state_trans`` ``(S, S)`` along
    the labelling ``labels`` ``(N, C)``, ``(n_seq,)``; a token whose label
    combination is not among ``states`` contributes nothing (such a labelling
    is not allowed anyway)."""
    seq_ptr = np.asarray(seq_ptr, np.int64)
    out = np.zeros(len(seq_ptr) - 1)
    if state_trans is None or len(labels) == 0:
        return out
    rows, prev, cur = state_steps(states, seq_ptr, labels)
    seq_of = np.repeat(np.arange(len(seq_ptr) - 1), np.diff(seq_ptr))
    np.add.at(out, seq_of[rows], state_trans[prev, cur])
    return out


def product_states(graph):
    """Every label combination of the chains, int32 ``(prod(n_labels), C)``, row-major."""
    grids = itertools.product(*[range(int(L)) for L in graph.n_labels])
    return np.array(list(grids), dtype=np.int32).reshape(-1, graph.n_chains)


def _state_scores(graph, states, unary, pair, edge_offset, rows):
    """``(T, S)``: unary and coupling scores of every state at global tokens ``rows``."""
    block = unary[rows]
    phi = np.zeros((len(rows), len(states)))
    for c in range(graph.n_chains):
        phi += block.take(graph.label_offset[c] + states[:, c], axis=1)
    for e in range(graph.n_edges):
        if graph.edge_kind[e] == COUPLING:
            a, b = int(graph.edge_a[e]), int(graph.edge_b[e])
            k = graph.edge_size(e)
            assign = states[:, a].astype(np.int64) * int(graph.n_labels[b]) + states[:, b]
            values = pair[edge_offset[e]:edge_offset[e + 1]]
            if graph.edge_tied[e]:
                phi += values[assign]
            else:
                phi += values.reshape(-1, k)[rows].take(assign, axis=1)
    return phi


def _inchain_edges(graph):
    return [e for e in range(graph.n_edges) if graph.edge_kind[e] == IN_CHAIN]


def _tied_transitions(graph, states, pair, edge_offset, state_trans=None):
    """``(1, S, S)`` state transition scores when every in-chain template is tied."""
    return state_transition_scores(graph, states, pair, edge_offset, state_trans)[None]


def _untied_transitions(graph, states, pair, edge_offset, rows, what="n_best > 1"):
    """``(T, S, S)`` state transition scores into each of the tokens ``rows``."""
    S, T = len(states), len(rows)
    if T * S * S > MAX_UNTIED_TRANSITION_ENTRIES:
        raise ValueError(
            f"{what} over {S} joint states with untied in-chain templates needs "
            f"{T} x {S} x {S} transition scores for one sequence, more than the limit of "
            f"{MAX_UNTIED_TRANSITION_ENTRIES}; use tied transitions "
            "(transition_features='default') or inference='trp'")
    trans = np.zeros((T, S, S))
    for e in _inchain_edges(graph):
        a = int(graph.edge_a[e])
        trans += _edge_values(graph, pair, edge_offset, e, rows[:, None, None],
                              states[None, :, None, a], states[None, None, :, a])
    return trans


def _state_chains(graph, states, seq_ptr, unary, pair, what="n_best > 1", state_trans=None):
    """Per sequence ``(rows, phi, trans, tindex)``: the sequence as a chain over ``states``.

    ``phi`` ``(T, S)`` are the state scores, ``trans[tindex[t]]`` the transition
    scores into token ``t`` (see :mod:`skfcrf._kernels._nbest`); ``phi`` is None for
    an empty sequence.
    """
    states = np.ascontiguousarray(states, dtype=np.int32)
    seq_ptr = np.asarray(seq_ptr, np.int64)
    edge_offset = pair_layout(graph, int(seq_ptr[-1]))
    tied = all(graph.edge_tied[e] for e in _inchain_edges(graph))
    one_chain_identity = (graph.n_chains == 1 and len(states) == int(graph.n_labels[0])
                          and np.array_equal(states[:, 0], np.arange(len(states))))
    if state_trans is not None and not tied:
        raise ValueError("joint-state transitions need tied in-chain templates")
    if tied:
        trans_all = _tied_transitions(graph, states, pair, edge_offset, state_trans)
    elif one_chain_identity:
        # one chain, untied: the pair block is already one L x L matrix per global token
        e = _inchain_edges(graph)[0]
        L = len(states)
        trans_all = pair[edge_offset[e]:edge_offset[e + 1]].reshape(-1, L, L)
    for s in range(len(seq_ptr) - 1):
        rows = np.arange(seq_ptr[s], seq_ptr[s + 1])
        T = len(rows)
        if T == 0:
            yield rows, None, None, None
            continue
        phi = _state_scores(graph, states, unary, pair, edge_offset, rows)
        if tied:
            yield rows, phi, trans_all, np.zeros(T, np.int64)
        elif one_chain_identity:
            yield rows, phi, trans_all, rows
        else:
            yield (rows, phi, _untied_transitions(graph, states, pair, edge_offset, rows, what),
                   np.arange(T))


def state_nbest(graph, states, seq_ptr, unary, pair, k, state_trans=None):
    """Exact ``k`` best labellings of every sequence over the joint ``states``.

    Returns
    -------
    list (per sequence) of list of (labels, score)
        At most ``k`` distinct labellings, best first: int32 ``(T, C)`` label
        indices and their scores.  Empty when no labelling is allowed; an
        empty sequence has the one empty labelling of score 0.
    """
    states = np.ascontiguousarray(states, dtype=np.int32)
    kernel = _kernel()
    out = []
    for _, phi, trans, tindex in _state_chains(graph, states, seq_ptr, unary, pair,
                                               state_trans=state_trans):
        if phi is None:
            out.append([(np.zeros((0, graph.n_chains), np.int32), 0.0)])
            continue
        paths, scores = kernel.kbest_astar(phi, trans, tindex, int(k))
        out.append([(states[p], float(v)) for p, v in zip(paths, scores)])
    return out


def state_max_marginals(graph, states, seq_ptr, unary, pair, state_trans=None):
    """Exact max-marginal scores of every label of every chain, over the joint ``states``.

    Returns
    -------
    ndarray of shape (N, total_labels)
        Entry ``[n, label_offset[c] + j]``: the score of the best labelling
        (over ``states``) of token ``n``'s sequence with label ``j`` at token
        ``n`` in chain ``c``; ``-inf`` when no such labelling is allowed.  The
        maximum over each chain's block is the Viterbi score of the sequence.
        From the state max-marginals of :func:`skfcrf._kernels._nbest.max_marginals`,
        maximised over the states with that label.
    """
    states = np.ascontiguousarray(states, dtype=np.int32)
    out = np.full((int(np.asarray(seq_ptr)[-1]), graph.total_labels), -np.inf)
    kernel = _kernel()
    for rows, phi, trans, tindex in _state_chains(graph, states, seq_ptr, unary, pair,
                                                  "max-marginals", state_trans):
        if phi is None:
            continue
        mm = kernel.max_marginals(phi, trans, tindex)
        block = out[rows]
        for c in range(graph.n_chains):
            off = int(graph.label_offset[c])
            for j in range(int(graph.n_labels[c])):
                cols = np.flatnonzero(states[:, c] == j)
                if cols.size:
                    block[:, off + j] = mm[:, cols].max(axis=1)
        out[rows] = block
    return out


def conditional_max_marginals(graph, seq_ptr, unary, pair, labels):
    """Chain-wise max-marginal scores around the labelling ``labels`` ``(N, C)``.

    For loopy models: entry ``[n, label_offset[c] + j]`` is the best score of
    a labelling that agrees with ``labels`` on every chain but ``c`` and has
    label ``j`` at token ``n`` of chain ``c`` (exact max-marginals of chain
    ``c``'s conditional model, :func:`_conditional_chain`).  A lower bound on
    the true max-marginal; equal to it on one chain.
    """
    seq_ptr = np.asarray(seq_ptr, np.int64)
    labels = np.asarray(labels, np.int32)
    out = np.full((int(seq_ptr[-1]), graph.total_labels), -np.inf)
    edge_offset = pair_layout(graph, int(seq_ptr[-1]))
    kernel = _kernel()
    for s in range(len(seq_ptr) - 1):
        rows = np.arange(seq_ptr[s], seq_ptr[s + 1])
        if len(rows) == 0:
            continue
        u1, p1 = unary[rows], sequence_pair(graph, pair, edge_offset, rows)
        off1 = pair_layout(graph, len(rows))
        local = np.arange(len(rows))
        y = labels[rows]
        base = float(labelling_scores(graph, np.array([0, len(rows)], np.int64), u1, p1, y)[0])
        for c in range(graph.n_chains):
            phi, trans, tindex = _conditional_chain(graph, u1, p1, off1, local, y, c)
            mm = kernel.max_marginals(phi, trans, tindex)
            # the conditional chain's scores leave out the terms without chain c
            yc = y[:, c]
            own = phi[local, yc].sum() + trans[tindex[1:], yc[:-1], yc[1:]].sum()
            rest = base - own if np.isfinite(base) and np.isfinite(own) else 0.0
            lo, hi = int(graph.label_offset[c]), int(graph.label_offset[c + 1])
            out[rows, lo:hi] = mm + rest
    return out


class _AllowedPairs:
    """The allowed (finite) entries of a transition matrix ``(S, S)``, for log-sum-exps
    over them alone: ``src``, ``dst``, ``val`` in target order (``by_dst``, segments
    ``dst_starts`` of the targets ``dst_has``) and a permutation to source order
    (``by_src``, segments ``src_starts`` of the sources ``src_has``).  Closed models
    allow a few thousand of the ~150,000 pairs of 390 joint states."""

    def __init__(self, trans):
        S = trans.shape[0]
        dst, src = np.nonzero(np.isfinite(trans).T)        # sorted by target, then source
        self.S, self.src, self.dst = S, src, dst
        self.val = trans[src, dst]
        self.dst_has, self.dst_starts = _segments(dst, S)
        self.by_src = np.lexsort((dst, src))
        self.src_has, self.src_starts = _segments(src[self.by_src], S)

    def into_targets(self, v):
        """``out[j] = log sum_{allowed (i, j)} exp(v)`` over entries ``v`` (target order)."""
        return _segment_logsumexp(v, self.dst_starts, self.dst_has, self.S)

    def from_sources(self, v):
        """``out[i] = log sum_{allowed (i, j)} exp(v)`` over entries ``v`` (target order)."""
        return _segment_logsumexp(v[self.by_src], self.src_starts, self.src_has, self.S)


def _segments(keys, S):
    """The keys present in sorted ``keys`` and where each one's run starts."""
    has = np.flatnonzero(np.bincount(keys, minlength=S))
    return has, np.searchsorted(keys, has)


def _segment_logsumexp(v, starts, has, S):
    """Log-sum-exp of every run of ``v`` (runs starting at ``starts``, of the keys
    ``has``); ``-inf`` for the other keys and for runs that are all ``-inf``."""
    out = np.full(S, -np.inf)
    if not len(v):
        return out
    top = np.maximum.reduceat(v, starts)
    shift = np.where(np.isfinite(top), top, 0.0)
    counts = np.diff(np.append(starts, len(v)))
    with np.errstate(divide="ignore", under="ignore"):
        out[has] = shift + np.log(np.add.reduceat(np.exp(v - np.repeat(shift, counts)),
                                                  starts))
    return out


def _logdomain_forward_backward(graph, states, unary, pair, rows, state_trans=None):
    """State scores ``phi`` ``(T, S)``, the allowed transitions (:class:`_AllowedPairs`),
    log forward and backward messages ``(T, S)`` and ``log Z`` of the sequence at
    global tokens ``rows``; each step a log-sum-exp over the allowed pairs alone."""
    from scipy.special import logsumexp

    edge_offset = pair_layout(graph, unary.shape[0])
    phi = _state_scores(graph, states, unary, pair, edge_offset, rows)
    allowed = _AllowedPairs(_tied_transitions(graph, states, pair, edge_offset, state_trans)[0])
    src, dst, val = allowed.src, allowed.dst, allowed.val
    T, S = phi.shape
    la, lb = np.empty((T, S)), np.zeros((T, S))
    la[0] = phi[0]
    with np.errstate(divide="ignore", invalid="ignore"):
        for t in range(1, T):
            la[t] = allowed.into_targets(la[t - 1][src] + val) + phi[t]
        for t in range(T - 2, -1, -1):
            lb[t] = allowed.from_sources(val + (phi[t + 1] + lb[t + 1])[dst])
        log_z = float(logsumexp(la[T - 1]))
    return phi, allowed, la, lb, log_z


def logdomain_state_marginals(graph, states, unary, pair, rows, state_trans=None):
    """``log Z`` and node marginals ``(T, Ltot)`` of one sequence (global tokens ``rows``)
    over the joint ``states``, by forward-backward in the log domain.

    The scaled forward-backward of :mod:`skfcrf._kernels._joint` works in linear space:
    with forbidden transitions a state's forward mass relative to the token's total
    can fall below the smallest double and be lost, though later tokens would have
    made its paths dominant (``log Z`` then comes out *below* the best labelling's
    score).  This is the exact reference it falls back to for such sequences:
    log-sum-exps over the allowed state pairs alone (:class:`_AllowedPairs`: ``O(T
    nnz)``, numpy steps per token), for the few sequences that need it.
    """
    _, _, la, lb, log_z = _logdomain_forward_backward(graph, states, unary, pair, rows,
                                                      state_trans)
    return log_z, _node_from_states(graph, states, _state_marginals(la, lb, log_z))


def _state_marginals(la, lb, log_z):
    """``(T, S)`` state marginals from log messages; zero without an allowed labelling."""
    if not np.isfinite(log_z):
        return np.zeros_like(la)
    with np.errstate(under="ignore"):
        return np.exp(la + lb - log_z)


def _node_from_states(graph, states, marg):
    """Per-chain label marginals ``(T, Ltot)`` from state marginals ``(T, S)``."""
    node = np.zeros((marg.shape[0], graph.total_labels))
    for c in range(graph.n_chains):
        cols = graph.label_offset[c] + states[:, c]
        np.add.at(node.T, cols, marg.T)
    return node


def logdomain_pair_marginals(graph, states, unary, pair, rows, state_trans=None,
                             state_pairs=False):
    """As :func:`logdomain_state_marginals`, plus the expected counts of the sequence's
    factors laid out like its own ``pair`` array (tied templates summed over its
    positions, untied ones per position), as
    :func:`skfcrf._kernels.joint.joint_marginals` gives them with ``pair_marginals=True``.

    Returns ``log Z``, node marginals ``(T, Ltot)`` and the pair counts; with
    ``state_pairs=True`` also the expected state pair counts ``(S, S)``.
    """
    phi, allowed, la, lb, log_z = _logdomain_forward_backward(graph, states, unary, pair,
                                                              rows, state_trans)
    T, S = phi.shape
    marg = _state_marginals(la, lb, log_z)
    src, dst = allowed.src, allowed.dst
    per_pair = np.zeros(len(src))
    with np.errstate(invalid="ignore", under="ignore"):
        for t in range(1, T if np.isfinite(log_z) else 0):
            per_pair += np.exp(la[t - 1][src] + allowed.val + (phi[t] + lb[t])[dst] - log_z)
    expected = np.zeros((S, S))
    expected[src, dst] = per_pair
    local = pair_layout(graph, T)
    counts = np.zeros(int(local[-1]))
    for e in range(graph.n_edges):
        a, b = int(graph.edge_a[e]), int(graph.edge_b[e])
        block = counts[local[e]:local[e + 1]]
        if graph.edge_kind[e] == IN_CHAIN:
            L = int(graph.n_labels[a])
            H = np.zeros((S, L))
            H[np.arange(S), states[:, a]] = 1.0
            block[:] = (H.T @ expected @ H).ravel()
        else:
            k = graph.edge_size(e)
            assign = states[:, a].astype(np.int64) * int(graph.n_labels[b]) + states[:, b]
            if graph.edge_tied[e]:
                block[:] = np.bincount(assign, marg.sum(axis=0), minlength=k)
            else:
                per_token = block.reshape(T, k)
                np.add.at(per_token.T, assign, marg.T)
    if state_pairs:
        return log_z, _node_from_states(graph, states, marg), counts, expected
    return log_z, _node_from_states(graph, states, marg), counts


def _conditional_chain(graph, unary, pair, edge_offset, rows, labels, c):
    """Chain ``c``'s unary ``(T, L)`` and transitions given the other chains' ``labels``."""
    L = int(graph.n_labels[c])
    lab = np.arange(L)
    phi = unary[rows, graph.label_offset[c]:graph.label_offset[c + 1]].copy()
    trans, tindex = np.zeros((1, L, L)), np.zeros(len(rows), np.int64)
    for e in range(graph.n_edges):
        a, b = int(graph.edge_a[e]), int(graph.edge_b[e])
        if graph.edge_kind[e] == COUPLING and c in (a, b):
            if c == a:
                phi += _edge_values(graph, pair, edge_offset, e, rows[:, None], lab[None, :],
                                    labels[:, b][:, None])
            else:
                phi += _edge_values(graph, pair, edge_offset, e, rows[:, None],
                                    labels[:, a][:, None], lab[None, :])
        elif graph.edge_kind[e] == IN_CHAIN and a == c:
            if graph.edge_tied[e]:
                trans = pair[edge_offset[e]:edge_offset[e] + L * L].reshape(1, L, L)
            else:
                trans = pair[edge_offset[e]:edge_offset[e + 1]].reshape(-1, L, L)
                tindex = rows.astype(np.int64)
    return phi, trans, tindex


def chainwise_nbest(graph, seq_ptr, unary, pair, labels, k):
    """Approximate ``k`` best labellings by chain-wise moves from ``labels`` ``(N, C)``.

    See the module docstring.  Returns what :func:`state_nbest` returns, best
    first; ``labels`` itself is always among them (even when forbidden, then
    last), so it is first unless a chain-wise move improves it.
    """
    seq_ptr = np.asarray(seq_ptr, np.int64)
    labels = np.asarray(labels, np.int32)
    edge_offset = pair_layout(graph, int(seq_ptr[-1]))
    kernel = _kernel()
    out = []
    for s in range(len(seq_ptr) - 1):
        rows = np.arange(seq_ptr[s], seq_ptr[s + 1])
        start = labels[rows]
        if len(rows) == 0:
            out.append([(start.copy(), 0.0)])
            continue
        # the sequence alone, as a batch of one
        one = np.array([0, len(rows)], np.int64)
        u1, p1 = unary[rows], sequence_pair(graph, pair, edge_offset, rows)
        off1 = pair_layout(graph, len(rows))
        local = np.arange(len(rows))

        def score(y, one=one, u1=u1, p1=p1):
            return float(labelling_scores(graph, one, u1, p1, y)[0])

        seen = {start.tobytes()}
        heap = [(-score(start), 0, start)]
        counter = itertools.count(1)
        taken = []
        while heap and len(taken) < k:
            neg, _, y = heapq.heappop(heap)
            if neg == np.inf and taken:
                break                      # only forbidden labellings are left
            taken.append((y, -neg))
            for c in range(graph.n_chains):
                phi, trans, tindex = _conditional_chain(graph, u1, p1, off1, local, y, c)
                paths, _ = kernel.kbest_viterbi(phi, trans, tindex, int(k))
                for p in paths:
                    z = y.copy()
                    z[:, c] = p
                    key = z.tobytes()
                    if key not in seen:
                        seen.add(key)
                        heapq.heappush(heap, (-score(z), next(counter), z))
        taken.sort(key=lambda item: -item[1])
        out.append(taken)
    return out


def sequence_pair(graph, pair, edge_offset, rows):
    """The ``pair`` array of the tokens ``rows`` (whole sequences, in order) alone:
    tied templates shared, untied ones those tokens' positions."""
    parts = []
    for e in range(graph.n_edges):
        block = pair[edge_offset[e]:edge_offset[e + 1]]
        if graph.edge_tied[e]:
            parts.append(block)
        else:
            parts.append(block.reshape(-1, graph.edge_size(e))[rows].ravel())
    return np.concatenate(parts) if parts else np.zeros(0)


def sub_batch(graph, seq_ptr, unary, pair, seqs):
    """The sequences ``seqs`` (ascending) of a batch as a batch of their own.

    Returns ``seq_ptr, unary, pair, rows``: the sub-batch's inputs, laid out as
    :func:`skfcrf._kernels.batch.marginals` takes them (tied templates shared,
    untied ones the sequences' own positions), and the global token rows it
    holds, in order.
    """
    seq_ptr = np.asarray(seq_ptr, np.int64)
    seqs = np.asarray(seqs, np.int64)
    lengths = seq_ptr[seqs + 1] - seq_ptr[seqs]
    rows = (np.concatenate([np.arange(seq_ptr[s], seq_ptr[s + 1]) for s in seqs])
            if len(seqs) else np.zeros(0, np.int64)).astype(np.int64)
    ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    edge_offset = pair_layout(graph, int(seq_ptr[-1]))
    return ptr, unary[rows], sequence_pair(graph, pair, edge_offset, rows), rows


def rescue_sequence(graph, states, seq_ptr, unary, pair, s, node, pmarg, log_z, n_threads=1,
                    state_trans=None, state_counts=None, backoff=None, unseen=None):
    """Redo sequence ``s`` of :func:`joint_marginals`'s output by log-domain
    forward-backward, in place: its ``log_z`` entry, its rows of ``node`` and its
    share of ``pmarg`` (the kernel's share, recomputed on the sequence alone, is
    replaced by the exact one) -- and of the state pair counts ``state_counts``
    ``(S, S)`` when given (a model with joint-state transitions ``state_trans``).
    With ``backoff`` (the masks :func:`joint_marginals` took) its share of the
    back-off expectations ``unseen`` too, and ``pmarg`` and ``state_counts`` as
    that call gives them (:func:`~skfcrf._kernels.joint.split_backoff_counts`).
    ``node``, ``pmarg`` and ``unseen`` may be None (a caller without marginals:
    ``log_z`` and ``state_counts`` alone are redone)."""
    edge_offset = pair_layout(graph, unary.shape[0])
    rows = np.arange(seq_ptr[s], seq_ptr[s + 1])
    T = len(rows)
    own_pair = sequence_pair(graph, pair, edge_offset, rows)
    _, kernel_counts, _, *kernel = joint_marginals(
        graph, states, np.array([0, T], np.int64), unary[rows], own_pair, n_threads,
        pair_marginals=True, state_trans=state_trans, state_pairs=True, backoff=backoff)
    log_z[s], exact_node, exact_counts, exact_states = logdomain_pair_marginals(
        graph, states, unary, pair, rows, state_trans, state_pairs=True)
    if node is not None:
        node[rows] = exact_node
    local = pair_layout(graph, T)
    if backoff:
        kernel_unseen, kernel_states = kernel
        exact_unseen, exact_states = split_backoff_counts(graph, states, exact_counts, local,
                                                          backoff, exact_states)
        for c in unseen if unseen is not None else ():
            unseen[c] += exact_unseen[c] - kernel_unseen[c]
    else:
        kernel_states, = kernel
    for e in range(graph.n_edges if pmarg is not None else 0):
        delta = exact_counts[local[e]:local[e + 1]] - kernel_counts[local[e]:local[e + 1]]
        start = int(edge_offset[e]) + (0 if graph.edge_tied[e] else int(rows[0]) * graph.edge_size(e))
        pmarg[start:start + delta.size] += delta
    if state_counts is not None:
        state_counts += exact_states - kernel_states


def rescue_sequences(graph, states, seq_ptr, unary, pair, node, pmarg, log_z, lower,
                     n_threads=1, state_trans=None, state_counts=None, backoff=None,
                     unseen=None, check_nodes=True):
    """Redo by :func:`rescue_sequence`, in place, every sequence of
    :func:`joint_marginals`'s output whose node marginals are not finite or whose
    ``log Z`` fell below ``lower`` (per sequence the score of one of its labellings,
    e.g. the gold one; None: no such check): the scaled pass lost mass there
    (:func:`~skfcrf._kernels.joint.nonfinite_sequences`,
    :func:`~skfcrf._kernels.joint.underflowed`).  ``check_nodes=False`` skips the
    first check (a caller that uses no node marginals and has found its sums
    finite; ``node`` and ``pmarg`` None, see :func:`rescue_sequence`).  Returns the
    redone sequences."""
    if check_nodes and node is None:
        raise ValueError("check_nodes needs the node marginals")
    redo = nonfinite_sequences(node, seq_ptr) if check_nodes else np.zeros(0, np.int64)
    if lower is not None:
        redo = np.union1d(redo, underflowed(log_z, lower))
    for s in redo:
        rescue_sequence(graph, states, seq_ptr, unary, pair, s, node, pmarg, log_z, n_threads,
                        state_trans, state_counts, backoff, unseen)
    return redo
