# cython: language_level=3
"""Exact inference for several chains over the product state space.

A product state ``s`` codes one label per chain in mixed radix (chain
``C-1`` varies fastest: ``s = ((y_0 * L_1 + y_1) * L_2 + y_2) ...``), and
``state_lab[s, c]`` is chain ``c``'s label.  The product-state unary is the
sum of the chain unaries and of every coupling edge's score; the transition
between product states is the product of the per-chain in-chain potentials,
so one forward step applies the chain matrices one axis at a time
(``S * sum(L_c)`` work instead of ``S**2``).

Forward-backward is scaled (probability domain, per-token renormalisation,
``exp`` of scores shifted by their max); Viterbi works in log space and
backtracks by re-maximising over the previous token's stored deltas.

The tables (product states, links) come from
:class:`skfcrf._kernels._contract.ProductSpace`.
"""
import numpy as np

from cython.parallel cimport prange, parallel, threadid
from libc.math cimport exp, log, INFINITY

from ._alloc cimport Block, Carver, allocate, carver, take_doubles, take_pointers
from ._common cimport longest_sequence, link_exp, link_log, write_pair, matvec, maxplus
from ._contract cimport LinkView, Links, ProductSpace, ProductView


cdef void _apply(const double* x, double* y, const double* M, int L,
                 Py_ssize_t outer, Py_ssize_t inner, int transpose) noexcept nogil:
    """y[o, j, r] = sum_i x[o, i, r] M[i, j]   (transpose: sum_j M[i, j] x[o, j, r])."""
    cdef Py_ssize_t o, i, j, r
    cdef double m, acc
    cdef double* yr
    cdef const double* xr
    if inner == 1:
        # the fastest-varying chain: one small mat-vec per outer index
        for o in range(outer):
            if transpose:
                xr = x + o * L
                for i in range(L):
                    acc = 0.0
                    for j in range(L):
                        acc += M[i * L + j] * xr[j]
                    y[o * L + i] = acc
            else:
                matvec(x + o * L, L, M, L, y + o * L, 0)
        return
    for o in range(outer * L * inner):
        y[o] = 0.0
    for o in range(outer):
        for j in range(L):
            yr = y + (o * L + j) * inner
            for i in range(L):
                m = M[j * L + i] if transpose else M[i * L + j]
                if m == 0.0:
                    continue
                xr = x + (o * L + i) * inner
                for r in range(inner):
                    yr[r] += m * xr[r]


cdef void _apply_max(const double* x, double* y, const double* P, int L,
                     Py_ssize_t outer, Py_ssize_t inner) noexcept nogil:
    """y[o, j, r] = max_i x[o, i, r] + P[i, j]  (log domain)."""
    cdef Py_ssize_t o, i, j, r
    cdef double m, v
    cdef double* yr
    cdef const double* xr
    if inner == 1:
        for o in range(outer):
            maxplus(x + o * L, L, P, L, y + o * L)
        return
    for o in range(outer * L * inner):
        y[o] = -INFINITY
    for o in range(outer):
        for j in range(L):
            yr = y + (o * L + j) * inner
            for i in range(L):
                m = P[i * L + j]
                if m == -INFINITY:
                    continue
                xr = x + (o * L + i) * inner
                for r in range(inner):
                    v = xr[r] + m
                    if v > yr[r]:
                        yr[r] = v


cdef void _prod_ulog(const LinkView* lk, const ProductView* pd, const double* row, Py_ssize_t g,
                     double* v, double* cbuf) noexcept nogil:
    """Log unary of every product state at global token ``g``."""
    cdef Py_ssize_t s
    cdef int c, q, k, a, b, lb
    cdef int C = pd.C
    cdef double acc
    cdef const double* P
    for s in range(pd.S):
        acc = 0.0
        for c in range(C):
            acc += row[pd.loff[c] + pd.lab[s * C + c]]
        v[s] = acc
    for q in range(pd.n_cpl):
        k = pd.cpl[q]
        a = lk.a[k]
        b = lk.b[k]
        lb = lk.lb[k]
        P = link_log(lk, k, g, cbuf)
        for s in range(pd.S):
            v[s] += P[pd.lab[s * C + a] * lb + pd.lab[s * C + b]]


