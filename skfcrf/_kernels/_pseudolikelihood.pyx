# cython: language_level=3
"""Factor-based negative log-pseudolikelihood and its gradient w.r.t. the potentials.

Every factor (each unary and each pairwise factor instance) contributes
``-log p(y_f | x, y_MB(f))``: the distribution over the factor's own variables
with every other variable clamped to its gold label (Sanner et al. 2007; thesis
eq. 4.14).  The conditional of a factor over variables ``V_f`` is proportional to
the product of all factors touching ``V_f``.

Tied pairwise templates (one matrix ``Psi`` for all positions) are evaluated for
a chunk of factor instances at once: with ``eu_t = exp(su_t - max)``,
``ew_t = exp(sw_t - max)`` and ``E = exp(Psi - max)``, the conditional of
instance ``t`` is ``eu_t[l] ew_t[k] E[l, k] / Z_t``, whose marginals need
``E @ ew_t`` and ``E.T @ eu_t``, and whose expected counts sum to
``E * sum_t (eu_t / Z_t) ew_t^T``: three dgemm calls per chunk, no ``exp`` per
entry.  Untied templates, and instances whose product under/overflows, take
the log-domain path.

On qualifying tied edges (below), a variable's scores are exponentiated once,
in the unary pass, not again for every pairwise factor that touches it.  That pass of
a sequence keeps, in a per-thread buffer,
``F = exp(s - m)`` for every variable, where ``s`` is its *full* score (all
neighbours at gold, nothing left out) and ``m = max s``, together with ``m``
and ``s`` at the gold label.  A pairwise conditional needs the score of each
end with its own factor left out, which differs from ``s`` only by that factor's
entry at the other end's gold label: ``s_excl(l) = s(l) - Psi[l, y_w]`` (and
``Psi[y_u, k]`` for the other end).  Hence ``eu_t[l] = F_u[l] / E[l, y_w]`` up to
a constant factor that goes into the shift: one multiply by the precomputed
``1 / E`` per entry instead of one ``exp``.  A tied matrix qualifies when all its
entries are finite (a forbidden assignment would give ``1 / 0``) and span at
most ``EXP_RANGE``: then ``1 / E`` stays finite, the largest ``eu_t`` lies in
``[1, exp(span)]``, and entries lost to underflow of ``F`` weigh less than
``exp(span - 745)`` of it.  Other tied matrices recompute the left-out scores
and exponentiate them.

Gradient scatter.  A conditional ``q`` of a variable ``v`` with gold label ``y`` (its
unary factor's, or its marginal in a pairwise factor's conditional) depends on every
potential of ``v`` except those of the factor it is taken for, and contributes
``q - onehot(y)`` to each: to ``v``'s unary and to every other pairwise factor of ``v``,
at the entry where the other end is at gold.  Instead of ``(1 + deg)^2`` such vector
updates per variable with ``deg`` pairwise factors, each conditional adds ``q - onehot(y)``
to ``v``'s unary gradient row, which after all ``1 + deg`` of them holds their sum ``D``,
and ``-q`` to its own factor's entries; a last pass over the sequence adds ``D + onehot(y)``
to the entries of every pairwise factor of ``v`` (``3 deg + 1`` updates).  On a tied
matrix the entries fed from the first end form a column; they accumulate in a transposed
per-thread copy, where they are contiguous, and are added back at the end.

:func:`pseudolikelihood` returns the gradient w.r.t. the log-potentials, laid out as in
:mod:`skfcrf._kernels.graph`; the feature table maps it to the weights.
:func:`pseudolikelihood_objective` (what training calls) does all three steps (feature
products, pseudolikelihood, gradient mapping) one sequence at a time in per-thread buffers
that stay in cache, so no whole-batch score, potential or gradient array is ever built:
:func:`sequence_potentials`, :func:`sequence_loss`, :func:`sequence_weight_gradient`.

The edge templates and their tied tables (``exp``, inverse, transposes) are a
:class:`skfcrf._kernels._contract.Links` with one link per template
(:func:`~skfcrf._kernels._contract.template_links`), the structure the inference kernels use;
:c:type:`Model` points into it.  Per-thread scratch (the conditionals' buffers, a
sequence's scores, potentials and their gradients) is carved from one
:func:`skfcrf._kernels._alloc.allocate` block (``MemoryError`` on failure) by the
:c:type:`~skfcrf._kernels._alloc.Carver` of :mod:`skfcrf._kernels._alloc`.
"""
from cython.parallel cimport prange, parallel, threadid
from libc.math cimport log, INFINITY
from scipy.linalg.cython_blas cimport dgemm

import numpy as np

from ._alloc cimport Block, Carver, allocate, carver, take_doubles
from ._contract cimport LinkView, Links, ParameterTables, ParameterView
from ._table cimport CSR, as_csr, sequence_gradient, sequence_scores, triple_or_empty

from ._contract import sequence_blocks, template_links
from skfcrf._blas import single_blas_thread

cdef extern from "_simd.h" nogil:
    # exp(s[i] - shift) over an array, vectorised (see _simd.h)
    void exp_shifted "skfcrf_exp_shifted"(const double* s, double shift, double* out, int n)
    # out = a * b elementwise; a tied pair factor's marginals and gradient updates
    void vmul "skfcrf_mul"(const double* a, const double* b, double* out, int n)
    void pair_update "skfcrf_pair_update"(double* eu, const double* r, double* du_u,
                                          double* own_u, int La, const double* ew,
                                          const double* c, double* du_w, double* own_w,
                                          int Lb, double inv)

