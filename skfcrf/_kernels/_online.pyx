# cython: language_level=3
"""Whole epochs of CRFsuite's online trainers on ONE label chain, compiled.

The online trainers (:mod:`skfcrf.solvers`: per-sequence SGD, the averaged
perceptron, passive-aggressive, AROW) visit the sequences one at a time and
update the weights after each.  On a one-chain model without joint-state or
back-off weights, one epoch runs here over the sequences in the order given,
nothing of Python inside: per sequence the scores from the observations and
the weights, Viterbi (or forward-backward for SGD), and the update, in place
on the float64 weight arrays.  :class:`skfcrf.objectives.SequenceTerms` does
the same one sequence at a time in Python (and for every other model); the
two agree to rounding (tests/test_online_kernel.py).

Data layout (:class:`ChainProblem`)
-----------------------------------
``seq_ptr`` (n_seq + 1, int64)
    Sequence ``s`` owns the global token rows ``seq_ptr[s]:seq_ptr[s + 1]``.
``indptr`` (N + 1, int64), ``indices`` (nnz, int32), ``values`` (nnz, float64)
    The observations, CSR, a row per token.
``gold`` (N, int32)
    The gold label of every token (all given).
``feat_ptr`` (n_features + 1, int64), ``ent_col`` (n_table, int32)
    The feature table (:mod:`skfcrf._kernels._features`): observation ``f``
    owns the weights ``feat_ptr[f]:feat_ptr[f + 1]``, weight ``p`` scoring
    column ``ent_col[p]`` of the token's ``width`` scores: columns ``0..L-1``
    the labels, and with an untied transition template columns
    ``edge_col .. edge_col + L*L - 1`` the transitions ``(i, j)`` at ``i * L + j``.
``theta`` (n_params, float64)
    The weights of :class:`skfcrf.model._layout.ParameterLayout`: the table
    ``0..n_table-1``, then ``L`` label biases at ``bias_unary``, then (with a
    transition template) ``L * L`` transition biases at ``bias_edge``.
``forbidden`` (L * L, uint8)
    1 where a transition ``(i, j)`` has a ``-inf`` score.
``free`` (n_params, uint8)
    1 where an update may move the weight (the others keep their values).

A transition's score at token ``t`` (joining ``t - 1`` and ``t``) is its bias,
plus with an untied template the token's own transition columns; a model
without a transition template scores every transition 0.

Scratch: per sequence the scores, potentials, the decoding or the marginals
(``Tmax`` tokens), and for the margin trainers' difference of counts a dense
accumulator over the weights with a mark per weight and the list of the weights
touched (``O(touched)`` reset per sequence).  A :class:`ChainProblem` is not
thread-safe; the epoch functions release the GIL.
"""
import numpy as np

from libc.math cimport exp, log, sqrt, INFINITY

from ._common cimport lse, lse_col, matvec, maxplus

cdef enum:
    _PERCEPTRON = 0
    _PASSIVE_AGGRESSIVE = 1
    _AROW = 2

#: update rules of :func:`margin_epoch`
PERCEPTRON, PASSIVE_AGGRESSIVE, AROW = _PERCEPTRON, _PASSIVE_AGGRESSIVE, _AROW


cdef struct Chain:
    Py_ssize_t L, LL, width, n_params
    const long long* seq_ptr
    const long long* indptr
    const int* indices
    const double* values
    const int* gold
    const long long* feat_ptr
    const int* ent_col
    const unsigned char* forbidden
    const unsigned char* free
    Py_ssize_t bias_unary, bias_edge, edge_col
    int has_edge, tied
    # scratch over the weights
    double* acc
    unsigned char* mark
    long long* touched
    Py_ssize_t n_touched
    # scratch over one sequence
    double* scores      # Tmax x width
    double* unary       # Tmax x L
    double* pair        # L*L (tied) or Tmax x L*L (untied): transition scores
    double* expm        # the same, exp(score - shift)
    double* expmT       # transposes of expm
    double* shift       # Tmax: shift of expm (untied), shift[0] (tied)
    double* alpha       # Tmax x L
    double* u           # Tmax x L
    double* scale       # Tmax
    double* node        # Tmax x L
    double* dpair       # like pair: pair marginals, then their gradient
    double* beta
    double* nbeta
    double* w
    double* vd          # Viterbi scores, L
    double* vn          # L
    int* labels         # Tmax
    int* bp             # Tmax x L


