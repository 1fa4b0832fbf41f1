# cython: language_level=3
"""Factor-based negative log-pseudolikelihood and its gradient w.r.t. the potentials.

Every factor (each unary and each pairwise factor instance) contributes
``-log p(y_f | x, y_MB(f))``: the distribution over the factor's own variables
with every other variable clamped to its gold label (Sanner et al. 2007; thesis
eq. 4.14).  The conditional of a factor over variables ``V_f`` is proportional to
the product of all factors touching ``V_f``.

The gradient is returned w.r.t. the log-potentials, laid out as in
:mod:`skfcrf._bp.graph`; the feature table maps it to the weights.
"""
from cython.parallel cimport prange, parallel, threadid
from libc.math cimport exp, log, INFINITY
from libc.stdlib cimport malloc, free, calloc
from scipy.linalg.cython_blas cimport dgemm

import numpy as np

cdef enum:
    IN_CHAIN = 0
    COUPLING = 1


cdef struct Model:
    const int* n_labels
    const int* label_offset
    const int* edge_a
    const int* edge_b
    const int* edge_kind
    const int* edge_tied
    const long long* edge_offset
    const long long* tied_offset
    int n_edges
    int n_chains
    int ltot
    const double* unary
    const double* pair
    const int* gold
    double* dunary
    double* dpair
    double* dtied          # this thread's accumulator for tied edges
    const double* tied_exp # exp(pair - max) of each tied edge, at tied_offset[e]
    const double* tied_max # that max, per edge
    double* acc            # this thread's sum of outer products a_t b_t^T, at tied_offset[e]
    double* abuf           # this thread's chunk of a_t / b_t rows per tied edge, at ab_offset[e]
    const long long* ab_offset
    int* fill              # rows used in each edge's chunk


cdef enum:
    CHUNK = 128     # rows of a_t / b_t buffered per dgemm


cdef void flush(const Model* m, int e) noexcept nogil:
    """acc_e += A^T B over the buffered rows (one dgemm), then empty the chunk."""
    cdef int la = m.n_labels[m.edge_a[e]], lb = m.n_labels[m.edge_b[e]]
    cdef int k = m.fill[e]
    cdef double one = 1.0
    cdef double* A
    cdef double* B
    cdef char tn = b'N'
    cdef char tt = b'T'
    if k == 0:
        return
    A = m.abuf + m.ab_offset[e]
    B = A + CHUNK * la
    # row-major acc (la x lb) is column-major acc^T (lb x la) = B^T A
    dgemm(&tn, &tt, &lb, &la, &k, &one, B, &lb, A, &la, &one, m.acc + m.tied_offset[e], &lb)
    m.fill[e] = 0


cdef inline long long pos_base(const Model* m, int e, Py_ssize_t g) noexcept nogil:
    """Start of edge ``e``'s potential matrix at global token ``g``."""
    cdef long long k = m.n_labels[m.edge_a[e]] * m.n_labels[m.edge_b[e]]
    if m.edge_tied[e]:
        return m.edge_offset[e]
    return m.edge_offset[e] + g * k


cdef void var_scores(const Model* m, int c, Py_ssize_t start, Py_ssize_t t, Py_ssize_t T,
                     int ex_e, int ex_side, double* out) noexcept nogil:
    """Score of each label of variable (c, t) with all neighbours at gold.

    The factor (ex_e, ex_side) is left out: ex_side 0 is the in-chain edge to the
    left (t-1, t), 1 the one to the right (t, t+1), 2 a coupling edge.
    """
    cdef int L = m.n_labels[c]
    cdef int e, lb, la, other, l
    cdef Py_ssize_t g = start + t
    cdef long long base
    cdef int ltot = m.ltot
    for l in range(L):
        out[l] = m.unary[g * ltot + m.label_offset[c] + l]
    for e in range(m.n_edges):
        if m.edge_kind[e] == IN_CHAIN:
            if m.edge_a[e] != c:
                continue
            if t > 0 and not (e == ex_e and ex_side == 0):
                base = pos_base(m, e, g)
                other = m.gold[(g - 1) * m.n_chains + c]
                for l in range(L):
                    out[l] += m.pair[base + other * L + l]
            if t < T - 1 and not (e == ex_e and ex_side == 1):
                base = pos_base(m, e, g + 1)
                other = m.gold[(g + 1) * m.n_chains + c]
                for l in range(L):
                    out[l] += m.pair[base + l * L + other]
        else:
            if e == ex_e:
                continue
            if m.edge_a[e] == c:
                lb = m.n_labels[m.edge_b[e]]
                base = pos_base(m, e, g)
                other = m.gold[g * m.n_chains + m.edge_b[e]]
                for l in range(L):
                    out[l] += m.pair[base + l * lb + other]
            elif m.edge_b[e] == c:
                base = pos_base(m, e, g)
                other = m.gold[g * m.n_chains + m.edge_a[e]]
                for l in range(L):
                    out[l] += m.pair[base + other * L + l]


