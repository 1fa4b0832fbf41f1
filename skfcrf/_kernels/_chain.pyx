# cython: language_level=3
"""Exact inference on ONE label chain: forward-backward and Viterbi.

Forward-backward runs in the probability domain: per token, the unary row is
exponentiated after subtracting its max (the vectorised ``exp`` of ``_simd.h``),
the transition matrix is ``exp(score - max)`` (once per call for tied edges), and
alpha is renormalised to sum 1 at every token; the log of the shifts and normalisers gives ``log Z``.  If a
normaliser underflows to 0 (e.g. the only allowed path goes through entries
more than ~745 nats below a row max) the sequence is redone in log space, so
results stay exact.  Viterbi works in log space (additions only).

The link of the chain (its in-chain templates merged, tied matrices
exponentiated once) comes from :class:`skfcrf._kernels._contract.Links`.  Python
callers: :mod:`skfcrf._kernels.batch`.
"""
import numpy as np

from cython.parallel cimport prange, parallel, threadid
from libc.math cimport exp, log, INFINITY

from ._alloc cimport Block, Carver, allocate, carver, take_doubles, take_ints
from ._common cimport (exp_shifted, longest_sequence, link_exp, link_log, lse, lse_col,
                       write_pair, matvec, gemm_tn_acc, maxplus)
from ._contract cimport LinkView, Links


cdef int _forward_scaled(const LinkView* lk, int k, int L, const double* unary, Py_ssize_t ldu,
                         Py_ssize_t g0, Py_ssize_t T, double* alpha, double* u, double* scale,
                         double* mbuf, double* logz) noexcept nogil:
    """Scaled forward pass: ``alpha`` (T x L, rows normalised), ``u`` the shifted
    exponentiated unaries, ``scale`` the normalisers, ``logz``.  Returns 1 (``logz`` not
    written) when a row is all -inf or a normaliser under/overflows."""
    cdef Py_ssize_t t, g, j
    cdef double mx, s, sh, lz = 0.0
    cdef const double* row
    cdef const double* M
    cdef double* at
    cdef double* ut
    for t in range(T):
        g = g0 + t
        row = unary + g * ldu
        mx = -INFINITY
        for j in range(L):
            if row[j] > mx:
                mx = row[j]
        if mx == -INFINITY:
            return 1
        at = alpha + t * L
        ut = u + t * L
        exp_shifted(row, mx, ut, L)
        lz += mx
        if t == 0:
            for j in range(L):
                at[j] = ut[j]
        else:
            M = link_exp(lk, k, g, mbuf, &sh)
            lz += sh
            matvec(alpha + (t - 1) * L, L, M, L, at, 0)
            for j in range(L):
                at[j] *= ut[j]
        s = 0.0
        for j in range(L):
            s += at[j]
        if not (s > 0.0 and s < INFINITY):
            return 1
        scale[t] = s
        lz += log(s)
        s = 1.0 / s
        for j in range(L):
            at[j] *= s
    logz[0] = lz
    return 0


