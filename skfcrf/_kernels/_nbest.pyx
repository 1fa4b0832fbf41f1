# cython: language_level=3
"""Exact k-best paths over a linear chain of states: list Viterbi and A*.

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

:func:`kbest_astar` returns the same paths faster when ``S`` is large: an A*
search whose heuristic, the backward Viterbi values, is exact, so it expands
only about ``k * T`` prefixes (``O(T S^2)`` for the vectorised backward pass plus
``O(k T S log(k T S))`` for the search; 3.2x faster than list Viterbi at
``T = 600, S = 344, k = 3``).  List Viterbi stays for short label sets (the
chain-wise moves of :mod:`skfcrf._kernels.states`) and as its cross-check.
"""
import numpy as np

from libc.math cimport INFINITY
from libc.stdlib cimport free, malloc, realloc

from ._common cimport maxplus


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


cdef class _PathInputs:
    """One sequence's ``phi`` (T, S), ``trans`` (n_trans, S, S) and ``tindex`` (T,), checked for
    the path searches (``ValueError`` on bad shapes, indices or ``k``), as the contiguous typed
    views they read."""
    cdef const double[:, ::1] phi
    cdef const double[:, :, ::1] trans
    cdef const long long[::1] tindex
    cdef Py_ssize_t T, S

    def __init__(self, phi, trans, tindex, int k):
        phi = np.ascontiguousarray(phi, dtype=np.float64)
        trans = np.ascontiguousarray(trans, dtype=np.float64)
        tindex = np.ascontiguousarray(tindex, dtype=np.int64)
        if phi.ndim != 2 or trans.ndim != 3 or tindex.ndim != 1:
            raise ValueError("phi must be 2-D, trans 3-D and tindex 1-D")
        T, S = phi.shape
        if k < 1:
            raise ValueError(f"k must be at least 1, got {k}")
        if trans.shape[1] != S or trans.shape[2] != S:
            raise ValueError(f"trans must have shape (n_trans, {S}, {S})")
        if tindex.shape[0] != T:
            raise ValueError(f"tindex must have length {T}")
        idx = tindex[1:]
        if idx.size and (idx.min() < 0 or idx.max() >= trans.shape[0]):
            raise ValueError("tindex out of range")
        self.phi, self.trans, self.tindex = phi, trans, tindex
        self.T, self.S = T, S

    cdef const double[:, :, ::1] transposed(self):
        """``trans`` with every matrix transposed (the backward pass reads its columns)."""
        return np.ascontiguousarray(np.asarray(self.trans).transpose(0, 2, 1))


def kbest_viterbi(phi, trans, tindex, int k):
    """The ``k`` best state paths of one sequence (see the module docstring).

    Returns
    -------
    paths : int32 ndarray of shape (m, T)
        ``m <= k`` distinct paths, best first.
    scores : float64 ndarray of shape (m,)
    """
    cdef _PathInputs x = _PathInputs(phi, trans, tindex, k)
    cdef Py_ssize_t T = x.T, S = x.S
    if T == 0:
        return np.zeros((1, 0), np.int32), np.zeros(1)
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
        n = _kbest(x.phi, x.trans, x.tindex, k, dv, bsv, brv, cv, esv, erv, pv, sv)
    return paths[:n].copy(), scores[:n].copy()


# ---------------------------------------------------------------------------
# A* k-best: backward Viterbi values as an exact heuristic
# ---------------------------------------------------------------------------

cdef struct Search:
    # nodes: a prefix ending in state ``node_s`` at token ``node_t``, extending ``node_parent``
    int* node_t
    int* node_s
    long long* node_parent
    double* node_g            # the prefix's score
    long long n_nodes
    long long cap_nodes
    # max-heap of (f, order) -> node; ties go to the earlier push
    double* heap_f
    long long* heap_order
    long long* heap_node
    long long n_heap
    long long cap_heap


cdef int _resize(void** slot, long long n, size_t size) noexcept nogil:
    """``realloc`` the array at ``*slot`` to ``n`` items; 0 on success, -1 (array
    unchanged) when out of memory."""
    cdef void* p = realloc(slot[0], n * size)
    if p == NULL:
        return -1
    slot[0] = p
    return 0


cdef int _grow(Search* sr) noexcept nogil:
    """Double the node and heap capacity; 0 on success, -1 when out of memory."""
    cdef long long cap = 2 * sr.cap_nodes
    if (_resize(<void**> &sr.node_t, cap, sizeof(int))
            or _resize(<void**> &sr.node_s, cap, sizeof(int))
            or _resize(<void**> &sr.node_parent, cap, sizeof(long long))
            or _resize(<void**> &sr.node_g, cap, sizeof(double))
            or _resize(<void**> &sr.heap_f, cap, sizeof(double))
            or _resize(<void**> &sr.heap_order, cap, sizeof(long long))
            or _resize(<void**> &sr.heap_node, cap, sizeof(long long))):
        return -1
    sr.cap_nodes = cap
    sr.cap_heap = cap
    return 0


