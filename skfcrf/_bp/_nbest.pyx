# cython: language_level=3
"""Exact k-best Viterbi (list Viterbi) over a linear chain of states.

One sequence of ``T`` tokens over ``S`` states:

``phi`` : float64 ``(T, S)``
    Score of state ``s`` at token ``t`` (``-inf``: not allowed).
``trans`` : float64 ``(n_trans, S, S)``
    Transition score matrices, row-major ``[state at t-1, state at t]``;
    ``-inf`` forbids a transition.
``tindex`` : int64 ``(T,)``
    ``trans[tindex[t]]`` scores the step from token ``t - 1`` to ``t``
    (``tindex[0]`` is unused): all zeros for a tied matrix, one matrix per
    token for untied ones.

The score of a path is the sum of its state and transition scores.  For every
token ``t`` and state ``s`` the kernel keeps the ``k`` best prefixes ending in
``s`` at ``t`` (their scores in decreasing order, with back-pointers to the
state and rank of the prefix they extend), so the ``k`` best complete paths are
the ``k`` best entries at the last token: exact, ``O(T S^2 k)`` time and
``O(T S k)`` memory.  Every entry stands for a different prefix, so the paths
returned are distinct.  Ties go to the smaller state, then the better rank,
of the earlier token; paths of score ``-inf`` are never returned, so fewer
than ``k`` come back when fewer are allowed.

:func:`state_log_partition` is the forward half of forward-backward over such a
chain of states: ``log Z`` alone, for ``log p(labels | x)``, at half the work of
the joint kernel's forward-backward (which also aggregates marginals).
"""
import numpy as np

from cython.parallel cimport parallel, prange, threadid
from libc.math cimport exp, INFINITY, log
from scipy.linalg.cython_blas cimport dgemv


cdef inline int _insert(double v, int s, int r, double* val, int* st, int* rk, int n,
                        int k) noexcept nogil:
    """Insert ``(v, s, r)`` into the descending list ``val[:n]`` (capacity ``k``); new length.

    Equal values keep their order of arrival (callers offer states in
    increasing order), so ties go to the earlier offer.
    """
    cdef int j
    if n == k:
        if v <= val[k - 1]:
            return n
        j = k - 1
    else:
        j = n
        n = n + 1
    while j > 0 and val[j - 1] < v:
        val[j] = val[j - 1]
        st[j] = st[j - 1]
        rk[j] = rk[j - 1]
        j = j - 1
    val[j] = v
    st[j] = s
    rk[j] = r
    return n


cdef int _kbest(const double[:, ::1] phi, const double[:, :, ::1] trans,
                const long long[::1] tindex, int k, double[:, :, ::1] delta,
                int[:, :, ::1] bp_state, int[:, :, ::1] bp_rank, int[:, ::1] count,
                int[::1] end_state, int[::1] end_rank, int[:, ::1] paths,
                double[::1] scores) noexcept nogil:
    cdef Py_ssize_t T = phi.shape[0], S = phi.shape[1], t, s, s2
    cdef int r, n, j
    cdef double v
    cdef const double* P
    for s in range(S):
        count[0, s] = 0
        if phi[0, s] > -INFINITY:
            delta[0, s, 0] = phi[0, s]
            bp_state[0, s, 0] = -1
            bp_rank[0, s, 0] = -1
            count[0, s] = 1
    for t in range(1, T):
        P = &trans[tindex[t], 0, 0]
        for s2 in range(S):
            n = 0
            if phi[t, s2] > -INFINITY:
                for s in range(S):
                    if P[s * S + s2] == -INFINITY:
                        continue
                    for r in range(count[t - 1, s]):
                        v = delta[t - 1, s, r] + P[s * S + s2]
                        if n == k and v <= delta[t, s2, k - 1]:
                            break       # the rest of this state's list is no better
                        n = _insert(v, <int> s, r, &delta[t, s2, 0], &bp_state[t, s2, 0],
                                    &bp_rank[t, s2, 0], n, k)
                for j in range(n):
                    delta[t, s2, j] = delta[t, s2, j] + phi[t, s2]
            count[t, s2] = n
    # the k best entries of the last token, then trace each back
    cdef int st_j, rk_j, st_prev
    n = 0
    for s in range(S):
        for r in range(count[T - 1, s]):
            if n == k and delta[T - 1, s, r] <= scores[k - 1]:
                break
            n = _insert(delta[T - 1, s, r], <int> s, r, &scores[0], &end_state[0],
                        &end_rank[0], n, k)
    for j in range(n):
        st_j = end_state[j]
        rk_j = end_rank[j]
        t = T - 1
        while t >= 1:
            paths[j, t] = st_j
            st_prev = bp_state[t, st_j, rk_j]
            rk_j = bp_rank[t, st_j, rk_j]
            st_j = st_prev
            t = t - 1
        paths[j, 0] = st_j
    return n


