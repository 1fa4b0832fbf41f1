# cython: language_level=3
"""Exact inference over a given set of joint label states (label combinations).

A model whose joint label space is restricted to ``S`` states (the label
combinations seen in training, say) is a linear chain over those states:

``states``
    int32 ``(S, C)``: state ``s`` gives chain ``c`` label ``states[s, c]``.
state score at token ``g``
    ``phi_g(s) = sum_c unary[g, off_c + states[s, c]]`` plus every coupling
    edge's potential ``pair_e(g)[states[s, a], states[s, b]]`` (edge tables
    below; tied couplings have one matrix, untied ones one per token).
transition score
    ``trans[s, s']``: the sum over chains of their (tied) in-chain potentials
    between ``states[s, c]`` and ``states[s', c]``, an ``S x S`` row-major
    matrix, ``-inf`` where forbidden; ``trans_t`` is its transpose.
sparse transitions
    When most state pairs are forbidden (in-chain transitions never seen in
    training, say) the kernels take the allowed pairs instead, as two CSR
    tables over the same ``nnz`` values: ``out_ptr``/``out_idx``/``out_val``
    (row ``s`` lists its successors ``s'``, ascending) and ``in_ptr``/``in_idx``/
    ``in_val`` (row ``s'`` lists its predecessors ``s``, ascending).  Values are
    the log scores for Viterbi and ``exp(trans - shift)`` for forward-backward.
    A step then costs ``nnz`` operations instead of ``S**2``.
grouped transitions
    A transition matrix that is a sum of ``K`` *terms*, each constant along
    groups of states: term ``k`` puts every state ``s`` in a group
    ``group[k, s]`` (the groups of all terms are numbered together, ``G`` in
    all) and scores ``E[s, s'] += V_k[group[k, s], group[k, s']] *
    factor[k, s']``, ``V_k`` sparse.  The CSR tables are then over groups
    (``G`` rows; ``in`` lists a target group's source groups, ``out`` a source
    group's targets), and ``member_ptr``/``member_idx`` list every group's
    states.  A step projects the states' values onto the groups, multiplies by
    the CSR tables and gathers the result back: ``K * S`` plus ``nnz``
    operations.  The last term is the *full* term, whose groups are the
    states themselves; every other term's groups are projections of a
    *parent* term's (one chain more): every parent group has its child group
    and the factor of the chain the child lacks, as two CSR tables over global
    group numbers, ``down_*`` (a row per child group, its parents; rows of the
    terms with more chains first) and ``up_*`` (a row per parent group, its
    children; rows of the terms with fewer chains first), each ``_ptr``,
    ``_row`` (the row's group), ``_idx``, ``_w``.  A step projects along that
    tree (a child's sums from its parent's groups, not from all the states) and
    gathers back along it (``factor[k, s']`` is the product of the ``tree_w``
    on the way from term ``k`` to the full term): about ``S`` per term with
    two chains, fewer below, instead of ``K * S``.  When the full term's groups
    are the last ``S``, in state order (sorted states), a step reads and writes
    them in the states' own rows instead of copying them to and from the groups
    (:func:`_split_step`).
    This is the form of in-chain transitions whose unseen pairs
    share a back-off weight per target label (:func:`skfcrf._kernels.joint.
    grouped_tables` builds the terms); for Viterbi the values are log scores,
    ``max`` replaces the sums and the result is an upper bound on the best
    score, exact when the path found scores it (the caller checks).

Coupling edge tables (``K`` edges): ``cpl_a``, ``cpl_b`` (chains), ``cpl_lb``
(``L_b``), ``cpl_off`` (offset of the edge in the flat ``pair`` array),
``cpl_tied`` (1: one matrix at ``cpl_off``; 0: token ``g``'s matrix at
``cpl_off + g * L_a * L_b``), as in :mod:`skfcrf._kernels.graph`.  Index tables
of the states: ``unary_index`` int32 ``(S, C)``, the column of state ``s``'s
label of chain ``c`` in a row of ``unary`` (``label_offset[c] + states[s, c]``);
``cpl_index`` int32 ``(K, S)``, the entry of state ``s``'s label pair in
coupling ``k``'s matrix (``states[s, a] * L_b + states[s, b]``).  The kernels take
the states, these tables and the transitions as one :class:`JointTables`; the
potentials (``unary``, ``pair``) and the outputs are the call's arguments.

:func:`joint_viterbi` is exact max-sum over the states (forward pass with the
vectorised max-plus product of :mod:`skfcrf._kernels._common`; the back-pointers are
recomputed from the same sums while tracing back, so ties go to the smallest
state index, deterministically); in the sparse and grouped forms four sequences at a
time, in lockstep lanes as below (:func:`_viterbi_lanes`).  :func:`joint_forward_backward` gives the
per-token state marginals and ``log Z`` by scaled forward-backward, or ``log Z``
alone by its forward pass (steps over
``exp(trans - max)``).  Sequences of similar lengths run in lockstep blocks.
Dense: a token step is one BLAS ``dgemm`` of the block's rows by the ``S x S``
matrix, which is then read once per block instead of once per sequence (a
``dgemv`` step is bound by streaming the matrix).  Sparse and grouped: blocks
of ``SKFCRF_LANES`` (4) sequences whose values are interleaved (state ``s`` of
sequence ``b`` next to that of sequence ``b + 1``), so that a CSR product reads
each allowed pair's index and value once for all of them and multiplies them
as one vector (:func:`_fb_lanes`; one sequence at a time, a CSR step is a
chain of dependent scalar gathers).  :func:`joint_decode` runs the Viterbi pass
and the forward pass of a block's lanes in one sweep over its tokens, so that a
token's state scores are computed once for both (decoding, which reports each
labelling's probability).  Every parallel region runs with subnormal numbers taken
as zero (``skfcrf_subnormals_off``, :file:`_simd.h`): a forward-backward's products
of small masses otherwise spend most of their time in the processor's assists.
"""
from cython.parallel cimport parallel, prange, threadid
from libc.math cimport INFINITY, log
from libc.string cimport memcpy, memset
from scipy.linalg.cython_blas cimport dgemm, dgemv, sgemm

import numpy as np

from ._alloc cimport Block, Carver, allocate, carver, take_doubles, take_floats, take_ints
from ._common cimport (SKFCRF_LANES, exp_shifted, first_or_null, longest_sequence, maxplus,
                       skfcrf_lane_best, skfcrf_lane_maxplus, skfcrf_lane_normalize, skfcrf_lane_product,
                       skfcrf_lane_scale, skfcrf_lane_shift, skfcrf_lane_state_scores,
                       skfcrf_lane_sums,
                       skfcrf_lane_tree_max, skfcrf_lane_tree_sum, skfcrf_lane_weigh,
                       skfcrf_restore_fp, skfcrf_subnormals_off)


#: Forward mass (relative to the token's) below which a state counts as unreached.
cdef double NEGLIGIBLE = 1e-250
#: Most sequences the dense forward-backward runs in lockstep, and the bytes of
#: buffers per thread that may take (:func:`lockstep_blocks`).
cdef Py_ssize_t LOCKSTEP = 32
cdef Py_ssize_t LOCKSTEP_BYTES = 32 << 20
#: Single-precision steps (:func:`_fb_block`): the least log of a token's total
#: relative to its best-scored state's, and the largest backward weight ``w``.
cdef double SINGLE_RANGE = -57.0
cdef double SINGLE_MAX = 1e30


cdef struct Tables:
    Py_ssize_t S
    Py_ssize_t C
    Py_ssize_t K
    Py_ssize_t ldu
    const int* states
    const int* label_offset
    const double* unary
    const double* pair
    const int* cpl_a
    const int* cpl_b
    const int* cpl_lb
    const int* cpl_la
    const long long* cpl_off
    const int* cpl_tied
    const int* unary_index      # S x C: label_offset[c] + states[s, c]
    const int* cpl_index        # K x S: states[s, a_k] * L_b + states[s, b_k]
    const double* tied_phi      # S: tied couplings' scores per state (NULL: none tied)
    int any_untied              # whether a coupling has per-token potentials
    # the marginals' sums (JointTables.aggregation): row r sums the states
    # agg_idx[agg_ptr[r] .. agg_ptr[r+1]] into node column agg_e[r] (agg_k[r] == -1)
    # or into entry agg_e[r] of coupling agg_k[r]
    Py_ssize_t n_agg
    const long long* agg_ptr
    const int* agg_idx
    const int* agg_k
    const int* agg_e


cdef struct Tree:
    # CSR rows of the grouped form's projection tree (module docstring)
    Py_ssize_t n_rows
    const long long* ptr
    const int* row
    const int* idx
    const double* w


cdef struct Trans:
    # dense: row-major S x S values (and the transpose, for Viterbi's traceback);
    # sparse (dense == NULL): the CSR tables of the module docstring;
    # grouped (n_terms > 0): the CSR tables are over the terms' groups
    const double* dense
    const double* dense_t
    const float* dense32         # dense form: the values in single precision, or NULL
    const long long* out_ptr
    const int* out_idx
    const double* out_val
    const long long* in_ptr
    const int* in_idx
    const double* in_val
    Py_ssize_t n_terms          # grouped form: K terms (0: dense or sparse form)
    Py_ssize_t n_groups         # G, the groups of all terms
    const int* group            # K x S: the group of state s in term k
    Py_ssize_t full_first       # the full term's groups are full_first + s (-1: not)
    const double* factor        # K x S: term k's factor on its target state s'
    const long long* member_ptr     # G + 1: group -> its states (Viterbi's traceback)
    const int* member_idx
    Tree down                   # grouped form: the projection tree, by child group
    Tree up                     # and by parent group
    # grouped form with the full term last in state order (full_first = G - S; -1:
    # not): the full term read from and written to the states' rows directly
    # (_split_step).  The CSR tables' and the tree's indices into the full term are
    # then state numbers (``_local``), and the tree is split where it meets it:
    const int* in_idx_local
    const int* out_idx_local
    Tree down_first             # rows of the children of the full term
    Tree down_rest
    Tree up_rest
    Tree up_last                # rows of the full term's groups (state numbers)


def _check_tree(const long long[::1] ptr, const int[::1] row, const int[::1] idx,
                const double[::1] w):
    if (ptr.shape[0] != row.shape[0] + 1 or idx.shape[0] != w.shape[0]
            or ptr[ptr.shape[0] - 1] != idx.shape[0]):
        raise ValueError("grouped transitions: inconsistent projection tree")


cdef Tree _tree(const long long[::1] ptr, const int[::1] row, const int[::1] idx,
                const double[::1] w, Py_ssize_t first=0, Py_ssize_t stop=-1) noexcept:
    """The tree's rows ``first`` to ``stop`` (-1: all of them)."""
    cdef Tree t
    if stop < 0:
        stop = row.shape[0]
    t.n_rows = stop - first
    t.ptr = &ptr[first]
    t.row = (&row[0] + first) if row.shape[0] else NULL
    t.idx = first_or_null(idx)
    t.w = first_or_null(w)
    return t


