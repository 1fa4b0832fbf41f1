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
import itertools

import numpy as np
import scipy.sparse as sp

from skfcrf._kernels.graph import COUPLING, IN_CHAIN, pair_layout

__all__ = ["MAX_JOINT_STATES", "grouped_tables", "backoff_cancels", "backoff_columns",
           "backoff_expectations", "split_backoff_counts",
 "SPARSE_DENSITY", "joint_states_from_labels", "state_index", "supports_joint", "unique_rows",
           "state_transition_scores",
           "underflowed", "nonfinite_sequences",
           "transition_tables", "joint_map", "joint_marginals", "joint_log_partition",
           "joint_map_and_log_partition"]

#: Largest number of joint states :func:`joint_map` / :func:`joint_marginals` accept.
MAX_JOINT_STATES = 4096

#: The kernels use the sparse form of the state transitions when at most this
#: fraction of the state pairs is allowed (below it, CSR products beat BLAS).
SPARSE_DENSITY = 0.15

#: Dense transitions over at least this many states step the forward-backward in
#: single precision (the BLAS products only; the kernel checks every token's
#: range and falls back to double precision where single could lose what
#: matters, :func:`skfcrf._kernels._joint._fb_block`): twice the products per
#: cycle, where they are most of the time.  Smaller models stay in double.
SINGLE_PRECISION_STATES = 128