cdef class ChainProblem:
    """The arrays of one-chain online training (module docstring) and its scratch.

    Parameters are the arrays of the module docstring; ``edge``: 0 no
    transition template, 1 tied (biases only), 2 untied (the table scores
    columns ``edge_col..``).
    """
    cdef Chain c
    cdef object _keep
    cdef readonly Py_ssize_t n_sequences, n_params

    def __init__(self, seq_ptr, indptr, indices, values, gold, feat_ptr, ent_col,
                 Py_ssize_t n_labels, Py_ssize_t width, Py_ssize_t n_params,
                 Py_ssize_t bias_unary, Py_ssize_t bias_edge, Py_ssize_t edge_col, int edge,
                 forbidden, free):
        L = n_labels
        arrays = dict(
            seq_ptr=np.ascontiguousarray(seq_ptr, np.int64),
            indptr=np.ascontiguousarray(indptr, np.int64),
            indices=np.ascontiguousarray(indices, np.int32),
            values=np.ascontiguousarray(values, np.float64),
            gold=np.ascontiguousarray(gold, np.int32),
            feat_ptr=np.ascontiguousarray(feat_ptr, np.int64),
            ent_col=np.ascontiguousarray(ent_col, np.int32),
            forbidden=np.ascontiguousarray(np.ravel(forbidden), np.uint8),
            free=np.ascontiguousarray(free, np.uint8))
        if arrays["forbidden"].shape[0] != L * L or arrays["free"].shape[0] != n_params:
            raise ValueError("forbidden must have L * L entries and free n_params")
        seq = arrays["seq_ptr"]
        n_seq = seq.shape[0] - 1
        Tmax = max(int(np.max(np.diff(seq))) if n_seq else 1, 1)
        tied = edge != 2
        per_t = 1 if tied else Tmax
        scratch = dict(
            acc=np.zeros(n_params), mark=np.zeros(n_params, np.uint8),
            touched=np.zeros(n_params, np.int64),
            scores=np.zeros(Tmax * width), unary=np.zeros(Tmax * L),
            pair=np.zeros(per_t * L * L), expm=np.zeros(per_t * L * L),
            expmT=np.zeros(per_t * L * L), shift=np.zeros(Tmax), alpha=np.zeros(Tmax * L),
            u=np.zeros(Tmax * L), scale=np.zeros(Tmax), node=np.zeros(Tmax * L),
            dpair=np.zeros(per_t * L * L), beta=np.zeros(L), nbeta=np.zeros(L),
            w=np.zeros(L), vd=np.zeros(L), vn=np.zeros(L),
            labels=np.zeros(Tmax, np.int32), bp=np.zeros(Tmax * L, np.int32))
        self._keep = (arrays, scratch)
        self.n_sequences = n_seq
        self.n_params = n_params
        c = &self.c
        c.L, c.LL, c.width, c.n_params = L, L * L, width, n_params
        c.bias_unary, c.bias_edge, c.edge_col = bias_unary, bias_edge, edge_col
        c.has_edge, c.tied = edge != 0, tied
        c.seq_ptr = <const long long*> _address(seq)
        c.indptr = <const long long*> _address(arrays["indptr"])
        c.indices = <const int*> _address(arrays["indices"])
        c.values = <const double*> _address(arrays["values"])
        c.gold = <const int*> _address(arrays["gold"])
        c.feat_ptr = <const long long*> _address(arrays["feat_ptr"])
        c.ent_col = <const int*> _address(arrays["ent_col"])
        c.forbidden = <const unsigned char*> _address(arrays["forbidden"])
        c.free = <const unsigned char*> _address(arrays["free"])
        c.acc = <double*> _address(scratch["acc"])
        c.mark = <unsigned char*> _address(scratch["mark"])
        c.touched = <long long*> _address(scratch["touched"])
        c.n_touched = 0
        c.scores = <double*> _address(scratch["scores"])
        c.unary = <double*> _address(scratch["unary"])
        c.pair = <double*> _address(scratch["pair"])
        c.expm = <double*> _address(scratch["expm"])
        c.expmT = <double*> _address(scratch["expmT"])
        c.shift = <double*> _address(scratch["shift"])
        c.alpha = <double*> _address(scratch["alpha"])
        c.u = <double*> _address(scratch["u"])
        c.scale = <double*> _address(scratch["scale"])
        c.node = <double*> _address(scratch["node"])
        c.dpair = <double*> _address(scratch["dpair"])
        c.beta = <double*> _address(scratch["beta"])
        c.nbeta = <double*> _address(scratch["nbeta"])
        c.w = <double*> _address(scratch["w"])
        c.vd = <double*> _address(scratch["vd"])
        c.vn = <double*> _address(scratch["vn"])
        c.labels = <int*> _address(scratch["labels"])
        c.bp = <int*> _address(scratch["bp"])