def _full_term_split(group, member_ptr, out_ptr, out_idx, in_ptr, in_idx, down_ptr,
                     down_row, down_idx, up_ptr, up_row, up_idx):
    """``(full_first, in_idx_local, out_idx_local, down_idx_local, up_row_local,
    n_down_first, n_up_last)`` of grouped tables whose full term comes last with its
    groups in state order and whose tree meets it in one block of rows at each end
    (``down``: the first rows read it and every other group is a row once;
    ``up``: the last rows are its groups); ``full_first = -1`` (and empty tables)
    otherwise.  The ``_local`` tables number the full term's groups by their states."""
    none = (-1, np.zeros(0, np.int32), np.zeros(0, np.int32), np.zeros(0, np.int32),
            np.zeros(0, np.int32), 0, 0)
    K, S = group.shape
    G = len(member_ptr) - 1
    if not K or not S:
        return none
    ff = int(group[K - 1, 0])
    if ff != G - S or not np.array_equal(group[K - 1], ff + np.arange(S)):
        return none
    tables = []
    for ptr, idx in ((in_ptr, in_idx), (out_ptr, out_idx)):
        tail = int(ptr[ff])
        if (idx[:tail] >= ff).any() or (idx[tail:] < ff).any():
            return none                  # a term's entries across the full term
        local = np.array(idx, np.int32)
        local[tail:] -= ff
        tables.append(local)
    down_idx = np.asarray(down_idx)
    if not len(down_idx) or not np.array_equal(np.sort(down_row), np.arange(ff)):
        return none                      # store mode: every other group a row once
    reads = down_idx[np.minimum(down_ptr[:-1], len(down_idx) - 1)] >= ff
    n_first = len(reads) if reads.all() else int(np.argmin(reads))
    lo = int(down_ptr[n_first])
    if (down_idx[:lo] < ff).any() or (down_idx[lo:] >= ff).any():
        return none
    down_local = np.array(down_idx, np.int32)
    down_local[:lo] -= ff
    up_row = np.asarray(up_row)
    n_last = int((up_row >= ff).sum())
    if (up_row[len(up_row) - n_last:] < ff).any() or (np.asarray(up_idx) >= ff).any():
        return none
    up_local = np.array(up_row, np.int32)
    up_local[len(up_row) - n_last:] -= ff
    return ff, tables[0], tables[1], down_local, up_local, n_first, n_last


cdef class JointTables:
    """The joint states and their transitions, as the kernels read them.

    Parameters
    ----------
    states : int32 ndarray (S, C)
    label_offset : int32 ndarray (C + 1,)
    couplings : mapping
        The coupling edge and index tables of the module docstring: ``cpl_a``,
        ``cpl_b``, ``cpl_la``, ``cpl_lb``, ``cpl_tied`` (int32, per coupling),
        ``cpl_off`` (int64), ``unary_index`` (int32 ``(S, C)``), ``cpl_index``
        (int32 ``(K, S)``).
    transitions : mapping
        The transition values: ``dense`` and ``dense_t`` (row-major ``S x S``
        and its transpose; empty selects the sparse form) and the CSR tables
        ``out_ptr``, ``out_idx``, ``out_val``, ``in_ptr``, ``in_idx``,
        ``in_val`` (module docstring); the grouped form adds ``group`` (int32
        ``(K, S)``), ``factor`` (float64 ``(K, S)``), ``member_ptr`` (int64) and
        ``member_idx`` (int32).
    shift : float
        What was subtracted from the scores before exponentiating them
        (forward-backward: ``log Z`` adds it back per step).
    tied_off : int64 ndarray (K + 1,), optional
        Forward-backward: offset of tied coupling ``k``'s counts in a row of the
        tied accumulator.
    """
    cdef const int[:, ::1] states, unary_index, cpl_index
    cdef const int[::1] label_offset, cpl_a, cpl_b, cpl_la, cpl_lb, cpl_tied, out_idx, in_idx
    cdef const long long[::1] cpl_off, out_ptr, in_ptr, tied_off, member_ptr
    cdef const double[::1] dense, dense_t, out_val, in_val
    cdef const float[::1] dense32
    cdef const int[:, ::1] group
    cdef const double[:, ::1] factor
    cdef const int[::1] member_idx, down_row, down_idx, up_row, up_idx
    cdef const long long[::1] down_ptr, up_ptr
    cdef const double[::1] down_w, up_w
    cdef const long long[::1] agg_ptr
    cdef const int[::1] agg_idx, agg_k, agg_e
    cdef double shift
    cdef Py_ssize_t full_first, n_down_first, n_up_last
    cdef const int[::1] in_idx_local, out_idx_local, down_idx_local, up_row_local

    def __init__(self, states, label_offset, couplings, transitions, double shift=0.0,
                 tied_off=None):
        self.states = states
        self.label_offset = label_offset
        self.cpl_a, self.cpl_b = couplings["cpl_a"], couplings["cpl_b"]
        self.cpl_la, self.cpl_lb = couplings["cpl_la"], couplings["cpl_lb"]
        self.cpl_off, self.cpl_tied = couplings["cpl_off"], couplings["cpl_tied"]
        self.unary_index, self.cpl_index = couplings["unary_index"], couplings["cpl_index"]
        self.agg_ptr, self.agg_idx, self.agg_k, self.agg_e = self.aggregation()
        self.dense, self.dense_t = transitions["dense"], transitions["dense_t"]
        self.dense32 = transitions.get("dense32", np.zeros(0, np.float32))
        if self.dense32.shape[0] and self.dense32.shape[0] != self.dense.shape[0]:
            raise ValueError("dense32 must hold the dense values in single precision")
        self.out_ptr, self.out_idx = transitions["out_ptr"], transitions["out_idx"]
        self.out_val, self.in_ptr = transitions["out_val"], transitions["in_ptr"]
        self.in_idx, self.in_val = transitions["in_idx"], transitions["in_val"]
        self.shift = shift
        self.tied_off = np.zeros(1, np.int64) if tied_off is None else tied_off
        S = states.shape[0]
        self.group = transitions.get("group", np.zeros((0, S), np.int32))
        self.factor = transitions.get("factor", np.zeros((0, S)))
        self.member_ptr = transitions.get("member_ptr", np.zeros(1, np.int64))
        self.member_idx = transitions.get("member_idx", np.zeros(0, np.int32))
        self.down_ptr = transitions.get("down_ptr", np.zeros(1, np.int64))
        self.down_row = transitions.get("down_row", np.zeros(0, np.int32))
        self.down_idx = transitions.get("down_idx", np.zeros(0, np.int32))
        self.down_w = transitions.get("down_w", np.zeros(0))
        self.up_ptr = transitions.get("up_ptr", np.zeros(1, np.int64))
        self.up_row = transitions.get("up_row", np.zeros(0, np.int32))
        self.up_idx = transitions.get("up_idx", np.zeros(0, np.int32))
        self.up_w = transitions.get("up_w", np.zeros(0))
        _check_tree(self.down_ptr, self.down_row, self.down_idx, self.down_w)
        _check_tree(self.up_ptr, self.up_row, self.up_idx, self.up_w)
        if self.group.shape[0] and (self.group.shape[1] != S or self.factor.shape[0]
                                    != self.group.shape[0] or self.factor.shape[1] != S):
            raise ValueError("grouped transitions: group and factor must be (K, S)")
        (self.full_first, self.in_idx_local, self.out_idx_local, self.down_idx_local,
         self.up_row_local, self.n_down_first, self.n_up_last) = _full_term_split(
            np.asarray(self.group), np.asarray(self.member_ptr), np.asarray(self.out_ptr),
            np.asarray(self.out_idx), np.asarray(self.in_ptr), np.asarray(self.in_idx),
            np.asarray(self.down_ptr), np.asarray(self.down_row), np.asarray(self.down_idx),
            np.asarray(self.up_ptr), np.asarray(self.up_row), np.asarray(self.up_idx))

    def aggregation(self):
        """``(ptr, idx, k, e)``: per node column and coupling entry that some state
        has, a CSR row of those states (ascending), and what the row sums into --
        node column ``e`` (``k == -1``; columns first, ascending) or entry ``e`` of
        coupling ``k`` (then by coupling and entry): the sparse form adds a token's
        state marginals up by these rows (:func:`_fb_lanes`)."""
        uidx = np.asarray(self.unary_index, np.int64)
        cidx = np.asarray(self.cpl_index, np.int64)
        S, C = uidx.shape
        K = cidx.shape[0]
        ltot = int(np.asarray(self.label_offset)[C])
        sizes = np.asarray(self.cpl_la, np.int64) * np.asarray(self.cpl_lb, np.int64)
        first = ltot + np.concatenate([[0], np.cumsum(sizes)])[:K]
        code = np.concatenate([uidx.T.ravel(), (cidx + first[:, None]).ravel()])
        state = np.tile(np.arange(S), C + K)
        order = np.lexsort((state, code))
        codes, starts = np.unique(code[order], return_index=True)
        ptr = np.append(starts, len(order)).astype(np.int64)
        k = np.searchsorted(first, codes, side="right").astype(np.int32) - 1
        e = (codes - np.concatenate([[0], first])[k + 1]).astype(np.int32)
        return ptr, state[order].astype(np.int32), k, e

    @property
    def n_groups(self):
        """``G``: the groups of the grouped form's terms (0 in the other forms)."""
        return self.member_ptr.shape[0] - 1

    cdef Trans trans(self) noexcept:
        """The transition tables; an empty ``dense`` selects the sparse form."""
        cdef Trans tr
        tr.dense = first_or_null(self.dense)
        tr.dense_t = first_or_null(self.dense_t)
        tr.dense32 = &self.dense32[0] if self.dense32.shape[0] else NULL
        tr.out_ptr = &self.out_ptr[0]
        tr.in_ptr = &self.in_ptr[0]
        tr.out_idx = first_or_null(self.out_idx)
        tr.out_val = first_or_null(self.out_val)
        tr.in_idx = first_or_null(self.in_idx)
        tr.in_val = first_or_null(self.in_val)
        tr.n_terms = self.group.shape[0]
        tr.n_groups = self.member_ptr.shape[0] - 1
        tr.group = &self.group[0, 0] if tr.n_terms else NULL
        tr.full_first = self.full_first
        if self.full_first >= 0:
            tr.in_idx_local = &self.in_idx_local[0]
            tr.out_idx_local = &self.out_idx_local[0]
            tr.down_first = _tree(self.down_ptr, self.down_row, self.down_idx_local,
                                  self.down_w, 0, self.n_down_first)
            tr.down_rest = _tree(self.down_ptr, self.down_row, self.down_idx_local,
                                 self.down_w, self.n_down_first)
            n_up = self.up_row_local.shape[0]
            tr.up_rest = _tree(self.up_ptr, self.up_row_local, self.up_idx, self.up_w, 0,
                               n_up - self.n_up_last)
            tr.up_last = _tree(self.up_ptr, self.up_row_local, self.up_idx, self.up_w,
                               n_up - self.n_up_last)
        tr.factor = &self.factor[0, 0] if tr.n_terms else NULL
        tr.member_ptr = &self.member_ptr[0]
        tr.member_idx = first_or_null(self.member_idx)
        tr.down = _tree(self.down_ptr, self.down_row, self.down_idx, self.down_w)
        tr.up = _tree(self.up_ptr, self.up_row, self.up_idx, self.up_w)
        return tr

    cdef Tables tables(self, const double[:, ::1] unary, const double[::1] pair,
                       double[::1] tied_phi):
        """The state and coupling tables over this call's potentials.

        ``tied_phi`` (``S``, the caller's, alive as long as the tables) receives
        the sum of the tied couplings' scores per state: they are the same at
        every token, so :func:`_state_scores` adds the one sum instead of each
        coupling's gathered potential.
        """
        cdef Tables tb
        cdef Py_ssize_t k, s
        cdef const double* P
        cdef const int* ci
        cdef int any_tied = 0
        tb.S, tb.C, tb.K = self.states.shape[0], self.states.shape[1], self.cpl_a.shape[0]
        tb.ldu = unary.shape[1]
        tb.states = &self.states[0, 0]
        tb.label_offset = &self.label_offset[0]
        tb.unary = &unary[0, 0] if unary.shape[0] else NULL
        tb.pair = first_or_null(pair)
        tb.cpl_a = first_or_null(self.cpl_a)
        tb.cpl_b = first_or_null(self.cpl_b)
        tb.cpl_la = first_or_null(self.cpl_la)
        tb.cpl_lb = first_or_null(self.cpl_lb)
        tb.cpl_off = first_or_null(self.cpl_off)
        tb.cpl_tied = first_or_null(self.cpl_tied)
        tb.unary_index = &self.unary_index[0, 0]
        tb.cpl_index = &self.cpl_index[0, 0] if tb.K else NULL
        tb.n_agg = self.agg_k.shape[0]
        tb.agg_ptr = &self.agg_ptr[0]
        tb.agg_idx = first_or_null(self.agg_idx)
        tb.agg_k = first_or_null(self.agg_k)
        tb.agg_e = first_or_null(self.agg_e)
        if tied_phi.shape[0] != tb.S:
            raise ValueError("tied_phi must have one entry per state")
        tb.any_untied = 0
        for s in range(tb.S):
            tied_phi[s] = 0.0
        for k in range(tb.K):
            if not tb.cpl_tied[k]:
                tb.any_untied = 1
                continue
            any_tied = 1
            P = tb.pair + tb.cpl_off[k]
            ci = tb.cpl_index + k * tb.S
            for s in range(tb.S):
                tied_phi[s] += P[ci[s]]
        tb.tied_phi = &tied_phi[0] if any_tied else NULL
        return tb