cdef inline void _transition(const ProductView* pd, const double* x, double* tA, double* tB,
                             const double** Ms, int skip, int transpose,
                             const double** result) noexcept nogil:
    """Apply the chains' in-chain matrices ``Ms`` (all but chain ``skip``; -1: none skipped)
    to the state vector ``x``, one axis at a time, ping-ponging between ``tA`` and ``tB``;
    ``result`` receives the buffer holding the product."""
    cdef const double* src = x
    cdef double* dst
    cdef int c, q = 0
    for c in range(pd.C):
        if c == skip:
            continue
        dst = tA if (q % 2 == 0) else tB
        _apply(src, dst, Ms[c], pd.nl[c], pd.S // (pd.nl[c] * pd.stride[c]), pd.stride[c],
               transpose)
        src = dst
        q += 1
    result[0] = src


cdef int _forward(const LinkView* lk, const ProductView* pd, const double* unary,
                  Py_ssize_t ldu, Py_ssize_t g0, Py_ssize_t T, double* alpha, double* u,
                  double* scale, double* tA, double* tB, double* xi, double* mbufs,
                  const double** Ms, double* logz) noexcept nogil:
    """Scaled forward pass: ``alpha`` (T x S, each row normalised), ``u`` the shifted
    exponentiated state unaries, ``scale`` the normalisers, ``logz``.  Returns 1 if a
    normaliser is 0 or infinite (no allowed assignment)."""
    cdef Py_ssize_t S = pd.S
    cdef Py_ssize_t t, g, s
    cdef int c
    cdef double mx, tot, sh, lz = 0.0
    cdef double* at
    cdef double* ut
    cdef const double* src
    for t in range(T):
        g = g0 + t
        ut = u + t * S
        _prod_ulog(lk, pd, unary + g * ldu, g, ut, xi)
        mx = -INFINITY
        for s in range(S):
            if ut[s] > mx:
                mx = ut[s]
        if mx == -INFINITY:
            return 1
        for s in range(S):
            ut[s] = exp(ut[s] - mx)
        lz += mx
        at = alpha + t * S
        if t == 0:
            for s in range(S):
                at[s] = ut[s]
        else:
            for c in range(pd.C):
                Ms[c] = link_exp(lk, pd.inlink[c], g, mbufs + c * pd.maxsz, &sh)
                lz += sh
            _transition(pd, alpha + (t - 1) * S, tA, tB, Ms, -1, 0, &src)
            for s in range(S):
                at[s] = src[s] * ut[s]
        tot = 0.0
        for s in range(S):
            tot += at[s]
        if not (tot > 0.0 and tot < INFINITY):
            return 1
        scale[t] = tot
        lz += log(tot)
        tot = 1.0 / tot
        for s in range(S):
            at[s] *= tot
    logz[0] = lz
    return 0


cdef void _marginals_at(const LinkView* lk, const ProductView* pd, Py_ssize_t g,
                        const double* at, const double* beta, double* gam, double* xi,
                        double* node, Py_ssize_t ldu, double* pout,
                        double* tacc) noexcept nogil:
    """Node marginals and coupling pair marginals at global token ``g``."""
    cdef Py_ssize_t S = pd.S, s, i
    cdef int C = pd.C, c, q, k, lb
    for s in range(S):
        gam[s] = at[s] * beta[s]
    for s in range(S):
        for c in range(C):
            node[g * ldu + pd.loff[c] + pd.lab[s * C + c]] += gam[s]
    for q in range(pd.n_cpl):
        k = pd.cpl[q]
        lb = lk.lb[k]
        for i in range(lk.la[k] * lb):
            xi[i] = 0.0
        for s in range(S):
            xi[pd.lab[s * C + lk.a[k]] * lb + pd.lab[s * C + lk.b[k]]] += gam[s]
        write_pair(lk, k, g, xi, pout, tacc)