cdef inline bint _above(const Search* sr, long long i, long long j) noexcept nogil:
    """Heap entry ``i`` comes out before entry ``j``."""
    return (sr.heap_f[i] > sr.heap_f[j]
            or (sr.heap_f[i] == sr.heap_f[j] and sr.heap_order[i] < sr.heap_order[j]))


cdef inline void _swap(Search* sr, long long i, long long j) noexcept nogil:
    cdef double f = sr.heap_f[i]
    cdef long long o = sr.heap_order[i], n = sr.heap_node[i]
    sr.heap_f[i], sr.heap_order[i], sr.heap_node[i] = sr.heap_f[j], sr.heap_order[j], sr.heap_node[j]
    sr.heap_f[j], sr.heap_order[j], sr.heap_node[j] = f, o, n


cdef int _push(Search* sr, int t, int s, long long parent, double g, double f) noexcept nogil:
    cdef long long i, up
    if sr.n_nodes == sr.cap_nodes and _grow(sr) != 0:
        return -1
    i = sr.n_nodes
    sr.node_t[i], sr.node_s[i], sr.node_parent[i], sr.node_g[i] = t, s, parent, g
    sr.n_nodes += 1
    # every node is pushed once, so the heap never holds more entries than nodes
    sr.heap_f[sr.n_heap], sr.heap_order[sr.n_heap], sr.heap_node[sr.n_heap] = f, i, i
    i = sr.n_heap
    sr.n_heap += 1
    while i > 0:
        up = (i - 1) // 2
        if not _above(sr, i, up):
            break
        _swap(sr, i, up)
        i = up
    return 0


cdef long long _pop(Search* sr) noexcept nogil:
    cdef long long top = sr.heap_node[0], i = 0, l, r, best
    sr.n_heap -= 1
    if sr.n_heap > 0:
        _swap(sr, 0, sr.n_heap)
        while True:
            l, r, best = 2 * i + 1, 2 * i + 2, i
            if l < sr.n_heap and _above(sr, l, best):
                best = l
            if r < sr.n_heap and _above(sr, r, best):
                best = r
            if best == i:
                break
            _swap(sr, i, best)
            i = best
    return top


cdef void _backward_viterbi(const double[:, ::1] phi, const double[:, :, ::1] trans_t,
                            const long long[::1] tindex, double[:, ::1] beta,
                            double[::1] w) noexcept nogil:
    """``beta[t, s]``: the best score of the rest of the sequence after state ``s`` at token
    ``t`` (0 at the last token), ``beta[t-1, s] = max_s2 trans[s, s2] + phi[t, s2] +
    beta[t, s2]``: the vectorised max-plus product of ``w = phi[t] + beta[t]`` with the
    transposed matrix."""
    cdef Py_ssize_t T = phi.shape[0], S = phi.shape[1], t, s
    for s in range(S):
        beta[T - 1, s] = 0.0
    t = T - 1
    while t >= 1:
        for s in range(S):
            w[s] = phi[t, s] + beta[t, s]
        maxplus(&w[0], <int> S, &trans_t[tindex[t], 0, 0], <int> S, &beta[t - 1, 0])
        t = t - 1


cdef int _astar(const double[:, ::1] phi, const double[:, :, ::1] trans,
                const double[:, :, ::1] trans_t, const long long[::1] tindex, int k,
                double[:, ::1] beta, double[::1] w, Search* sr, int[:, ::1] paths,
                double[::1] scores) noexcept nogil:
    """The k best paths by A*; their number, or -1 when out of memory."""
    cdef Py_ssize_t T = phi.shape[0], S = phi.shape[1], s, s2
    cdef double v
    cdef const double* P
    cdef long long node, p
    cdef int found = 0, tt
    _backward_viterbi(phi, trans_t, tindex, beta, w)
    for s in range(S):
        if phi[0, s] + beta[0, s] > -INFINITY:
            if _push(sr, 0, <int> s, -1, phi[0, s], phi[0, s] + beta[0, s]) != 0:
                return -1
    while sr.n_heap > 0 and found < k:
        node = _pop(sr)
        tt = sr.node_t[node]
        if tt == T - 1:
            scores[found] = sr.node_g[node]
            p = node
            while p >= 0:
                paths[found, sr.node_t[p]] = sr.node_s[p]
                p = sr.node_parent[p]
            found += 1
            continue
        P = &trans[tindex[tt + 1], 0, 0]
        s = sr.node_s[node]
        for s2 in range(S):
            v = P[s * S + s2] + phi[tt + 1, s2]
            if v + beta[tt + 1, s2] > -INFINITY:
                if _push(sr, tt + 1, <int> s2, node, sr.node_g[node] + v,
                         sr.node_g[node] + v + beta[tt + 1, s2]) != 0:
                    return -1
    return found


