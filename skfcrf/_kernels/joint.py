"""Exact inference over the joint label combinations a model allows.

On the dictation task the three chains have 7, 72 and 44 labels (22,176
product states) but only about 390 label combinations ever occur.  A model
whose joint label space is those combinations -- every other combination has
zero potential -- is a linear chain over them, so Viterbi and forward-backward
over ``S`` joint states are exact, at ``S**2`` operations per token -- or
at one operation per allowed state pair when most pairs are forbidden (every
in-chain transition never seen in training, ``forbidden_transitions="unseen"``,
leaves about 3% of the dictation task's pairs): then the kernels take the
transition matrix in sparse form (:func:`transition_tables`).

``states`` is an int32 array ``(S, C)`` of label indices, one row per allowed
combination (:func:`joint_states_from_labels`).  Inputs are those of
:func:`skfcrf._kernels.batch.marginals` (layout in :mod:`skfcrf._kernels.graph`);
in-chain templates must be tied (one transition matrix for all positions),
coupling templates may be tied or untied.  Kernels: :mod:`skfcrf._kernels._joint`.
"""
import numpy as np
import scipy.sparse as sp

from skfcrf._kernels.graph import COUPLING, IN_CHAIN, pair_layout

__all__ = ["MAX_JOINT_STATES", "SPARSE_DENSITY", "joint_states_from_labels", "state_index", "supports_joint",
           "state_transition_scores",
           "underflowed",
           "transition_tables", "joint_map", "joint_marginals"]

#: Largest number of joint states :func:`joint_map` / :func:`joint_marginals` accept.
MAX_JOINT_STATES = 4096

#: The kernels use the sparse form of the state transitions when at most this
#: fraction of the state pairs is allowed (below it, CSR products beat BLAS).
SPARSE_DENSITY = 0.15


def joint_states_from_labels(gold):
    """The distinct label combinations (rows) of ``gold`` ``(N, C)``, sorted, int32."""
    gold = np.asarray(gold)
    if gold.ndim != 2:
        raise ValueError(f"gold must be 2-D (N, n_chains), got shape {gold.shape}")
    return np.ascontiguousarray(np.unique(gold, axis=0), dtype=np.int32)


def state_index(states, labels):
    """Row of ``states`` of every label combination in ``labels`` ``(N, C)``; -1 if absent."""
    states = np.asarray(states, np.int64)
    labels = np.asarray(labels, np.int64).reshape(-1, states.shape[1])
    radix = np.maximum(np.maximum(states.max(axis=0, initial=0),
                                  labels.max(axis=0, initial=0)) + 1, 1)
    weights = np.concatenate([np.cumprod(radix[::-1])[::-1][1:], [1]]).astype(np.int64)
    state_code, code = states @ weights, labels @ weights
    order = np.argsort(state_code, kind="stable")
    pos = np.searchsorted(state_code[order], code)
    pos = np.minimum(pos, len(order) - 1)
    found = state_code[order][pos] == code
    return np.where(found, order[pos], -1)


def supports_joint(graph, n_states):
    """Whether joint-state inference applies: tied in-chain templates, few enough states."""
    inchain_tied = all(graph.edge_tied[e] for e in range(graph.n_edges)
                       if graph.edge_kind[e] == IN_CHAIN)
    return inchain_tied and 0 < n_states <= MAX_JOINT_STATES


def _kernel():
    from skfcrf._kernels import _joint
    return _joint


def state_transition_scores(graph, states, pair, edge_offset, state_trans=None):
    """``(S, S)`` scores of every state pair: the tied in-chain transitions of every
    chain, plus the joint-state transition weights ``state_trans`` (``(S, S)`` or
    None) of a model that has them."""
    S = len(states)
    trans = np.zeros((S, S)) if state_trans is None else np.array(state_trans, dtype=np.float64)
    if trans.shape != (S, S):
        raise ValueError(f"state_trans must have shape ({S}, {S}), got {trans.shape}")
    for e in range(graph.n_edges):
        if graph.edge_kind[e] == IN_CHAIN:
            a = int(graph.edge_a[e])
            L = int(graph.n_labels[a])
            W = pair[edge_offset[e]:edge_offset[e] + L * L].reshape(L, L)
            trans += W[states[:, a][:, None], states[:, a][None, :]]
    return trans