def kbest_viterbi(phi, trans, tindex, int k):
    """The ``k`` best state paths of one sequence (see the module docstring).

    Returns
    -------
    paths : int32 ndarray of shape (m, T)
        ``m <= k`` distinct paths, best first.
    scores : float64 ndarray of shape (m,)
    """
    cdef const double[:, ::1] phi_v = np.ascontiguousarray(phi, dtype=np.float64)
    cdef const double[:, :, ::1] trans_v = np.ascontiguousarray(trans, dtype=np.float64)
    cdef const long long[::1] tindex_v = np.ascontiguousarray(tindex, dtype=np.int64)
    cdef Py_ssize_t T = phi_v.shape[0], S = phi_v.shape[1]
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    if trans_v.shape[1] != S or trans_v.shape[2] != S:
        raise ValueError(f"trans must have shape (n_trans, {S}, {S})")
    if tindex_v.shape[0] != T:
        raise ValueError(f"tindex must have length {T}")
    if T == 0:
        return np.zeros((1, 0), np.int32), np.zeros(1)
    idx = np.asarray(tindex_v)[1:]
    if idx.size and (idx.min() < 0 or idx.max() >= trans_v.shape[0]):
        raise ValueError("tindex out of range")
    delta = np.empty((T, S, k), np.float64)
    bp_state = np.empty((T, S, k), np.int32)
    bp_rank = np.empty((T, S, k), np.int32)
    count = np.zeros((T, S), np.int32)
    end_state = np.empty(k, np.int32)
    end_rank = np.empty(k, np.int32)
    paths = np.empty((k, T), np.int32)
    scores = np.empty(k, np.float64)
    cdef double[:, :, ::1] dv = delta
    cdef int[:, :, ::1] bsv = bp_state
    cdef int[:, :, ::1] brv = bp_rank
    cdef int[:, ::1] cv = count
    cdef int[::1] esv = end_state
    cdef int[::1] erv = end_rank
    cdef int[:, ::1] pv = paths
    cdef double[::1] sv = scores
    cdef int n
    with nogil:
        n = _kbest(phi_v, trans_v, tindex_v, k, dv, bsv, brv, cv, esv, erv, pv, sv)
    return paths[:n].copy(), scores[:n].copy()


cdef double _forward_log_z(const double* phi, Py_ssize_t T, Py_ssize_t S, const double* E,
                           double shift, double* a, double* b) noexcept nogil:
    """``log Z`` of one sequence by the scaled forward recursion (see :func:`state_log_partition`)."""
    cdef Py_ssize_t t, s
    cdef double m, total, log_z = 0.0, one = 1.0, zero = 0.0
    cdef int n = <int> S, inc = 1
    cdef char trans_n = b'N'
    for t in range(T):
        m = -INFINITY
        for s in range(S):
            if phi[t * S + s] > m:
                m = phi[t * S + s]
        if m == -INFINITY:
            return -INFINITY
        if t == 0:
            for s in range(S):
                b[s] = exp(phi[s] - m)
        else:
            # b = E^T a: the row-major E read column-major is E^T
            dgemv(&trans_n, &n, &n, &one, <double*> E, &n, a, &inc, &zero, b, &inc)
            for s in range(S):
                b[s] = b[s] * exp(phi[t * S + s] - m)
            log_z += shift
        total = 0.0
        for s in range(S):
            total += b[s]
        if not total > 0.0:
            return -INFINITY
        log_z += m + log(total)
        for s in range(S):
            a[s] = b[s] / total
    return log_z


def state_log_partition(const double[:, ::1] phi, const long long[::1] seq_ptr,
                        const double[:, ::1] E, double shift, double[::1] log_z,
                        int n_threads=1):
    """``log Z`` of every sequence of a linear chain over ``S`` states, forward pass only.

    ``phi`` ``(N, S)``: state scores of the stacked tokens (``seq_ptr`` as in
    :mod:`skfcrf._bp.graph`); ``E`` ``(S, S)``: ``exp(trans - shift)`` (0 where a
    transition is forbidden).  ``log_z[s]`` receives ``-inf`` when the scaled
    recursion finds no allowed labelling (or underflows to zero); empty
    sequences get 0.  Parallel over sequences.
    """
    cdef Py_ssize_t S = phi.shape[1], n_seq = seq_ptr.shape[0] - 1, sq, T
    if E.shape[0] != S or E.shape[1] != S or log_z.shape[0] != n_seq:
        raise ValueError("state_log_partition: inconsistent shapes")
    if n_seq and (seq_ptr[0] != 0 or seq_ptr[n_seq] > phi.shape[0]):
        raise ValueError("state_log_partition: seq_ptr does not fit phi")
    n_threads = max(1, n_threads)
    scratch = np.empty((n_threads, 2 * S), np.float64)
    cdef double[:, ::1] w = scratch
    cdef int tid
    with nogil, parallel(num_threads=n_threads):
        tid = threadid()
        for sq in prange(n_seq, schedule="dynamic"):
            T = seq_ptr[sq + 1] - seq_ptr[sq]
            if T == 0:
                log_z[sq] = 0.0
            else:
                log_z[sq] = _forward_log_z(&phi[seq_ptr[sq], 0], T, S, &E[0, 0], shift,
                                           &w[tid, 0], &w[tid, S])