cdef inline void _states_to_groups(const Trans* tr, Py_ssize_t S, const double* x,
                                   double* xg) noexcept nogil:
    """The grouped form's full term: state ``s``'s row of ``x`` (its ``SKFCRF_LANES``
    interleaved lanes) into the row of ``xg`` of its group, one block when the
    groups are in state order (``full_first``), else one 32-byte move per state."""
    cdef Py_ssize_t s
    cdef const int* full = tr.group + (tr.n_terms - 1) * S
    if tr.full_first >= 0:
        memcpy(xg + tr.full_first * SKFCRF_LANES, x, S * SKFCRF_LANES * sizeof(double))
        return
    for s in range(S):
        memcpy(xg + full[s] * SKFCRF_LANES, x + s * SKFCRF_LANES, SKFCRF_LANES * sizeof(double))


cdef inline void _groups_to_states(const Trans* tr, Py_ssize_t S, const double* yg,
                                   double* out) noexcept nogil:
    """Back from the full term: its group's row of ``yg`` into state ``s``'s row of ``out``."""
    cdef Py_ssize_t s
    cdef const int* full = tr.group + (tr.n_terms - 1) * S
    if tr.full_first >= 0:
        memcpy(out, yg + tr.full_first * SKFCRF_LANES, S * SKFCRF_LANES * sizeof(double))
        return
    for s in range(S):
        memcpy(out + s * SKFCRF_LANES, yg + full[s] * SKFCRF_LANES, SKFCRF_LANES * sizeof(double))


cdef void _grouped_maxplus_lanes(const Trans* tr, Py_ssize_t S, const double* x,
                                 double* out, double* xg, double* yg) noexcept nogil:
    """The grouped form's (relaxed) max-plus step of ``SKFCRF_LANES`` interleaved lanes
    (``x``, ``out``: ``S x SKFCRF_LANES``; ``xg``, ``yg``: ``G x SKFCRF_LANES`` of
    scratch): ``out[s'] = max over terms k of factor[k, s'] + max over source groups g
    of V_k[g, group[k, s']] + max over the states s of g of x[s]`` in every lane,
    projected and gathered along the tree (its maxima: ``skfcrf_lane_tree_max``; the
    CSR tables are over the groups)."""
    cdef Py_ssize_t G = tr.n_groups, s, nl = SKFCRF_LANES
    for s in range(G * nl):
        xg[s] = -INFINITY
    _states_to_groups(tr, S, x, xg)
    skfcrf_lane_tree_max(tr.down.n_rows, tr.down.ptr, tr.down.row, tr.down.idx, NULL, xg)
    skfcrf_lane_maxplus(tr.in_ptr, tr.in_idx, tr.in_val, G, xg, yg)
    skfcrf_lane_tree_max(tr.up.n_rows, tr.up.ptr, tr.up.row, tr.up.idx, tr.up.w, yg)
    _groups_to_states(tr, S, yg, out)


cdef int _grouped_argmax(const Trans* tr, Py_ssize_t S, const double* x, Py_ssize_t stride,
                         double top, Py_ssize_t target, double* best) noexcept nogil:
    """The state ``s`` of :func:`_grouped_maxplus_lanes`' maximum into state ``target``
    (smallest on ties); its value in ``best``.  ``x``: the sources' scores, state ``s``'s
    at ``x[s * stride]`` (one lane of the interleaved rows); ``top``: at least their
    maximum.  The full term goes first, and a source group of another term is scanned
    only if ``top`` plus its entry could reach the best value found so far."""
    cdef Py_ssize_t K = tr.n_terms, k, g
    cdef long long e, q
    cdef double m = -INFINITY, v, f
    cdef int arg = 0, s
    k = K - 1
    while k >= 0:
        f = tr.factor[k * S + target]
        for e in range(tr.in_ptr[tr.group[k * S + target]],
                       tr.in_ptr[tr.group[k * S + target] + 1]):
            if top + tr.in_val[e] + f < m:
                continue
            g = tr.in_idx[e]
            for q in range(tr.member_ptr[g], tr.member_ptr[g + 1]):
                s = tr.member_idx[q]
                v = x[s * stride] + tr.in_val[e] + f
                if v > m or (v == m and s < arg):
                    m, arg = v, s
        k -= 1
    best[0] = m
    return arg


cdef void _dense_transition_counts(Py_ssize_t S, Py_ssize_t n, const double* alpha,
                                   const double* w, double* counts) noexcept nogil:
    """Add ``sum_r alpha[r] (x) w[r]`` over ``n`` rows of ``S`` (``alpha`` the rows
    ``alpha_{t-1}``, ``w`` the rows ``w_t``) to ``S x S`` row-major ``counts`` (the
    grouped form accumulates them in :func:`_product`, the sparse one in :func:`_fb_lanes`)."""
    cdef char tn = b"N", tt = b"T"
    cdef int m = <int> S, k = <int> n
    cdef double a1 = 1.0
    # column-major: counts^T (S x S) += W^T (S x n) @ A (n x S), i.e.
    # counts[i, j] += sum_r alpha[r, i] w[r, j]
    dgemm(&tn, &tt, &m, &m, &k, &a1, <double*> w, &m, <double*> alpha, &m, &a1, counts, &m)


cdef void _single_transition_counts(Py_ssize_t S, Py_ssize_t n, const float* alpha,
                                    const float* w, float* scratch,
                                    double* counts) noexcept nogil:
    """:func:`_dense_transition_counts` in single precision: the ``n`` rows' sum into
    ``S x S`` ``scratch``, then added to ``counts``."""
    cdef char tn = b"N", tt = b"T"
    cdef int m = <int> S, k = <int> n
    cdef float a1 = 1.0, b0 = 0.0
    cdef Py_ssize_t i
    sgemm(&tn, &tt, &m, &m, &k, &a1, <float*> w, &m, <float*> alpha, &m, &b0, scratch, &m)
    for i in range(S * S):
        counts[i] += scratch[i]


cdef void _state_scores(const Tables* tb, Py_ssize_t g, double* phi) noexcept nogil:
    """``phi[s]``: the score of every state at global token ``g`` (the tied
    couplings' share precomputed, :meth:`JointTables.tables`)."""
    cdef Py_ssize_t s, c, k, C = tb.C
    cdef const int* ui
    cdef const int* ci
    cdef const double* u = tb.unary + g * tb.ldu
    cdef const double* P
    cdef double v
    for s in range(tb.S):
        ui = tb.unary_index + s * C
        v = 0.0 if tb.tied_phi == NULL else tb.tied_phi[s]
        for c in range(C):
            v += u[ui[c]]
        phi[s] = v
    if not tb.any_untied:
        return
    for k in range(tb.K):
        if tb.cpl_tied[k]:
            continue
        P = _coupling_matrix(tb, k, g)
        ci = tb.cpl_index + k * tb.S
        for s in range(tb.S):
            phi[s] += P[ci[s]]


#: Most unary columns whose rows :func:`_lane_state_scores` interleaves on the stack.
cdef enum:
    LANE_UNARY = 512


cdef void _lane_state_scores(const Tables* tb, const Py_ssize_t* g,
                             double* phis) noexcept nogil:
    """``phis[s * SKFCRF_LANES + b]``: :func:`_state_scores` of every state at global
    token ``g[b]`` in every lane, 0.0 in the lanes with ``g[b] == -1``.  The lanes'
    unary rows are interleaved first (up to :data:`LANE_UNARY` columns), so that each
    state's label columns are one vector load for all four
    (``skfcrf_lane_state_scores``); each lane's sum has :func:`_state_scores`' terms in
    its order, so its bits."""
    cdef Py_ssize_t s, c, k, b, C = tb.C, nl = SKFCRF_LANES
    cdef const double* u[SKFCRF_LANES]
    cdef double v[SKFCRF_LANES]
    cdef double rows[LANE_UNARY * SKFCRF_LANES]
    cdef long long on[SKFCRF_LANES]
    cdef const int* ui
    cdef const int* ci
    cdef const double* P
    for b in range(nl):             # a lane not running reads token 0's row, then drops it
        u[b] = tb.unary + (g[b] if g[b] >= 0 else 0) * tb.ldu
        on[b] = -1 if g[b] >= 0 else 0
    if tb.ldu <= LANE_UNARY:
        for k in range(tb.ldu):
            for b in range(nl):
                rows[k * nl + b] = u[b][k]
        skfcrf_lane_state_scores(tb.S, C, tb.unary_index, tb.tied_phi, rows, on, phis)
    else:
        for s in range(tb.S):
            ui = tb.unary_index + s * C
            for b in range(nl):
                v[b] = 0.0 if tb.tied_phi == NULL else tb.tied_phi[s]
            for c in range(C):
                for b in range(nl):
                    v[b] += u[b][ui[c]]
            for b in range(nl):
                phis[s * nl + b] = v[b] if g[b] >= 0 else 0.0
    if not tb.any_untied:
        return
    for k in range(tb.K):
        if tb.cpl_tied[k]:
            continue
        ci = tb.cpl_index + k * tb.S
        for b in range(nl):
            if g[b] < 0:
                continue
            P = _coupling_matrix(tb, k, g[b])
            for s in range(tb.S):
                phis[s * nl + b] += P[ci[s]]