def _prepare(graph, states, seq_ptr, unary, pair, state_trans=None):
    """Validated arrays and the kernels' tables: couplings and the state transition matrix."""
    states = np.ascontiguousarray(states, dtype=np.int32)
    if states.ndim != 2 or states.shape[1] != graph.n_chains or states.shape[0] < 1:
        raise ValueError(f"states must have shape (S >= 1, {graph.n_chains}), got {states.shape}")
    if states.shape[0] > MAX_JOINT_STATES:
        raise ValueError(f"{states.shape[0]} joint states exceed the limit of "
                         f"{MAX_JOINT_STATES}; use TRP inference")
    for c in range(graph.n_chains):
        if states[:, c].min() < 0 or states[:, c].max() >= graph.n_labels[c]:
            raise ValueError(f"states: labels of chain {c} out of range")
    seq_ptr = np.ascontiguousarray(seq_ptr, dtype=np.int64)
    n = int(seq_ptr[-1])
    unary = np.ascontiguousarray(unary, dtype=np.float64)
    if unary.shape != (n, graph.total_labels):
        raise ValueError(f"unary has shape {unary.shape}, expected ({n}, {graph.total_labels})")
    edge_offset = pair_layout(graph, n)
    pair = np.ascontiguousarray(pair, dtype=np.float64)
    if pair.shape != (int(edge_offset[-1]),):
        raise ValueError(f"pair must have length {int(edge_offset[-1])}, got {pair.shape}")
    if any(graph.edge_kind[e] == IN_CHAIN and not graph.edge_tied[e]
           for e in range(graph.n_edges)):
        raise ValueError("joint-state inference needs tied in-chain templates "
                         "(transition_features='default')")
    trans = state_transition_scores(graph, states, pair, edge_offset, state_trans)
    cpl = []
    for e in range(graph.n_edges):
        a, b = int(graph.edge_a[e]), int(graph.edge_b[e])
        la, lb = int(graph.n_labels[a]), int(graph.n_labels[b])
        if graph.edge_kind[e] == COUPLING:
            cpl.append((a, b, la, lb, int(edge_offset[e]), int(graph.edge_tied[e])))
    cols = list(zip(*cpl)) if cpl else [()] * 6
    tables = dict(
        cpl_a=np.asarray(cols[0], np.int32), cpl_b=np.asarray(cols[1], np.int32),
        cpl_la=np.asarray(cols[2], np.int32), cpl_lb=np.asarray(cols[3], np.int32),
        cpl_off=np.asarray(cols[4], np.int64), cpl_tied=np.asarray(cols[5], np.int32))
    label_offset = np.ascontiguousarray(graph.label_offset, dtype=np.int32)
    tables["unary_index"] = np.ascontiguousarray(label_offset[:graph.n_chains] + states,
                                                 dtype=np.int32)
    tables["cpl_index"] = np.array([states[:, a] * lb + states[:, b]
                                    for a, b, _, lb, _, _ in cpl],
                                   dtype=np.int32).reshape(len(cpl), len(states))
    return states, seq_ptr, unary, pair, label_offset, tables, trans


def transition_tables(values, allowed, sparse=None):
    """The kernels' transition arguments for an ``S x S`` matrix of ``values``.

    ``allowed`` marks the state pairs that may follow each other.  Dense form
    (``sparse=False``; by default when more than :data:`SPARSE_DENSITY` of the
    pairs are allowed): ``dense``/``dense_t`` hold ``values`` row-major and
    transposed and the CSR tables are empty.  Sparse form: ``dense``/``dense_t``
    are empty; ``out_*`` is the CSR of the allowed pairs by row (successors of a
    state), ``in_*`` the CSR of the transpose (predecessors), columns ascending.
    ``rows``/``cols`` give the ``out`` order's pairs.
    """
    S = values.shape[0]
    if sparse is None:
        sparse = allowed.sum() <= SPARSE_DENSITY * S * S
    empty_f, empty_i = np.zeros(0), np.zeros(0, np.int32)
    if not sparse:
        zero_ptr = np.zeros(S + 1, np.int64)
        return dict(dense=np.ascontiguousarray(values.ravel()),
                    dense_t=np.ascontiguousarray(values.T.ravel()),
                    out_ptr=zero_ptr, out_idx=empty_i, out_val=empty_f,
                    in_ptr=zero_ptr, in_idx=empty_i, in_val=empty_f, sparse=False)
    rows, cols = np.nonzero(allowed)                     # row-major: out order
    out_ptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=S))])
    t_cols, t_rows = np.nonzero(allowed.T)               # by successor, predecessors ascending
    in_ptr = np.concatenate([[0], np.cumsum(np.bincount(t_cols, minlength=S))])
    return dict(dense=empty_f, dense_t=empty_f,
                out_ptr=out_ptr.astype(np.int64), out_idx=cols.astype(np.int32),
                out_val=np.ascontiguousarray(values[rows, cols]),
                in_ptr=in_ptr.astype(np.int64), in_idx=t_rows.astype(np.int32),
                in_val=np.ascontiguousarray(values[t_rows, t_cols]),
                rows=rows, cols=cols, sparse=True)


def joint_map(graph, states, seq_ptr, unary, pair, n_threads=1, sparse=None, state_trans=None):
    """Exact most probable labelling over the joint states.

    ``state_trans`` ``(S, S)``: joint-state transition weights added to the
    in-chain transitions (:func:`state_transition_scores`), or None.

    Returns
    -------
    labels : int32 ndarray of shape (N, C)
    score : float64 ndarray of shape (n_seq,)
        The labelling's score (sum of its log-potentials); ``-inf`` when no
        labelling of the sequence is allowed (its labels are then those of
        state 0).  Ties go to the labelling whose states are smallest, from the
        end of the sequence backwards.
    """
    states, seq_ptr, unary, pair, loff, t, trans = _prepare(graph, states, seq_ptr, unary, pair,
                                                            state_trans)
    n_seq = len(seq_ptr) - 1
    labels = np.zeros((unary.shape[0], graph.n_chains), np.int32)
    score = np.zeros(n_seq)
    tr = transition_tables(trans, np.isfinite(trans), sparse)
    _kernel().joint_viterbi(_kernel().JointTables(states, loff, t, tr), seq_ptr, unary, pair,
                            labels, score, max(1, int(n_threads)))
    return labels, score