cdef inline double* grad_block(const Model* m, int e, Py_ssize_t g) noexcept nogil:
    """Where the gradient of edge ``e``'s matrix at global token ``g`` accumulates."""
    cdef long long k
    if m.edge_tied[e]:
        return m.dtied + m.tied_offset[e]
    k = m.n_labels[m.edge_a[e]] * m.n_labels[m.edge_b[e]]
    return m.dpair + m.edge_offset[e] + g * k


cdef inline void axpy_minus_gold(double* dst, Py_ssize_t stride, const double* q, int L,
                                 int y) noexcept nogil:
    cdef int l
    for l in range(L):
        dst[l * stride] += q[l]
    dst[y * stride] -= 1.0


cdef void scatter_var(const Model* m, int c, Py_ssize_t start, Py_ssize_t t, Py_ssize_t T,
                      int ex_e, int ex_side, const double* q) noexcept nogil:
    """Add ``q[l] - [l == gold]`` to every potential of (c, t) seen by a conditional.

    Touches the unary of (c, t) and every pairwise factor of (c, t) except the
    excluded one, at the entry where the other end takes its gold label.
    """
    cdef int L = m.n_labels[c]
    cdef int e, lb, other
    cdef Py_ssize_t g = start + t
    cdef int y = m.gold[g * m.n_chains + c]
    axpy_minus_gold(m.dunary + g * m.ltot + m.label_offset[c], 1, q, L, y)
    for e in range(m.n_edges):
        if m.edge_kind[e] == IN_CHAIN:
            if m.edge_a[e] != c:
                continue
            if t > 0 and not (e == ex_e and ex_side == 0):
                other = m.gold[(g - 1) * m.n_chains + c]
                axpy_minus_gold(grad_block(m, e, g) + other * L, 1, q, L, y)
            if t < T - 1 and not (e == ex_e and ex_side == 1):
                other = m.gold[(g + 1) * m.n_chains + c]
                axpy_minus_gold(grad_block(m, e, g + 1) + other, L, q, L, y)
        else:
            if e == ex_e:
                continue
            if m.edge_a[e] == c:
                lb = m.n_labels[m.edge_b[e]]
                other = m.gold[g * m.n_chains + m.edge_b[e]]
                axpy_minus_gold(grad_block(m, e, g) + other, lb, q, L, y)
            elif m.edge_b[e] == c:
                other = m.gold[g * m.n_chains + m.edge_a[e]]
                axpy_minus_gold(grad_block(m, e, g) + other * L, 1, q, L, y)


cdef inline double softmax_inplace(double* s, int n) noexcept nogil:
    """Turn scores into probabilities; return log-sum-exp of the scores."""
    cdef double mx = -INFINITY, tot = 0.0
    cdef int i
    for i in range(n):
        if s[i] > mx:
            mx = s[i]
    for i in range(n):
        s[i] = exp(s[i] - mx)
        tot += s[i]
    for i in range(n):
        s[i] /= tot
    return mx + log(tot)