cdef void _inchain_marginals(const LinkView* lk, const ProductView* pd, Py_ssize_t g,
                             const double* ap, const double* w, double* tA, double* tB,
                             const double** Ms, double* xi, double* pout,
                             double* tacc) noexcept nogil:
    """In-chain pair marginals between global tokens ``g - 1`` and ``g`` of every chain with
    templates, from ``alpha_{t-1}`` (``ap``) and the scaled ``w = u_t * beta_t``."""
    cdef Py_ssize_t S = pd.S, o, r, i, j, inner, outer
    cdef int a, k, La
    cdef double acc
    cdef const double* src
    cdef const double* M
    for a in range(pd.C):
        k = pd.inlink[a]
        if lk.tmpl_ptr[k] == lk.tmpl_ptr[k + 1]:
            continue
        _transition(pd, ap, tA, tB, Ms, a, 0, &src)
        La = pd.nl[a]
        inner = pd.stride[a]
        outer = S // (La * inner)
        M = Ms[a]
        for i in range(La):
            for j in range(La):
                acc = 0.0
                for o in range(outer):
                    for r in range(inner):
                        acc += src[(o * La + i) * inner + r] * w[(o * La + j) * inner + r]
                xi[i * La + j] = M[i * La + j] * acc
        write_pair(lk, k, g, xi, pout, tacc)


cdef int _fb(const LinkView* lk, const ProductView* pd, const double* unary, Py_ssize_t ldu,
             Py_ssize_t g0, Py_ssize_t T, double* alpha, double* u, double* scale,
             double* beta, double* nbeta, double* w, double* tA, double* tB, double* gam,
             double* xi, double* mbufs, const double** Ms,
             double* node, double* pout, double* tacc, double* logz) noexcept nogil:
    """Scaled forward-backward of one sequence over the product space; returns 1 (nothing
    written) when the forward pass finds no allowed assignment."""
    cdef Py_ssize_t S = pd.S
    cdef Py_ssize_t t, g, s
    cdef int c
    cdef double tot, sh
    cdef double* ut
    cdef const double* src
    if _forward(lk, pd, unary, ldu, g0, T, alpha, u, scale, tA, tB, xi, mbufs, Ms, logz):
        return 1
    for s in range(S):
        beta[s] = 1.0
    for t in range(T - 1, -1, -1):
        g = g0 + t
        _marginals_at(lk, pd, g, alpha + t * S, beta, gam, xi, node, ldu, pout, tacc)
        if t == 0:
            break
        ut = u + t * S
        tot = 1.0 / scale[t]
        for s in range(S):
            w[s] = ut[s] * beta[s] * tot
        for c in range(pd.C):
            Ms[c] = link_exp(lk, pd.inlink[c], g, mbufs + c * pd.maxsz, &sh)
        # beta_{t-1} = transposed transition applied to w
        _transition(pd, w, tA, tB, Ms, -1, 1, &src)
        for s in range(S):
            nbeta[s] = src[s]
        _inchain_marginals(lk, pd, g, alpha + (t - 1) * S, w, tA, tB, Ms, xi, pout, tacc)
        for s in range(S):
            beta[s] = nbeta[s]
    return 0