def _onehot(states, columns, n_columns):
    """Sparse ``(S, n_columns)`` matrix with a 1 at ``(s, columns[s])`` for every state."""
    S = len(states)
    return sp.csr_matrix((np.ones(S), (np.arange(S), columns)), shape=(S, n_columns))


def joint_marginals(graph, states, seq_ptr, unary, pair, n_threads=1, pair_marginals=False,
                    sparse=None, state_trans=None, state_pairs=False):
    """Exact per-chain label marginals and ``log Z`` over the joint states.

    ``state_trans`` as for :func:`joint_map`.  With ``state_pairs=True`` (and
    ``pair_marginals=True``) also the expected number of times each state pair
    follows each other, ``(S, S)``, summed over all sequences.

    Returns
    -------
    node : float64 ndarray of shape (N, Ltot)
        Per token and chain the marginal of every label (zero for labels in
        no allowed state).
    pair_marg : float64 ndarray laid out like ``pair``
        Only with ``pair_marginals=True``, as
        :func:`skfcrf._kernels.batch.marginals` returns it: tied templates the
        expected counts summed over positions, untied ones per position.
    log_z : float64 ndarray of shape (n_seq,)
        ``-inf`` (and zero marginals) when no labelling is allowed.
    """
    states, seq_ptr, unary, pair, loff, t, trans = _prepare(graph, states, seq_ptr, unary, pair,
                                                            state_trans)
    finite = np.isfinite(trans)
    shift = float(trans[finite].max()) if finite.any() else 0.0
    with np.errstate(under="ignore"):
        trans_exp = np.where(finite, np.exp(np.where(finite, trans - shift, 0.0)), 0.0)
    n, S = unary.shape[0], states.shape[0]
    n_threads = max(1, int(n_threads))
    edge_offset = pair_layout(graph, n)
    node = np.zeros((n, graph.total_labels))
    pmarg = np.zeros(max(int(edge_offset[-1]), 1))
    tied_sizes = [int(la) * int(lb) if tied else 0 for la, lb, tied in
                  zip(t["cpl_la"], t["cpl_lb"], t["cpl_tied"])]
    tied_off = np.concatenate([[0], np.cumsum(tied_sizes)]).astype(np.int64)
    tied_acc = np.zeros((n_threads, max(int(tied_off[-1]), 1)))
    log_z = np.zeros(len(seq_ptr) - 1)
    tr = transition_tables(trans_exp, finite, sparse)
    width = len(tr["out_val"]) if tr["sparse"] else S * S
    counts = np.zeros((n_threads if pair_marginals else 1, max(width, 1)))
    _kernel().joint_forward_backward(
        _kernel().JointTables(states, loff, t, tr, shift, tied_off),
        seq_ptr, unary, pair, node, pmarg, tied_acc, log_z,
        counts if pair_marginals else None, n_threads)
    if not pair_marginals:
        return node, log_z
    pmarg = pmarg[:int(edge_offset[-1])]
    if tr["sparse"]:                                             # state transition counts
        expected = np.zeros((S, S))
        expected[tr["rows"], tr["cols"]] = counts.sum(axis=0)[:width] * tr["out_val"]
    else:
        expected = counts.sum(axis=0).reshape(S, S) * trans_exp
    tied_total = tied_acc.sum(axis=0)
    k = 0
    for e in range(graph.n_edges):
        a = int(graph.edge_a[e])
        block = pmarg[edge_offset[e]:edge_offset[e + 1]]
        if graph.edge_kind[e] == IN_CHAIN:
            H = _onehot(states, states[:, a], int(graph.n_labels[a]))
            block[:] = np.asarray(H.T @ (H.T @ expected.T).T).ravel()
        else:
            if graph.edge_tied[e]:
                block[:] = tied_total[tied_off[k]:tied_off[k + 1]]
            k += 1
    if state_pairs:
        return node, pmarg, log_z, expected
    return node, pmarg, log_z


def underflowed(log_z, lower):
    """Indices of the sequences whose ``log Z`` fell below ``lower``, the score of one of
    their labellings (Viterbi's or the gold one): the scaled forward pass lost a state
    whose relative mass underflowed (:func:`skfcrf._kernels.states.logdomain_state_marginals`)."""
    with np.errstate(invalid="ignore"):
        return np.flatnonzero(np.isfinite(lower)
                              & (log_z < lower - 1e-9 * np.maximum(1.0, np.abs(lower))))