cdef size_t _address(a):
    """Address of the first item of the contiguous array ``a`` (0 when empty)."""
    return <size_t> a.ctypes.data if a.size else 0


def _check(ChainProblem problem, const long long[::1] order, const double[::1] theta):
    if theta.shape[0] != problem.n_params:
        raise ValueError(f"theta has {theta.shape[0]} weights, the problem {problem.n_params}")
    for i in range(order.shape[0]):
        if not 0 <= order[i] < problem.n_sequences:
            raise ValueError(f"order has a sequence {order[i]} out of range")


# ---------------------------------------------------------------------------
# per sequence: potentials, decoding, marginals
# ---------------------------------------------------------------------------

cdef inline const double* _trans(Chain* c, Py_ssize_t t) noexcept nogil:
    """Transition scores (L x L) into token ``t``."""
    return c.pair if c.tied else c.pair + t * c.LL


cdef void _potentials(Chain* c, const double* theta, double mult, Py_ssize_t g0,
                      Py_ssize_t T) noexcept nogil:
    """Label scores ``unary`` (T x L) and transition scores ``pair`` of the tokens
    ``g0 ..`` at the weights ``mult * theta`` (the sums in the order of
    :meth:`ParameterLayout.potentials`)."""
    cdef Py_ssize_t t, j, p, k, L = c.L, LL = c.LL, width = c.width
    cdef double v
    cdef double* row
    cdef double* P
    # the hot loop reads locals: stores through row could alias c's fields
    cdef const long long* indptr = c.indptr
    cdef const long long* feat_ptr = c.feat_ptr
    cdef const int* indices = c.indices
    cdef const int* ent_col = c.ent_col
    cdef const double* values = c.values
    for t in range(T):
        row = c.scores + t * width
        for k in range(width):
            row[k] = 0.0
        for j in range(indptr[g0 + t], indptr[g0 + t + 1]):
            v = values[j]
            for p in range(feat_ptr[indices[j]], feat_ptr[indices[j] + 1]):
                row[ent_col[p]] += v * (mult * theta[p])
        for k in range(L):
            c.unary[t * L + k] = row[k] + mult * theta[c.bias_unary + k]
    if not c.has_edge:
        for k in range(LL):
            c.pair[k] = 0.0
        return
    if c.tied:
        for k in range(LL):
            c.pair[k] = -INFINITY if c.forbidden[k] else mult * theta[c.bias_edge + k]
        return
    for t in range(T):
        row = c.scores + t * width + c.edge_col
        P = c.pair + t * LL
        for k in range(LL):
            P[k] = -INFINITY if c.forbidden[k] else row[k] + mult * theta[c.bias_edge + k]