cdef enum:
    IN_CHAIN = 0
    COUPLING = 1
    CHUNK = 128     # factor instances of one tied edge evaluated together


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
    const double* tied_pairT  # transpose (Lb x La) of each tied edge's matrix, at tied_offset[e]
    const int* gold
    double* dunary
    double* dpair
    double* dtied          # this block's direct gradient of tied edges, at tied_offset[e]
    # this block's gradient of tied edges fed by their first ends' conditionals,
    # transposed (Lb x La), at tied_offset[e]
    double* dtiedT
    double* outer          # this block's sum of (eu_t / Z_t) ew_t^T, at tied_offset[e]
    const double* tied_exp  # exp(pair - max) of each tied edge, at tied_offset[e]
    const double* tied_expT  # its transpose (Lb x La), at tied_offset[e]
    const double* tied_inv  # 1 / tied_exp, at tied_offset[e] (edges with tied_fast only)
    const double* tied_invT  # its transpose (Lb x La), at tied_offset[e]
    const double* tied_max  # that max, per edge
    const int* tied_fast   # 1: all finite, span <= EXP_RANGE; conditionals from the cache


cdef struct Scratch:
    double* su      # Lmax
    double* sw      # Lmax
    double* qu      # Lmax
    double* qw      # Lmax
    double* q       # Lmax * Lmax
    double* EU      # CHUNK * Lmax
    double* EW      # CHUNK * Lmax
    double* R       # CHUNK * Lmax
    double* CM      # CHUNK * Lmax
    double* shift   # CHUNK: mu + mw - gold score
    # per sequence, filled by the unary pass (variable (c, t) at t * ltot + label_offset[c]
    # and t * C + c):
    double* F       # Tmax * ltot: exp(full score - its max)
    double* mfull   # Tmax * C: that max
    double* gfull   # Tmax * C: full score at the gold label


cdef Scratch make_scratch(Carver* c, int lmax, Py_ssize_t tmax, int ltot,
                          int n_chains) noexcept nogil:
    """One thread's scratch arrays (see the sizes in :class:`Scratch`), taken one after
    another from ``c``."""
    cdef Scratch w
    w.su = take_doubles(c, lmax)
    w.sw = take_doubles(c, lmax)
    w.qu = take_doubles(c, lmax)
    w.qw = take_doubles(c, lmax)
    w.q = take_doubles(c, lmax * lmax)
    w.EU = take_doubles(c, CHUNK * lmax)
    w.EW = take_doubles(c, CHUNK * lmax)
    w.R = take_doubles(c, CHUNK * lmax)
    w.CM = take_doubles(c, CHUNK * lmax)
    w.shift = take_doubles(c, CHUNK)
    w.F = take_doubles(c, tmax * ltot)
    w.mfull = take_doubles(c, tmax * n_chains)
    w.gfull = take_doubles(c, tmax * n_chains)
    return w


cdef Block thread_scratch(int n_threads, int lmax, Py_ssize_t tmax, int ltot, int n_chains,
                          size_t* per):
    """Memory for every thread's :func:`make_scratch`, ``per[0]`` bytes each."""
    cdef Carver c = carver(NULL)
    make_scratch(&c, lmax, tmax, ltot, n_chains)
    per[0] = c.used
    return allocate(n_threads * c.used, 1)


cdef inline long long pos_base(const Model* m, int e, Py_ssize_t g) noexcept nogil:
    """Start of edge ``e``'s potential matrix at global token ``g``."""
    cdef long long k = m.n_labels[m.edge_a[e]] * m.n_labels[m.edge_b[e]]
    if m.edge_tied[e]:
        return m.edge_offset[e]
    return m.edge_offset[e] + g * k


cdef inline void factor_ends(const Model* m, int e, Py_ssize_t t, Py_ssize_t* tu,
                             Py_ssize_t* tw, int* side_u, int* side_w) noexcept nogil:
    """Positions of the two variables of edge ``e``'s factor at ``t``, and the sides excluded."""
    if m.edge_kind[e] == IN_CHAIN:
        tu[0] = t - 1
        tw[0] = t
        side_u[0] = 1
        side_w[0] = 0
    else:
        tu[0] = t
        tw[0] = t
        side_u[0] = 2
        side_w[0] = 2


cdef inline void add_tied_column(const Model* m, int e, int other, int L,
                                 double* out) noexcept nogil:
    """Add column ``other`` of tied edge ``e``'s matrix (``L`` rows) to ``out``, read as a
    contiguous row of its transpose."""
    cdef const double* col = m.tied_pairT + m.tied_offset[e] + other * L
    cdef int l
    for l in range(L):
        out[l] += col[l]


cdef void var_scores(const Model* m, int c, Py_ssize_t start, Py_ssize_t t, Py_ssize_t T,
                     int ex_e, int ex_side, double* out) noexcept nogil:
    """Score of each label of variable (c, t) with all neighbours at gold.

    The factor (ex_e, ex_side) is left out: ex_side 0 is the in-chain edge to the
    left (t-1, t), 1 the one to the right (t, t+1), 2 a coupling edge.
    """
    cdef int L = m.n_labels[c]
    cdef int e, lb, other, l
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
                other = m.gold[(g + 1) * m.n_chains + c]
                if m.edge_tied[e]:
                    add_tied_column(m, e, other, L, out)
                else:
                    base = pos_base(m, e, g + 1)
                    for l in range(L):
                        out[l] += m.pair[base + l * L + other]
        else:
            if e == ex_e:
                continue
            if m.edge_a[e] == c:
                lb = m.n_labels[m.edge_b[e]]
                other = m.gold[g * m.n_chains + m.edge_b[e]]
                if m.edge_tied[e]:
                    add_tied_column(m, e, other, L, out)
                else:
                    base = pos_base(m, e, g)
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