def kbest_astar(phi, trans, tindex, int k):
    """The ``k`` best state paths of one sequence by A* search; as :func:`kbest_viterbi`.

    Backward Viterbi values (the best score of the rest of the sequence from
    each state and token) are an exact heuristic, so the search pops the
    complete paths best first and expands at most ``k * T`` prefixes, each into
    ``S`` successors: ``O(T S^2 + k T S log(k T S))`` time instead of list
    Viterbi's ``O(T S^2 k)``.  Scores are exact; the order of paths whose
    scores agree to rounding may differ from :func:`kbest_viterbi`'s.
    """
    cdef _PathInputs x = _PathInputs(phi, trans, tindex, k)
    cdef Py_ssize_t T = x.T, S = x.S
    if T == 0:
        return np.zeros((1, 0), np.int32), np.zeros(1)
    cdef const double[:, :, ::1] trans_tv = x.transposed()
    beta = np.empty((T, S), np.float64)
    cdef double[::1] wv = np.empty(S, np.float64)
    paths = np.empty((k, T), np.int32)
    scores = np.empty(k, np.float64)
    cdef double[:, ::1] bv = beta
    cdef int[:, ::1] pv = paths
    cdef double[::1] sv = scores
    cdef Search sr
    cdef long long cap = max(16, 2 * S)
    cdef int n
    sr.n_nodes, sr.n_heap, sr.cap_nodes, sr.cap_heap = 0, 0, cap, cap
    sr.node_t = <int*> malloc(cap * sizeof(int))
    sr.node_s = <int*> malloc(cap * sizeof(int))
    sr.node_parent = <long long*> malloc(cap * sizeof(long long))
    sr.node_g = <double*> malloc(cap * sizeof(double))
    sr.heap_f = <double*> malloc(cap * sizeof(double))
    sr.heap_order = <long long*> malloc(cap * sizeof(long long))
    sr.heap_node = <long long*> malloc(cap * sizeof(long long))
    try:
        if (sr.node_t == NULL or sr.node_s == NULL or sr.node_parent == NULL
                or sr.node_g == NULL or sr.heap_f == NULL or sr.heap_order == NULL
                or sr.heap_node == NULL):
            raise MemoryError("kbest_astar: cannot allocate the search")
        with nogil:
            n = _astar(x.phi, x.trans, trans_tv, x.tindex, k, bv, wv, &sr, pv, sv)
        if n < 0:
            raise MemoryError("kbest_astar: out of memory during the search")
    finally:
        free(sr.node_t)
        free(sr.node_s)
        free(sr.node_parent)
        free(sr.node_g)
        free(sr.heap_f)
        free(sr.heap_order)
        free(sr.heap_node)
    return paths[:n].copy(), scores[:n].copy()


cdef void _max_marginals(const double[:, ::1] phi, const double[:, :, ::1] trans,
                         const double[:, :, ::1] trans_t, const long long[::1] tindex,
                         double[:, ::1] delta, double[:, ::1] beta,
                         double[::1] w) noexcept nogil:
    """``delta`` <- forward Viterbi values, ``beta`` <- backward ones (see max_marginals)."""
    cdef Py_ssize_t T = phi.shape[0], S = phi.shape[1], t, s
    for s in range(S):
        delta[0, s] = phi[0, s]
    for t in range(1, T):
        # delta[t, s] = phi[t, s] + max_s0 delta[t-1, s0] + trans[s0, s]
        maxplus(&delta[t - 1, 0], <int> S, &trans[tindex[t], 0, 0], <int> S, &delta[t, 0])
        for s in range(S):
            delta[t, s] = delta[t, s] + phi[t, s]
    _backward_viterbi(phi, trans_t, tindex, beta, w)


def max_marginals(phi, trans, tindex):
    """Max-marginal scores of one sequence: ``(T, S)``, entry ``[t, s]`` the best score
    of a path through state ``s`` at token ``t`` (``-inf``: no allowed path).

    Forward and backward Viterbi passes (vectorised max-plus products,
    ``O(T S^2)``): the best path through ``(t, s)`` scores ``delta[t, s] +
    beta[t, s]``, ``delta`` the best prefix ending in ``s`` at ``t`` (state
    score included) and ``beta`` the best continuation after it.  The row
    maximum is the Viterbi score at every token.
    """
    cdef _PathInputs x = _PathInputs(phi, trans, tindex, 1)
    cdef Py_ssize_t T = x.T, S = x.S
    if T == 0:
        return np.zeros((0, S), np.float64)
    cdef const double[:, :, ::1] trans_tv = x.transposed()
    delta = np.empty((T, S), np.float64)
    beta = np.empty((T, S), np.float64)
    cdef double[:, ::1] dv = delta
    cdef double[:, ::1] bv = beta
    cdef double[::1] wv = np.empty(S, np.float64)
    with nogil:
        _max_marginals(x.phi, x.trans, trans_tv, x.tindex, dv, bv, wv)
    return delta + beta