cdef void _viterbi(Chain* c, Py_ssize_t T) noexcept nogil:
    """Log-space Viterbi into ``labels``; ties go to the smallest label (as
    :mod:`skfcrf._kernels._chain`)."""
    cdef Py_ssize_t t, i, j, L = c.L
    cdef double v, mx
    cdef const double* row
    cdef const double* P
    cdef int* bpt
    cdef int best
    for j in range(L):
        c.vd[j] = c.unary[j]
    for t in range(1, T):
        row = c.unary + t * L
        P = _trans(c, t)
        bpt = c.bp + t * L
        maxplus(c.vd, <int> L, P, <int> L, c.vn)
        for j in range(L):
            v = c.vn[j]
            bpt[j] = 0
            if v > -INFINITY:
                for i in range(L):
                    if c.vd[i] + P[i * L + j] == v:
                        bpt[j] = <int> i
                        break
        for j in range(L):
            c.vd[j] = c.vn[j] + row[j]
    best = 0
    mx = c.vd[0]
    for j in range(1, L):
        if c.vd[j] > mx:
            mx = c.vd[j]
            best = <int> j
    c.labels[T - 1] = best
    for t in range(T - 1, 0, -1):
        best = c.bp[t * L + best]
        c.labels[t - 1] = best


cdef void _exp_transitions(Chain* c, Py_ssize_t T) noexcept nogil:
    """``expm = exp(pair - shift)`` (and its transpose), ``shift`` the max (0 if all -inf)."""
    cdef Py_ssize_t t, i, j, n = 1 if c.tied else T, L = c.L, LL = c.LL
    cdef double mx
    cdef const double* P
    cdef double* E
    cdef double* ET
    for t in range(n):
        P = c.pair + t * LL
        E = c.expm + t * LL
        ET = c.expmT + t * LL
        mx = -INFINITY
        for i in range(LL):
            if P[i] > mx:
                mx = P[i]
        if mx == -INFINITY:
            mx = 0.0
        c.shift[t] = mx
        for i in range(L):
            for j in range(L):
                E[i * L + j] = exp(P[i * L + j] - mx)
                ET[j * L + i] = E[i * L + j]


cdef int _marginals_scaled(Chain* c, Py_ssize_t T, double* logz) noexcept nogil:
    """Scaled forward-backward (as :mod:`skfcrf._kernels._chain`): ``node`` (T x L),
    ``dpair`` the pair marginals (summed over the tokens when tied), ``logz``.
    Returns 1 (nothing usable written) when a normaliser under/overflows."""
    cdef Py_ssize_t t, i, j, k, L = c.L, LL = c.LL
    cdef double mx, s, lz = 0.0, ai
    cdef const double* row
    cdef const double* E
    cdef double* at
    cdef double* ap
    cdef double* ut
    cdef double* D
    for t in range(T):
        row = c.unary + t * L
        mx = -INFINITY
        for j in range(L):
            if row[j] > mx:
                mx = row[j]
        if mx == -INFINITY:
            return 1
        at = c.alpha + t * L
        ut = c.u + t * L
        for j in range(L):
            ut[j] = exp(row[j] - mx)
        lz += mx
        if t == 0:
            for j in range(L):
                at[j] = ut[j]
        else:
            lz += c.shift[0] if c.tied else c.shift[t]
            E = c.expm if c.tied else c.expm + t * LL
            matvec(c.alpha + (t - 1) * L, <int> L, E, <int> L, at, 0)
            for j in range(L):
                at[j] *= ut[j]
        s = 0.0
        for j in range(L):
            s += at[j]
        if not (s > 0.0 and s < INFINITY):
            return 1
        c.scale[t] = s
        lz += log(s)
        s = 1.0 / s
        for j in range(L):
            at[j] *= s
    logz[0] = lz
    # backward
    for k in range(LL if c.tied else T * LL):
        c.dpair[k] = 0.0
    for j in range(L):
        c.beta[j] = 1.0
        c.node[(T - 1) * L + j] = c.alpha[(T - 1) * L + j]
    for t in range(T - 1, 0, -1):
        s = 1.0 / c.scale[t]
        ut = c.u + t * L
        for j in range(L):
            c.w[j] = ut[j] * c.beta[j] * s
        ap = c.alpha + (t - 1) * L
        E = c.expm if c.tied else c.expm + t * LL
        D = c.dpair if c.tied else c.dpair + t * LL
        matvec(c.w, <int> L, c.expmT if c.tied else c.expmT + t * LL, <int> L, c.nbeta, 0)
        for i in range(L):
            ai = ap[i]
            if c.tied:      # sum_t alpha_{t-1} (x) w_t, times the matrix once at the end
                for j in range(L):
                    D[i * L + j] += ai * c.w[j]
            else:
                for j in range(L):
                    D[i * L + j] = ai * E[i * L + j] * c.w[j]
        for i in range(L):
            c.beta[i] = c.nbeta[i]
            c.node[(t - 1) * L + i] = ap[i] * c.nbeta[i]
    if c.tied:
        for k in range(LL):
            c.dpair[k] *= c.expm[k]
    return 0


