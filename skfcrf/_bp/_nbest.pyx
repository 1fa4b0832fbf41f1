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
"""
import numpy as np

from libc.math cimport INFINITY


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