cdef inline double* target_u(const Model* m, int e, Py_ssize_t g, int yw,
                             Py_ssize_t* stride) noexcept nogil:
    """Gradient entries of edge ``e``'s factor at ``g`` that its first end's conditionals
    feed: column ``yw`` of the matrix (the second end at gold), ``stride`` apart; for a tied
    edge, row ``yw`` of this block's transposed accumulator."""
    cdef int lb = m.n_labels[m.edge_b[e]]
    if m.edge_tied[e]:
        stride[0] = 1
        return m.dtiedT + m.tied_offset[e] + yw * m.n_labels[m.edge_a[e]]
    stride[0] = lb
    return grad_block(m, e, g) + yw


cdef inline double* target_w(const Model* m, int e, Py_ssize_t g, int yu) noexcept nogil:
    """Same for the second end: row ``yu`` of the matrix, contiguous."""
    return grad_block(m, e, g) + yu * m.n_labels[m.edge_b[e]]


cdef inline void add_conditional(double* row, double* own, Py_ssize_t stride, const double* q,
                                 int L, int y) noexcept nogil:
    """One conditional ``q`` of a variable with gold label ``y``, computed with the factor whose
    entries are at ``own`` (``stride`` apart) left out: ``q - onehot(y)`` into the variable's
    unary gradient ``row``, ``-q`` into ``own`` (see :func:`scatter_sequence`)."""
    cdef int l
    for l in range(L):
        row[l] += q[l]
        own[l * stride] -= q[l]
    row[y] -= 1.0


cdef inline void add_row(double* dst, Py_ssize_t stride, const double* row, int L,
                         int y) noexcept nogil:
    cdef int l
    for l in range(L):
        dst[l * stride] += row[l]
    dst[y * stride] += 1.0


cdef void scatter_sequence(const Model* m, Py_ssize_t start, Py_ssize_t T) noexcept nogil:
    """Gradient of every pairwise factor seen through its ends' conditionals, for one sequence.

    A conditional ``q`` of variable ``v`` (gold ``y``) touches every potential of ``v``
    except those of the factor it is taken for: ``q - onehot(y)`` goes to ``v``'s unary and
    to every other pairwise factor of ``v`` at the other end's gold.  Summed over the
    ``1 + deg`` conditionals of ``v``, the unary receives ``D = sum_j q_j - (1 + deg)
    onehot(y)`` and factor ``e`` receives ``D + onehot(y) - q_e``.  By now ``v``'s unary
    gradient row (touched by ``v``'s conditionals only) holds ``D`` and ``-q_e`` is in place
    (:func:`add_conditional`); this adds ``D + onehot(y)`` at both ends of every factor
    instance.  The first and last token have no left and right in-chain factor.
    """
    cdef int e, ca, cb, La, yu, yw, first
    cdef Py_ssize_t t, tu, tw, stride
    cdef int side_u, side_w
    cdef int C = m.n_chains
    cdef double* dst
    for e in range(m.n_edges):
        ca = m.edge_a[e]
        cb = m.edge_b[e]
        La = m.n_labels[ca]
        first = 1 if m.edge_kind[e] == IN_CHAIN else 0
        for t in range(first, T):
            factor_ends(m, e, t, &tu, &tw, &side_u, &side_w)
            yu = m.gold[(start + tu) * C + ca]
            yw = m.gold[(start + tw) * C + cb]
            dst = target_u(m, e, start + t, yw, &stride)
            add_row(dst, stride, m.dunary + (start + tu) * m.ltot + m.label_offset[ca], La, yu)
            add_row(target_w(m, e, start + t, yu), 1,
                    m.dunary + (start + tw) * m.ltot + m.label_offset[cb], m.n_labels[cb], yw)


cdef inline double dot(const double* a, const double* b, int n) noexcept nogil:
    """``sum_i a[i] b[i]`` with four partial sums (a serial sum waits on every add)."""
    cdef double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0
    cdef int i = 0
    while i + 4 <= n:
        s0 += a[i] * b[i]
        s1 += a[i + 1] * b[i + 1]
        s2 += a[i + 2] * b[i + 2]
        s3 += a[i + 3] * b[i + 3]
        i += 4
    while i < n:
        s0 += a[i] * b[i]
        i += 1
    return (s0 + s1) + (s2 + s3)


cdef inline double softmax_inplace(double* s, int n) noexcept nogil:
    """Turn scores into probabilities; return log-sum-exp of the scores."""
    cdef double mx = -INFINITY, tot = 0.0
    cdef int i
    for i in range(n):
        if s[i] > mx:
            mx = s[i]
    exp_shifted(s, mx, s, n)
    for i in range(n):
        tot += s[i]
    for i in range(n):
        s[i] /= tot
    return mx + log(tot)


cdef double pair_factor_log(const Model* m, int e, Py_ssize_t start, Py_ssize_t t,
                            Py_ssize_t T, Scratch* w) noexcept nogil:
    """One pairwise factor instance in the log domain: loss term and gradient scatter."""
    cdef int ca = m.edge_a[e], cb = m.edge_b[e]
    cdef int La = m.n_labels[ca], Lb = m.n_labels[cb]
    cdef Py_ssize_t g = start + t
    cdef Py_ssize_t tu, tw
    cdef int side_u, side_w, yu, yw, l, k
    cdef long long base = pos_base(m, e, g)
    cdef double lse, gold_score
    cdef double* q = w.q
    cdef double* dst
    cdef Py_ssize_t stride
    factor_ends(m, e, t, &tu, &tw, &side_u, &side_w)
    var_scores(m, ca, start, tu, T, e, side_u, w.su)
    var_scores(m, cb, start, tw, T, e, side_w, w.sw)
    yu = m.gold[(start + tu) * m.n_chains + ca]
    yw = m.gold[(start + tw) * m.n_chains + cb]
    gold_score = w.su[yu] + w.sw[yw] + m.pair[base + yu * Lb + yw]
    for l in range(La):
        for k in range(Lb):
            q[l * Lb + k] = w.su[l] + w.sw[k] + m.pair[base + l * Lb + k]
    lse = softmax_inplace(q, La * Lb)
    for l in range(La):
        w.qu[l] = 0.0
    for k in range(Lb):
        w.qw[k] = 0.0
    for l in range(La):
        for k in range(Lb):
            w.qu[l] += q[l * Lb + k]
            w.qw[k] += q[l * Lb + k]
    q[yu * Lb + yw] -= 1.0
    dst = grad_block(m, e, g)
    for l in range(La * Lb):
        dst[l] += q[l]
    dst = target_u(m, e, g, yw, &stride)
    add_conditional(m.dunary + (start + tu) * m.ltot + m.label_offset[ca], dst, stride,
                    w.qu, La, yu)
    add_conditional(m.dunary + (start + tw) * m.ltot + m.label_offset[cb],
                    target_w(m, e, g, yu), 1, w.qw, Lb, yw)
    return lse - gold_score