cdef inline const double* _coupling_matrix(const Tables* tb, Py_ssize_t k,
                                           Py_ssize_t g) noexcept nogil:
    """Coupling ``k``'s potentials at token ``g`` (its one matrix when tied)."""
    if tb.cpl_tied[k]:
        return tb.pair + tb.cpl_off[k]
    return tb.pair + tb.cpl_off[k] + g * tb.cpl_la[k] * tb.cpl_lb[k]


cdef double _viterbi_sequence(const Tables* tb, const Trans* tr, Py_ssize_t g0, Py_ssize_t T,
                              double* delta, double* phi, double* best,
                              int* path) noexcept nogil:
    """Best state path of one sequence into ``path`` in the dense form (the sparse and
    grouped forms: :func:`_viterbi_lanes`); returns its score."""
    cdef Py_ssize_t S = tb.S, t, s
    cdef double m, v
    cdef int arg
    _state_scores(tb, g0, delta)
    for t in range(1, T):
        maxplus(delta + (t - 1) * S, <int> S, tr.dense, <int> S, best)
        _state_scores(tb, g0 + t, phi)
        for s in range(S):
            delta[t * S + s] = phi[s] + best[s]
    arg, m = 0, -INFINITY
    for s in range(S):
        if delta[(T - 1) * S + s] > m:
            arg, m = <int> s, delta[(T - 1) * S + s]
    path[T - 1] = arg
    t = T - 1
    while t >= 1:
        # the forward pass's max over s of delta[t-1, s] + trans[s, path[t]], recomputed
        m, arg = -INFINITY, 0
        for s in range(S):
            v = delta[(t - 1) * S + s] + tr.dense_t[path[t] * S + s]
            if v > m:
                m, arg = v, <int> s
        path[t - 1] = arg
        t = t - 1
    return delta[(T - 1) * S + path[T - 1]]


cdef void _viterbi_lanes(const Tables* tb, const Trans* tr, const long long* seq_ptr,
                         const long long* seqs, Py_ssize_t B, const ViterbiWork* v,
                         int* labels, double* score) noexcept nogil:
    """The best state paths of ``B`` (at most ``SKFCRF_LANES``) sequences in the
    sparse or the grouped form, in lockstep, longest first: ``delta`` interleaved (state
    ``s`` of lane ``b`` at token ``t`` at ``(t * S + s) * SKFCRF_LANES + b``), so that
    one max-plus step (``skfcrf_lane_maxplus``; grouped, :func:`_grouped_maxplus_lanes`)
    reads each allowed pair once for all of them.  A lane
    past its sequence's end holds ``-inf``.  Every lane does its own sums and picks its
    own maxima (ties to the first state, the first predecessor), so a sequence's labels
    and score do not depend on the sequences beside it.  The back-pointers are
    recomputed while tracing back (grouped: :func:`_grouped_argmax`, from the lane's row
    and its maximum), so the grouped form's score is the relaxed one (module
    docstring).  Writes each sequence's labels (``labels``, ``N x C``) and score
    (``score``, by sequence; 0 for an empty one)."""
    cdef Py_ssize_t T[SKFCRF_LANES]
    cdef Py_ssize_t t, T_max = _lane_lengths(seq_ptr, seqs, B, T)
    for t in range(T_max):
        _viterbi_lanes_token(tb, tr, seq_ptr, seqs, T, t, v, NULL)
    _viterbi_lanes_trace(tb, tr, seq_ptr, seqs, B, T, v, labels, score)


cdef Py_ssize_t _lane_lengths(const long long* seq_ptr, const long long* seqs, Py_ssize_t B,
                              Py_ssize_t* T) noexcept nogil:
    """The lengths ``T`` of a block's ``B`` sequences in its ``SKFCRF_LANES`` lanes (0
    past ``B``); returns the longest."""
    cdef Py_ssize_t b, T_max = 0
    for b in range(SKFCRF_LANES):
        T[b] = _length(seq_ptr, seqs, b) if b < B else 0
        T_max = T[b] if T[b] > T_max else T_max
    return T_max


cdef void _viterbi_lanes_token(const Tables* tb, const Trans* tr, const long long* seq_ptr,
                               const long long* seqs, const Py_ssize_t* T, Py_ssize_t t,
                               const ViterbiWork* v, double* scores) noexcept nogil:
    """Token ``t``'s max-plus step of :func:`_viterbi_lanes`' lanes: ``delta`` of token
    ``t`` from token ``t - 1``'s, ``-inf`` in the lanes past their end.  The running
    lanes' state scores are computed together (:func:`_lane_state_scores`, 0.0 in the
    other lanes) into ``scores`` (``S x SKFCRF_LANES``, interleaved), where the caller
    (:func:`_decode_lanes`) takes them, or with ``scores`` NULL into ``v.phis``."""
    cdef Py_ssize_t S = tb.S, nl = SKFCRF_LANES, row = S * SKFCRF_LANES, s, b
    cdef Py_ssize_t g[SKFCRF_LANES]
    cdef double top[SKFCRF_LANES]
    cdef double d
    cdef double* delta = v.delta + t * row
    cdef double* best = v.best
    cdef double* phis = v.phis if scores == NULL else scores
    if t > 0 and tr.n_terms:
        _grouped_maxplus_lanes(tr, S, delta - row, best, v.xg, v.yg)
    elif t > 0:
        skfcrf_lane_maxplus(tr.in_ptr, tr.in_idx, tr.in_val, S, delta - row, best)
    for b in range(nl):
        g[b] = seq_ptr[seqs[b]] + t if t < T[b] else -1
    _lane_state_scores(tb, g, phis)
    for b in range(nl):
        top[b] = -INFINITY
    for s in range(S):
        for b in range(nl):
            if g[b] < 0:
                d = -INFINITY
            elif t == 0:
                d = phis[s * nl + b]
            else:
                d = phis[s * nl + b] + best[s * nl + b]
            delta[s * nl + b] = d
            top[b] = d if d > top[b] else top[b]
    for b in range(nl):         # each lane's largest delta, for the traceback's pruning
        v.top[t * nl + b] = top[b]


cdef void _viterbi_lanes_trace(const Tables* tb, const Trans* tr, const long long* seq_ptr,
                               const long long* seqs, Py_ssize_t B, const Py_ssize_t* T,
                               const ViterbiWork* v, int* labels,
                               double* score) noexcept nogil:
    """The traceback of :func:`_viterbi_lanes`: each of the ``B`` sequences' labels and
    score from the lanes' ``delta``."""
    cdef Py_ssize_t S = tb.S, C = tb.C, nl = SKFCRF_LANES, row = S * SKFCRF_LANES
    cdef Py_ssize_t t, s, b, c, g0
    cdef double m, x
    cdef int arg
    cdef long long k
    cdef double* delta = v.delta
    cdef int* path = v.path
    for b in range(B):
        if T[b] == 0:
            score[seqs[b]] = 0.0
            continue
        arg, m = 0, -INFINITY
        for s in range(S):
            if delta[(T[b] - 1) * row + s * nl + b] > m:
                arg, m = <int> s, delta[(T[b] - 1) * row + s * nl + b]
        path[T[b] - 1] = arg
        t = T[b] - 1
        while t >= 1:
            # the forward pass's max over the predecessors, recomputed
            m, arg = -INFINITY, 0
            if tr.n_terms:          # over the lane's row, with its maximum
                arg = _grouped_argmax(tr, S, delta + (t - 1) * row + b, nl,
                                      v.top[(t - 1) * nl + b], path[t], &m)
            else:
                for k in range(tr.in_ptr[path[t]], tr.in_ptr[path[t] + 1]):
                    x = delta[(t - 1) * row + tr.in_idx[k] * nl + b] + tr.in_val[k]
                    if x > m:
                        m, arg = x, tr.in_idx[k]
            path[t - 1] = arg
            t = t - 1
        score[seqs[b]] = delta[(T[b] - 1) * row + path[T[b] - 1] * nl + b]
        g0 = seq_ptr[seqs[b]]
        for t in range(T[b]):
            for c in range(C):
                labels[(g0 + t) * C + c] = tb.states[path[t] * C + c]


cdef struct ViterbiWork:
    double* delta       # t_max x S (x SKFCRF_LANES, interleaved, in _viterbi_lanes)
    double* phi         # S
    double* best        # S (x SKFCRF_LANES)
    double* phis        # S x SKFCRF_LANES: the lanes' state scores (_viterbi_lanes_token)
    double* top         # t_max x SKFCRF_LANES: each lane's largest delta (grouped form)
    int* path           # t_max
    double* xg          # G x SKFCRF_LANES (grouped form)
    double* yg          # G x SKFCRF_LANES


cdef ViterbiWork _carve_viterbi(Carver* c, Py_ssize_t t_max, Py_ssize_t S,
                                Py_ssize_t G, Py_ssize_t width) noexcept nogil:
    """One thread's Viterbi buffers, taken one after another from ``c``; ``delta``,
    ``best``, ``xg`` and ``yg`` for ``width`` interleaved sequences
    (:func:`_viterbi_lanes`)."""
    cdef ViterbiWork v
    v.delta = take_doubles(c, t_max * S * width)
    v.phi = take_doubles(c, S)
    v.best = take_doubles(c, S * width)
    v.phis = take_doubles(c, S * width)
    v.top = take_doubles(c, t_max * width)
    v.path = take_ints(c, t_max)
    v.xg = take_doubles(c, G * width)
    v.yg = take_doubles(c, G * width)
    return v


cdef struct FBWork:
    # a block of B sequences in lockstep: row (t, b) of alpha, beta and psi is at
    # (t * B + b) * S, rows of the block's sequences past their end are zero
    double* alpha       # rows x S
    double* beta        # rows x S
    double* psi         # rows x S
    double* norm        # rows
    double* tmp         # B x S
    double* log_z       # B
    float* alpha32      # rows x S (single precision: alpha and w, the BLAS operands)
    float* w32          # rows x S
    float* out32        # B x S (single precision: a product's result)
    float* counts32     # S x S
    # the sparse and grouped forms (_fb_lanes), every row of SKFCRF_LANES interleaved:
    double* xg          # G rows (grouped form: the group sums)
    double* yg          # G
    double* ag          # G
    double* lane_m      # S rows (a token's scores, then its marginals)
    double* lane_sums   # n_agg rows (the marginals' sums, Tables.agg_*)
    bint full_only      # the grouped form's counts of the full term alone (_split_step)