cdef void _marginals_log(Chain* c, Py_ssize_t T, double* logz) noexcept nogil:
    """Log-space forward-backward (the fallback of the scaled passes); the same outputs."""
    cdef Py_ssize_t t, i, j, L = c.L, LL = c.LL
    cdef double mx, s, lz, v
    cdef const double* row
    cdef const double* P
    cdef double* at
    cdef double* ap
    cdef double* D
    for t in range(T):
        row = c.unary + t * L
        at = c.alpha + t * L
        if t == 0:
            for j in range(L):
                at[j] = row[j]
        else:
            P = _trans(c, t)
            ap = c.alpha + (t - 1) * L
            for j in range(L):
                at[j] = lse_col(ap, P, j, L) + row[j]
    at = c.alpha + (T - 1) * L
    lz = lse(at, L)
    logz[0] = lz
    if lz == -INFINITY:
        return
    for i in range(LL if c.tied else T * LL):
        c.dpair[i] = 0.0
    for j in range(L):
        c.beta[j] = 0.0
        c.node[(T - 1) * L + j] = exp(at[j] - lz)
    for t in range(T - 1, 0, -1):
        row = c.unary + t * L
        P = _trans(c, t)
        D = c.dpair if c.tied else c.dpair + t * LL
        for j in range(L):
            c.w[j] = row[j] + c.beta[j]
        ap = c.alpha + (t - 1) * L
        for i in range(L):
            mx = -INFINITY
            for j in range(L):
                v = P[i * L + j] + c.w[j]
                if v > mx:
                    mx = v
            s = 0.0
            for j in range(L):
                v = P[i * L + j] + c.w[j]
                D[i * L + j] += exp(ap[i] + v - lz)
                if mx > -INFINITY:
                    s += exp(v - mx)
            c.nbeta[i] = mx + log(s) if mx > -INFINITY else -INFINITY
        for i in range(L):
            c.beta[i] = c.nbeta[i]
            c.node[(t - 1) * L + i] = exp(ap[i] + c.nbeta[i] - lz)


# ---------------------------------------------------------------------------
# the sparse accumulator over the weights
# ---------------------------------------------------------------------------

cdef inline void _add(Chain* c, Py_ssize_t p, double x) noexcept nogil:
    """``acc[p] += x`` for a free weight ``p``, noting it touched."""
    if not c.free[p]:
        return
    if not c.mark[p]:
        c.mark[p] = 1
        c.touched[c.n_touched] = p
        c.n_touched += 1
    c.acc[p] += x


cdef inline void _clear(Chain* c) noexcept nogil:
    """Zero ``acc`` and the marks of the touched weights; forget them."""
    cdef Py_ssize_t i, p
    for i in range(c.n_touched):
        p = c.touched[i]
        c.acc[p] = 0.0
        c.mark[p] = 0
    c.n_touched = 0


cdef double _gold_score(Chain* c, const int* y, Py_ssize_t T) noexcept nogil:
    """Score of the labelling ``y`` (T labels): its label scores, then its transitions'."""
    cdef Py_ssize_t t, L = c.L
    cdef double s = 0.0, sp = 0.0
    for t in range(T):
        s += c.unary[t * L + y[t]]
    for t in range(1, T):
        sp += _trans(c, t)[y[t - 1] * L + y[t]]
    return s + sp


