# cython: language_level=3
"""Shared inline helpers of the inference kernels (header only, no module).

A *link* merges every edge template joining the same pair of variables
(``kind``, ``a``, ``b``); its potential at a token is the product of the
templates' potentials.  :class:`skfcrf._kernels._contract.Links` holds the arrays;
its ``view()`` is the C struct :c:type:`LinkView` read here.
"""
from libc.math cimport exp, INFINITY, log

from ._contract cimport LinkView


cdef extern from "_simd.h" nogil:
    # subnormal numbers as zero in this thread until restored (see _simd.h)
    unsigned int skfcrf_subnormals_off()
    void skfcrf_restore_fp(unsigned int old)
    # out[j] = max_i x[i] * P[i, j] (plus = 0) or max_i x[i] + P[i, j] (plus = 1), P row-major;
    # vectorised, AVX-512/AVX2 where the CPU has them (see _simd.h)
    void skfcrf_matmax(const double* x, int nin, const double* P, int nout, double* out,
                       int plus)
    # out[j] = sum_i x[i] * P[i, j]; C[i, j] += sum_k A[k, i] * B[k, j] (see _simd.h)
    void skfcrf_matvec_sum(const double* x, int nin, const double* P, int nout, double* out)
    void skfcrf_gemm_tn_acc(const double* A, const double* B, long K, int M, int N,
                            double* C)
    # out[i] = exp(s[i] - shift), vectorised (see _simd.h)
    void exp_shifted "skfcrf_exp_shifted"(const double* s, double shift, double* out, int n)
    # a CSR matrix's rows times SKFCRF_LANES interleaved vectors, with the transition
    # counts of the backward step where counts is not NULL (see _simd.h)
    enum: SKFCRF_LANES
    void skfcrf_lane_product(const long long* ptr, const int* idx, const double* val,
                             long nrows, const double* x, const double* a, double* counts,
                             double* out)
    void skfcrf_lane_sums(const long long* ptr, const int* idx, const double* val, long nrows,
                          const double* x, double* out)
    # out[j, b] = max over row j's entries k of x[idx[k], b] + val[k] (see _simd.h)
    void skfcrf_lane_maxplus(const long long* ptr, const int* idx, const double* val,
                             long nrows, const double* x, double* out)
    void skfcrf_lane_tree_max(long n_rows, const long long* ptr, const int* row,
                              const int* idx, const double* w, double* v)
    void skfcrf_lane_counts(const long long* ptr, const int* idx, long L, const double* a,
                            const double* w, long T, double* counts)
    void skfcrf_lane_reach(long L, double limit, const double* u, double* tmp, double* mx)
    void skfcrf_lane_shift(long L, const double* u, const double* mx, double* out)
    void skfcrf_lane_best(long S, const double* tmp, const double* phi, double* best)
    void skfcrf_lane_state_scores(long S, long C, const int* index, const double* tied,
                                  const double* u, const long long* on, double* phis)
    void skfcrf_lane_weigh(long L, double* tmp, double* psi, double* total)
    void skfcrf_lane_clear(long n, const double* a, double* x)
    void skfcrf_lane_tree_sum(long n_rows, const long long* ptr, const int* row,
                              const int* idx, const double* w, const double* src,
                              double* dst, int store)
    void skfcrf_lane_normalize(long S, const double* tmp, const double* phi,
                               const double* total, const long long* on, double negligible,
                               double* alpha, double* psi)
    void skfcrf_lane_scale(long S, const double* psi, const double* beta, const double* norm,
                           const long long* on, int multiply, double* out)
    # prefetch n doubles from x, a cache line at a time, for reading (rw 0) or writing
    # (rw 1); changes no result (see _simd.h)
    void prefetch_span "SKFCRF_PREFETCH_ROW"(const double* x, long n, int rw)


ctypedef fused item_t:
    int
    long long
    double
    unsigned char


cdef inline const item_t* first_or_null(const item_t[::1] x) noexcept:
    """Address of ``x``'s first item, NULL when ``x`` is empty (the kernels then never read it)."""
    return &x[0] if x.shape[0] else NULL


cdef inline Py_ssize_t longest_sequence(const long long[::1] seq_ptr) noexcept nogil:
    """Length of the longest sequence of ``seq_ptr`` (at least 1)."""
    cdef Py_ssize_t s, longest = 1
    for s in range(seq_ptr.shape[0] - 1):
        if seq_ptr[s + 1] - seq_ptr[s] > longest:
            longest = seq_ptr[s + 1] - seq_ptr[s]
    return longest