cdef void _viterbi(const LinkView* lk, const ProductView* pd, const double* unary, Py_ssize_t ldu,
                   Py_ssize_t g0, Py_ssize_t T, double* delta, double* ul, double* tA,
                   double* tB, double* cbuf, double* mbufs, const double** Ps,
                   int* labels, Py_ssize_t ldl) noexcept nogil:
    cdef Py_ssize_t S = pd.S
    cdef int C = pd.C
    cdef Py_ssize_t t, g, s, sp, best
    cdef int c
    cdef double mx, v
    cdef double* dt
    cdef const double* src
    cdef double* dst
    for t in range(T):
        g = g0 + t
        dt = delta + t * S
        _prod_ulog(lk, pd, unary + g * ldu, g, ul, cbuf)
        if t == 0:
            for s in range(S):
                dt[s] = ul[s]
        else:
            src = delta + (t - 1) * S
            for c in range(C):
                Ps[c] = link_log(lk, pd.inlink[c], g, mbufs + c * pd.maxsz)
                dst = tA if (c % 2 == 0) else tB
                _apply_max(src, dst, Ps[c], pd.nl[c], S // (pd.nl[c] * pd.stride[c]),
                           pd.stride[c])
                src = dst
            for s in range(S):
                dt[s] = src[s] + ul[s]
    dt = delta + (T - 1) * S
    best = 0
    mx = dt[0]
    for s in range(1, S):
        if dt[s] > mx:
            mx = dt[s]
            best = s
    for c in range(C):
        labels[(g0 + T - 1) * ldl + c] = pd.lab[best * C + c]
    for t in range(T - 1, 0, -1):
        g = g0 + t
        for c in range(C):
            Ps[c] = link_log(lk, pd.inlink[c], g, mbufs + c * pd.maxsz)
        dt = delta + (t - 1) * S
        sp = 0
        mx = -INFINITY
        for s in range(S):
            v = dt[s]
            if v == -INFINITY:
                continue
            for c in range(C):
                v += Ps[c][pd.lab[s * C + c] * pd.nl[c] + pd.lab[best * C + c]]
            if v > mx:
                mx = v
                sp = s
        best = sp
        for c in range(C):
            labels[(g - 1) * ldl + c] = pd.lab[best * C + c]


cdef struct FBWork:
    double* alpha       # Tmax x S
    double* u           # Tmax x S
    double* scale       # Tmax
    double* beta        # S
    double* nbeta       # S
    double* w           # S
    double* tA          # S
    double* tB          # S
    double* gam         # S
    double* xi          # the largest link matrix
    double* mbufs       # one per chain
    const double** Ms   # C


cdef FBWork _carve_fb(Carver* c, Py_ssize_t Tmax, Py_ssize_t S, int C, int msz) noexcept nogil:
    """One thread's forward-backward buffers, taken one after another from ``c``."""
    cdef FBWork f
    f.alpha = take_doubles(c, Tmax * S)
    f.u = take_doubles(c, Tmax * S)
    f.scale = take_doubles(c, Tmax)
    f.beta = take_doubles(c, S)
    f.nbeta = take_doubles(c, S)
    f.w = take_doubles(c, S)
    f.tA = take_doubles(c, S)
    f.tB = take_doubles(c, S)
    f.gam = take_doubles(c, S)
    f.xi = take_doubles(c, msz)
    f.mbufs = take_doubles(c, C * msz)
    f.Ms = take_pointers(c, C)
    return f


cdef struct ViterbiWork:
    double* delta       # Tmax x S
    double* ul          # S
    double* tA          # S
    double* tB          # S
    double* cbuf        # the largest link matrix
    double* mbufs       # one per chain
    const double** Ps   # C


cdef ViterbiWork _carve_viterbi(Carver* c, Py_ssize_t Tmax, Py_ssize_t S, int C,
                                int msz) noexcept nogil:
    """One thread's Viterbi buffers, taken one after another from ``c``."""
    cdef ViterbiWork v
    v.delta = take_doubles(c, Tmax * S)
    v.ul = take_doubles(c, S)
    v.tA = take_doubles(c, S)
    v.tB = take_doubles(c, S)
    v.cbuf = take_doubles(c, msz)
    v.mbufs = take_doubles(c, C * msz)
    v.Ps = take_pointers(c, C)
    return v