cdef double tied_chunk(const Model* m, int e, Py_ssize_t start, Py_ssize_t t0, Py_ssize_t n,
                       Py_ssize_t T, Scratch* w) noexcept nogil:
    """Factor instances ``t0 .. t0+n-1`` of tied edge ``e`` by three dgemm calls."""
    cdef int ca = m.edge_a[e], cb = m.edge_b[e]
    cdef int La = m.n_labels[ca], Lb = m.n_labels[cb]
    cdef const double* E = m.tied_exp + m.tied_offset[e]
    cdef const double* ET = m.tied_expT + m.tied_offset[e]
    cdef const double* P = m.pair + m.edge_offset[e]
    cdef Py_ssize_t i, t, tu, tw, stride
    cdef int side_u, side_w, yu, yw, l, k, nn = <int> n
    cdef double mu, mw, z, inv, loss = 0.0
    cdef double* eu
    cdef double* ew
    cdef double* r
    cdef double* cm
    cdef double* du_u
    cdef double* du_w
    cdef const double* fu
    cdef const double* fw
    cdef const double* iu
    cdef const double* iw
    cdef double one = 1.0, zero = 0.0
    cdef char tn = b'N'
    cdef char tt = b'T'
    # 1. conditional scores of both ends, shifted and exponentiated
    if m.tied_fast[e]:
        # from the cache: exp(s_excl - (m_full - max Psi)) = F / E at the other end's gold
        for i in range(n):
            t = t0 + i
            factor_ends(m, e, t, &tu, &tw, &side_u, &side_w)
            yu = m.gold[(start + tu) * m.n_chains + ca]
            yw = m.gold[(start + tw) * m.n_chains + cb]
            fu = w.F + tu * m.ltot + m.label_offset[ca]
            fw = w.F + tw * m.ltot + m.label_offset[cb]
            iu = m.tied_invT + m.tied_offset[e] + yw * La
            iw = m.tied_inv + m.tied_offset[e] + yu * Lb
            eu = w.EU + i * La
            ew = w.EW + i * Lb
            vmul(fu, iu, eu, La)
            vmul(fw, iw, ew, Lb)
            # shift mu + mw + max Psi - gold score, with mu = m_u - max Psi (same for w) and
            # gold score = s_u[yu] + s_w[yw] - Psi[yu, yw] (Psi counted in both full scores)
            w.shift[i] = (w.mfull[tu * m.n_chains + ca] + w.mfull[tw * m.n_chains + cb]
                          - m.tied_max[e] - (w.gfull[tu * m.n_chains + ca]
                                             + w.gfull[tw * m.n_chains + cb] - P[yu * Lb + yw]))
    else:
        for i in range(n):
            t = t0 + i
            factor_ends(m, e, t, &tu, &tw, &side_u, &side_w)
            var_scores(m, ca, start, tu, T, e, side_u, w.su)
            var_scores(m, cb, start, tw, T, e, side_w, w.sw)
            yu = m.gold[(start + tu) * m.n_chains + ca]
            yw = m.gold[(start + tw) * m.n_chains + cb]
            mu = -INFINITY
            mw = -INFINITY
            for l in range(La):
                if w.su[l] > mu:
                    mu = w.su[l]
            for k in range(Lb):
                if w.sw[k] > mw:
                    mw = w.sw[k]
            eu = w.EU + i * La
            ew = w.EW + i * Lb
            exp_shifted(w.su, mu, eu, La)
            exp_shifted(w.sw, mw, ew, Lb)
            w.shift[i] = mu + mw + m.tied_max[e] - (w.su[yu] + w.sw[yw] + P[yu * Lb + yw])
    # 2. R = EW @ E^T (n x La), CM = EU @ E (n x Lb)  [row-major, see module doc]; both
    # as untransposed products (E^T stored), which BLAS runs without packing copies
    dgemm(&tn, &tn, &La, &nn, &Lb, &one, ET, &La, w.EW, &Lb, &zero, w.R, &La)
    dgemm(&tn, &tn, &Lb, &nn, &La, &one, E, &Lb, w.EU, &La, &zero, w.CM, &Lb)
    # 3. per instance: normaliser, marginals, loss, scatter
    for i in range(n):
        t = t0 + i
        factor_ends(m, e, t, &tu, &tw, &side_u, &side_w)
        eu = w.EU + i * La
        ew = w.EW + i * Lb
        r = w.R + i * La
        cm = w.CM + i * Lb
        z = dot(eu, r, La)
        if not (z > 1e-280) or z == INFINITY:
            # underflow/overflow of the product form: redo this one in the log domain
            loss += pair_factor_log(m, e, start, t, T, w)
            for l in range(La):
                eu[l] = 0.0
            continue
        inv = 1.0 / z
        loss += log(z) + w.shift[i]
        yu = m.gold[(start + tu) * m.n_chains + ca]
        yw = m.gold[(start + tw) * m.n_chains + cb]
        m.dtied[m.tied_offset[e] + yu * Lb + yw] -= 1.0
        # marginals of both ends into their unary-gradient rows, taken from this factor's
        # entries (add_conditional, vectorised; a tied edge's first-end entries are a
        # contiguous row of the transposed accumulator), and eu scaled by 1 / z
        du_u = m.dunary + (start + tu) * m.ltot + m.label_offset[ca]
        du_w = m.dunary + (start + tw) * m.ltot + m.label_offset[cb]
        pair_update(eu, r, du_u, target_u(m, e, start + t, yw, &stride), La,
                    ew, cm, du_w, target_w(m, e, start + t, yu), Lb, inv)
        du_u[yu] -= 1.0
        du_w[yw] -= 1.0
    # 4. expected counts: outer += (EU / Z)^T EW  (E * outer is added at the end)
    dgemm(&tn, &tt, &Lb, &La, &nn, &one, w.EW, &Lb, w.EU, &La, &one, m.outer + m.tied_offset[e], &Lb)
    return loss