cdef inline const double* link_exp(const LinkView* lk, int k, Py_ssize_t g,
                                   double* buf, double* shift) noexcept nogil:
    """Potential matrix of link ``k`` at global token ``g`` as ``exp(score - shift)``.

    Returns a pointer to the precomputed tied matrix when the link has no
    untied template, else fills ``buf``.  ``shift`` receives the subtracted max.
    """
    cdef int p0 = lk.unt_ptr[k]
    cdef int p1 = lk.unt_ptr[k + 1]
    cdef Py_ssize_t sz = lk.la[k] * lk.lb[k]
    cdef Py_ssize_t i
    cdef int p
    cdef const double* src
    cdef double mx
    if p0 == p1:
        shift[0] = lk.tied_shift[k]
        return lk.tied_exp + lk.tied_off[k]
    src = lk.tied_log + lk.tied_off[k]
    for i in range(sz):
        buf[i] = src[i]
    for p in range(p0, p1):
        src = lk.pair + lk.unt_off[p] + g * sz
        for i in range(sz):
            buf[i] += src[i]
    mx = -INFINITY
    for i in range(sz):
        if buf[i] > mx:
            mx = buf[i]
    if mx == -INFINITY:
        mx = 0.0
    for i in range(sz):
        buf[i] = exp(buf[i] - mx)
    shift[0] = mx
    return buf


cdef inline const double* link_log(const LinkView* lk, int k, Py_ssize_t g,
                                   double* buf) noexcept nogil:
    """Score (log-potential) matrix of link ``k`` at global token ``g``."""
    cdef int p0 = lk.unt_ptr[k]
    cdef int p1 = lk.unt_ptr[k + 1]
    cdef Py_ssize_t sz = lk.la[k] * lk.lb[k]
    cdef Py_ssize_t i
    cdef int p
    cdef const double* src
    if p0 == p1:
        return lk.tied_log + lk.tied_off[k]
    src = lk.tied_log + lk.tied_off[k]
    for i in range(sz):
        buf[i] = src[i]
    for p in range(p0, p1):
        src = lk.pair + lk.unt_off[p] + g * sz
        for i in range(sz):
            buf[i] += src[i]
    return buf


cdef inline void write_pair(const LinkView* lk, int k, Py_ssize_t g, const double* P,
                            double* out, double* tacc) noexcept nogil:
    """Store the pair marginal ``P`` of link ``k`` at token ``g`` for each template."""
    cdef Py_ssize_t sz = lk.la[k] * lk.lb[k]
    cdef Py_ssize_t i
    cdef int q
    cdef double* dst
    for q in range(lk.tmpl_ptr[k], lk.tmpl_ptr[k + 1]):
        if lk.tmpl_tacc_off[q] >= 0:
            dst = tacc + lk.tmpl_tacc_off[q]
            for i in range(sz):
                dst[i] += P[i]
        else:
            dst = out + lk.tmpl_out_off[q] + g * sz
            for i in range(sz):
                dst[i] = P[i]


cdef inline void matvec(const double* x, int nin, const double* P, int nout, double* out,
                        int use_max) noexcept nogil:
    """``out[j] = sum_i x[i] * P[i, j]`` (or ``max_i`` when ``use_max``), P row-major;
    vectorised, AVX-512/AVX2 where the CPU has them (``_simd.h``).  Products are
    non-negative, so max starts from 0."""
    if use_max:
        skfcrf_matmax(x, nin, P, nout, out, 0)
    else:
        skfcrf_matvec_sum(x, nin, P, nout, out)


cdef inline void gemm_tn_acc(const double* A, const double* B, Py_ssize_t K, int M, int N,
                             double* C) noexcept nogil:
    """``C[i, j] += sum_k A[k, i] * B[k, j]`` (A: K x M, B: K x N, C: M x N, row-major);
    vectorised (``_simd.h``)."""
    skfcrf_gemm_tn_acc(A, B, K, M, N, C)


cdef inline double lse(const double* v, Py_ssize_t n) noexcept nogil:
    """``log sum_i exp(v[i])`` (-inf when every ``v[i]`` is)."""
    cdef Py_ssize_t i
    cdef double mx = -INFINITY, total = 0.0
    for i in range(n):
        if v[i] > mx:
            mx = v[i]
    if mx == -INFINITY:
        return -INFINITY
    for i in range(n):
        total += exp(v[i] - mx)
    return mx + log(total)


cdef inline double lse_col(const double* a, const double* P, Py_ssize_t j,
                           Py_ssize_t L) noexcept nogil:
    """``log sum_i exp(a[i] + P[i, j])``, P row-major L x L (the log-domain
    forward step of one label ``j``)."""
    cdef Py_ssize_t i
    cdef double mx = -INFINITY, v, s = 0.0
    for i in range(L):
        v = a[i] + P[i * L + j]
        if v > mx:
            mx = v
    if mx == -INFINITY:
        return -INFINITY
    for i in range(L):
        s += exp(a[i] + P[i * L + j] - mx)
    return mx + log(s)


cdef inline void maxplus(const double* x, int nin, const double* P, int nout,
                         double* out) noexcept nogil:
    """``out[j] = max_i x[i] + P[i, j]`` (log-domain max-product), vectorised."""
    skfcrf_matmax(x, nin, P, nout, out, 1)