cdef void _backward_scaled(const LinkView* lk, int k, int L, Py_ssize_t ldu, Py_ssize_t g0,
                           Py_ssize_t T, double* alpha, double* u, const double* scale,
                           double* beta, double* nbeta, double* w, double* xi, double* mbuf,
                           double* node, double* pout, double* tacc,
                           double* rawacc) noexcept nogil:
    """Backward pass with the forward pass's scaling (beta kept as one vector): node
    marginals, untied pair marginals, and for a tied link ``sum_t alpha_{t-1} (x) w_t``
    into ``rawacc``.  ``u`` is overwritten."""
    cdef Py_ssize_t t, g, i, j
    cdef double s, sh, ai, acc, v
    cdef const double* M
    cdef double* at
    cdef double* ap
    cdef double* ut
    cdef double* raw
    cdef const double* Mi
    cdef bint tied
    for j in range(L):
        beta[j] = 1.0
    at = alpha + (T - 1) * L
    for j in range(L):
        node[(g0 + T - 1) * ldu + j] = at[j]
    tied = lk.unt_ptr[k] == lk.unt_ptr[k + 1]
    if tied and lk.tmpl_ptr[k] < lk.tmpl_ptr[k + 1]:
        raw = rawacc
    else:
        raw = NULL
    for t in range(T - 1, 0, -1):
        g = g0 + t
        s = 1.0 / scale[t]
        ut = u + t * L
        for j in range(L):
            w[j] = ut[j] * beta[j] * s
        ap = alpha + (t - 1) * L
        if tied:
            # beta_{t-1} = M w via the transposed matrix; the tied pair
            # marginal sum_t a_{t-1}(i) M(i,j) w_t(j) is M * (sum_t a ⊗ w),
            # so only the outer products are accumulated (M applied by the caller)
            matvec(w, L, lk.tied_expT + lk.tied_off[k], L, nbeta, 0)
            for j in range(L):
                ut[j] = w[j]        # u_t is no longer needed: keep w_t there
        else:
            M = link_exp(lk, k, g, mbuf, &sh)
            for i in range(L):
                ai = ap[i]
                Mi = M + i * L
                acc = 0.0
                for j in range(L):
                    v = Mi[j] * w[j]
                    acc += v
                    xi[i * L + j] = ai * v
                nbeta[i] = acc
            write_pair(lk, k, g, xi, pout, tacc)
        for i in range(L):
            beta[i] = nbeta[i]
            node[(g - 1) * ldu + i] = ap[i] * nbeta[i]
    if tied and raw != NULL and T > 1:
        gemm_tn_acc(alpha, u + L, T - 1, L, L, raw)   # sum_t alpha_{t-1} (x) w_t


cdef int _fb_scaled(const LinkView* lk, int k, int L, const double* unary, Py_ssize_t ldu,
                    Py_ssize_t g0, Py_ssize_t T, double* alpha, double* u, double* scale,
                    double* beta, double* nbeta, double* w, double* xi, double* mbuf,
                    double* node, double* pout, double* tacc, double* rawacc,
                    double* logz) noexcept nogil:
    """Scaled forward-backward of one sequence; returns 1 (no output written) when the
    scaled forward pass fails and the log-space pass must be used."""
    if _forward_scaled(lk, k, L, unary, ldu, g0, T, alpha, u, scale, mbuf, logz):
        return 1
    _backward_scaled(lk, k, L, ldu, g0, T, alpha, u, scale, beta, nbeta, w, xi, mbuf, node,
                     pout, tacc, rawacc)
    return 0


cdef void _fb_log(const LinkView* lk, int k, int L, const double* unary, Py_ssize_t ldu,
                  Py_ssize_t g0, Py_ssize_t T, double* alpha, double* beta, double* nbeta,
                  double* w, double* xi, double* mbuf,
                  double* node, double* pout, double* tacc, double* logz) noexcept nogil:
    """Log-space forward-backward (fallback when the scaled pass underflows)."""
    cdef Py_ssize_t t, g, i, j
    cdef double mx, s, lz, v
    cdef const double* row
    cdef const double* P
    cdef double* at
    cdef double* ap
    for t in range(T):
        g = g0 + t
        row = unary + g * ldu
        at = alpha + t * L
        if t == 0:
            for j in range(L):
                at[j] = row[j]
        else:
            P = link_log(lk, k, g, mbuf)
            ap = alpha + (t - 1) * L
            for j in range(L):
                at[j] = lse_col(ap, P, j, L) + row[j]
    at = alpha + (T - 1) * L
    lz = lse(at, L)
    logz[0] = lz
    if lz == -INFINITY:
        return
    for j in range(L):
        beta[j] = 0.0
        node[(g0 + T - 1) * ldu + j] = exp(at[j] - lz)
    for t in range(T - 1, 0, -1):
        g = g0 + t
        row = unary + g * ldu
        P = link_log(lk, k, g, mbuf)
        for j in range(L):
            w[j] = row[j] + beta[j]
        ap = alpha + (t - 1) * L
        for i in range(L):
            mx = -INFINITY
            for j in range(L):
                v = P[i * L + j] + w[j]
                if v > mx:
                    mx = v
            s = 0.0
            for j in range(L):
                v = P[i * L + j] + w[j]
                xi[i * L + j] = exp(ap[i] + v - lz)
                if mx > -INFINITY:
                    s += exp(v - mx)
            nbeta[i] = mx + log(s) if mx > -INFINITY else -INFINITY
        write_pair(lk, k, g, xi, pout, tacc)
        for i in range(L):
            beta[i] = nbeta[i]
            node[(g - 1) * ldu + i] = exp(ap[i] + nbeta[i] - lz)