def unique_rows(rows):
    """The distinct rows of the 2-D integer array ``rows``, sorted lexicographically
    (``np.unique(rows, axis=0)``).

    Rows of non-negative entries are sorted as one mixed-radix code each (the first
    column most significant, so the order is kept): a 1-D sort of integers, where
    ``np.unique(axis=0)`` sorts rows as structured values (5-20x slower on the
    hundreds of thousands of token rows of a training set).  Negative entries, or
    codes beyond 62 bits, take ``np.unique``.
    """
    rows = np.asarray(rows)
    if rows.size == 0 or rows.min() < 0:
        return np.unique(rows, axis=0)
    radix = rows.max(axis=0).astype(np.int64) + 1
    if np.prod(radix.astype(float)) >= 2.0 ** 62:
        return np.unique(rows, axis=0)
    weights = np.concatenate([np.cumprod(radix[::-1])[::-1][1:], [1]]).astype(np.int64)
    codes = np.unique(rows.astype(np.int64) @ weights)
    return ((codes[:, None] // weights) % radix).astype(rows.dtype)


def joint_states_from_labels(gold):
    """The distinct label combinations (rows) of ``gold`` ``(N, C)``, sorted, int32."""
    gold = np.asarray(gold)
    if gold.ndim != 2:
        raise ValueError(f"gold must be 2-D (N, n_chains), got shape {gold.shape}")
    # missing labels (-1) are compared as they are
    return np.ascontiguousarray(unique_rows(gold), dtype=np.int32)


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


def _prepare(graph, states, seq_ptr, unary, pair, state_trans=None, dense=True):
    """Validated arrays and the kernels' tables: couplings and the state transition matrix
    (None unless ``dense``: the grouped form builds its own tables)."""
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
    trans = (state_transition_scores(graph, states, pair, edge_offset, state_trans)
             if dense else None)
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


def joint_map(graph, states, seq_ptr, unary, pair, n_threads=1, sparse=None, state_trans=None,
              backoff=None):
    """Exact most probable labelling over the joint states.

    ``state_trans`` ``(S, S)``: joint-state transition weights added to the
    in-chain transitions (:func:`state_transition_scores`), or None.
    ``backoff``: chain -> ``(L, L)`` mask of the in-chain pairs that share a
    back-off weight per target label (:func:`grouped_tables`), or None.  Then
    the grouped kernel finds the best path under an upper bound of the scores;
    a sequence whose path does not score its bound is decoded again with the
    dense transitions, so the result is exact either way.

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
                                                            state_trans, not backoff)
    labels = np.zeros((unary.shape[0], graph.n_chains), np.int32)
    score = np.zeros(len(seq_ptr) - 1)
    tr = _max_tables(graph, states, seq_ptr, pair, trans, state_trans, backoff, sparse)
    _kernel().joint_viterbi(_kernel().JointTables(states, loff, t, tr), seq_ptr, unary, pair,
                            labels, score, max(1, int(n_threads)))
    if backoff:
        _exact_backoff_scores(graph, states, seq_ptr, unary, pair, labels, score, n_threads,
                              state_trans)
    return labels, score


def _max_tables(graph, states, seq_ptr, pair, trans, state_trans, backoff, sparse=None):
    """:func:`joint_map`'s transition tables: the grouped ones of the relaxed
    (upper-bound) scores with ``backoff``, else those of ``trans``
    (:func:`transition_tables`)."""
    if backoff:
        edge_offset = pair_layout(graph, int(seq_ptr[-1]))
        return grouped_tables(graph, states, pair, edge_offset, state_trans, backoff, True)[0]
    return transition_tables(trans, np.isfinite(trans), sparse)


def _exact_backoff_scores(graph, states, seq_ptr, unary, pair, labels, score, n_threads,
                          state_trans):
    """After the grouped Viterbi (scores of the relaxed bound): every sequence's exact
    score into ``score``, and the sequences whose labelling does not attain its bound
    decoded again with the dense transitions (labels and score), so that the result
    is exact."""
    from skfcrf._kernels.states import labelling_scores, state_path_scores, sub_batch
    exact = (labelling_scores(graph, seq_ptr, unary, pair, labels)
             + state_path_scores(states, seq_ptr, labels, state_trans))
    loose = np.flatnonzero(~(exact >= score - 1e-9 * np.maximum(1.0, np.abs(score))))
    score[:] = exact
    if len(loose):                  # the bound was not attained: decode densely
        sub_ptr, sub_unary, sub_pair, rows = sub_batch(graph, seq_ptr, unary, pair, loose)
        labels[rows], score[loose] = joint_map(graph, states, sub_ptr, sub_unary, sub_pair,
                                               n_threads, False, state_trans)


def joint_map_and_log_partition(graph, states, seq_ptr, unary, pair, n_threads=1, sparse=None,
                                state_trans=None, backoff=None):
    """:func:`joint_map`'s labels and scores and :func:`joint_log_partition`'s ``log Z``
    (same arguments), the same values: in one sweep over the tokens where both take
    the sparse or the grouped form (the kernel computes each token's state scores
    once for both, ``joint_decode``), else one after the other.

    Returns
    -------
    labels, score, log_z
    """
    states, seq_ptr, unary, pair, loff, t, trans = _prepare(graph, states, seq_ptr, unary, pair,
                                                            state_trans, not backoff)
    n_threads = max(1, int(n_threads))
    tr_max = _max_tables(graph, states, seq_ptr, pair, trans, state_trans, backoff, sparse)
    tr_sum, shift = _sum_tables(graph, states, seq_ptr, pair, trans, state_trans, backoff,
                                sparse)
    jt_max = _kernel().JointTables(states, loff, t, tr_max)
    labels = np.zeros((unary.shape[0], graph.n_chains), np.int32)
    score, log_z = np.zeros(len(seq_ptr) - 1), np.zeros(len(seq_ptr) - 1)
    if tr_max["dense"].size or tr_sum["dense"].size:
        _kernel().joint_viterbi(jt_max, seq_ptr, unary, pair, labels, score, n_threads)
        log_z = _forward_backward(graph, states, seq_ptr, unary, pair, n_threads, False, loff,
                                  t, tr_sum, shift, forward_only=True)[2]
    else:
        _kernel().joint_decode(jt_max, _kernel().JointTables(states, loff, t, tr_sum, shift),
                               seq_ptr, unary, pair, labels, score, log_z, n_threads)
    if backoff:
        _exact_backoff_scores(graph, states, seq_ptr, unary, pair, labels, score, n_threads,
                              state_trans)
    return labels, score, log_z


def _onehot(states, columns, n_columns):
    """Sparse ``(S, n_columns)`` matrix with a 1 at ``(s, columns[s])`` for every state."""
    S = len(states)
    return sp.csr_matrix((np.ones(S), (np.arange(S), columns)), shape=(S, n_columns))


def joint_marginals(graph, states, seq_ptr, unary, pair, n_threads=1, pair_marginals=False,
                    sparse=None, state_trans=None, state_pairs=False, backoff=None, out=None,
                    marginals=True):
    """Exact per-chain label marginals and ``log Z`` over the joint states.

    ``state_trans`` and ``backoff`` as for :func:`joint_map`.  With
    ``state_pairs=True`` (and ``pair_marginals=True``) also the expected number
    of times each state pair follows each other, ``(S, S)``, summed over all
    sequences (not with ``backoff``).  With ``backoff`` and ``pair_marginals``
    the in-chain blocks of ``pair_marg`` hold the expected counts of the pairs
    that are not back-off pairs (zero at those), and a fourth output gives per
    back-off chain the expected number of back-off transitions into every label
    (:func:`backoff_expectations`).  ``out``: a float64 C-contiguous ``(N, Ltot)``
    array to write ``node`` into (every entry is written), so that a caller who
    computes marginals again and again can keep one array instead of having a new
    one cleared by the operating system each time; None allocates one.
    ``marginals=False`` (with ``pair_marginals`` and ``state_pairs``): ``log Z`` and the
    expected state pair counts alone, ``node`` and ``pair_marg`` (and with ``backoff``
    the back-off expectations) None -- both passes run, but the marginals are not
    summed (what the joint-state transition stages need, about a fifth of the work
    less; with ``backoff`` only where the grouped kernel runs).

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
    if not marginals and not (pair_marginals and state_pairs):
        raise ValueError("marginals=False needs pair_marginals=True and state_pairs=True")
    states, seq_ptr, unary, pair, loff, t, trans = _prepare(graph, states, seq_ptr, unary, pair,
                                                            state_trans, not backoff)
    if backoff:
        return _backoff_marginals(graph, states, seq_ptr, unary, pair, n_threads,
                                  pair_marginals, state_trans, backoff, loff, t, state_pairs,
                                  out, marginals)
    S = states.shape[0]
    tr, shift, trans_exp = _exp_tables(trans, sparse)
    node, pmarg, log_z, counts, edge_offset = _forward_backward(
        graph, states, seq_ptr, unary, pair, n_threads, pair_marginals, loff, t, tr, shift,
        out=out, marginals=marginals)
    if not pair_marginals:
        return node, log_z
    if tr["sparse"]:                                             # state transition counts
        expected = np.zeros((S, S))
        expected[tr["rows"], tr["cols"]] = counts * tr["out_val"]
    else:
        expected = counts.reshape(S, S) * trans_exp
    if not marginals:
        return None, None, log_z, expected
    for e in range(graph.n_edges):
        if graph.edge_kind[e] == IN_CHAIN:
            a = int(graph.edge_a[e])
            H = _onehot(states, states[:, a], int(graph.n_labels[a]))
            pmarg[edge_offset[e]:edge_offset[e + 1]] = np.asarray(
                H.T @ (H.T @ expected.T).T).ravel()
    if state_pairs:
        return node, pmarg, log_z, expected
    return node, pmarg, log_z


def joint_log_partition(graph, states, seq_ptr, unary, pair, n_threads=1, sparse=None,
                        state_trans=None, backoff=None):
    """``log Z`` per sequence over the joint states by the forward pass alone: the
    ``log_z`` of :func:`joint_marginals` (same arguments) at half its work."""
    states, seq_ptr, unary, pair, loff, t, trans = _prepare(graph, states, seq_ptr, unary, pair,
                                                            state_trans, not backoff)
    tr, shift = _sum_tables(graph, states, seq_ptr, pair, trans, state_trans, backoff, sparse)
    return _forward_backward(graph, states, seq_ptr, unary, pair, n_threads, False, loff, t, tr,
                             shift, forward_only=True)[2]


def _sum_tables(graph, states, seq_ptr, pair, trans, state_trans, backoff, sparse=None):
    """:func:`joint_log_partition`'s transition tables and shift: the grouped ones with
    ``backoff`` (or dense, :func:`_backoff_form`), else those of ``exp(trans - shift)``
    (:func:`_exp_tables`)."""
    grouped = (_backoff_form(graph, states, seq_ptr, pair, state_trans, backoff) if backoff
               else None)
    if grouped is not None:
        return grouped[0], grouped[1]
    if trans is None:                   # back-off weights in the pair potentials, dense
        trans = state_transition_scores(graph, states, pair,
                                        pair_layout(graph, int(seq_ptr[-1])), state_trans)
        sparse = False
    tr, shift, _ = _exp_tables(trans, sparse)
    return tr, shift


def _exp_tables(trans, sparse):
    """The kernels' tables of ``exp(trans - shift)`` (:func:`transition_tables`; in single
    precision too from :data:`SINGLE_PRECISION_STATES` dense states): ``(tables, shift,
    exp values)``."""
    finite = np.isfinite(trans)
    shift = float(trans[finite].max()) if finite.any() else 0.0
    with np.errstate(under="ignore"):
        trans_exp = np.where(finite, np.exp(np.where(finite, trans - shift, 0.0)), 0.0)
    tr = transition_tables(trans_exp, finite, sparse)
    if not tr["sparse"] and trans.shape[0] >= SINGLE_PRECISION_STATES:
        tr["dense32"] = tr["dense"].astype(np.float32)
    return tr, shift, trans_exp


def _forward_backward(graph, states, seq_ptr, unary, pair, n_threads, pair_marginals, loff, t,
                      tr, shift, forward_only=False, out=None, marginals=True):
    """Run the forward-backward kernel over transition tables ``tr`` (any form):
    ``node, pmarg, log_z, counts, edge_offset`` (``forward_only``: only ``log_z`` is
    filled; ``marginals=False``: ``log_z`` and ``counts``), ``pmarg`` with the coupling
    marginals (the in-chain blocks are the caller's to fill) and ``counts`` the
    kernel's pair accumulators summed over threads (None without
    ``pair_marginals``; with ``marginals=False`` and grouped tables, the full term's
    entries alone); ``node`` is ``out`` when given (:func:`joint_marginals`)."""
    n = unary.shape[0]
    n_threads = max(1, int(n_threads))
    edge_offset = pair_layout(graph, n)
    if forward_only or not marginals:
        node = np.zeros((0, graph.total_labels))
    elif out is None:
        node = np.empty((n, graph.total_labels))        # the kernel writes every row
    else:
        node = out
        if (not isinstance(node, np.ndarray) or node.dtype != np.float64
                or node.shape != (n, graph.total_labels) or not node.flags.c_contiguous
                or not node.flags.writeable):
            raise ValueError(f"out must be a writeable C-contiguous float64 array of shape "
                             f"({n}, {graph.total_labels})")
    pmarg = np.zeros(1 if forward_only or not marginals else max(int(edge_offset[-1]), 1))
    tied_sizes = [int(la) * int(lb) if tied else 0 for la, lb, tied in
                  zip(t["cpl_la"], t["cpl_lb"], t["cpl_tied"])]
    tied_off = np.concatenate([[0], np.cumsum(tied_sizes)]).astype(np.int64)
    tied_acc = np.zeros((n_threads, max(int(tied_off[-1]), 1)))
    log_z = np.zeros(len(seq_ptr) - 1)
    width = len(tr["out_val"]) if tr["sparse"] else len(states) ** 2
    counts = np.zeros((n_threads, max(width, 1))) if pair_marginals else None
    _kernel().joint_forward_backward(
        _kernel().JointTables(states, loff, t, tr, shift, tied_off),
        seq_ptr, unary, pair, node, pmarg, tied_acc, log_z, counts, n_threads, forward_only,
        marginals)
    if not pair_marginals:
        return node, None, log_z, None, edge_offset
    if not marginals:
        return None, None, log_z, counts.sum(axis=0)[:width], edge_offset
    pmarg = pmarg[:int(edge_offset[-1])]
    tied_total = tied_acc.sum(axis=0)
    k = 0
    for e in range(graph.n_edges):
        if graph.edge_kind[e] == COUPLING:
            if graph.edge_tied[e]:
                pmarg[edge_offset[e]:edge_offset[e + 1]] = tied_total[tied_off[k]:tied_off[k + 1]]
            k += 1
    return node, pmarg, log_z, counts.sum(axis=0)[:width], edge_offset


def _backoff_marginals(graph, states, seq_ptr, unary, pair, n_threads, pair_marginals,
                       state_trans, backoff, loff, t, state_pairs=False, out=None,
                       marginals=True):
    """:func:`joint_marginals` with back-off transitions (grouped kernel, or the dense
    one where :func:`_dense_is_cheaper` or the grouped form would cancel); with
    ``state_pairs`` a fifth output: the expected state pair counts ``(S, S)`` of
    the pairs whose in-chain transitions are all seen (the others zero).
    ``marginals=False``: the first, second and fourth outputs None (the dense
    kernel computes them all the same)."""
    grouped = _backoff_form(graph, states, seq_ptr, pair, state_trans, backoff)
    if grouped is None:
        out = _dense_backoff_marginals(graph, states, seq_ptr, unary, pair, n_threads,
                                       pair_marginals, state_trans, backoff, state_pairs, out)
        return out if marginals else (None, None, out[2], None, out[4])
    tr, shift, terms = grouped
    node, pmarg, log_z, counts, edge_offset = _forward_backward(
        graph, states, seq_ptr, unary, pair, n_threads, pair_marginals, loff, t, tr, shift,
        out=out, marginals=marginals)
    if not pair_marginals:
        return node, log_z
    if not marginals:
        return None, None, log_z, None, _full_term_counts(states, terms, counts, backoff)
    pair_counts, unseen = backoff_expectations(graph, states, seq_ptr, node, terms, counts,
                                               backoff)
    for e in range(graph.n_edges):
        if graph.edge_kind[e] == IN_CHAIN:
            pmarg[edge_offset[e]:edge_offset[e + 1]] = pair_counts[int(graph.edge_a[e])].ravel()
    if not state_pairs:
        return node, pmarg, log_z, unseen
    return node, pmarg, log_z, unseen, _full_term_counts(states, terms, counts, backoff)


#: Back-off transitions take the dense forward-backward instead of the grouped one
#: when a dense step is at most this many times the grouped step's operations
#: (``S**2`` against ``K * S + nnz``) and the longest sequences run in lockstep
#: blocks of at least :data:`DENSE_BACKOFF_BLOCK`: matrix-matrix products over such
#: blocks do about that many more operations per second than the grouped form's
#: sparse steps (CoNLL-2000 POS + chunks, 251 states: 2.7 times the operations, the
#: back-off fit 13.0 s dense against 23.1 s grouped; the dictations, 384 states of
#: reports of 460-810 tokens: 16 times, and grouped is faster).
DENSE_BACKOFF_RATIO = 8
DENSE_BACKOFF_BLOCK = 16


def _backoff_form(graph, states, seq_ptr, pair, state_trans, backoff):
    """The grouped tables ``(tables, shift, terms)`` of back-off transitions, or None
    where the dense form takes them: the grouped form would cancel
    (:func:`backoff_cancels`) or the dense one is cheaper (:func:`_dense_is_cheaper`)."""
    edge_offset = pair_layout(graph, int(seq_ptr[-1]))
    if backoff_cancels(graph, pair, edge_offset, backoff):
        return None
    split = split_chains(graph, states, pair, edge_offset, backoff)
    grouped = grouped_tables(graph, states, pair, edge_offset, state_trans,
                             {c: backoff[c] for c in split}, False)
    return None if _dense_is_cheaper(grouped[0], len(states), seq_ptr) else grouped


#: The chains :func:`split_chains` chose per structure (states, finite in-chain
#: potentials and back-off masks): a fit evaluates the same few over and over.
_SPLITS = {}


def split_chains(graph, states, pair, edge_offset, backoff):
    """The chains whose back-off transitions the grouped tables split off as a term
    of their own (:func:`grouped_tables`); the others enter every term with their
    whole ``(L, L)`` potentials, back-off pairs included.

    Splitting chain ``c`` makes its transitions ``beta_c(j) + x_c(i, j)``, sparse
    ``x_c``, which doubles the terms; not splitting it keeps all its pairs in
    every term's entries.  A chain with few labels whose pairs are mostly seen is
    cheaper whole (the dictations' 7 section-level labels: a grouped step of 7,763
    entries against 9,553 with every chain split).  The choice is the subset of
    ``backoff``'s chains (not empty) whose grouped step reads the fewest entries:
    the terms' entries and their projection tree (:func:`_grouped_shape`), all of
    them tried up to four chains, every chain split beyond."""
    states = np.asarray(states)
    chains = sorted(backoff)
    blocks = _inchain_blocks(graph, pair, edge_offset)
    finite = [np.isfinite(blocks[c]) for c in range(states.shape[1])]
    key = (states.tobytes(), states.shape) + tuple(f.tobytes() for f in finite) + tuple(
        (c, np.asarray(backoff[c], bool).tobytes()) for c in chains)
    split = _SPLITS.get(key)
    if split is not None:
        return split
    if len(chains) <= 1 or len(chains) > 4:
        split = tuple(chains)
    else:
        whole = [(f, np.zeros(f.shape[1], bool)) for f in finite]
        parted = {}
        for c in chains:
            b, M = backoff_columns(blocks[c], backoff[c])
            parted[c] = (M & (finite[c] | np.isfinite(b)[None, :]), np.isfinite(b))
        best = None
        for r in range(len(chains), 0, -1):
            for subset in itertools.combinations(chains, r):
                parts = [parted[c] if c in subset else whole[c] for c in range(len(whole))]
                shape = _grouped_shape(states, [p[0] for p in parts], [p[1] for p in parts],
                                       cache=False)
                tables = shape["tables"]
                cost = (len(tables["in_idx"]) + len(shape["tree"]["down_idx"])
                        + len(shape["tree"]["up_idx"]))
                if best is None or cost < best[0]:
                    best = (cost, subset)
        split = best[1]
    if len(_SPLITS) >= _MAX_SHAPES:
        _SPLITS.pop(next(iter(_SPLITS), None), None)
    _SPLITS[key] = split
    return split


def _dense_is_cheaper(tr, S, seq_ptr):
    """Whether the dense forward-backward beats the grouped tables ``tr``."""
    grouped = tr["group"].shape[0] * S + len(tr["in_val"])
    if S * S > DENSE_BACKOFF_RATIO * grouped:
        return False
    _, block_ptr, _ = _kernel().lockstep_blocks(np.ascontiguousarray(seq_ptr, np.int64), S, True)
    return len(block_ptr) > 1 and block_ptr[1] - block_ptr[0] >= DENSE_BACKOFF_BLOCK


#: How far (nats) a back-off weight may exceed a seen transition's potential into the
#: same label before the grouped forward-backward gives way to the dense one: the
#: grouped form scores that pair as ``exp(b) + (exp(T) - exp(b))``, which loses
#: ``exp(b - T)`` times the double precision (here at most about 1e-7 relative).
CANCELLATION_NATS = 20.0


def backoff_cancels(graph, pair, edge_offset, backoff):
    """Whether some chain's back-off weight into a label exceeds a seen (not back-off,
    allowed) transition's potential into it by more than :data:`CANCELLATION_NATS`."""
    for c, block in _inchain_blocks(graph, pair, edge_offset).items():
        mask = backoff.get(c)
        if mask is None:
            continue
        b, M = backoff_columns(block, mask)
        seen = M & np.isfinite(block)
        with np.errstate(invalid="ignore"):
            gap = np.where(seen, b[None, :] - block, -np.inf)
        if gap.max(initial=-np.inf) > CANCELLATION_NATS:
            return True
    return False


def _dense_backoff_marginals(graph, states, seq_ptr, unary, pair, n_threads, pair_marginals,
                             state_trans, backoff, state_pairs, out=None):
    """:func:`_backoff_marginals` by the dense kernel (the pair potentials hold the
    back-off weights at the back-off pairs): no cancellation whatever the weights,
    ``S**2`` work per step.  Like every scaled pass it loses the paths more than
    about 745 nats below the largest potential (a back-off weight far above the
    seen transitions): :func:`~skfcrf._kernels.states.rescue_sequences` redoes such
    sequences."""
    if not pair_marginals:
        return joint_marginals(graph, states, seq_ptr, unary, pair, n_threads, sparse=False,
                               state_trans=state_trans, out=out)
    node, pmarg, log_z, expected = joint_marginals(
        graph, states, seq_ptr, unary, pair, n_threads, pair_marginals=True, sparse=False,
        state_trans=state_trans, state_pairs=True, out=out)
    unseen, expected = split_backoff_counts(graph, states, pmarg,
                                            pair_layout(graph, unary.shape[0]), backoff, expected)
    if not state_pairs:
        return node, pmarg, log_z, unseen
    return node, pmarg, log_z, unseen, expected


def split_backoff_counts(graph, states, pmarg, edge_offset, backoff, state_counts=None):
    """Take the back-off pairs' expected counts out of the in-chain blocks of ``pmarg``
    (in place: zero there), as :func:`joint_marginals` with ``backoff`` gives them, from
    counts over every pair: ``(unseen, kept)``, ``unseen`` per back-off chain the
    expected back-off transitions into each label, ``kept`` the state pair counts
    ``state_counts`` ``(S, S)`` of the pairs with no back-off transition (None without
    them)."""
    unseen = {}
    allowed = None if state_counts is None else np.ones(state_counts.shape, bool)
    for e in range(graph.n_edges):
        if graph.edge_kind[e] != IN_CHAIN:
            continue
        c, L = int(graph.edge_a[e]), int(graph.n_labels[graph.edge_a[e]])
        mask = backoff.get(c)
        if mask is None:
            continue
        mask = np.asarray(mask, bool)
        block = pmarg[edge_offset[e]:edge_offset[e + 1]].reshape(L, L)
        unseen[c] = np.where(mask, block, 0.0).sum(axis=0)
        block[mask] = 0.0
        if allowed is not None:
            allowed &= ~mask[states[:, c][:, None], states[:, c][None, :]]
    return unseen, None if state_counts is None else np.where(allowed, state_counts, 0.0)


def backoff_expectations(graph, states, seq_ptr, node, terms, counts, backoff):
    """Expected in-chain transition counts from the grouped forward-backward.

    ``counts``: per ``out`` CSR entry of :func:`grouped_tables`'s tables the sum
    over tokens of ``alpha_{t-1}`` over the source group times ``w_t`` over the
    target group.  A pair ``(i, j)`` of chain ``c`` that is not a back-off pair
    enters ``E`` through ``x_c(i, j)``, so its expected count is ``e_c(i, j)``
    times the derivative of the summed terms by ``x_c(i, j)``; the back-off
    transitions into ``j`` are the rest of the expected transitions into ``j``
    (the label marginals of the tokens after the first).

    Returns
    -------
    pair_counts : dict
        Chain -> ``(L, L)`` expected counts (zero at the back-off pairs).
    unseen : dict
        Back-off chain -> ``(L,)`` expected back-off transitions into each label.
    """
    C = graph.n_chains
    xs, betas, st = terms["x"], terms["beta"], terms["state_trans"]
    src, dst, term = terms["src"], terms["dst"], terms["term"]
    pair_counts = {c: np.zeros((int(graph.n_labels[c]),) * 2) for c in range(C)}
    for k, (Q, proj, off) in enumerate(terms["chains"]):
        sel = term == k
        if not Q or not sel.any():
            continue
        cnt = counts[sel]
        gl, hl = proj[src[sel] - off], proj[dst[sel] - off]
        xq = [xs[c][gl[:, q], hl[:, q]] for q, c in enumerate(Q)]
        full = None
        if len(Q) == C and st is not None:
            w = st[_state_rows(states, gl), _state_rows(states, hl)]
            full = np.expm1(w)
            eq = [xq[q] + betas[c][hl[:, q]] for q, c in enumerate(Q)]
        for q, c in enumerate(Q):
            others = np.ones(len(cnt))
            for r in range(len(Q)):
                if r != q:
                    others = others * xq[r]
            d = cnt * others
            if full is not None:
                e_others = np.ones(len(cnt))
                for r in range(len(Q)):
                    if r != q:
                        e_others = e_others * eq[r]
                d = d + cnt * full * e_others
            L = pair_counts[c].shape[0]
            pair_counts[c] += np.bincount(gl[:, q] * L + hl[:, q], weights=d,
                                          minlength=L * L).reshape(L, L)
    starts = np.asarray(seq_ptr[:-1], np.int64)
    starts = starts[np.diff(seq_ptr) > 0]
    # every label's expected transitions into it: its marginals summed over the tokens
    # after the first (one pass over ``node`` for all the chains)
    into = node.sum(axis=0) - node[starts].sum(axis=0)
    unseen = {}
    for c in range(C):
        b_mask = backoff.get(c)
        split = b_mask is not None and c in terms["split"]
        M = ~np.asarray(b_mask, bool) if split else np.ones_like(pair_counts[c], bool)
        e = np.where(M, xs[c] + betas[c][None, :], 0.0)
        pair_counts[c] = np.where(M, pair_counts[c] * e, 0.0)
        if split:
            lo, L = int(graph.label_offset[c]), int(graph.n_labels[c])
            unseen[c] = np.maximum(into[lo:lo + L] - pair_counts[c].sum(axis=0), 0.0)
        elif b_mask is not None:
            # not split (split_chains): its back-off pairs are in the terms' entries
            b_mask = np.asarray(b_mask, bool)
            unseen[c] = np.where(b_mask, pair_counts[c], 0.0).sum(axis=0)
            pair_counts[c] = np.where(b_mask, 0.0, pair_counts[c])
    return pair_counts, unseen


def _projection_tree(term_chains, members, C):
    """The grouped tables' projection tree (:mod:`skfcrf._kernels._joint`): every
    term but the full one (the last) is the child of the term with one chain more,
    the smallest it lacks, ``m``; per group of that parent term an entry with its
    child group, whose factor is that of the parent group's label of ``m``
    (:func:`_tree_weights`).  The entries as two CSR tables: ``down`` (a row per
    child group, listing its parent groups; the rows of children of terms with more
    chains first) and ``up`` (a row per parent group, listing its child groups; the
    rows of parents of terms with fewer chains first), each ``_ptr``, ``_row`` (the
    row's group), ``_idx``, and per entry the chain ``m`` (``_chain``) and its label
    (``_label``).  ``term_chains``: per term ``(chains, proj, offset)``; ``members``:
    per term the group of every state; ``C`` chains."""
    index = {tuple(Q): k for k, (Q, _, _) in enumerate(term_chains)}
    if index.get(tuple(range(C))) != len(term_chains) - 1:
        raise ValueError("grouped tables: the full term must come last")
    entries = []
    for k, (Q, _, off) in enumerate(term_chains[:-1]):
        m = min(set(range(C)) - set(Q))
        parent = index.get(tuple(sorted(Q + [m])))
        if parent is None:
            raise ValueError(f"grouped tables: term {Q} has no parent term")
        P, proj_p, off_p = term_chains[parent]
        up = np.empty(len(proj_p), np.int64)
        up[members[parent]] = members[k]
        entries.append((len(P), np.arange(len(proj_p)) + off_p, up + off,
                        np.full(len(proj_p), m), proj_p[:, P.index(m)]))
    if not entries:
        entries = [(0,) + (np.zeros(0, np.int64),) * 4]
    level = np.concatenate([np.full(len(e[1]), e[0]) for e in entries])
    parent, child, chain, label = (np.concatenate([e[i] for e in entries]) for i in range(1, 5))
    down = np.lexsort((parent, child, -level))     # rows: child groups, parents' terms first
    up = np.lexsort((child, parent, level))        # rows: parent groups, children's first
    tree = {}
    for name, order, rows, idx in (("down", down, child, parent), ("up", up, parent, child)):
        r = rows[order]
        starts = np.flatnonzero(np.r_[True, r[1:] != r[:-1]]) if len(r) else np.zeros(0, int)
        tree[f"{name}_ptr"] = np.r_[starts, len(r)].astype(np.int64)
        tree[f"{name}_row"] = r[starts].astype(np.int32)
        tree[f"{name}_idx"] = idx[order].astype(np.int32)
        tree[f"{name}_chain"] = chain[order]
        tree[f"{name}_label"] = label[order]
    return tree


def _tree_weights(tree, factors):
    """The projection tree of :func:`_projection_tree` with its entries' factors
    (``factors[c]``: chain ``c``'s per label, ``exp`` of the back-off weights or the
    weights themselves): ``down_*`` and ``up_*`` as the kernels take them."""
    out = {}
    for name in ("down", "up"):
        chain, label = tree[f"{name}_chain"], tree[f"{name}_label"]
        w = np.zeros(len(chain))
        for c in np.unique(chain):
            sel = chain == c
            w[sel] = factors[c][label[sel]]
        out.update({f"{name}_{k}": tree[f"{name}_{k}"] for k in ("ptr", "row", "idx")},
                   **{f"{name}_w": w})
    return out


def _full_term_counts(states, terms, counts, backoff):
    """Expected counts ``(S, S)`` of the state pairs of the full term whose every
    chain's transition is seen (not a ``backoff`` pair; a chain not split off,
    :func:`split_chains`, has its back-off pairs in the full term): its
    accumulated ``alpha (x) w`` times the pair's potential ``prod_c e_c`` (times
    ``exp`` of its joint-state transition weight)."""
    S, C = states.shape
    out = np.zeros((S, S))
    for k, (Q, proj, off) in enumerate(terms["chains"]):
        if len(Q) != C:
            continue
        sel = terms["term"] == k
        gl, hl = proj[terms["src"][sel] - off], proj[terms["dst"][sel] - off]
        value = counts[sel].copy()
        for c in range(C):
            value *= terms["x"][c][gl[:, c], hl[:, c]] + terms["beta"][c][hl[:, c]]
        i, j = _state_rows(states, gl), _state_rows(states, hl)
        if terms["state_trans"] is not None:
            value *= np.exp(terms["state_trans"][i, j])
        for c, mask in backoff.items():
            if c not in terms["split"]:
                value[np.asarray(mask, bool)[gl[:, c], hl[:, c]]] = 0.0
        out[i, j] = value
    return out


def _state_rows(states, labels):
    """Row of ``states`` of every label combination ``labels`` (present by construction)."""
    return state_index(states, labels)


def underflowed(log_z, lower):
    """Indices of the sequences whose ``log Z`` fell below ``lower``, the score of one of
    their labellings (Viterbi's or the gold one): the scaled forward pass lost a state
    whose relative mass underflowed (:func:`skfcrf._kernels.states.logdomain_state_marginals`)."""
    with np.errstate(invalid="ignore"):
        return np.flatnonzero(np.isfinite(lower)
                              & (log_z < lower - 1e-9 * np.maximum(1.0, np.abs(lower))))


def nonfinite_sequences(node, seq_ptr):
    """Indices of the sequences with a non-finite node marginal: the scaled backward
    pass overflowed (a state whose forward mass is tiny next to another's can need a
    backward value beyond the double range; seen on a dictation report whose label
    scores spread over thousands of nats).  The log-domain pass redoes them."""
    # a row's sum is finite exactly when its marginals (each at most 1) are: no
    # (N, Ltot) temporary, and one sum over all first (half the time of the rows')
    if np.isfinite(node.sum()):
        return np.zeros(0, np.int64)
    bad = ~np.isfinite(node.sum(axis=1))
    if not bad.any():
        return np.zeros(0, np.int64)
    seq_of = np.repeat(np.arange(len(seq_ptr) - 1), np.diff(seq_ptr))
    return np.unique(seq_of[bad])


def _inchain_blocks(graph, pair, edge_offset):
    """Chain -> its tied in-chain ``(L, L)`` potentials."""
    blocks = {}
    for e in range(graph.n_edges):
        if graph.edge_kind[e] == IN_CHAIN:
            a, L = int(graph.edge_a[e]), int(graph.n_labels[graph.edge_a[e]])
            blocks[a] = pair[edge_offset[e]:edge_offset[e] + L * L].reshape(L, L)
    return blocks


def backoff_columns(block, unseen):
    """``(b, M)`` of an in-chain ``(L, L)`` potential ``block`` whose ``unseen`` entries
    hold a back-off weight per target label: ``b[j]`` (``-inf`` for a label with no
    unseen entry) and ``M``, the entries that are not back-off (seen or forbidden)."""
    L = block.shape[0]
    unseen = np.zeros((L, L), bool) if unseen is None else np.asarray(unseen, bool)
    b = np.full(L, -np.inf)
    rows = np.argmax(unseen, axis=0)
    has = unseen.any(axis=0)
    b[has] = block[rows[has], np.flatnonzero(has)]
    return b, ~unseen


def grouped_tables(graph, states, pair, edge_offset, state_trans, backoff, log):
    """The grouped transition tables (:mod:`skfcrf._kernels._joint`) of in-chain
    transitions whose ``backoff`` entries share a weight per target label.

    ``backoff``: chain -> ``(L, L)`` mask of the in-chain pairs scored by the
    chain's back-off weight of their target label (the pair potentials hold that
    weight there; :func:`backoff_columns`).  Per chain ``c`` the transition
    potential is ``e_c(i, j) = beta_c(j) + x_c(i, j)``, ``x_c`` zero on the
    back-off pairs; the product over the chains expands into one term per subset
    ``Q`` of the chains: ``prod_{c in Q} x_c`` (sparse, constant on the groups of
    states with the same labels on ``Q``) times ``prod_{c not in Q} beta_c`` of the
    target (the term's factor).  Joint-state transition weights ``state_trans``
    (on pairs whose in-chain transitions are all seen) correct the full term.

    ``log=False``: the forward-backward tables (values ``exp`` of the scores minus
    a shift per chain; returns ``(tables, shift, terms)``).  ``log=True``: Viterbi's
    relaxed log tables -- a non-full term scores a seen pair of its chains by
    ``max(potential, back-off)``, so the maximum over the terms bounds every pair's
    score from above and is exact where the seen potentials are at least the
    back-off; ``(tables, 0.0, terms)``.  ``terms``: per ``out`` CSR entry its
    ``(term, source group, target group)`` and per term its chains and groups
    (:func:`backoff_expectations` reads them).
    """
    states = np.asarray(states)
    S, C = states.shape
    blocks = _inchain_blocks(graph, pair, edge_offset)
    cols, seen_mask, xs, betas, shifts, relaxed, allowed = [], [], [], [], [], [], []
    for c in range(C):
        T = blocks[c]
        b, M = backoff_columns(T, backoff.get(c))
        finite = np.isfinite(T) & M
        sh = max(T[finite].max(initial=-np.inf), b.max(initial=-np.inf))
        sh = 0.0 if not np.isfinite(sh) or log else float(sh)
        beta = x = None         # the log tables take the scores themselves
        if not log:
            with np.errstate(under="ignore", invalid="ignore"):
                beta = np.exp(b - sh)
                e = np.where(np.isfinite(T), np.exp(np.where(np.isfinite(T), T - sh, 0.0)), 0.0)
            x = np.where(M, e - beta[None, :], 0.0)
        cols.append(b)
        seen_mask.append(M)
        xs.append(x)
        betas.append(beta)
        shifts.append(sh)
        relaxed.append(np.where(finite, np.maximum(T, b[None, :]), -np.inf))
        # the entries a term can have: a seen pair scores exp(T) - exp(b) (zero only
        # where T is forbidden into a label without back-off) or, in log form, T
        allowed.append(finite if log else M & (np.isfinite(T) | np.isfinite(b)[None, :]))
    st = None if state_trans is None else np.asarray(state_trans, float)
    shape = _grouped_shape(states, allowed, [np.isfinite(b) for b in cols])
    if st is not None:
        i, j = np.nonzero(st)
        if not all(seen_mask[c][states[i, c], states[j, c]].all() for c in range(C)):
            raise ValueError("state_trans weights a state pair with a back-off in-chain "
                             "transition")
    vals, factor_rows = [], []
    for Q, rest, gl, hl, full_rows in shape["terms"]:
        factor = np.zeros(S) if log else np.ones(S)
        for c in rest:
            factor = factor + cols[c][states[:, c]] if log else factor * betas[c][states[:, c]]
        factor_rows.append(factor)
        val = np.zeros(len(gl)) if log else np.ones(len(gl))
        for k, c in enumerate(Q):
            if log:
                val = val + (blocks[c] if len(Q) == C else relaxed[c])[gl[:, k], hl[:, k]]
            else:
                val = val * xs[c][gl[:, k], hl[:, k]]
        if full_rows is not None and st is not None:
            w = st[full_rows]
            if log:
                val = val + w
            else:
                full = np.ones(len(gl))
                for k, c in enumerate(Q):
                    full = full * (xs[c] + betas[c][None, :])[gl[:, k], hl[:, k]]
                with np.errstate(over="ignore"):
                    val = val + full * np.expm1(w)
        vals.append(val)
    val = np.concatenate(vals)
    tables = dict(shape["tables"], out_val=np.ascontiguousarray(val[shape["out_order"]]),
                  in_val=np.ascontiguousarray(val[shape["in_order"]]),
                  factor=np.ascontiguousarray(np.vstack(factor_rows)),
                  **_tree_weights(shape["tree"], cols if log else betas))
    terms = dict(shape["entries"], x=xs, beta=betas, state_trans=st, split=tuple(sorted(backoff)))
    return tables, float(sum(shifts)), terms


#: The grouped tables' structure per back-off masks (:func:`_grouped_shape`): a fit
#: evaluates the same few masks (one per fold) over and over.
_SHAPES = {}
_MAX_SHAPES = 16


def _grouped_shape(states, allowed, has_backoff, cache=True):
    """The structure of :func:`grouped_tables` (what does not depend on the values of
    the weights): per kept term its chains ``Q``, the chains it scores by back-off,
    its entries' source and target label combinations on ``Q`` and, for the full
    term, their state pairs; the CSR orders and pointers, groups, members and the
    projection tree.  ``allowed``: per chain the pairs a term may have an entry for
    (not back-off pairs); ``has_backoff``: per chain the labels with a back-off
    weight.  Cached on its arguments (``cache=False``: neither read nor kept)."""
    key = (states.tobytes(), states.shape) + tuple(
        a.tobytes() for masks in (allowed, has_backoff) for a in masks)
    shape = _SHAPES.get(key) if cache else None
    if shape is not None:
        return shape
    S, C = states.shape
    g_total = 0
    group_rows, members, term_chains, terms = [], [], [], []
    entry_src, entry_dst, entry_term = [], [], []
    for r in range(C + 1):
        for Q in itertools.combinations(range(C), r):
            Q = list(Q)
            rest = [c for c in range(C) if c not in Q]
            reach = np.ones(S, bool)
            for c in rest:
                reach &= has_backoff[c][states[:, c]]
            if not reach.any():
                continue                 # its factor is zero at every state
            if Q:
                proj, local = np.unique(states[:, Q], axis=0, return_inverse=True)
                local = local.ravel()
            else:
                proj, local = np.zeros((1, 0), np.int32), np.zeros(S, np.int64)
            P = len(proj)
            keep = np.ones((P, P), bool)
            for k, c in enumerate(Q):
                keep &= allowed[c][proj[:, k][:, None], proj[:, k][None, :]]
            g, h = np.nonzero(keep)
            full_rows = None
            if r == C:
                # Q is every chain: the groups are the states themselves
                order = np.empty(S, np.int64)
                order[local] = np.arange(S)
                full_rows = (order[g], order[h])
            entry_src.append(g + g_total)
            entry_dst.append(h + g_total)
            entry_term.append(np.full(len(g), len(term_chains)))
            group_rows.append(local + g_total)
            members.append(local)
            terms.append((Q, rest, proj[g], proj[h], full_rows))
            term_chains.append((Q, proj, g_total))
            g_total += P
    src, dst = np.concatenate(entry_src), np.concatenate(entry_dst)
    term = np.concatenate(entry_term)
    out_order = np.lexsort((dst, src))
    in_order = np.lexsort((src, dst))
    out_ptr = np.concatenate([[0], np.cumsum(np.bincount(src, minlength=g_total))])
    in_ptr = np.concatenate([[0], np.cumsum(np.bincount(dst, minlength=g_total))])
    member_states = np.concatenate([np.argsort(m, kind="stable") for m in members])
    member_groups = np.concatenate([np.sort(m, kind="stable") + off for m, (_, _, off)
                                    in zip(members, term_chains)])
    member_ptr = np.concatenate([[0], np.cumsum(np.bincount(member_groups, minlength=g_total))])
    tables = dict(dense=np.zeros(0), dense_t=np.zeros(0),
                  out_ptr=out_ptr.astype(np.int64), out_idx=dst[out_order].astype(np.int32),
                  in_ptr=in_ptr.astype(np.int64), in_idx=src[in_order].astype(np.int32),
                  group=np.ascontiguousarray(np.vstack(group_rows), dtype=np.int32),
                  member_ptr=member_ptr.astype(np.int64),
                  member_idx=member_states.astype(np.int32), sparse=True)
    entries = dict(src=src[out_order], dst=dst[out_order], term=term[out_order],
                   chains=term_chains)
    shape = dict(terms=terms, tables=tables, out_order=out_order, in_order=in_order,
                 entries=entries, tree=_projection_tree(term_chains, members, C))
    if cache:
        if len(_SHAPES) >= _MAX_SHAPES:
            _SHAPES.pop(next(iter(_SHAPES), None), None)
        _SHAPES[key] = shape
    return shape