def product_marginals(ProductSpace space, const long long[::1] seq_ptr,
                      const double[:, ::1] unary, double[:, ::1] node, double[::1] pout,
                      double[::1] logz, int n_threads):
    """Exact forward-backward over the product space; fills the outputs (zero on entry).

    ``logz[s]`` is ``-inf`` (and the marginals of ``s`` stay 0) when the
    scaled pass underflows to zero, i.e. when no allowed assignment exists.
    Tied templates receive their expected counts summed over all positions.
    """
    cdef Links links = space.links
    cdef LinkView lk = links.view()
    cdef ProductView pd = space.view()
    cdef Py_ssize_t S = pd.S
    cdef int C = pd.C
    cdef Py_ssize_t n_seq = seq_ptr.shape[0] - 1
    cdef Py_ssize_t ldu = unary.shape[1]
    cdef Py_ssize_t Tmax = longest_sequence(seq_ptr), s, T, g0
    cdef int tid, rc, msz = pd.maxsz
    cdef const double* unary_p = &unary[0, 0] if unary.shape[0] > 0 else NULL
    cdef double* node_p = &node[0, 0] if node.shape[0] > 0 else NULL
    cdef double* pout_p = &pout[0] if pout.shape[0] > 0 else NULL
    tacc_arr = np.zeros((n_threads, max(links.tacc_size, 1)), np.float64)
    cdef double[:, ::1] tacc = tacc_arr
    cdef double* tacc_p = &tacc[0, 0]
    cdef Py_ssize_t ldt = tacc.shape[1]
    cdef Carver c = carver(NULL)
    cdef FBWork f
    _carve_fb(&c, Tmax, S, C, msz)
    cdef size_t per = c.used
    cdef Block scratch = allocate(n_threads * per, 1)
    cdef char* base = <char*> scratch.ptr
    with nogil, parallel(num_threads=n_threads):
        tid = threadid()
        c = carver(base + tid * per)
        f = _carve_fb(&c, Tmax, S, C, msz)
        # round-robin, not on demand: each thread's tied sums have the same terms in
        # the same order in every run
        for s in prange(n_seq, schedule="static", chunksize=1):
            g0 = seq_ptr[s]
            T = seq_ptr[s + 1] - g0
            if T == 0:
                logz[s] = 0.0
                continue
            rc = _fb(&lk, &pd, unary_p, ldu, g0, T, f.alpha, f.u, f.scale, f.beta, f.nbeta,
                     f.w, f.tA, f.tB, f.gam, f.xi, f.mbufs, f.Ms,
                     node_p, pout_p, tacc_p + tid * ldt, &logz[s])
            if rc != 0:
                logz[s] = -INFINITY
    links.scatter_tied(tacc_arr.sum(axis=0), pout)


def product_viterbi(ProductSpace space, const long long[::1] seq_ptr,
                    const double[:, ::1] unary, int[:, ::1] labels, int n_threads):
    """Exact Viterbi over the product space; fills ``labels`` (N, C)."""
    cdef Links links = space.links
    cdef LinkView lk = links.view()
    cdef ProductView pd = space.view()
    cdef Py_ssize_t S = pd.S
    cdef int C = pd.C
    cdef Py_ssize_t n_seq = seq_ptr.shape[0] - 1
    cdef Py_ssize_t ldu = unary.shape[1]
    cdef Py_ssize_t ldl = labels.shape[1]
    cdef Py_ssize_t Tmax = longest_sequence(seq_ptr), s, T, g0
    cdef int msz = pd.maxsz
    cdef const double* unary_p = &unary[0, 0] if unary.shape[0] > 0 else NULL
    cdef int* lab_p = &labels[0, 0] if labels.shape[0] > 0 else NULL
    cdef Carver c = carver(NULL)
    cdef ViterbiWork v
    _carve_viterbi(&c, Tmax, S, C, msz)
    cdef size_t per = c.used
    cdef Block scratch = allocate(n_threads * per, 1)
    cdef char* base = <char*> scratch.ptr
    with nogil, parallel(num_threads=n_threads):
        c = carver(base + threadid() * per)
        v = _carve_viterbi(&c, Tmax, S, C, msz)
        for s in prange(n_seq, schedule="dynamic"):
            g0 = seq_ptr[s]
            T = seq_ptr[s + 1] - g0
            if T == 0:
                continue
            _viterbi(&lk, &pd, unary_p, ldu, g0, T, v.delta, v.ul, v.tA, v.tB, v.cbuf,
                     v.mbufs, v.Ps, lab_p, ldl)