cdef void _viterbi(const LinkView* lk, int k, int L, const double* unary, Py_ssize_t ldu,
                   Py_ssize_t g0, Py_ssize_t T, double* delta, double* nd, int* bp,
                   double* mbuf, int* labels, Py_ssize_t ldl) noexcept nogil:
    """Log-space Viterbi; ties go to the smallest label index."""
    cdef Py_ssize_t t, g, i, j
    cdef double v, mx
    cdef const double* row
    cdef const double* P
    cdef int* bpt
    cdef int best
    row = unary + g0 * ldu
    for j in range(L):
        delta[j] = row[j]
    for t in range(1, T):
        g = g0 + t
        row = unary + g * ldu
        P = link_log(lk, k, g, mbuf)
        bpt = bp + t * L
        # max in registers first, then the first index reaching it (the same
        # additions are recomputed, so the equality test is exact)
        maxplus(delta, L, P, L, nd)
        for j in range(L):
            v = nd[j]
            bpt[j] = 0
            if v > -INFINITY:
                for i in range(L):
                    if delta[i] + P[i * L + j] == v:
                        bpt[j] = <int> i
                        break
        for j in range(L):
            delta[j] = nd[j] + row[j]
    best = 0
    mx = delta[0]
    for j in range(1, L):
        if delta[j] > mx:
            mx = delta[j]
            best = <int> j
    labels[(g0 + T - 1) * ldl] = best
    for t in range(T - 1, 0, -1):
        best = bp[t * L + best]
        labels[(g0 + t - 1) * ldl] = best


cdef struct FBWork:
    double* alpha       # Tmax x L
    double* u           # Tmax x L
    double* scale       # Tmax
    double* beta        # L
    double* nbeta       # L
    double* w           # L
    double* xi          # L x L
    double* mbuf        # L x L


cdef FBWork _carve_fb(Carver* c, Py_ssize_t Tmax, int L) noexcept nogil:
    """One thread's forward-backward buffers, taken one after another from ``c``."""
    cdef FBWork f
    f.alpha = take_doubles(c, Tmax * L)
    f.u = take_doubles(c, Tmax * L)
    f.scale = take_doubles(c, Tmax)
    f.beta = take_doubles(c, L)
    f.nbeta = take_doubles(c, L)
    f.w = take_doubles(c, L)
    f.xi = take_doubles(c, L * L)
    f.mbuf = take_doubles(c, L * L)
    return f


cdef struct ViterbiWork:
    double* delta       # L
    double* nd          # L
    double* mbuf        # L x L
    int* bp             # Tmax x L


cdef ViterbiWork _carve_viterbi(Carver* c, Py_ssize_t Tmax, int L) noexcept nogil:
    """One thread's Viterbi buffers, taken one after another from ``c``."""
    cdef ViterbiWork v
    v.delta = take_doubles(c, L)
    v.nd = take_doubles(c, L)
    v.mbuf = take_doubles(c, L * L)
    v.bp = take_ints(c, Tmax * L)
    return v