cdef FBWork _carve_fb(Carver* c, Py_ssize_t rows, Py_ssize_t B, Py_ssize_t S,
                      Py_ssize_t G, bint single, Py_ssize_t nnz,
                      Py_ssize_t n_agg) noexcept nogil:
    """One thread's forward-backward buffers, taken one after another from ``c``:
    ``rows`` rows of ``S`` per pass (``B`` sequences' tokens in lockstep), with
    ``single`` the single-precision operands, and the lane buffers of the sparse
    and grouped forms for ``nnz`` allowed pairs and ``n_agg`` marginal sums (0, 0:
    the dense form)."""
    cdef FBWork f
    cdef Py_ssize_t r32 = rows if single else 0, b32 = B if single else 0
    f.alpha = take_doubles(c, rows * S)
    f.beta = take_doubles(c, rows * S)
    f.psi = take_doubles(c, rows * S)
    f.norm = take_doubles(c, rows)
    f.tmp = take_doubles(c, B * S)
    f.log_z = take_doubles(c, B)
    f.xg = take_doubles(c, G * SKFCRF_LANES)       # lanes: interleaved
    f.yg = take_doubles(c, G * SKFCRF_LANES)
    f.ag = take_doubles(c, G * SKFCRF_LANES)
    f.alpha32 = take_floats(c, r32 * S)
    f.w32 = take_floats(c, r32 * S)
    f.out32 = take_floats(c, b32 * S)
    f.counts32 = take_floats(c, S * S if single else 0)
    f.lane_m = take_doubles(c, S * SKFCRF_LANES if nnz or n_agg else 0)
    f.lane_sums = take_doubles(c, n_agg * SKFCRF_LANES)
    f.full_only = False
    return f


def joint_viterbi(JointTables jt, const long long[::1] seq_ptr, const double[:, ::1] unary,
                  const double[::1] pair, int[:, ::1] labels, double[::1] score,
                  int n_threads=1):
    """Exact best labelling over the joint states; labels ``(N, C)``, score per sequence.

    The transition scores come dense or sparse (the CSR tables of log scores,
    module docstring) in ``jt``.  A sequence with no allowed labelling gets
    score ``-inf`` (and state 0's labels).  Empty sequences get score 0.
    """
    cdef double[::1] tied_phi = np.empty(jt.states.shape[0])
    cdef Tables tb = jt.tables(unary, pair, tied_phi)
    cdef Trans tr = jt.trans()
    cdef Py_ssize_t n_seq = seq_ptr.shape[0] - 1
    cdef Py_ssize_t S = tb.S, C = tb.C, sq, T, t, c, t_max = 1
    cdef size_t per
    cdef Block scratch
    cdef char* base
    cdef Carver cv
    cdef unsigned int fp
    cdef ViterbiWork v
    t_max = longest_sequence(seq_ptr)
    n_threads = max(1, n_threads)
    cdef Py_ssize_t G = jt.n_groups
    # the sparse and grouped forms run four sequences in lockstep (_viterbi_lanes)
    cdef bint lanes = tr.dense == NULL
    cdef Py_ssize_t width = SKFCRF_LANES if lanes else 1
    cdef Py_ssize_t n_blocks = 0
    cdef const long long[::1] seqs = None
    cdef const long long[::1] block_ptr = None
    cdef int* labels_p = &labels[0, 0] if labels.shape[0] else NULL
    if n_seq == 0:
        return
    if lanes:
        seqs_arr, ptr_arr, _ = lockstep_blocks(seq_ptr, S, False, lanes=True)
        seqs, block_ptr = seqs_arr, ptr_arr
        n_blocks = block_ptr.shape[0] - 1
    cv = carver(NULL)
    _carve_viterbi(&cv, t_max, S, G, width)
    per = cv.used
    scratch = allocate(n_threads * per, 1)
    base = <char*> scratch.ptr
    if lanes:
        with nogil, parallel(num_threads=n_threads):
            fp = skfcrf_subnormals_off()
            cv = carver(base + threadid() * per)
            v = _carve_viterbi(&cv, t_max, S, G, width)
            for sq in prange(n_blocks, schedule="dynamic", chunksize=1):
                _viterbi_lanes(&tb, &tr, &seq_ptr[0], &seqs[block_ptr[sq]],
                               block_ptr[sq + 1] - block_ptr[sq], &v, labels_p, &score[0])
            skfcrf_restore_fp(fp)
        return
    with nogil, parallel(num_threads=n_threads):
        fp = skfcrf_subnormals_off()
        cv = carver(base + threadid() * per)
        v = _carve_viterbi(&cv, t_max, S, G, width)
        for sq in prange(n_seq, schedule="dynamic", chunksize=1):
            T = seq_ptr[sq + 1] - seq_ptr[sq]
            if T == 0:
                score[sq] = 0.0
                continue
            score[sq] = _viterbi_sequence(&tb, &tr, seq_ptr[sq], T, v.delta, v.phi, v.best,
                                          v.path)
            for t in range(T):
                for c in range(C):
                    labels[seq_ptr[sq] + t, c] = tb.states[v.path[t] * C + c]
        skfcrf_restore_fp(fp)


cdef void _decode_lanes(const Tables* tb, const Trans* tr_max, const Trans* tr_sum,
                        double shift, const long long* seq_ptr, const long long* seqs,
                        Py_ssize_t B, const ViterbiWork* v, const FBWork* f, double* scores,
                        int* labels, double* score, double* log_z) noexcept nogil:
    """:func:`_viterbi_lanes` (``tr_max``) and the forward pass of :func:`_fb_lanes`
    (``tr_sum``) of one block in one sweep over its tokens: each token's Viterbi step
    leaves the lanes' state scores in ``scores`` (``S x SKFCRF_LANES``, interleaved)
    and the forward step weighs with them.  Writes the ``B`` sequences' labels,
    scores and ``log Z``."""
    cdef Py_ssize_t T[SKFCRF_LANES]
    cdef Py_ssize_t t, b, T_max = _lane_lengths(seq_ptr, seqs, B, T)
    for b in range(SKFCRF_LANES):
        f.log_z[b] = 0.0 if b < B else -INFINITY
    for t in range(T_max):
        _viterbi_lanes_token(tb, tr_max, seq_ptr, seqs, T, t, v, scores)
        _lanes_forward_token(tb, tr_sum, shift, seq_ptr, seqs, T, t, f, scores)
    _viterbi_lanes_trace(tb, tr_max, seq_ptr, seqs, B, T, v, labels, score)
    for b in range(B):
        log_z[seqs[b]] = f.log_z[b]


def joint_decode(JointTables jt_max, JointTables jt_sum, const long long[::1] seq_ptr,
                 const double[:, ::1] unary, const double[::1] pair, int[:, ::1] labels,
                 double[::1] score, double[::1] log_z, int n_threads=1):
    """:func:`joint_viterbi` over ``jt_max``'s transition tables and ``log Z`` by the
    forward pass of :func:`joint_forward_backward` over ``jt_sum``'s (``forward_only``),
    in one sweep over the tokens (:func:`_decode_lanes`): the same labels, scores and
    ``log Z``, bit for bit, with each token's state scores computed once.  Both tables
    must take the sparse or the grouped form (ValueError otherwise), over the same
    states and couplings."""
    cdef double[::1] tied_phi = np.empty(jt_max.states.shape[0])
    cdef Tables tb = jt_max.tables(unary, pair, tied_phi)
    cdef Trans tr_max = jt_max.trans()
    cdef Trans tr_sum = jt_sum.trans()
    cdef double shift = jt_sum.shift
    cdef Py_ssize_t n_seq = seq_ptr.shape[0] - 1
    cdef Py_ssize_t S = tb.S, k, rows, n_blocks, t_max
    cdef Py_ssize_t G_max = jt_max.n_groups, G_sum = jt_sum.n_groups
    cdef Py_ssize_t nnz = _n_pairs(&tr_sum, S), n_agg = tb.n_agg
    cdef size_t per
    cdef Block scratch
    cdef char* base
    cdef Carver cv
    cdef unsigned int fp
    cdef ViterbiWork v
    cdef FBWork f
    cdef double* sc
    cdef int* labels_p = &labels[0, 0] if labels.shape[0] else NULL
    if tr_max.dense != NULL or tr_sum.dense != NULL:
        raise ValueError("joint_decode takes transition tables in the sparse or the grouped "
                         "form")
    if jt_sum.states.shape[0] != S:
        raise ValueError("jt_max and jt_sum must be over the same joint states")
    if n_seq == 0:
        return
    seqs_arr, ptr_arr, rows = lockstep_blocks(seq_ptr, S, False, lanes=True)
    cdef const long long[::1] seqs = seqs_arr
    cdef const long long[::1] block_ptr = ptr_arr
    n_blocks = block_ptr.shape[0] - 1
    t_max = longest_sequence(seq_ptr)
    n_threads = max(1, n_threads)
    cv = carver(NULL)
    _carve_viterbi(&cv, t_max, S, G_max, SKFCRF_LANES)
    _carve_fb(&cv, rows, LOCKSTEP, S, G_sum, False, nnz, n_agg)
    take_doubles(&cv, S * SKFCRF_LANES)
    per = cv.used
    scratch = allocate(n_threads * per, 1)
    base = <char*> scratch.ptr
    with nogil, parallel(num_threads=n_threads):
        fp = skfcrf_subnormals_off()
        cv = carver(base + threadid() * per)
        v = _carve_viterbi(&cv, t_max, S, G_max, SKFCRF_LANES)
        f = _carve_fb(&cv, rows, LOCKSTEP, S, G_sum, False, nnz, n_agg)
        sc = take_doubles(&cv, S * SKFCRF_LANES)
        for k in prange(n_blocks, schedule="dynamic", chunksize=1):
            _decode_lanes(&tb, &tr_max, &tr_sum, shift, &seq_ptr[0], &seqs[block_ptr[k]],
                          block_ptr[k + 1] - block_ptr[k], &v, &f, sc, labels_p, &score[0],
                          &log_z[0])
        skfcrf_restore_fp(fp)


cdef void _block_product(const Trans* tr, Py_ssize_t S, Py_ssize_t n, const double* x,
                         double* out, bint transpose) noexcept nogil:
    """The dense form's step of ``n`` row vectors (``n x S`` row-major ``x`` and
    ``out``): ``out = x E`` (forward, ``transpose``), or ``x E^T`` (backward), one
    matrix-matrix product (one matrix-vector product for one row)."""
    cdef char nn = b"N", tt = b"T"
    cdef int m = <int> S, k = <int> n, one = 1
    cdef double a1 = 1.0, b0 = 0.0
    if n > 1:
        # column-major, the row-major E is E^T: out^T = E^T x^T (forward), E x^T (backward)
        dgemm(&nn if transpose else &tt, &nn, &m, &k, &m, &a1, <double*> tr.dense, &m,
              <double*> x, &m, &b0, out, &m)
    else:
        dgemv(&nn if transpose else &tt, &m, &m, &a1, <double*> tr.dense, &m, <double*> x,
              &one, &b0, out, &one)


cdef inline Py_ssize_t _length(const long long* seq_ptr, const long long* seqs,
                               Py_ssize_t b) noexcept nogil:
    return seq_ptr[seqs[b] + 1] - seq_ptr[seqs[b]]