cdef double sequence_loss(Model* m, Scratch* w, Py_ssize_t start,
                          Py_ssize_t T) noexcept nogil:
    """Negative log-pseudolikelihood of one sequence; its gradient into ``m``'s arrays."""
    cdef Py_ssize_t t, t0, first
    cdef int C = m.n_chains
    cdef int c, e, y, L, l
    cdef double acc = 0.0, smax, tot, inv
    cdef double* f
    cdef double* du
    cdef double* su = w.su
    # unary factors; keeps exp(full score - max), the max and the gold score
    for t in range(T):
        for c in range(C):
            L = m.n_labels[c]
            var_scores(m, c, start, t, T, -1, -1, su)
            y = m.gold[(start + t) * C + c]
            f = w.F + t * m.ltot + m.label_offset[c]
            smax = -INFINITY
            for l in range(L):
                if su[l] > smax:
                    smax = su[l]
            exp_shifted(su, smax, f, L)
            tot = 0.0
            for l in range(L):
                tot = tot + f[l]
            w.mfull[t * C + c] = smax
            w.gfull[t * C + c] = su[y]
            acc = acc - su[y] + (smax + log(tot))
            # its conditional, q - onehot(y), into the unary gradient row
            du = m.dunary + (start + t) * m.ltot + m.label_offset[c]
            inv = 1.0 / tot
            for l in range(L):
                du[l] += f[l] * inv
            du[y] -= 1.0
    # pairwise factors: tied edges chunk by chunk, untied one by one
    for e in range(m.n_edges):
        first = 1 if m.edge_kind[e] == IN_CHAIN else 0
        if m.edge_tied[e]:
            t0 = first
            while t0 < T:
                acc = acc + tied_chunk(m, e, start, t0, min(CHUNK, T - t0), T, w)
                t0 = t0 + CHUNK
        else:
            for t in range(first, T):
                acc = acc + pair_factor_log(m, e, start, t, T, w)
    scatter_sequence(m, start, T)
    return acc


def _tied_gradient(Links links, dtied, dtiedT, outer):
    """Per tied edge, its gradient from the per-block accumulators (see the module doc)."""
    tied_exp = np.asarray(links.tied_exp)
    tied_log = np.asarray(links.tied_log)
    tied_sum = dtied.sum(axis=0) + tied_exp * outer.sum(axis=0)
    tied_sumT = dtiedT.sum(axis=0)
    out = {}
    for e in range(links.n_links):
        if not links.tied[e]:
            continue
        la, lb = links.la[e], links.lb[e]
        sl = slice(links.tied_off[e], links.tied_off[e] + la * lb)
        grad = tied_sum[sl] + tied_sumT[sl].reshape(lb, la).T.ravel()
        # at a forbidden entry, what the factor instances' own conditionals take away
        # their ends' other conditionals add back (see scatter_sequence); summed over
        # many instances that cancels only up to rounding, so set the exact value
        grad[~np.isfinite(tied_log[sl])] = 0.0
        out[e] = grad
    return out


cdef Model make_model(Links links, const long long[::1] edge_offset) noexcept:
    """A :c:type:`Model` over ``links`` (one link per edge template) with the potentials at
    ``edge_offset``; data and gradient pointers are set by the caller."""
    cdef Model m
    cdef LinkView lk = links.view()
    m.n_labels = &links.n_labels[0]
    m.label_offset = &links.label_offset[0]
    m.edge_a = lk.a
    m.edge_b = lk.b
    m.edge_kind = lk.kind
    m.edge_tied = lk.tied
    m.edge_offset = &edge_offset[0]
    m.tied_offset = lk.tied_off
    m.n_edges = links.n_links
    m.n_chains = links.n_chains
    m.ltot = links.total_labels
    m.tied_exp = lk.tied_exp
    m.tied_expT = lk.tied_expT
    m.tied_pairT = lk.tied_logT
    m.tied_max = lk.tied_shift
    m.tied_inv = lk.tied_inv
    m.tied_invT = lk.tied_invT
    m.tied_fast = lk.tied_fast
    return m