def chain_marginals(Links links, const long long[::1] seq_ptr, const double[:, ::1] unary,
                    double[:, ::1] node, double[::1] pout, double[::1] logz, int n_threads):
    """Forward-backward for every sequence of one chain; fills the output arrays.

    ``node`` (N, L), ``pout`` (laid out like the potentials) and ``logz``
    (n_seq,) must be zero on entry.  Tied templates receive their expected
    counts summed over all positions.
    """
    cdef LinkView lk = links.view()
    cdef int k = links.inchain_link(0)
    cdef int L = links.n_labels[0]
    cdef Py_ssize_t n_seq = seq_ptr.shape[0] - 1
    cdef Py_ssize_t ldu = unary.shape[1]
    cdef Py_ssize_t Tmax = longest_sequence(seq_ptr), s, T, g0
    cdef int tid, rc
    cdef const double* unary_p = &unary[0, 0] if unary.shape[0] > 0 else NULL
    cdef double* node_p = &node[0, 0] if node.shape[0] > 0 else NULL
    cdef double* pout_p = &pout[0] if pout.shape[0] > 0 else NULL
    # per thread: tied accumulators (tacc) and, for a tied link, sum_t alpha_{t-1} (x) w_t
    # of the scaled passes (raw), which times the shifted potential matrix is the expected
    # count matrix
    tacc_arr = np.zeros((n_threads, max(links.tacc_size, 1)), np.float64)
    raw_arr = np.zeros((n_threads, L * L), np.float64)
    cdef double[:, ::1] tacc = tacc_arr
    cdef double[:, ::1] rawacc = raw_arr
    cdef double* tacc_p = &tacc[0, 0]
    cdef Py_ssize_t ldt = tacc.shape[1]
    cdef double* raw_p = &rawacc[0, 0]
    cdef Py_ssize_t ldr = rawacc.shape[1]
    cdef Carver c = carver(NULL)
    cdef FBWork f
    _carve_fb(&c, Tmax, L)
    cdef size_t per = c.used
    cdef Block scratch = allocate(n_threads * per, 1)
    cdef char* base = <char*> scratch.ptr
    with nogil, parallel(num_threads=n_threads):
        tid = threadid()
        c = carver(base + tid * per)
        f = _carve_fb(&c, Tmax, L)
        # round-robin, not on demand: each thread's tied sums have the same terms in
        # the same order in every run
        for s in prange(n_seq, schedule="static", chunksize=1):
            g0 = seq_ptr[s]
            T = seq_ptr[s + 1] - g0
            if T == 0:
                logz[s] = 0.0
                continue
            rc = _fb_scaled(&lk, k, L, unary_p, ldu, g0, T, f.alpha, f.u, f.scale, f.beta,
                            f.nbeta, f.w, f.xi, f.mbuf,
                            node_p, pout_p, tacc_p + tid * ldt, raw_p + tid * ldr, &logz[s])
            if rc != 0:
                _fb_log(&lk, k, L, unary_p, ldu, g0, T, f.alpha, f.beta, f.nbeta, f.w, f.xi,
                        f.mbuf, node_p, pout_p, tacc_p + tid * ldt, &logz[s])
    q0, q1 = links.tmpl_ptr[k], links.tmpl_ptr[k + 1]
    if links.tied[k] and q1 > q0:
        add = raw_arr.sum(axis=0) * links.tied_exp_of(k).ravel()
        for q in range(q0, q1):
            o = links.tmpl_tacc_off[q]
            tacc_arr[0, o:o + L * L] += add
    links.scatter_tied(tacc_arr.sum(axis=0), pout)


def chain_viterbi(Links links, const long long[::1] seq_ptr, const double[:, ::1] unary,
                  int[:, ::1] labels, int n_threads):
    """Viterbi for every sequence of one chain; fills ``labels[:, 0]``."""
    cdef LinkView lk = links.view()
    cdef int k = links.inchain_link(0)
    cdef int L = links.n_labels[0]
    cdef Py_ssize_t n_seq = seq_ptr.shape[0] - 1
    cdef Py_ssize_t ldu = unary.shape[1]
    cdef Py_ssize_t ldl = labels.shape[1]
    cdef Py_ssize_t Tmax = longest_sequence(seq_ptr), s, T, g0
    cdef const double* unary_p = &unary[0, 0] if unary.shape[0] > 0 else NULL
    cdef int* lab_p = &labels[0, 0] if labels.shape[0] > 0 else NULL
    cdef Carver c = carver(NULL)
    cdef ViterbiWork v
    _carve_viterbi(&c, Tmax, L)
    cdef size_t per = c.used
    cdef Block scratch = allocate(n_threads * per, 1)
    cdef char* base = <char*> scratch.ptr
    with nogil, parallel(num_threads=n_threads):
        c = carver(base + threadid() * per)
        v = _carve_viterbi(&c, Tmax, L)
        for s in prange(n_seq, schedule="dynamic"):
            g0 = seq_ptr[s]
            T = seq_ptr[s + 1] - g0
            if T == 0:
                continue
            _viterbi(&lk, k, L, unary_p, ldu, g0, T, v.delta, v.nd, v.bp, v.mbuf, lab_p, ldl)