cdef void _single_product(const Trans* tr, Py_ssize_t S, Py_ssize_t n, const float* x,
                          double* out, bint transpose, const FBWork* f) noexcept nogil:
    """The dense form's ``out = x E`` (``x E^T`` backward) of ``n`` rows in single
    precision (``sgemm`` over ``f.out32``), widened into ``out``."""
    cdef char nn = b"N", tt = b"T"
    cdef int m = <int> S, k = <int> n
    cdef float a1 = 1.0, b0 = 0.0
    cdef Py_ssize_t i
    sgemm(&nn if transpose else &tt, &nn, &m, &k, &m, &a1, <float*> tr.dense32, &m,
          <float*> x, &m, &b0, f.out32, &m)
    for i in range(n * S):
        out[i] = f.out32[i]


cdef double _weigh_token(const Tables* tb, Py_ssize_t g, double* incoming, double* phi,
                         double* m, double* m_all) noexcept nogil:
    """The scaled forward step at global token ``g`` after the transition product, for
    one of :func:`_fb_block`'s rows (the lanes: :func:`_lanes_forward_token`, the same
    arithmetic across four sequences): ``incoming[s]`` is state ``s``'s incoming mass
    (1 at the first token).  ``phi`` gets the state scores shifted by the best
    *reachable* state's score ``m`` (so that the token's total cannot underflow however
    far apart the scores are) and exponentiated, zero where no mass comes in;
    ``incoming`` is multiplied by them.  Returns the token's total (0 when nothing is
    reachable); ``m_all`` is the best score of any state."""
    cdef Py_ssize_t s, S = tb.S
    cdef double total = 0.0, best = -INFINITY, best_all = -INFINITY
    _state_scores(tb, g, phi)
    for s in range(S):
        if incoming[s] > 0.0 and phi[s] > best:
            best = phi[s]
        if phi[s] > best_all:
            best_all = phi[s]
    if best != -INFINITY:
        exp_shifted(phi, best, phi, <int> S)
    for s in range(S):
        if incoming[s] > 0.0 and best != -INFINITY:
            incoming[s] *= phi[s]
            total += incoming[s]
        else:
            phi[s] = 0.0                 # unreachable: no mass either way
    m[0] = best
    m_all[0] = best_all
    return total


cdef bint _fb_block(const Tables* tb, const Trans* tr, double shift, const long long* seq_ptr,
                    const long long* seqs, Py_ssize_t B, const FBWork* f, double* counts,
                    bint single, bint forward_only) noexcept nogil:
    """Scaled forward-backward of ``B`` sequences in lockstep (``seqs``, longest
    first) in the dense form (the sparse and grouped forms: :func:`_fb_lanes`);
    ``f.log_z[b]`` gets sequence ``b``'s log Z (``-inf``: no allowed labelling).

    Every token step multiplies the block's ``alpha`` (or ``w``) rows by the
    transition matrix at once, one matrix-matrix product, which reads the
    ``S x S`` matrix once for the block instead of once per sequence.  With
    ``counts`` (or NULL) adds ``sum_t alpha_{t-1} (x) w_t`` (``S x S``) with
    ``w_t = psi_t * beta_t / c_t``: times ``E`` elementwise these are the
    expected state transition counts.  ``psi`` is overwritten by ``w``.

    ``forward_only``: ``log Z`` alone (no backward pass, no counts).

    ``single`` (dense form with ``tr.dense32``): the products and the counts in
    single precision, everything else in double.  A product is then exact to a
    relative ``1e-7`` plus an absolute ``S * 1e-38`` (underflow; ``alpha`` sums
    to 1 and ``E <= 1``), so a token's total is as exact as double precision
    needs when it is at least ``exp(SINGLE_RANGE)`` of what the best-scored state
    alone could give; and ``w`` must stay below ``SINGLE_MAX`` (``beta`` grows
    like ``1 / alpha``).  Where either fails -- a state unreached in single
    precision that would dominate, say -- the block stops before adding its
    counts and returns False, for the caller to run it again in double precision.
    """
    cdef Py_ssize_t S = tb.S, t, s, b, n_t, T, T_max = _length(seq_ptr, seqs, 0)
    cdef Py_ssize_t BS = B * S
    cdef double m, m_all, total
    cdef double* phi
    cdef double* a
    cdef double* row
    cdef double* alpha = f.alpha
    cdef double* beta = f.beta
    cdef double* psi = f.psi
    cdef double* norm = f.norm
    cdef double* tmp = f.tmp
    cdef double* log_z = f.log_z
    cdef float* a32
    for b in range(B):
        log_z[b] = 0.0
        for t in range(_length(seq_ptr, seqs, b), T_max):      # past the end: no mass
            for s in range(S):
                alpha[(t * B + b) * S + s] = 0.0
                psi[(t * B + b) * S + s] = 0.0
                if single:
                    f.alpha32[(t * B + b) * S + s] = 0.0
                    f.w32[(t * B + b) * S + s] = 0.0
    n_t = B
    for t in range(T_max):
        while _length(seq_ptr, seqs, n_t - 1) <= t:
            n_t -= 1                    # the sequences still running are the first n_t
        # incoming mass of every state (1 at the first token), then weighed by the
        # token's scores (_weigh_token)
        if t == 0:
            for s in range(n_t * S):
                tmp[s] = 1.0
        elif single:
            _single_product(tr, S, n_t, f.alpha32 + (t - 1) * BS, tmp, True, f)
        else:
            _block_product(tr, S, n_t, alpha + (t - 1) * BS, tmp, True)
        for b in range(n_t):
            row = tmp + b * S
            phi = psi + (t * B + b) * S
            a = alpha + (t * B + b) * S
            a32 = f.alpha32 + (t * B + b) * S
            if log_z[b] == -INFINITY:   # no allowed labelling: no mass either way
                for s in range(S):
                    a[s] = 0.0
                    phi[s] = 0.0
                    if single:
                        a32[s] = 0.0
                continue
            if t > 0:
                log_z[b] += shift
            total = _weigh_token(tb, seq_ptr[seqs[b]] + t, row, phi, &m, &m_all)
            if not (total > 0) or (single and log(total) + m - m_all < SINGLE_RANGE):
                if single:
                    return False
                log_z[b] = -INFINITY
                for s in range(S):
                    a[s] = 0.0
                    phi[s] = 0.0
                continue
            log_z[b] += m + log(total)
            norm[t * B + b] = total
            for s in range(S):
                a[s] = row[s] / total
                if a[s] < NEGLIGIBLE:
                    # a state this far below the others could need a backward value
                    # beyond the double range (inf times 0: NaN marginals): its mass,
                    # below 1e-250 of the token's, counts as none
                    a[s] = 0.0
                    phi[s] = 0.0
            if single:
                for s in range(S):
                    a32[s] = <float> a[s]
    if forward_only:
        return True
    for b in range(B):
        T = _length(seq_ptr, seqs, b)
        if T > 0:
            for s in range(S):
                beta[((T - 1) * B + b) * S + s] = 1.0
    t = T_max - 1
    while t >= 1:
        n_t = 0
        while n_t < B and _length(seq_ptr, seqs, n_t) > t:
            n_t += 1
        for b in range(n_t):
            row = tmp + b * S
            if log_z[b] == -INFINITY:
                for s in range(S):
                    row[s] = 0.0
                continue
            for s in range(S):
                row[s] = psi[(t * B + b) * S + s] * beta[(t * B + b) * S + s] / norm[t * B + b]
        if single:
            for s in range(n_t * S):
                if tmp[s] > SINGLE_MAX:
                    return False
                f.w32[t * BS + s] = <float> tmp[s]
            _single_product(tr, S, n_t, f.w32 + t * BS, beta + (t - 1) * BS, False, f)
        else:
            _block_product(tr, S, n_t, tmp, beta + (t - 1) * BS, False)
        for s in range(n_t * S):
            psi[t * BS + s] = tmp[s]          # keep w_t for the transition counts
        t = t - 1
    if counts == NULL or T_max <= 1:
        return True
    # rows past a sequence's end are zero in alpha and w, so one product over all
    # of the block's rows pairs each alpha_{t-1} with its sequence's w_t
    if single:
        _single_transition_counts(S, (T_max - 1) * B, f.alpha32, f.w32 + BS, f.counts32,
                                  counts)
    else:
        _dense_transition_counts(S, (T_max - 1) * B, alpha, psi + BS, counts)
    return True


cdef inline Py_ssize_t _n_pairs(const Trans* tr, Py_ssize_t S) noexcept nogil:
    """The entries of the ``out`` CSR: allowed state pairs (sparse form) or pairs of
    groups (grouped form), as many as the transition counts have."""
    return tr.out_ptr[tr.n_groups if tr.n_terms else S]


cdef void _lane_step(const Trans* tr, Py_ssize_t S, const double* x, double* out,
                     bint transpose, const double* a_prev, double* counts,
                     const FBWork* f) noexcept nogil:
    """:func:`_product` of :func:`_fb_lanes`' interleaved lanes (``x``, ``out``,
    ``a_prev``: ``S x SKFCRF_LANES``; ``counts``, or NULL: ``nnz``, the lanes summed),
    in the sparse form (a CSR product over the states; with ``counts`` the
    backward step also adds ``a_prev[i] * x[j]`` to every allowed pair's count,
    ``out`` CSR order) or the grouped one (``f``'s ``xg``, ``yg``, ``ag``: ``G x
    SKFCRF_LANES`` of scratch).  Grouped, forward: ``out[s'] = sum_k factor[k, s']
    * (V_k^T xg)[group[k, s']]`` with ``xg`` the sums of ``x`` over each group;
    backward: ``out[s] = sum_k (V_k xg)[group[k, s]]`` with ``xg`` the sums of
    ``factor * x``, and with ``counts`` the pair ``(g, h)`` of an ``out`` CSR
    entry gets ``ag[g] * xg[h]`` (``ag``: the sums of ``a_prev``).  The sums over
    groups and the gathering go along the projection tree (module docstring).
    Every row's sum is four partial sums over its entries ``k, k+1, k+2, k+3``
    (``skfcrf_lane_product``), the tree's in entry order."""
    cdef Py_ssize_t G = tr.n_groups
    cdef double* xg = f.xg
    cdef double* yg = f.yg
    cdef double* ag = f.ag
    if not tr.n_terms:
        if transpose:
            skfcrf_lane_product(tr.in_ptr, tr.in_idx, tr.in_val, S, x, NULL, NULL, out)
        else:
            skfcrf_lane_product(tr.out_ptr, tr.out_idx, tr.out_val, S, x, a_prev, counts, out)
        return
    if tr.full_first >= 0:
        _split_step(tr, S, x, out, transpose, a_prev, counts, f)
        return
    memset(xg, 0, G * SKFCRF_LANES * sizeof(double))
    _states_to_groups(tr, S, x, xg)
    if transpose:
        _tree_sum(&tr.down, NULL, xg, xg, False)
        skfcrf_lane_product(tr.in_ptr, tr.in_idx, tr.in_val, G, xg, NULL, NULL, yg)
        _tree_sum(&tr.up, tr.up.w, yg, yg, False)
    else:
        _tree_sum(&tr.down, tr.down.w, xg, xg, False)
        if counts != NULL:
            memset(ag, 0, G * SKFCRF_LANES * sizeof(double))
            _states_to_groups(tr, S, a_prev, ag)
            _tree_sum(&tr.down, NULL, ag, ag, False)
        skfcrf_lane_product(tr.out_ptr, tr.out_idx, tr.out_val, G, xg,
                            ag if counts != NULL else NULL, counts, yg)
        _tree_sum(&tr.up, NULL, yg, yg, False)
    _groups_to_states(tr, S, yg, out)