def _pseudolikelihood(graph, const long long[::1] seq_ptr, const double[:, ::1] unary,
                      const double[::1] pair, const long long[::1] edge_offset,
                      const int[:, ::1] gold, int n_threads=1):
    """Kernel of :func:`pseudolikelihood` (see there)."""
    cdef int C = graph.n_chains, E = graph.n_edges
    cdef Py_ssize_t n = unary.shape[0]
    cdef Py_ssize_t n_seq = seq_ptr.shape[0] - 1
    if n_threads < 1:
        n_threads = 1
    if unary.shape[1] != graph.total_labels or gold.shape[0] != n or gold.shape[1] != C:
        raise ValueError("unary/gold shapes do not match the graph")
    if pair.shape[0] != edge_offset[E]:
        raise ValueError("pair has the wrong length for this layout")
    pair_arr = np.asarray(pair)
    cdef Links links = template_links(graph, [
        pair_arr[edge_offset[e]:edge_offset[e] + graph.edge_size(e)] if graph.edge_tied[e]
        else None for e in range(E)])
    cdef Py_ssize_t n_tied = max(links.tied_size, 1)

    loss_arr = np.zeros(n_seq, dtype=np.float64)
    dunary_arr = np.zeros((n, graph.total_labels), dtype=np.float64)
    dpair_arr = np.zeros(pair.shape[0], dtype=np.float64)
    # per block of sequences (see sequence_blocks): the tied edges' accumulators
    cdef long long[::1] blocks = sequence_blocks(seq_ptr, 3 * max(links.tacc_size, 1))
    cdef Py_ssize_t n_blocks = blocks.shape[0] - 1
    dtied_arr = np.zeros((n_blocks, n_tied), dtype=np.float64)
    dtiedT_arr = np.zeros((n_blocks, n_tied), dtype=np.float64)
    outer_arr = np.zeros((n_blocks, n_tied), dtype=np.float64)
    cdef double[::1] loss = loss_arr
    cdef double[:, ::1] dunary = dunary_arr
    cdef double[::1] dpair = dpair_arr
    cdef double[:, ::1] dtied = dtied_arr
    cdef double[:, ::1] dtiedT = dtiedT_arr
    cdef double[:, ::1] outer = outer_arr
    cdef Py_ssize_t tmax = int(np.max(np.diff(seq_ptr))) if n_seq else 0
    cdef int lmax = links.max_labels
    cdef Model base_model = make_model(links, edge_offset)
    base_model.unary = &unary[0, 0] if n else NULL
    base_model.pair = &pair[0] if pair.shape[0] else NULL
    base_model.gold = &gold[0, 0] if n else NULL
    base_model.dunary = &dunary[0, 0] if n else NULL
    base_model.dpair = &dpair[0] if pair.shape[0] else NULL

    cdef Py_ssize_t s, T, start, b
    cdef Model m
    cdef Scratch w
    cdef Carver c
    cdef size_t per
    cdef Block scratch = thread_scratch(n_threads, lmax, tmax, graph.total_labels, C, &per)
    with nogil, parallel(num_threads=n_threads):
        # whole-struct assignments make w and m private to each thread
        c = carver(<char*> scratch.ptr + threadid() * per)
        w = make_scratch(&c, lmax, tmax, base_model.ltot, C)
        m = base_model
        for b in prange(n_blocks, schedule="dynamic", chunksize=1):
            m.dtied = &dtied[b, 0]
            m.dtiedT = &dtiedT[b, 0]
            m.outer = &outer[b, 0]
            for s in range(blocks[b], blocks[b + 1]):
                start = seq_ptr[s]
                T = seq_ptr[s + 1] - start
                loss[s] = sequence_loss(&m, &w, start, T)

    for e, grad in _tied_gradient(links, dtied_arr, dtiedT_arr, outer_arr).items():
        dpair_arr[edge_offset[e]:edge_offset[e] + grad.size] += grad
    return loss_arr, dunary_arr, dpair_arr


def pseudolikelihood(graph, seq_ptr, unary, pair, edge_offset, gold, n_threads=1):
    """Negative log-pseudolikelihood of a batch and its gradient w.r.t. the potentials.

    Parameters
    ----------
    graph : skfcrf._kernels.graph.Graph
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
        Threads over sequences.  BLAS runs single-threaded inside (its small
        products are issued from every thread).

    Returns
    -------
    loss : ndarray (n_seq,)
        Per-sequence negative log-pseudolikelihood.
    dunary : ndarray (N, Ltot)
        Gradient w.r.t. ``unary``.
    dpair : ndarray like ``pair``
        Gradient w.r.t. ``pair`` (tied edges: one matrix).

    Raises
    ------
    MemoryError
        When the kernel's scratch memory cannot be allocated.
    """
    with single_blas_thread():
        return _pseudolikelihood(graph, seq_ptr, unary, pair, edge_offset, gold, n_threads)


cdef struct Parameters:
    # what maps a sequence's observations to its potentials (see pseudolikelihood_objective)
    ParameterView p                # the model: offsets, edge tables, feature table, forbid
    CSR direct
    CSR diff
    int has_diff
    const double* theta
    int unary_only                 # width == ltot: the score rows are the unary rows


cdef struct SequenceBuffers:
    # one thread's potentials of one sequence and their gradients (T rows each)
    double* S       # scores (T x width); later the score gradient
    double* unary   # unary potentials (T x ltot); S itself when unary_only
    double* dunary  # their gradient
    double* acc     # width doubles of scratch for the running sums
    # the Model's pair / dpair: tied matrices, then T x k blocks of the untied edges


cdef SequenceBuffers carve_sequence_buffers(Carver* c, Py_ssize_t tmax, Py_ssize_t width,
                                            int ltot) noexcept nogil:
    """One thread's :c:type:`SequenceBuffers`, taken one after another from ``c``."""
    cdef SequenceBuffers sb
    sb.S = take_doubles(c, tmax * width)
    sb.unary = sb.S if width == ltot else take_doubles(c, tmax * ltot)
    sb.dunary = take_doubles(c, tmax * ltot)
    sb.acc = take_doubles(c, width)
    return sb


cdef struct UntiedBlock:
    # an edge's per-token matrices in a sequence: k entries each (0 for a tied edge, which has
    # none), scored from column col of a score row, at lo + t * k of the Model's pair / dpair
    Py_ssize_t k
    Py_ssize_t col
    Py_ssize_t lo