cdef double pair_factor(const Model* m, int e, Py_ssize_t start, Py_ssize_t t, Py_ssize_t T,
                        double* su, double* sw, double* q, double* qu, double* qw) noexcept nogil:
    """One pairwise factor instance: loss term and gradient scatter."""
    cdef int ca = m.edge_a[e], cb = m.edge_b[e]
    cdef int La = m.n_labels[ca], Lb = m.n_labels[cb]
    cdef Py_ssize_t g = start + t
    cdef Py_ssize_t tu, tw
    cdef int side_u, side_w, yu, yw, l, k
    cdef long long base = pos_base(m, e, g)
    cdef double lse, gold_score
    if m.edge_kind[e] == IN_CHAIN:
        tu = t - 1
        tw = t
        side_u = 1
        side_w = 0
    else:
        tu = t
        tw = t
        side_u = 2
        side_w = 2
    var_scores(m, ca, start, tu, T, e, side_u, su)
    var_scores(m, cb, start, tw, T, e, side_w, sw)
    yu = m.gold[(start + tu) * m.n_chains + ca]
    yw = m.gold[(start + tw) * m.n_chains + cb]
    gold_score = su[yu] + sw[yw] + m.pair[base + yu * Lb + yw]
    if m.edge_tied[e] and tied_fast(m, e, La, Lb, su, sw, q, qu, qw, &lse):
        m.dtied[m.tied_offset[e] + yu * Lb + yw] -= 1.0
        scatter_var(m, ca, start, tu, T, e, side_u, qu)
        scatter_var(m, cb, start, tw, T, e, side_w, qw)
        return lse - gold_score
    for l in range(La):
        for k in range(Lb):
            q[l * Lb + k] = su[l] + sw[k] + m.pair[base + l * Lb + k]
    lse = softmax_inplace(q, La * Lb)
    for l in range(La):
        qu[l] = 0.0
    for k in range(Lb):
        qw[k] = 0.0
    for l in range(La):
        for k in range(Lb):
            qu[l] += q[l * Lb + k]
            qw[k] += q[l * Lb + k]
    return pair_scatter(m, e, g, start, tu, tw, T, side_u, side_w, yu, yw,
                        La, Lb, q, qu, qw, lse - gold_score)


cdef double pair_scatter(const Model* m, int e, Py_ssize_t g, Py_ssize_t start, Py_ssize_t tu,
                         Py_ssize_t tw, Py_ssize_t T, int side_u, int side_w, int yu, int yw,
                         int La, int Lb, double* q, double* qu, double* qw,
                         double loss) noexcept nogil:
    """Scatter a pair factor's conditional ``q`` (and its marginals) into the gradient."""
    cdef int l
    cdef double* dst
    q[yu * Lb + yw] -= 1.0
    dst = grad_block(m, e, g)
    for l in range(La * Lb):
        dst[l] += q[l]
    scatter_var(m, m.edge_a[e], start, tu, T, e, side_u, qu)
    scatter_var(m, m.edge_b[e], start, tw, T, e, side_w, qw)
    return loss


cdef bint tied_fast(const Model* m, int e, int La, int Lb, const double* su, const double* sw,
                    double* q, double* qu, double* qw, double* lse) noexcept nogil:
    """Marginals of a tied pair factor's conditional without an exp per entry.

    With ``eu = exp(su - max)``, ``ew = exp(sw - max)`` and the matrix
    exponentiated once per call (``E``), the conditional is
    ``eu[l] ew[k] E[l, k] / Z``; its marginals need only ``E @ ew`` and
    ``E.T @ eu`` (one fused pass).  Its contribution to the expected counts,
    ``E * (a b^T)`` with ``a = eu / Z``, ``b = ew``, is buffered and summed by
    dgemm.  Returns False (caller uses the log domain) if ``Z`` under/overflows.
    """
    cdef double mu = -INFINITY, mw = -INFINITY, tot = 0.0, el, rl, v, inv
    cdef const double* E = m.tied_exp + m.tied_offset[e]
    cdef double* arow = m.abuf + m.ab_offset[e] + m.fill[e] * La
    cdef double* brow = m.abuf + m.ab_offset[e] + CHUNK * La + m.fill[e] * Lb
    cdef int l, k
    for l in range(La):
        if su[l] > mu:
            mu = su[l]
    for k in range(Lb):
        if sw[k] > mw:
            mw = sw[k]
    for k in range(Lb):
        brow[k] = exp(sw[k] - mw)
        qw[k] = 0.0
    for l in range(La):
        el = exp(su[l] - mu)
        arow[l] = el
        rl = 0.0
        for k in range(Lb):
            v = E[l * Lb + k]
            rl = rl + v * brow[k]
            qw[k] += el * v
        qu[l] = el * rl
        tot += qu[l]
    if not (tot > 1e-280) or tot == INFINITY:
        return False
    inv = 1.0 / tot
    for l in range(La):
        qu[l] *= inv
        arow[l] *= inv
    for k in range(Lb):
        qw[k] *= brow[k] * inv
    lse[0] = log(tot) + mu + mw + m.tied_max[e]
    m.fill[e] += 1
    if m.fill[e] == CHUNK:
        flush(m, e)
    return True