cdef int _difference(Chain* c, Py_ssize_t g0, Py_ssize_t T) noexcept nogil:
    """``acc`` = gold minus decoded (``labels``) feature counts on the free weights;
    returns the number of wrong labels."""
    cdef Py_ssize_t t, j, p, L = c.L, col
    cdef const int* y = c.gold + g0
    cdef const int* z = c.labels
    cdef int yt, zt, du, dp, n_wrong = 0
    cdef Py_ssize_t ga = -1, za = -1
    cdef double v
    for t in range(T):
        yt, zt = y[t], z[t]
        du = yt != zt
        n_wrong += du
        dp = 0
        if t > 0:
            ga, za = y[t - 1] * L + yt, z[t - 1] * L + zt
            dp = ga != za
        if not (du or (dp and not c.tied)):
            continue
        for j in range(c.indptr[g0 + t], c.indptr[g0 + t + 1]):
            v = c.values[j]
            for p in range(c.feat_ptr[c.indices[j]], c.feat_ptr[c.indices[j] + 1]):
                col = c.ent_col[p]
                if du and col == yt:
                    _add(c, p, v)
                elif du and col == zt:
                    _add(c, p, -v)
                elif dp and not c.tied and col == c.edge_col + ga:
                    _add(c, p, v)
                elif dp and not c.tied and col == c.edge_col + za:
                    _add(c, p, -v)
    for t in range(T):
        if y[t] != z[t]:
            _add(c, c.bias_unary + y[t], 1.0)
            _add(c, c.bias_unary + z[t], -1.0)
    if c.has_edge:
        for t in range(1, T):
            ga, za = y[t - 1] * L + y[t], z[t - 1] * L + z[t]
            if ga != za:
                _add(c, c.bias_edge + ga, 1.0)
                _add(c, c.bias_edge + za, -1.0)
    return n_wrong


# ---------------------------------------------------------------------------
# the margin trainers: perceptron, passive-aggressive, AROW
# ---------------------------------------------------------------------------

cdef struct Rule:
    int kind            # PERCEPTRON, PASSIVE_AGGRESSIVE or AROW
    int pa_type         # 0 PA, 1 PA-I, 2 PA-II
    int error_sensitive
    double c            # PA's aggressiveness
    double gamma        # AROW's trade-off
    double* cov         # AROW's variances (n_params)


cdef double _margin_sequence(Chain* c, const Rule* r, double* theta, double* total, double u,
                             Py_ssize_t s, int* updated) noexcept nogil:
    """Decode sequence ``s``; if wrong, update ``theta`` (and ``total``, the sum of
    ``u * step``, and AROW's variances) by the rule; returns its loss."""
    cdef Py_ssize_t g0 = c.seq_ptr[s], T = c.seq_ptr[s + 1] - g0, i, p
    cdef int n_wrong
    cdef double margin, cost, norm2, tau, d, step, sq, alpha
    updated[0] = 0
    if T == 0:
        return 0.0
    _potentials(c, theta, 1.0, g0, T)
    _viterbi(c, T)
    for i in range(T):
        if c.labels[i] != c.gold[g0 + i]:
            break
    else:
        return 0.0
    margin = _gold_score(c, c.labels, T) - _gold_score(c, c.gold + g0, T)
    if not margin > 0.0:
        margin = 0.0
    n_wrong = _difference(c, g0, T)
    updated[0] = 1
    if r.kind == _PERCEPTRON:
        for i in range(c.n_touched):
            p = c.touched[i]
            d = c.acc[p]
            theta[p] += d
            total[p] += u * d
        _clear(c)
        return <double> n_wrong / <double> T
    if r.kind == _PASSIVE_AGGRESSIVE:
        cost = margin + (sqrt(<double> n_wrong) if r.error_sensitive else 1.0)
        norm2 = 0.0
        for i in range(c.n_touched):
            d = c.acc[c.touched[i]]
            norm2 += d * d
        if norm2 != 0.0:
            if r.pa_type == 0:
                tau = cost / norm2
            elif r.pa_type == 1:
                tau = cost / norm2
                if r.c < tau:
                    tau = r.c
            else:
                tau = cost / (norm2 + 0.5 / r.c)
            for i in range(c.n_touched):
                p = c.touched[i]
                step = tau * c.acc[p]
                theta[p] += step
                total[p] += u * step
        _clear(c)
        return cost
    # AROW
    cost = margin + n_wrong
    sq = 0.0
    for i in range(c.n_touched):
        p = c.touched[i]
        d = c.acc[p]
        sq += d * d * r.cov[p]
    alpha = cost / (r.gamma + sq)
    for i in range(c.n_touched):
        p = c.touched[i]
        d = c.acc[p]
        step = alpha * r.cov[p] * d
        theta[p] += step
        total[p] += u * step
        r.cov[p] = 1.0 / (1.0 / r.cov[p] + d * d / r.gamma)
    _clear(c)
    return cost