cdef inline void _tree_sum(const Tree* t, const double* w, const double* src, double* dst,
                           bint store) noexcept nogil:
    """``skfcrf_lane_tree_sum`` over the rows of ``t`` (``w``: its weights, or NULL)."""
    skfcrf_lane_tree_sum(t.n_rows, t.ptr, t.row, t.idx, w, src, dst, store)


cdef void _split_step(const Trans* tr, Py_ssize_t S, const double* x, double* out,
                      bint transpose, const double* a_prev, double* counts,
                      const FBWork* f) noexcept nogil:
    """:func:`_lane_step` of the grouped form whose full term is the states
    themselves (``full_first``): the full term's product reads ``x`` (and
    ``a_prev``) and writes ``out`` directly, the tree reads ``x`` and adds into
    ``out`` where it meets it, and the other terms' groups fill ``f``'s scratch
    (every row of it written by the tree's first pass, so nothing is cleared).
    The same sums in the same order as with the full term copied in and out.
    With ``f.full_only`` the backward step adds the full term's counts alone (the
    other terms' entries stay as they are, and their sums of ``a_prev`` are not
    taken)."""
    cdef Py_ssize_t ff = tr.full_first
    cdef double* xg = f.xg
    cdef double* yg = f.yg
    cdef double* ag = f.ag
    if transpose:
        _tree_sum(&tr.down_first, NULL, x, xg, True)
        _tree_sum(&tr.down_rest, NULL, xg, xg, True)
        skfcrf_lane_product(tr.in_ptr, tr.in_idx, tr.in_val, ff, xg, NULL, NULL, yg)
        skfcrf_lane_product(tr.in_ptr + ff, tr.in_idx_local, tr.in_val, S, x, NULL, NULL, out)
        _tree_sum(&tr.up_rest, tr.up_rest.w, yg, yg, False)
        _tree_sum(&tr.up_last, tr.up_last.w, yg, out, False)
        return
    cdef double* term_counts = NULL if f.full_only else counts
    _tree_sum(&tr.down_first, tr.down_first.w, x, xg, True)
    _tree_sum(&tr.down_rest, tr.down_rest.w, xg, xg, True)
    if term_counts != NULL:
        _tree_sum(&tr.down_first, NULL, a_prev, ag, True)
        _tree_sum(&tr.down_rest, NULL, ag, ag, True)
    skfcrf_lane_product(tr.out_ptr, tr.out_idx, tr.out_val, ff, xg,
                        ag if term_counts != NULL else NULL, term_counts, yg)
    skfcrf_lane_product(tr.out_ptr + ff, tr.out_idx_local, tr.out_val, S, x,
                        a_prev if counts != NULL else NULL, counts, out)
    _tree_sum(&tr.up_rest, NULL, yg, yg, False)
    _tree_sum(&tr.up_last, NULL, yg, out, False)


cdef void _lanes_forward_token(const Tables* tb, const Trans* tr, double shift,
                               const long long* seq_ptr, const long long* seqs,
                               const Py_ssize_t* T, Py_ssize_t t, const FBWork* f,
                               double* given) noexcept nogil:
    """Token ``t``'s scaled forward step of :func:`_fb_lanes`' lanes (``T``: their
    lengths, 0 past the block): the product of token ``t - 1``'s ``alpha`` (1 at the
    first token), then every running lane weighed by its state scores as
    :func:`_weigh_token` weighs one sequence, as vector operations over the lanes
    (``skfcrf_lane_best``, ``skfcrf_lane_shift``, ``exp_shifted``,
    ``skfcrf_lane_weigh``: each lane's arithmetic in its order; ``f.log_z`` and
    ``f.norm`` updated), then ``alpha`` and ``psi`` of token ``t`` (zero in the lanes
    not running).  ``given``: the lanes' state scores (``S x SKFCRF_LANES``,
    interleaved; overwritten), computed by the caller (:func:`_decode_lanes`); NULL:
    computed here."""
    cdef Py_ssize_t S = tb.S, s, b, nl = SKFCRF_LANES, row_len = S * SKFCRF_LANES
    cdef long long on[SKFCRF_LANES]      # -1: the lane runs at this token, 0: it does not
    cdef Py_ssize_t g[SKFCRF_LANES]      # the running lanes' global token, -1 in the others
    cdef double scale[SKFCRF_LANES]
    cdef double best[SKFCRF_LANES]
    cdef double total[SKFCRF_LANES]
    cdef double* tmp = f.tmp                       # S x lanes: the product's result
    cdef double* phis = f.lane_m if given == NULL else given   # S x lanes: the scores
    cdef double* log_z = f.log_z
    if t == 0:
        for s in range(row_len):
            tmp[s] = 1.0
    else:
        _lane_step(tr, S, f.alpha + (t - 1) * row_len, tmp, True, NULL, NULL, f)
    for b in range(nl):
        on[b] = 0 if t >= T[b] or log_z[b] == -INFINITY else -1     # no mass either way
        best[b], total[b] = -INFINITY, 0.0
        g[b] = seq_ptr[seqs[b]] + t if on[b] else -1
        if not on[b] and given != NULL:
            for s in range(S):
                phis[s * nl + b] = 0.0
    if given == NULL:
        _lane_state_scores(tb, g, phis)
    # exp(score - the best reachable state's score), zero where no mass comes in
    skfcrf_lane_best(S, tmp, phis, best)
    for b in range(nl):
        if not on[b] or best[b] == -INFINITY:
            best[b] = 0.0                       # the lane's total is then 0 (or not kept)
    skfcrf_lane_shift(S, phis, best, phis)
    exp_shifted(phis, 0.0, phis, <int> row_len)
    skfcrf_lane_weigh(S, tmp, phis, total)
    for b in range(nl):
        scale[b] = 1.0
        if not on[b]:
            continue
        if t > 0:
            log_z[b] += shift
        on[b] = 0
        if not (total[b] > 0):
            log_z[b] = -INFINITY
            continue
        log_z[b] += best[b] + log(total[b])
        f.norm[t * nl + b] = total[b]
        on[b] = -1
        scale[b] = total[b]
    # alpha = tmp / total and psi = the scores, zero below NEGLIGIBLE of the
    # token's mass (as in _fb_block) and in the lanes not running
    skfcrf_lane_normalize(S, tmp, phis, scale, on, NEGLIGIBLE, f.alpha + t * row_len,
                          f.psi + t * row_len)

cdef void _fb_lanes(const Tables* tb, const Trans* tr, double shift, const long long* seq_ptr,
                    const long long* seqs, Py_ssize_t B, const FBWork* f, double* counts,
                    bint forward_only, bint marginals, double* node, Py_ssize_t ldn,
                    double* pmarg, double* tied_acc, const long long* tied_off) noexcept nogil:
    """Scaled forward-backward of ``B`` (at most ``SKFCRF_LANES``) sequences in the
    sparse or the grouped form, as :func:`_fb_block` in the dense one: in lockstep,
    longest first, their rows interleaved -- state ``s`` of lane ``b`` at token
    ``t`` is at ``(t * S + s) * SKFCRF_LANES + b`` of ``alpha``, ``beta`` and ``psi``
    -- so that one step (:func:`_lane_step`) moves every lane, reading each allowed
    pair once.  Lanes past their sequence's end, and past ``B``, hold zeros.  The
    one-sequence code summed each lane's products the same way and did the same
    per-lane arithmetic, so ``log Z`` and the node marginals have its bits.  The
    backward steps add the transition counts, the lanes' sum at each token, to
    ``counts`` (one per allowed pair).  Unless ``forward_only``, the backward pass adds every
    token's marginals up as it goes (:func:`_lane_aggregate`; the arguments after
    ``marginals`` are :func:`_aggregate`'s), or with ``marginals`` false leaves them out
    (``log Z`` and ``counts`` alone).
    """
    cdef Py_ssize_t S = tb.S, t, s, b, T_max = _length(seq_ptr, seqs, 0)
    cdef Py_ssize_t nl = SKFCRF_LANES, row_len = S * SKFCRF_LANES
    cdef Py_ssize_t T[SKFCRF_LANES]
    cdef long long on[SKFCRF_LANES]      # -1: the lane runs at this token, 0: it does not
    cdef double scale[SKFCRF_LANES]
    cdef double* alpha = f.alpha
    cdef double* beta = f.beta
    cdef double* psi = f.psi
    cdef double* norm = f.norm
    cdef double* tmp = f.tmp                       # S x lanes: a product's result, or w_t
    cdef double* log_z = f.log_z
    for b in range(nl):
        T[b] = _length(seq_ptr, seqs, b) if b < B else 0
        log_z[b] = 0.0 if b < B else -INFINITY
    # every token's alpha and psi of every lane are written (zero where a lane does
    # not run: past its end, or with no allowed labelling)
    for t in range(T_max):
        _lanes_forward_token(tb, tr, shift, seq_ptr, seqs, T, t, f, NULL)
    if forward_only or T_max == 0:
        return
    for b in range(nl):
        if T[b] == T_max:
            for s in range(S):
                beta[((T_max - 1) * S + s) * nl + b] = 1.0
    if marginals:
        _lane_aggregate(tb, T_max - 1, B, T, log_z, seq_ptr, seqs, alpha, beta, f, node, ldn,
                        pmarg, tied_acc, tied_off)
    t = T_max - 1
    while t >= 1:
        for b in range(nl):
            on[b] = -1 if t < T[b] and log_z[b] != -INFINITY else 0
            scale[b] = norm[t * nl + b] if on[b] else 1.0
        skfcrf_lane_scale(S, psi + t * row_len, beta + t * row_len, scale, on, 0, tmp)
        _lane_step(tr, S, tmp, beta + (t - 1) * row_len, False, alpha + (t - 1) * row_len,
                   counts, f)
        for b in range(nl):
            if T[b] == t:               # the lane's last token is t - 1
                for s in range(S):
                    beta[((t - 1) * S + s) * nl + b] = 1.0
        if marginals:
            _lane_aggregate(tb, t - 1, B, T, log_z, seq_ptr, seqs, alpha, beta, f, node, ldn,
                            pmarg, tied_acc, tied_off)
        t = t - 1