cdef inline UntiedBlock untied_block(const Parameters* pr, const Model* m, int e) noexcept nogil:
    """Where edge ``e``'s per-token matrices are (see :c:type:`UntiedBlock`)."""
    cdef UntiedBlock b
    b.k = 0
    b.col = 0
    b.lo = 0
    if not m.edge_tied[e]:
        b.k = m.n_labels[m.edge_a[e]] * m.n_labels[m.edge_b[e]]
        b.col = pr.p.e_col[e]
        b.lo = m.edge_offset[e]
    return b


cdef void sequence_potentials(const Parameters* pr, const Model* m, SequenceBuffers* sb,
                              Py_ssize_t g0, Py_ssize_t T) noexcept nogil:
    """Scores of the sequence's tokens (rows ``g0 ..``) and its potentials: unary rows into
    ``sb.unary``, untied pair blocks into ``m.pair``; their gradients zeroed."""
    cdef Py_ssize_t t, j, k, col, lo, width = pr.p.width
    cdef UntiedBlock ub
    cdef int e, l, ltot = m.ltot
    cdef double* S = sb.S
    cdef double* pair = <double*> m.pair
    for j in range(T * width):
        S[j] = 0.0
    if pr.p.n_table:
        sequence_scores(pr.direct, pr.diff, pr.has_diff, pr.p.feat_ptr, pr.p.ent_col, pr.theta, g0,
                        T, width, S, sb.acc, NULL, NULL, 0)
    for t in range(T):
        for l in range(ltot):
            sb.unary[t * ltot + l] = S[t * width + l] + pr.theta[pr.p.bias_unary + l]
            sb.dunary[t * ltot + l] = 0.0
    for e in range(m.n_edges):
        ub = untied_block(pr, m, e)
        k, col, lo = ub.k, ub.col, ub.lo
        if k == 0:
            continue
        for t in range(T):
            for j in range(k):
                if pr.p.forbid[pr.p.forbid_offset[e] + j]:
                    pair[lo + t * k + j] = -INFINITY
                else:
                    pair[lo + t * k + j] = S[t * width + col + j] + pr.theta[pr.p.bias_edge[e] + j]
                m.dpair[lo + t * k + j] = 0.0


cdef void sequence_weight_gradient(const Parameters* pr, const Model* m, SequenceBuffers* sb,
                                   Py_ssize_t g0, Py_ssize_t T, double* grad) noexcept nogil:
    """Add the gradient w.r.t. the parameters (biases, then feature weights through the
    score gradient, built in ``sb.S``) of the potentials' gradient of one sequence."""
    cdef Py_ssize_t t, j, k, col, lo, width = pr.p.width
    cdef UntiedBlock ub
    cdef int e, l, ltot = m.ltot
    cdef double v
    cdef double* srow
    for t in range(T):
        srow = sb.S + t * width
        for l in range(ltot):
            v = sb.dunary[t * ltot + l]
            grad[pr.p.bias_unary + l] += v
            if not pr.unary_only:
                srow[l] = v
    for e in range(m.n_edges):
        ub = untied_block(pr, m, e)
        k, col, lo = ub.k, ub.col, ub.lo
        if k == 0:
            continue
        for t in range(T):
            srow = sb.S + t * width + col
            for j in range(k):
                # a forbidden entry's potential does not depend on the weights
                v = 0.0 if pr.p.forbid[pr.p.forbid_offset[e] + j] else m.dpair[lo + t * k + j]
                srow[j] = v
                grad[pr.p.bias_edge[e] + j] += v
    if pr.p.n_table:
        sequence_gradient(pr.direct, pr.diff, pr.has_diff, pr.p.feat_ptr, pr.p.ent_col, g0, T,
                          width, sb.dunary if pr.unary_only else sb.S, grad, NULL, NULL, 0)


cdef Parameters make_parameters(const ParameterView* pv, CSR direct, CSR diff, int has_diff,
                                const double* theta) noexcept:
    """:c:type:`Parameters` over the tables' view and the call's arrays (kept alive by the
    caller)."""
    cdef Parameters pr
    pr.p = pv[0]
    pr.direct = direct
    pr.diff = diff
    pr.has_diff = has_diff
    pr.theta = theta
    pr.unary_only = pv.width == pv.ltot
    return pr


def _objective_links(ParameterTables tables, theta):
    """One link per edge template, the tied ones' matrices from their biases (``-inf`` at
    forbidden assignments)."""
    graph = tables.graph
    tied = []
    for e in range(graph.n_edges):
        if graph.edge_tied[e]:
            block = np.array(theta[tables.bias_edge[e]:tables.bias_edge[e + 1]], dtype=np.float64)
            block[tables.forbidden_of(e)] = -np.inf
            tied.append(block)
        else:
            tied.append(None)
    return template_links(graph, tied)


def _local_offsets(Links links, Py_ssize_t tmax):
    """Per-thread pair layout: the tied matrices (at their ``tied_off``), then ``tmax`` x k
    blocks of the untied edges.  Returns the offsets (E + 1) and the length."""
    E = links.n_links
    local_offset = np.zeros(E + 1, dtype=np.int64)
    pos = max(links.tied_size, 1)
    for e in range(E):
        if links.tied[e]:
            local_offset[e] = links.tied_off[e]
        else:
            local_offset[e] = pos
            pos += tmax * links.la[e] * links.lb[e]
    local_offset[E] = pos
    return local_offset, pos