def margin_epoch(ChainProblem problem, const long long[::1] order, double[::1] theta,
                 double[::1] total, long long u, int rule, int pa_type=1,
                 bint error_sensitive=True, double c=1.0, double gamma=1.0,
                 double[::1] covariance=None):
    """One epoch of a margin trainer over the sequences ``order``, in place.

    ``rule``: :data:`PERCEPTRON` (``theta += delta``), :data:`PASSIVE_AGGRESSIVE`
    (``theta += tau * delta``, ``pa_type``, ``c``, ``error_sensitive``) or
    :data:`AROW` (``gamma``; ``covariance`` the variances, updated); ``delta``
    the gold minus the decoded feature counts (:mod:`skfcrf.solvers._margin`).
    Every update ``step`` also adds ``u * step`` to ``total``, ``u`` counting
    the visits (each sequence visited adds 1).  Returns ``(loss, u)``: the sum
    of the sequences' losses (wrong fraction for the perceptron, the cost for
    the others) and the count after the epoch.
    """
    _check(problem, order, theta)
    if total.shape[0] != problem.n_params:
        raise ValueError("total must have n_params entries")
    if rule == AROW and (covariance is None or covariance.shape[0] != problem.n_params):
        raise ValueError("AROW needs the covariance, n_params entries")
    if rule not in (PERCEPTRON, PASSIVE_AGGRESSIVE, AROW):
        raise ValueError(f"unknown rule {rule!r}")
    cdef Rule r
    r.kind, r.pa_type, r.error_sensitive, r.c, r.gamma = rule, pa_type, error_sensitive, c, gamma
    r.cov = &covariance[0] if rule == AROW else NULL
    cdef Chain* ch = &problem.c
    cdef double loss = 0.0, seq_loss
    cdef Py_ssize_t i, n = order.shape[0]
    cdef int updated
    cdef double* th = &theta[0] if theta.shape[0] else NULL
    cdef double* tot = &total[0] if total.shape[0] else NULL
    with nogil:
        for i in range(n):
            seq_loss = _margin_sequence(ch, &r, th, tot, <double> u, order[i], &updated)
            if updated:
                loss += seq_loss
            u += 1
    return loss, u


# ---------------------------------------------------------------------------
# SGD on the likelihood
# ---------------------------------------------------------------------------