def pseudolikelihood(graph, const long long[::1] seq_ptr, const double[:, ::1] unary,
                     const double[::1] pair, const long long[::1] edge_offset,
                     const int[:, ::1] gold, int n_threads=1):
    """Negative log-pseudolikelihood of a batch and its gradient w.r.t. the potentials.

    Parameters
    ----------
    graph : skfcrf._bp.graph.Graph
    seq_ptr : int64 ndarray (n_seq + 1,)
    unary : float64 ndarray (N, Ltot)
        Unary log-potentials.
    pair : float64 ndarray
        Pairwise log-potentials laid out by ``pair_layout(graph, N)``.
    edge_offset : int64 ndarray (E + 1,)
        That layout.
    gold : int32 ndarray (N, C)
        Gold label index of each chain at each token.  Gold assignments must have
        finite potentials.
    n_threads : int

    Returns
    -------
    loss : ndarray (n_seq,)
        Per-sequence negative log-pseudolikelihood.
    dunary : ndarray (N, Ltot)
        Gradient w.r.t. ``unary``.
    dpair : ndarray like ``pair``
        Gradient w.r.t. ``pair`` (tied edges: one matrix).
    """
    cdef int C = graph.n_chains, E = graph.n_edges
    cdef Py_ssize_t n = unary.shape[0]
    cdef Py_ssize_t n_seq = seq_ptr.shape[0] - 1
    cdef int[::1] n_labels = np.ascontiguousarray(graph.n_labels, dtype=np.int32)
    cdef int[::1] label_offset = np.ascontiguousarray(graph.label_offset, dtype=np.int32)
    cdef int[::1] edge_a = np.ascontiguousarray(graph.edge_a, dtype=np.int32)
    cdef int[::1] edge_b = np.ascontiguousarray(graph.edge_b, dtype=np.int32)
    cdef int[::1] edge_kind = np.ascontiguousarray(graph.edge_kind, dtype=np.int32)
    cdef int[::1] edge_tied = np.ascontiguousarray(graph.edge_tied, dtype=np.int32)
    tied_sizes = [graph.edge_size(e) if graph.edge_tied[e] else 0 for e in range(E)]
    cdef long long[::1] tied_offset = np.concatenate([[0], np.cumsum(tied_sizes)]).astype(np.int64)
    cdef Py_ssize_t n_tied = tied_offset[E]
    if n_threads < 1:
        n_threads = 1
    if unary.shape[1] != graph.total_labels or gold.shape[0] != n or gold.shape[1] != C:
        raise ValueError("unary/gold shapes do not match the graph")
    if pair.shape[0] != edge_offset[E]:
        raise ValueError("pair has the wrong length for this layout")

    loss_arr = np.zeros(n_seq, dtype=np.float64)
    dunary_arr = np.zeros((n, graph.total_labels), dtype=np.float64)
    dpair_arr = np.zeros(pair.shape[0], dtype=np.float64)
    dtied_arr = np.zeros((n_threads, max(n_tied, 1)), dtype=np.float64)
    cdef double[::1] loss = loss_arr
    cdef double[:, ::1] dunary = dunary_arr
    cdef double[::1] dpair = dpair_arr
    cdef double[:, ::1] dtied = dtied_arr

    tied_exp_arr = np.zeros(max(n_tied, 1), dtype=np.float64)
    tied_max_arr = np.zeros(max(E, 1), dtype=np.float64)
    for ei in range(E):
        if graph.edge_tied[ei]:
            block = np.asarray(pair[edge_offset[ei]:edge_offset[ei] + tied_sizes[ei]])
            finite = block[np.isfinite(block)]
            mx = float(finite.max()) if finite.size else 0.0
            tied_max_arr[ei] = mx
            tied_exp_arr[tied_offset[ei]:tied_offset[ei] + tied_sizes[ei]] = np.exp(block - mx)
    ab_sizes = [CHUNK * (graph.n_labels[graph.edge_a[ei]] + graph.n_labels[graph.edge_b[ei]])
                if graph.edge_tied[ei] else 0 for ei in range(E)]
    cdef long long[::1] ab_offset = np.concatenate([[0], np.cumsum(ab_sizes)]).astype(np.int64)
    cdef Py_ssize_t ab_total = max(ab_offset[E], 1)
    acc_arr = np.zeros((n_threads, max(n_tied, 1)), dtype=np.float64)
    cdef double[:, ::1] outer = acc_arr
    cdef double[::1] tied_exp = tied_exp_arr
    cdef double[::1] tied_max = tied_max_arr
    cdef int lmax = max(graph.n_labels) if C else 1
    cdef Model base_model
    base_model.n_labels = &n_labels[0]
    base_model.label_offset = &label_offset[0]
    base_model.edge_a = &edge_a[0] if E else NULL
    base_model.edge_b = &edge_b[0] if E else NULL
    base_model.edge_kind = &edge_kind[0] if E else NULL
    base_model.edge_tied = &edge_tied[0] if E else NULL
    base_model.edge_offset = &edge_offset[0]
    base_model.tied_offset = &tied_offset[0]
    base_model.n_edges = E
    base_model.n_chains = C
    base_model.ltot = graph.total_labels
    base_model.unary = &unary[0, 0] if n else NULL
    base_model.pair = &pair[0] if pair.shape[0] else NULL
    base_model.gold = &gold[0, 0] if n else NULL
    base_model.dunary = &dunary[0, 0] if n else NULL
    base_model.dpair = &dpair[0] if pair.shape[0] else NULL
    base_model.ab_offset = &ab_offset[0]
    base_model.tied_exp = &tied_exp[0]
    base_model.tied_max = &tied_max[0]

    cdef Py_ssize_t s, t, T, start
    cdef int c, e, ef, y, L, l
    cdef double* buf
    cdef double* su
    cdef double* sw
    cdef double* q
    cdef double* qu
    cdef double* qw
    cdef double acc, lse
    cdef Model m
    with nogil, parallel(num_threads=n_threads):
        buf = <double*> malloc(sizeof(double) * (4 * lmax + lmax * lmax))
        su = buf
        sw = buf + lmax
        qu = buf + 2 * lmax
        qw = buf + 3 * lmax
        q = buf + 4 * lmax
        m = base_model
        m.dtied = &dtied[threadid(), 0]
        m.acc = &outer[threadid(), 0]
        m.abuf = <double*> malloc(sizeof(double) * ab_total)
        m.fill = <int*> calloc(E + 1, sizeof(int))
        for s in prange(n_seq, schedule="dynamic"):
            start = seq_ptr[s]
            T = seq_ptr[s + 1] - start
            acc = 0.0
            for t in range(T):
                # unary factors
                for c in range(C):
                    L = m.n_labels[c]
                    var_scores(&m, c, start, t, T, -1, -1, su)
                    y = m.gold[(start + t) * C + c]
                    acc = acc - su[y]
                    lse = softmax_inplace(su, L)
                    acc = acc + lse
                    scatter_var(&m, c, start, t, T, -1, -1, su)
                # pairwise factors ending at t
                for e in range(E):
                    if m.edge_kind[e] == IN_CHAIN and t == 0:
                        continue
                    acc = acc + pair_factor(&m, e, start, t, T, su, sw, q, qu, qw)
            loss[s] = acc
        for ef in range(E):
            if m.edge_tied[ef]:
                flush(&m, ef)
        free(m.abuf)
        free(m.fill)
        free(buf)

    if n_tied:
        tied_sum = dtied_arr.sum(axis=0) + tied_exp_arr[:max(n_tied, 1)] * acc_arr.sum(axis=0)
        for e in range(E):
            if graph.edge_tied[e]:
                dpair_arr[edge_offset[e]:edge_offset[e] + tied_sizes[e]] += (
                    tied_sum[tied_offset[e]:tied_offset[e] + tied_sizes[e]])
    return loss_arr, dunary_arr, dpair_arr