def _objective(ParameterTables tables, obs, const int[:, ::1] gold, const double[::1] theta,
               int n_threads=1):
    """Kernel of :func:`pseudolikelihood_objective` (see there)."""
    graph = tables.graph
    cdef const long long[::1] seq_ptr = obs.seq_ptr
    cdef int C = graph.n_chains
    cdef Py_ssize_t n = gold.shape[0]
    cdef Py_ssize_t n_seq = seq_ptr.shape[0] - 1
    cdef Py_ssize_t n_params = theta.shape[0]
    cdef int ltot = graph.total_labels
    cdef Py_ssize_t width = tables.width
    cdef ParameterView pv = tables.view()
    if n_threads < 1:
        n_threads = 1
    cdef Links links = _objective_links(tables, theta)
    cdef Py_ssize_t tmax = int(np.max(np.diff(seq_ptr))) if n_seq else 0
    local_offset_arr, n_local = _local_offsets(links, tmax)
    cdef long long[::1] local_offset = local_offset_arr
    cdef Py_ssize_t n_tied = max(links.tied_size, 1)

    d_ip, d_ix, d_v = obs.direct
    f_ip, f_ix, f_v = triple_or_empty(obs.diff, n)     # kept alive: pr points into them
    cdef Parameters pr = make_parameters(&pv, as_csr(d_ip, d_ix, d_v), as_csr(f_ip, f_ix, f_v),
                                         obs.diff is not None, &theta[0])

    loss_arr = np.zeros(n_seq, dtype=np.float64)
    cdef double[::1] loss = loss_arr
    cdef Py_ssize_t n_local_pair = n_local, tied_size = links.tied_size, j
    cdef const double* tied_log = &links.tied_log[0]
    # per block of sequences (see sequence_blocks): weight gradient and tied accumulators
    cdef long long[::1] blocks = sequence_blocks(seq_ptr,
                                                 n_params + 3 * max(links.tacc_size, 1))
    cdef Py_ssize_t n_blocks = blocks.shape[0] - 1
    gacc_arr = np.zeros((n_blocks, n_params))
    cdef double[:, ::1] gacc = gacc_arr
    dtied_arr = np.zeros((n_blocks, n_tied))
    dtiedT_arr = np.zeros((n_blocks, n_tied))
    outer_arr = np.zeros((n_blocks, n_tied))
    cdef double[:, ::1] dtied = dtied_arr
    cdef double[:, ::1] dtiedT = dtiedT_arr
    cdef double[:, ::1] outer = outer_arr
    cdef int lmax = links.max_labels
    cdef Model base_model = make_model(links, local_offset)

    cdef Py_ssize_t s, T, g0, th, b
    cdef Model m
    cdef Scratch w
    cdef SequenceBuffers sb
    cdef Carver c = carver(NULL)
    cdef size_t per
    cdef Block scratch
    cdef double* pair
    cdef double* dpair
    # per thread: the scratch of the conditionals, the sequence's scores and potentials
    # (see SequenceBuffers), and its pair potentials and their gradient (local layout)
    make_scratch(&c, lmax, tmax, ltot, C)
    carve_sequence_buffers(&c, tmax, width, ltot)
    take_doubles(&c, 2 * n_local_pair)
    per = c.used
    scratch = allocate(n_threads * per, 1)
    with nogil, parallel(num_threads=n_threads):
        th = threadid()
        # whole-struct assignments make w, sb and m private to each thread
        c = carver(<char*> scratch.ptr + th * per)
        w = make_scratch(&c, lmax, tmax, ltot, C)
        sb = carve_sequence_buffers(&c, tmax, width, ltot)
        pair = take_doubles(&c, n_local_pair)
        dpair = take_doubles(&c, n_local_pair)
        for j in range(n_local_pair):
            pair[j] = tied_log[j] if j < tied_size else 0.0
            dpair[j] = 0.0
        m = base_model
        m.unary = sb.unary
        m.dunary = sb.dunary
        m.pair = pair
        m.dpair = dpair
        for b in prange(n_blocks, schedule="dynamic", chunksize=1):
            m.dtied = &dtied[b, 0]
            m.dtiedT = &dtiedT[b, 0]
            m.outer = &outer[b, 0]
            for s in range(blocks[b], blocks[b + 1]):
                g0 = seq_ptr[s]
                T = seq_ptr[s + 1] - g0
                if T == 0:
                    continue
                sequence_potentials(&pr, &m, &sb, g0, T)
                m.gold = &gold[g0, 0]
                loss[s] = sequence_loss(&m, &w, 0, T)
                sequence_weight_gradient(&pr, &m, &sb, g0, T, &gacc[b, 0])

    grad = gacc_arr.sum(axis=0)
    for ei, tg in _tied_gradient(links, dtied_arr, dtiedT_arr, outer_arr).items():
        grad[tables.bias_edge[ei]:tables.bias_edge[ei + 1]] = tg
    return loss_arr, grad


def pseudolikelihood_objective(ParameterTables tables, obs, gold, theta, n_threads=1):
    """Negative log-pseudolikelihood of a batch and its gradient w.r.t. the parameters.

    The same value as :func:`pseudolikelihood` on the potentials of
    :meth:`ParameterLayout.potentials`, mapped back by
    :meth:`ParameterLayout.gradient`, but fused one sequence at a time: the
    sequence's scores, potentials and their gradients live in per-thread
    buffers (in cache) and never as whole-batch arrays.

    Parameters
    ----------
    tables : skfcrf._kernels._contract.ParameterTables
        The model: the parameter layout's offsets, edge tables, feature table and
        forbidden assignments (:meth:`ParameterLayout.kernel_tables`).
    obs : ObservationRows
        The batch's observations (``seq_ptr``; ``direct`` and ``diff``, the
        latter columns stored as token differences or None), as
        :class:`skfcrf.model._observation_rows.ObservationRows` keeps them.
    gold : int32 ndarray (N, C)
    theta : float64 ndarray (n_params,)
    n_threads : int

    Returns
    -------
    loss : ndarray (n_seq,)
        Per-sequence negative log-pseudolikelihood.
    grad : ndarray (n_params,)
    """
    with single_blas_thread():
        return _objective(tables, obs, gold, theta, n_threads)