cdef double _sgd_sequence(Chain* c, double* w, double mult, double factor, Py_ssize_t s,
                          int update) noexcept nogil:
    """Sequence ``s``'s negative log-likelihood at ``mult * w``; with ``update``,
    ``w -= factor * gradient`` on the free weights, a weight's terms subtracted one
    by one (Python's path subtracts their sum: the same to rounding)."""
    cdef Py_ssize_t g0 = c.seq_ptr[s], T = c.seq_ptr[s + 1] - g0, t, j, p, k
    cdef Py_ssize_t L = c.L, LL = c.LL, col, edge_col = c.edge_col
    cdef const int* y = c.gold + g0
    cdef double logz, loss, v, x
    cdef double* D
    cdef const double* row
    cdef const long long* indptr = c.indptr
    cdef const long long* feat_ptr = c.feat_ptr
    cdef const int* indices = c.indices
    cdef const int* ent_col = c.ent_col
    cdef const double* values = c.values
    cdef const unsigned char* free = c.free
    if T == 0:
        return 0.0
    _potentials(c, w, mult, g0, T)
    if c.has_edge:
        _exp_transitions(c, T)
    else:
        c.shift[0] = 0.0
        for k in range(LL):
            c.expm[k] = 1.0
            c.expmT[k] = 1.0
    if _marginals_scaled(c, T, &logz):
        _marginals_log(c, T, &logz)
    loss = logz - _gold_score(c, y, T)
    if not update:
        return loss
    # gradients w.r.t. the scores: node - gold, pair marginals - gold counts (0 where -inf)
    for t in range(T):
        c.node[t * L + y[t]] -= 1.0
    if c.tied:
        for t in range(1, T):
            c.dpair[y[t - 1] * L + y[t]] -= 1.0
        for k in range(LL):
            if c.pair[k] == -INFINITY:
                c.dpair[k] = 0.0
    else:
        for t in range(1, T):
            c.dpair[t * LL + y[t - 1] * L + y[t]] -= 1.0
        for k in range(T * LL):
            if c.pair[k] == -INFINITY:
                c.dpair[k] = 0.0
    # w -= factor * gradient, each token's part as it comes (the scores are computed)
    for t in range(T):
        D = c.dpair if c.tied else c.dpair + t * LL       # untied: the token's transitions
        row = c.node + t * L
        for j in range(indptr[g0 + t], indptr[g0 + t + 1]):
            v = factor * values[j]
            for p in range(feat_ptr[indices[j]], feat_ptr[indices[j] + 1]):
                col = ent_col[p]
                if free[p]:
                    w[p] -= v * (row[col] if col < L else D[col - edge_col])
    for k in range(L):
        x = 0.0
        for t in range(T):
            x += c.node[t * L + k]
        if free[c.bias_unary + k]:
            w[c.bias_unary + k] -= factor * x
    if c.has_edge:
        for k in range(LL):
            if c.tied:
                x = c.dpair[k]
            else:
                x = 0.0
                for t in range(T):
                    x += c.dpair[t * LL + k]
            if free[c.bias_edge + k]:
                w[c.bias_edge + k] -= factor * x
    return loss


def sgd_epoch(ChainProblem problem, const long long[::1] order, double[::1] w, double lam,
              double t0, long long t):
    """One epoch of :class:`skfcrf.solvers.SGD` over the sequences ``order``, in place.

    Per sequence, with ``eta = 1 / (lam * (t0 + t))``: ``scale *= 1 - eta * lam``,
    then ``w -= (eta / scale) * gradient`` of the sequence's negative
    log-likelihood at ``scale * w``, and ``t += 1``.  ``scale`` starts at 1;
    the caller multiplies ``w`` by it after the epoch.  Returns ``(loss, t,
    scale)``, ``loss`` the sum of the sequences' losses (no penalty).
    """
    _check(problem, order, w)
    cdef Chain* ch = &problem.c
    cdef double loss = 0.0, scale = 1.0, eta
    cdef Py_ssize_t i, n = order.shape[0]
    cdef double* wp = &w[0] if w.shape[0] else NULL
    with nogil:
        for i in range(n):
            eta = 1.0 / (lam * (t0 + t))
            scale *= 1.0 - eta * lam
            loss += _sgd_sequence(ch, wp, scale, eta / scale, order[i], 1)
            t += 1
    return loss, t, scale


def sequence_losses(ChainProblem problem, const long long[::1] order, const double[::1] w):
    """Sum of the negative log-likelihoods of the sequences ``order`` at ``w``."""
    _check(problem, order, w)
    cdef Chain* ch = &problem.c
    cdef double loss = 0.0
    cdef Py_ssize_t i, n = order.shape[0]
    cdef double* wp = <double*> &w[0] if w.shape[0] else NULL
    with nogil:
        for i in range(n):
            loss += _sgd_sequence(ch, wp, 1.0, 0.0, order[i], 0)
    return loss