cdef void _lane_aggregate(const Tables* tb, Py_ssize_t t, Py_ssize_t B, const Py_ssize_t* T,
                          const double* log_z, const long long* seq_ptr, const long long* seqs,
                          const double* alpha, const double* beta, const FBWork* f,
                          double* node, Py_ssize_t ldn, double* pmarg, double* tied_acc,
                          const long long* tied_off) noexcept nogil:
    """:func:`_aggregate` of token ``t`` of :func:`_fb_lanes`'s lanes (those running at
    ``t`` with an allowed labelling): the state marginals ``alpha * beta`` of all
    lanes, their sums per node column and coupling entry (``Tables.agg_*``, each
    summed over its states in ascending order, as :func:`_aggregate` adds them,
    so the node marginals keep their bits), then each sum into ``node``, the
    untied coupling marginals or the tied coupling counts.  The token's ``node``
    row is cleared first in every lane that has the token (also without an
    allowed labelling: zero marginals)."""
    cdef Py_ssize_t S = tb.S, i, r, b, g, row_len = S * SKFCRF_LANES
    cdef int k
    cdef bint on[SKFCRF_LANES]
    cdef Py_ssize_t at[SKFCRF_LANES]
    cdef double* m = f.lane_m
    cdef double* sums = f.lane_sums
    cdef const double* a = alpha + t * row_len
    cdef const double* be = beta + t * row_len
    for b in range(SKFCRF_LANES):
        on[b] = b < B and t < T[b] and log_z[b] != -INFINITY
        at[b] = seq_ptr[seqs[b]] + t if on[b] else 0
        if b < B and t < T[b]:
            memset(node + (seq_ptr[seqs[b]] + t) * ldn, 0, ldn * sizeof(double))
    for i in range(row_len):
        m[i] = a[i] * be[i]
    skfcrf_lane_sums(tb.agg_ptr, tb.agg_idx, NULL, tb.n_agg, m, sums)
    for r in range(tb.n_agg):
        k = tb.agg_k[r]
        for b in range(SKFCRF_LANES):
            if not on[b]:
                continue
            g = at[b]
            if k < 0:
                node[g * ldn + tb.agg_e[r]] += sums[r * SKFCRF_LANES + b]
            elif tb.cpl_tied[k]:
                tied_acc[tied_off[k] + tb.agg_e[r]] += sums[r * SKFCRF_LANES + b]
            else:
                pmarg[tb.cpl_off[k] + g * tb.cpl_la[k] * tb.cpl_lb[k]
                      + tb.agg_e[r]] += sums[r * SKFCRF_LANES + b]


cdef void _aggregate(const Tables* tb, Py_ssize_t g0, Py_ssize_t T, const double* alpha,
                     const double* beta, Py_ssize_t lda, double* node, Py_ssize_t ldn,
                     double* pmarg, double* tied_acc,
                     const long long* tied_off) noexcept nogil:
    """Add the state marginals ``alpha * beta`` (token ``t``'s row at ``t * lda``) to
    the per-chain node marginals (rows of ``node``), the untied coupling marginals (per
    token, in ``pmarg``'s pair layout) and the tied coupling counts (``tied_acc`` at
    ``tied_off[k]``)."""
    cdef Py_ssize_t S = tb.S, t, s, c, k, g
    cdef const int* ui
    cdef double m
    cdef double* row
    for t in range(T):
        g = g0 + t
        row = node + g * ldn
        for s in range(S):
            m = alpha[t * lda + s] * beta[t * lda + s]
            if m == 0.0:
                continue
            ui = tb.unary_index + s * tb.C
            for c in range(tb.C):
                row[ui[c]] += m
            for k in range(tb.K):
                if tb.cpl_tied[k]:
                    tied_acc[tied_off[k] + tb.cpl_index[k * S + s]] += m
                else:
                    pmarg[tb.cpl_off[k] + g * tb.cpl_la[k] * tb.cpl_lb[k]
                          + tb.cpl_index[k * S + s]] += m


def lockstep_blocks(const long long[::1] seq_ptr, Py_ssize_t S, bint dense,
                    Py_ssize_t max_bytes=LOCKSTEP_BYTES, bint lanes=False):
    """The blocks of sequences :func:`joint_forward_backward` runs in lockstep.

    Returns ``(seqs, block_ptr, rows)``: the sequences longest first, block ``k``
    being ``seqs[block_ptr[k]:block_ptr[k + 1]]``, and the most token rows
    (block size times its longest sequence) of any block.  Dense transitions
    take blocks of up to ``LOCKSTEP`` (32) sequences of similar lengths, as many
    as ``max_bytes`` of buffers per thread allow (at least one; by default
    ``LOCKSTEP_BYTES``, 32 MB); ``lanes`` (the sparse and grouped forms,
    :func:`_fb_lanes`) blocks of ``SKFCRF_LANES`` (4) sequences, each taking that
    many rows per token however many it holds; otherwise one sequence per block.
    """
    lengths = np.diff(np.asarray(seq_ptr))
    seqs = np.argsort(-lengths, kind="stable").astype(np.int64)
    t_max = max(int(lengths.max()) if len(lengths) else 1, 1)
    cap = max(max_bytes // (4 * 8 * max(S, 1)), t_max)    # token rows per thread
    ptr, rows, i, n = [0], 1, 0, len(seqs)
    while i < n:
        longest = max(int(lengths[seqs[i]]), 1)
        size = (min(LOCKSTEP, cap // longest, n - i) if dense
                else min(SKFCRF_LANES, n - i) if lanes else 1)
        i += size
        ptr.append(i)
        rows = max(rows, (SKFCRF_LANES if lanes else size) * longest)
    return seqs, np.asarray(ptr, np.int64), rows


def joint_forward_backward(JointTables jt, const long long[::1] seq_ptr,
                           const double[:, ::1] unary, const double[::1] pair,
                           double[:, ::1] node, double[::1] pmarg, double[:, ::1] tied_acc,
                           double[::1] log_z, double[:, ::1] counts=None, int n_threads=1,
                           bint forward_only=False, bint marginals=True):
    """Marginals and ``log Z`` per sequence over the joint states, aggregated in place.

    ``jt``'s transition values are ``exp(trans - shift)`` (0 where forbidden),
    row-major ``S * S`` (``dense``), or the CSR tables hold those values for the
    allowed pairs (sparse form, module docstring).  Writes the per-chain label
    marginals to ``node`` ``(N, Ltot)`` (whatever it held: every row is cleared
    first), adds the untied coupling templates' per-token marginals to ``pmarg``
    (pair layout), and thread ``k``'s tied coupling counts to ``tied_acc[k]``
    (template ``j`` at ``jt``'s ``tied_off[j]``).  A sequence with no allowed
    labelling gets ``log Z = -inf``, zero marginals, and adds nothing.  With ``counts`` (not None),
    thread ``k`` adds its sequences' ``sum_t alpha_{t-1} (x) w_t`` to
    ``counts[k]`` (``n_threads x S*S``, or ``n_threads x nnz`` in the sparse
    form, in the ``out`` CSR's order; see :func:`_fb_block`).  Sequences run in
    lockstep blocks (:func:`lockstep_blocks`).  ``forward_only``: ``log Z`` alone, by
    the forward pass (``node``, ``pmarg``, ``tied_acc`` and ``counts`` untouched).
    ``marginals=False``: ``log Z`` and ``counts`` by both passes, the marginals left
    out (``node``, ``pmarg`` and ``tied_acc`` untouched; a caller that needs only the
    transition counts, such as the joint-state transition stage, saves their sums);
    in the grouped form whose full term is the states (:func:`_split_step`), the
    counts of the full term's entries alone, the other terms' left at zero (the
    joint-state transition weights' gradient reads only those).
    """
    cdef double[::1] tied_phi = np.empty(jt.states.shape[0])
    cdef Tables tb = jt.tables(unary, pair, tied_phi)
    cdef Trans tr = jt.trans()
    cdef double shift = jt.shift
    cdef int want_counts = counts is not None
    cdef Py_ssize_t S = tb.S, k, b, sq, B, rows, n_blocks
    cdef size_t per
    cdef Block scratch
    cdef char* base
    cdef Carver cv
    cdef unsigned int fp
    cdef FBWork f
    cdef double* node_p = &node[0, 0] if node.shape[0] else NULL
    cdef Py_ssize_t ldn = node.shape[1]
    cdef double* pm = &pmarg[0]
    cdef const long long* toff = &jt.tied_off[0]
    cdef Py_ssize_t G = jt.n_groups
    cdef bint single = tr.dense != NULL and tr.dense32 != NULL
    cdef bint lanes = tr.dense == NULL          # the sparse and the grouped forms
    cdef Py_ssize_t nnz = _n_pairs(&tr, S) if lanes else 0
    cdef Py_ssize_t n_agg = tb.n_agg if lanes else 0
    seqs_arr, ptr_arr, rows = lockstep_blocks(seq_ptr, S, tr.dense != NULL, lanes=lanes)
    cdef const long long[::1] seqs = seqs_arr
    cdef const long long[::1] block_ptr = ptr_arr
    n_blocks = block_ptr.shape[0] - 1
    n_threads = max(1, n_threads)
    cv = carver(NULL)
    _carve_fb(&cv, rows, LOCKSTEP, S, G, single, nnz, n_agg)
    per = cv.used
    scratch = allocate(n_threads * per, 1)
    base = <char*> scratch.ptr
    with nogil, parallel(num_threads=n_threads):
        fp = skfcrf_subnormals_off()
        cv = carver(base + threadid() * per)
        f = _carve_fb(&cv, rows, LOCKSTEP, S, G, single, nnz, n_agg)
        f.full_only = not marginals
        # blocks dealt round-robin (longest first), not on demand: each thread's
        # counts then add the same terms in the same order in every run
        for k in prange(n_blocks, schedule="static", chunksize=1):
            B = block_ptr[k + 1] - block_ptr[k]
            if lanes:               # marginals added up by the lanes' backward pass
                _fb_lanes(&tb, &tr, shift, &seq_ptr[0], &seqs[block_ptr[k]], B, &f,
                          &counts[threadid(), 0] if want_counts else NULL, forward_only,
                          marginals, node_p, ldn, pm, &tied_acc[threadid(), 0], toff)
                for b in range(B):
                    log_z[seqs[block_ptr[k] + b]] = f.log_z[b]
                continue
            if not _fb_block(&tb, &tr, shift, &seq_ptr[0], &seqs[block_ptr[k]], B, &f,
                             &counts[threadid(), 0] if want_counts else NULL, single,
                             forward_only):
                _fb_block(&tb, &tr, shift, &seq_ptr[0], &seqs[block_ptr[k]], B, &f,
                          &counts[threadid(), 0] if want_counts else NULL, False,
                          forward_only)
            for b in range(B):
                sq = seqs[block_ptr[k] + b]
                log_z[sq] = f.log_z[b]
                if forward_only or not marginals:
                    continue
                memset(node_p + seq_ptr[sq] * ldn, 0,
                       (seq_ptr[sq + 1] - seq_ptr[sq]) * ldn * sizeof(double))
                if f.log_z[b] != -INFINITY:
                    _aggregate(&tb, seq_ptr[sq], seq_ptr[sq + 1] - seq_ptr[sq],
                               f.alpha + b * S, f.beta + b * S, B * S, node_p, ldn, pm,
                               &tied_acc[threadid(), 0], toff)
        skfcrf_restore_fp(fp)
