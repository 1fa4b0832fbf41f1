# cython: language_level=3
"""Fused chain-wise (blocked) pseudolikelihood: loss and gradient, one sequence at a time.

The objective is ``sum_s sum_c -log p(y_c | y_{-c}, x)``: each chain's exact
conditional likelihood given the other chains' gold labels.  For chain ``c`` of
a sequence the coupling potentials to the other chains' gold labels are folded
into ``c``'s unaries, and scaled forward-backward over ``c`` alone gives
``log Z_c``, the marginals and the expected transition counts.

Inputs: the model is a :class:`skfcrf._kernels._contract.ParameterTables` (built from
the :class:`~skfcrf.model._layout.ParameterLayout`, which describes ``theta``);
per call ``theta``, the observation rows and the gold labels.

``scores``
    Per token the ``width`` score columns: ``Ltot`` unary columns, then every
    untied edge's ``L_a x L_b`` columns (from the feature table, see
    :mod:`skfcrf._kernels._table`), plus the biases.  With ``chain_on`` (some
    chains' terms alone, over a feature table reduced to their entries) only
    the columns those terms and that table touch are cleared, summed and
    biased (:func:`_score_columns`: the chains' unary columns, the untied edges
    that touch them, the table's and its dense rows' columns): a 7-label chain
    of the dictations' 123 columns no longer pays for the others'.
edge tables (``E`` edge templates, from the tables)
    ``e_kind`` (0 in-chain, 1 coupling), ``e_a``, ``e_b``, ``e_col`` (first
    score column of an untied edge, -1 when tied), ``e_bias`` (offset of its
    ``L_a x L_b`` biases in ``theta``), and its forbidden mask in ``forbid`` at
    ``forbid_offset[e]``.
``tied_log``, ``tied_exp``
    Per chain ``c`` the ``L_c x L_c`` sum ``W_c`` of its *tied* in-chain
    templates (``-inf`` where forbidden; zeros without tied templates) and
    ``exp(W_c - w_c)``, both at ``chain_tied[c]``; ``tied_shift[c] = w_c``
    (:meth:`~skfcrf._kernels._contract.ParameterTables.chain_transitions` of ``theta``).
sparse tied transitions
    A chain whose ``tied_exp`` is mostly zeros (forbidden transitions: at most
    :data:`SPARSE_TRANSITIONS` of its entries nonzero, e.g. 7% for the
    dictations' 72 section labels) has them by row (``sp_row_ptr`` at
    ``sp_ptr_off[c]``, ``sp_col`` / ``sp_val`` at ``sp_off[c]``, row-major order)
    and by column (``sp_col_ptr``, ``sp_row``, ``sp_cval``, column-major order);
    ``sp_on[c]`` says whether it has.  Its forward and backward products and
    transition counts then take the nonzero entries only, each output summed in
    the dense products' order from 0.0 (the skipped terms are +0.0), so the
    results are the same bits, at the cost of the nonzero entries.  Where the
    sequences run in lanes (below) a chain with at most :data:`LANE_TRANSITIONS`
    of its entries nonzero takes this form too: its four passes then run in
    lockstep, which beats four dense passes up to about three quarters nonzero.
``allowed``
    Optional ``(N, Ltot)`` uint8: chain ``c`` may take label ``l`` at token
    ``g`` only where ``allowed[g, off_c + l]`` (restriction to observed joint
    label combinations).
lanes
    Where some chain may run in lockstep (below; :func:`_in_lanes`), the sequences
    of a block go ``SKFCRF_LANES`` (4) at a time, longest first
    (:func:`_lane_order`): each one's score rows, then chain by chain every one's
    term, then each one's score gradient (:func:`_lane_group`); otherwise one at a
    time, in order.  A chain with
    sparse tied transitions runs the four forward-backward passes in lockstep
    (:func:`_chain_terms_lanes`): ``alpha``, ``beta`` and ``psi`` interleaved --
    label ``l`` of lane ``b`` at token ``t`` at ``(t * L + l) * 4 + b``; the backward
    pass overwrites ``psi_t`` with ``w_t`` -- so that
    one pass over the stored transitions moves all four sequences (a sparse
    product of one sequence is a chain of dependent scalar adds).  Each lane's
    sums keep their terms and order, so a lane has the bits of the one-sequence
    pass (:func:`_chain_term`), which the other chains run.
blocks
    The sequences are cut into blocks by the objective kernels' one partition
    (:func:`skfcrf._kernels._contract.sequence_blocks`, here at most
    :data:`CHAINWISE_BLOCKS`, the memory estimate's figure); each block sums its gradient into its own
    row of a ``(n_blocks, n_params)`` accumulator and the rows are added in
    order afterwards, so the result does not depend on the number of threads.

Scaled forward-backward can lose mass with extreme weights: a label reached with
so little mass that its beta would overflow, the gold label with none at all, or
a ``log Z`` below the gold labelling's score (forbidden transitions once let this
drive the loss negative and the weights to 1e3).  Such a chain term is redone in
the log domain (:func:`_chain_term_log`: log-alpha, log-beta, log-sum-exp), exact
for any weights and slower; a term with no allowed labelling at all gets loss
``+inf``, which makes L-BFGS's line search step back.  The threads compute with
subnormal numbers taken as zero (``skfcrf_subnormals_off``, :file:`_simd.h`): a mass
below 2.2e-308 is then zero, and the checks above see it so.
"""
from cython.parallel cimport parallel, prange, threadid
from libc.float cimport DBL_MAX
from libc.math cimport exp, fabs, INFINITY, isfinite, log
from libc.string cimport memset
from scipy.linalg.cython_blas cimport dgemv


import numpy as np

from ._alloc cimport Block, Carver, _take, allocate, carver, take_doubles
from ._common cimport (SKFCRF_LANES, exp_shifted, gemm_tn_acc, longest_sequence, lse,
                       matvec, prefetch_span, skfcrf_lane_clear, skfcrf_lane_counts,
                       skfcrf_lane_normalize, skfcrf_lane_reach, skfcrf_lane_scale,
                       skfcrf_lane_shift, skfcrf_lane_sums, skfcrf_lane_weigh,
                       skfcrf_restore_fp, skfcrf_subnormals_off)
from ._contract cimport ParameterTables, ParameterView
from ._table cimport (CSR, Dense, add_row_biases, add_to_column_sums, as_csr, sequence_gradient,
                      sequence_scores, triple_or_empty)

from ._contract import DENSE_LENGTHS, block_accumulators, sequence_blocks, summed_rows

#: Most blocks of sequences (gradient accumulators, see
#: :func:`skfcrf._kernels._contract.sequence_blocks`).
CHAINWISE_BLOCKS = 8

#: A chain's tied transitions are multiplied as a sparse matrix when at most this
#: fraction of them is nonzero: the dense products stream about five entries per
#: cycle in vector registers, the sparse ones about one (module docstring).
SPARSE_TRANSITIONS = 0.15

#: Where the sequences run in lanes (:func:`_in_lanes`), a chain's tied transitions
#: take the sparse form -- and its forward-backward the lockstep passes
#: (:func:`_chain_terms_lanes`) -- when at most this fraction of them is nonzero: one
#: pass over the stored entries then moves four sequences, and the elementwise steps
#: are vector operations across them.  The first-stage evaluation against the dense
#: form of every chain above :data:`SPARSE_TRANSITIONS` (2026-12-03, 2 threads,
#: medians of 8 alternating pairs): CoNLL-2000 POS + chunks, 2,000 sentences, 45% /
#: 31% nonzero x1.20, 62% / 52% x1.11, 78% / 74% x0.95-1.01, 100% x0.94; the
#: dictations' seven-label sentence chain (49%) beside its sparse chains, x1.05 on
#: 200 reports and x1.08-1.14 on 1,338.  The two forms give the same bits.
LANE_TRANSITIONS = 0.5


#: Tokens ahead that the lockstep chain term prefetches each lane's score and score
#: gradient rows: the four lanes' rows (``T x width`` each) do not stay in a core's
#: L2 cache between the score pass and the chains' passes, and read there a few
#: hundred bytes of each row they were stalling on (perf, seed scale).
cdef enum:
    LANE_AHEAD = 8


cdef struct Model:
    ParameterView p                 # the model (sizes, per chain, per edge, feature table)
    # per chain: the tied transitions at theta (see ParameterTables.chain_transitions)
    const double* tied_shift
    const double* tied_log
    const double* tied_exp
    const double* tied_expT         # tied_exp's blocks transposed (the backward products)
    const double* theta
    # data
    const int* gold
    const unsigned char* allowed
    int has_allowed
    const unsigned char* chain_on   # NULL, or per chain whether its term is computed
    int couplings_on                # 0: the couplings are left out (their weights zero)
    Dense dense                     # the feature table's dense rows at theta (has_dense)
    int has_dense
    # the score columns an evaluation touches (module docstring), n_ranges pairs lo, hi,
    # and per score column the offset of its bias in theta
    const int* ranges
    int n_ranges
    int whole                       # the ranges are every column
    const long long* col_bias
    const double* bias              # per score column its bias, theta[col_bias]
    # per chain its tied transitions as sparse matrices, where sp_on[c] (module docstring)
    const unsigned char* sp_on
    const int* sp_ptr_off
    const long long* sp_off
    const long long* sp_row_ptr
    const int* sp_col
    const double* sp_val
    const long long* sp_col_ptr
    const int* sp_row
    const double* sp_cval


cdef struct Scratch:
    double* scores      # T x width
    double* dscore      # T x width
    double* acc         # width
    double* u           # T x L   folded unary scores
    double* psi         # T x L   exp(u - m_t)
    double* alpha       # T x L
    double* beta        # T x L
    double* norm        # T       normalisers c_t
    double* tmp         # L
    double* w           # T x L   psi_t * beta_t / c_t
    double* trans       # L x L   untied: this token's exp-shifted transition matrix
    double* trans_log   # L x L   untied: this token's transition scores
    double* counts      # L x L   tied: sum_t alpha_{t-1} (x) w_t


cdef struct Lanes:
    # the forward-backward of SKFCRF_LANES sequences in lockstep (_chain_terms_lanes):
    # label l of lane b at token t is at (t * L + l) * SKFCRF_LANES + b
    double* u           # L x lanes       one token's folded unary scores
    double* psi         # T x L x lanes   exp(u - m_t), zero where unreachable
    double* alpha       # T x L x lanes
    double* beta        # T x L x lanes
    # w: T x L x lanes, psi_t * beta_t / c_t, in psi's rows (the backward pass
    # overwrites them token by token; psi_t is not read after w_t)
    double* w
    double* tmp         # L x lanes   a product's result
    double* counts      # L*L x lanes per stored transition (CSR order)


cdef Lanes _carve_lanes(Carver* c, Py_ssize_t T, Py_ssize_t L) noexcept nogil:
    """One thread's lockstep buffers, taken from ``c`` after its lanes' scratch."""
    cdef Lanes q
    q.u = take_doubles(c, L * SKFCRF_LANES)
    q.psi = take_doubles(c, T * L * SKFCRF_LANES)
    q.alpha = take_doubles(c, T * L * SKFCRF_LANES)
    q.beta = take_doubles(c, T * L * SKFCRF_LANES)
    q.w = q.psi         # one table less in the thread's working set
    q.tmp = take_doubles(c, L * SKFCRF_LANES)
    q.counts = take_doubles(c, L * L * SKFCRF_LANES)
    return q


cdef Scratch _carve_scratch(Carver* c, Py_ssize_t T, Py_ssize_t width,
                            Py_ssize_t L) noexcept nogil:
    """One thread's buffers, taken one after another from ``c``."""
    cdef Scratch s
    s.scores = take_doubles(c, T * width)
    s.dscore = take_doubles(c, T * width + 32)     # the dense rows read 32 columns
    s.acc = take_doubles(c, width)
    s.u = take_doubles(c, T * L)
    s.psi = take_doubles(c, T * L)
    s.alpha = take_doubles(c, T * L)
    s.beta = take_doubles(c, T * L)
    s.w = take_doubles(c, T * L)
    s.norm = take_doubles(c, T)
    s.tmp = take_doubles(c, L)
    s.trans = take_doubles(c, L * L)
    s.trans_log = take_doubles(c, L * L)
    s.counts = take_doubles(c, L * L)
    return s


cdef Scratch* _carve_thread(Carver* c, Py_ssize_t T, Py_ssize_t width,
                            Py_ssize_t L) noexcept nogil:
    """One thread's scratch: a :c:type:`Scratch` per lane (the structs, then their
    buffers), from ``c``; its :c:type:`Lanes` follow (:func:`_carve_lanes`)."""
    cdef Scratch* s = <Scratch*> _take(c, SKFCRF_LANES, sizeof(Scratch))
    cdef Scratch one
    cdef Py_ssize_t b
    for b in range(SKFCRF_LANES):
        one = _carve_scratch(c, T, width, L)
        if s != NULL:
            s[b] = one
    return s


def _in_lanes(ParameterTables tables, tied_exp, chain_on):
    """Whether the sequences go four at a time (module docstring): where some chain
    evaluated has tied transitions and a zero among them (forbidden), the kind of
    chain that may be multiplied sparse and then runs in lockstep.  Decided from
    the model, not from :data:`SPARSE_TRANSITIONS`, so that a chain's sparse and
    dense forms sum the sequences in the same order (the same bits); one at a
    time, in order, the observation rows are read in sequence (a one-chain model
    of short sentences, CoNLL-2000 chunking, is 6% slower four at a time)."""
    untied_ptr = np.asarray(tables.chain_untied_ptr)
    for ch in range(tables.n_chains):
        if (untied_ptr[ch + 1] > untied_ptr[ch]
                or (chain_on is not None and not chain_on[ch])):
            continue
        o, nl = tables.chain_tied[ch], tables.n_labels[ch]
        if np.any(np.asarray(tied_exp[o:o + nl * nl]) == 0.0):
            return True
    return False


def _lane_order(const long long[::1] seq_ptr, blocks):
    """The sequences of each block (``blocks``: sequence offsets) longest first, in
    their order where equal: the kernel takes them ``SKFCRF_LANES`` at a time, and
    sequences of similar lengths keep the lanes busy."""
    lengths = np.diff(np.asarray(seq_ptr))
    blocks = np.asarray(blocks)
    order = np.empty(len(lengths), np.int64)
    for lo, hi in zip(blocks[:-1], blocks[1:]):
        order[lo:hi] = lo + np.argsort(-lengths[lo:hi], kind="stable")
    return order


cdef inline double _edge_score(const Model* m, const double* row, Py_ssize_t e,
                               Py_ssize_t k) noexcept nogil:
    """Score of assignment ``k`` of edge ``e`` at a token whose score row is ``row``."""
    if m.p.forbid[m.p.forbid_offset[e] + k]:
        return -INFINITY
    if m.p.e_col[e] >= 0:
        return row[m.p.e_col[e] + k]
    return m.theta[m.p.bias_edge[e] + k]


cdef inline int _coupling_slot(const Model* m, Py_ssize_t c, Py_ssize_t e, Py_ssize_t g,
                               Py_ssize_t* stride, Py_ssize_t* base) noexcept nogil:
    """Whether coupling ``e`` touches chain ``c`` (and the couplings are on); then chain
    c's label ``l`` with the other chain's gold label at token ``g`` is assignment
    ``l * stride + base``."""
    if m.p.e_kind[e] != 1 or not m.couplings_on:
        return 0
    if m.p.e_a[e] == c:
        stride[0], base[0] = m.p.n_labels[m.p.e_b[e]], m.gold[g * m.p.n_chains + m.p.e_b[e]]
        return 1
    if m.p.e_b[e] == c:
        stride[0], base[0] = 1, m.gold[g * m.p.n_chains + m.p.e_a[e]] * m.p.n_labels[c]
        return 1
    return 0


cdef inline void _fold_uncoupled(const Model* m, Py_ssize_t c, Py_ssize_t g,
                                 const double* row, double* u,
                                 Py_ssize_t stride) noexcept nogil:
    """:func:`_fold_unaries` of one token ``g`` without the couplings (all of it for a
    chain no coupling touches, :func:`_chain_coupled`): label ``l``'s score column of
    ``row``, ``-inf`` where not allowed, into ``u[l * stride]``."""
    cdef Py_ssize_t L = m.p.n_labels[c], off = m.p.label_offset[c], l
    for l in range(L):
        u[l * stride] = row[off + l]
    if m.has_allowed:
        for l in range(L):
            if not m.allowed[g * m.p.ltot + off + l]:
                u[l * stride] = -INFINITY


cdef void _fold_unaries(const Model* m, Scratch* s, Py_ssize_t c, Py_ssize_t g0,
                        Py_ssize_t T) noexcept nogil:
    """u[t, l]: chain c's unary plus its couplings to the other chains' gold labels
    (``-inf`` where not allowed: the couplings' scores, never ``+inf``, keep it)."""
    cdef Py_ssize_t L = m.p.n_labels[c]
    cdef Py_ssize_t t, l, e, stride, base
    cdef const double* row
    cdef double* u
    for t in range(T):
        row = s.scores + t * m.p.width
        u = s.u + t * L
        _fold_uncoupled(m, c, g0 + t, row, u, 1)
        for e in range(m.p.n_edges):
            if _coupling_slot(m, c, e, g0 + t, &stride, &base):
                for l in range(L):
                    u[l] += _edge_score(m, row, e, l * stride + base)


cdef int _chain_coupled(const Model* m, Py_ssize_t c) noexcept nogil:
    """Whether a coupling touches chain ``c`` (and the couplings are on): then its
    unaries are folded with the other chains' gold labels (:func:`_fold_unaries`)."""
    cdef Py_ssize_t e
    if not m.couplings_on:
        return 0
    for e in range(m.p.n_edges):
        if m.p.e_kind[e] == 1 and (m.p.e_a[e] == c or m.p.e_b[e] == c):
            return 1
    return 0


cdef double _untied_transition(const Model* m, Scratch* s, Py_ssize_t c,
                               Py_ssize_t t) noexcept nogil:
    """Token t's transition scores of chain c into trans_log, exp-shifted into trans; the shift."""
    cdef Py_ssize_t L = m.p.n_labels[c], k, q, e
    cdef const double* row = s.scores + t * m.p.width
    cdef const double* tied = m.tied_log + m.p.chain_tied[c]
    cdef double mx = -INFINITY, v
    for k in range(L * L):
        v = tied[k]
        for q in range(m.p.chain_untied_ptr[c], m.p.chain_untied_ptr[c + 1]):
            e = m.p.chain_untied[q]
            v = v + _edge_score(m, row, e, k)
        s.trans_log[k] = v
        if v > mx:
            mx = v
    if not isfinite(mx):
        mx = 0.0
    for k in range(L * L):
        s.trans[k] = exp(s.trans_log[k] - mx)
    return mx


cdef void _add_token_gradient(const Model* m, Scratch* s, Py_ssize_t c, Py_ssize_t g0,
                              Py_ssize_t t, double* grad) noexcept nogil:
    """Token ``t``'s unary and coupling gradients of chain ``c``, from its label marginals in
    ``s.tmp`` (turned into marginal minus gold in place)."""
    cdef Py_ssize_t L = m.p.n_labels[c], off = m.p.label_offset[c], l, e, stride, base
    cdef double* drow = s.dscore + t * m.p.width
    s.tmp[m.gold[(g0 + t) * m.p.n_chains + c]] -= 1.0
    for l in range(L):
        drow[off + l] += s.tmp[l]
    for e in range(m.p.n_edges):
        if _coupling_slot(m, c, e, g0 + t, &stride, &base):
            for l in range(L):
                _add_edge_grad(m, drow, e, l * stride + base, s.tmp[l], grad)


cdef inline double _prob(double log_p) noexcept nogil:
    """``exp(log_p)`` capped at 1: with scores of huge magnitude the sums of log-alpha,
    log-beta and ``-log Z`` round to above 0 (a probability above 1, or inf)."""
    if log_p >= 0.0:
        return 1.0
    return exp(log_p)


cdef double _chain_term_log(const Model* m, Scratch* s, Py_ssize_t c, Py_ssize_t g0,
                            Py_ssize_t T, double* grad) noexcept nogil:
    """:func:`_chain_term` in the log domain (``s.u`` already folded): log-alpha and
    log-beta in ``s.alpha`` / ``s.beta``, every sum a log-sum-exp, so no labelling's
    mass is lost however far apart the scores are.  Slower (``L^2`` exponentials per
    token); run only for the sequences whose scaled pass lost mass."""
    cdef Py_ssize_t L = m.p.n_labels[c], C = m.p.n_chains
    cdef int untied = m.p.chain_untied_ptr[c + 1] > m.p.chain_untied_ptr[c]
    cdef const double* W = m.tied_log + m.p.chain_tied[c]
    cdef Py_ssize_t t, l, lp, k, e, q, y, yp
    cdef double log_z, gold_score = 0.0
    cdef double* la = s.alpha
    cdef double* lb = s.beta
    cdef double* drow
    for t in range(T):
        gold_score += s.u[t * L + m.gold[(g0 + t) * C + c]]
    for l in range(L):
        la[l] = s.u[l]
    for t in range(1, T):
        if untied:
            _untied_transition(m, s, c, t)
            W = s.trans_log
        for l in range(L):
            for lp in range(L):
                s.tmp[lp] = la[(t - 1) * L + lp] + W[lp * L + l]
            la[t * L + l] = s.u[t * L + l] + lse(s.tmp, L)
        y, yp = m.gold[(g0 + t) * C + c], m.gold[(g0 + t - 1) * C + c]
        gold_score += W[yp * L + y]
    log_z = lse(la + (T - 1) * L, L)
    if not isfinite(log_z) or not isfinite(gold_score):
        return INFINITY
    for l in range(L):
        lb[(T - 1) * L + l] = 0.0
    if not untied:
        for k in range(L * L):
            s.counts[k] = 0.0
    t = T - 1
    while t >= 1:
        if untied:
            _untied_transition(m, s, c, t)
            W = s.trans_log
        for lp in range(L):
            for l in range(L):
                s.tmp[l] = W[lp * L + l] + s.u[t * L + l] + lb[t * L + l]
            lb[(t - 1) * L + lp] = lse(s.tmp, L)
        y, yp = m.gold[(g0 + t) * C + c], m.gold[(g0 + t - 1) * C + c]
        if untied:
            drow = s.dscore + t * m.p.width
            for lp in range(L):
                for l in range(L):
                    s.counts[lp * L + l] = _prob(la[(t - 1) * L + lp] + W[lp * L + l]
                                                 + s.u[t * L + l] + lb[t * L + l] - log_z)
            for q in range(m.p.chain_untied_ptr[c], m.p.chain_untied_ptr[c + 1]):
                e = m.p.chain_untied[q]
                for k in range(L * L):
                    drow[m.p.e_col[e] + k] += s.counts[k]
                drow[m.p.e_col[e] + yp * L + y] -= 1.0
            _add_tied_transition(m, c, s.counts, yp * L + y, grad)
        else:
            for lp in range(L):
                for l in range(L):
                    s.counts[lp * L + l] += _prob(la[(t - 1) * L + lp] + W[lp * L + l]
                                                  + s.u[t * L + l] + lb[t * L + l] - log_z)
            _add_tied_gold(m, c, yp * L + y, grad)
        t = t - 1
    if not untied:
        _add_tied_expected(m, c, s.counts, grad)
    for t in range(T):
        for l in range(L):
            s.tmp[l] = _prob(la[t * L + l] + lb[t * L + l] - log_z)
        _add_token_gradient(m, s, c, g0, t, grad)
    return log_z - gold_score


cdef double _chain_term(const Model* m, Scratch* s, Py_ssize_t c, Py_ssize_t g0, Py_ssize_t T,
                        double* grad) noexcept nogil:
    """-log p(y_c | y_-c, x) of one sequence; adds its score and tied-weight gradients."""
    cdef Py_ssize_t L = m.p.n_labels[c], C = m.p.n_chains
    cdef int untied = m.p.chain_untied_ptr[c + 1] > m.p.chain_untied_ptr[c]
    cdef int sparse = not untied and m.sp_on[c]
    cdef const double* E = m.tied_exp + m.p.chain_tied[c]
    cdef const double* ET = m.tied_expT + m.p.chain_tied[c]
    cdef Py_ssize_t t, l, lp, k, e, q, y, yp
    cdef double mx, total, log_z = 0.0, gold_score = 0.0, shift, a
    cdef int lost = 0
    cdef double* u
    cdef double* drow
    _fold_unaries(m, s, c, g0, T)
    # the gold path's unary score
    for t in range(T):
        gold_score += s.u[t * L + m.gold[(g0 + t) * C + c]]
    # forward: at each token the incoming mass (1 at the first), then the scores
    # shifted by the best *reachable* label's, so that the token's total cannot
    # underflow however far apart the scores are (forbidden transitions)
    for t in range(T):
        u = s.u + t * L
        if t == 0:
            for l in range(L):
                s.tmp[l] = 1.0
        else:
            if untied:
                shift = _untied_transition(m, s, c, t)
                E = s.trans
            else:
                shift = m.tied_shift[c]
            if sparse:
                _sparse_products(m.sp_col_ptr + m.sp_ptr_off[c], m.sp_row + m.sp_off[c],
                                 m.sp_cval + m.sp_off[c], s.alpha + (t - 1) * L, L, s.tmp)
            else:
                matvec(s.alpha + (t - 1) * L, <int> L, E, <int> L, s.tmp, 0)
            log_z += shift
            y, yp = m.gold[(g0 + t) * C + c], m.gold[(g0 + t - 1) * C + c]
            gold_score += (s.trans_log[yp * L + y] if untied
                           else m.tied_log[m.p.chain_tied[c] + yp * L + y])
        mx = -INFINITY
        for l in range(L):
            if s.tmp[l] * DBL_MAX < 4.0 * L:
                # the backward pass's w_t[l] = psi beta / c_t is at most 1 / (this
                # incoming mass) and beta_{t-1} sums L of them: a label reached with
                # less could overflow there (inf * 0 = NaN gradients).  Its mass is
                # below 1e-300 of the token's: it is dropped, as an underflowing psi
                # is (a gold label's loss is caught below)
                s.tmp[l] = 0.0
            elif u[l] > mx:
                mx = u[l]
        if mx == -INFINITY:
            return _chain_term_log(m, s, c, g0, T, grad)
        total = 0.0
        exp_shifted(u, mx, s.psi + t * L, L)    # vectorised (_simd.h)
        for l in range(L):
            if s.tmp[l] > 0.0:
                s.tmp[l] *= s.psi[t * L + l]
                total += s.tmp[l]
            else:
                s.psi[t * L + l] = 0.0          # unreachable: no mass either way
        if not (total > 1e-200) or not isfinite(total):
            # (a tiny normaliser would overflow 1 / c_t in the backward pass)
            return _chain_term_log(m, s, c, g0, T, grad)
        s.norm[t] = total
        log_z += mx + log(total)
        for l in range(L):
            s.alpha[t * L + l] = s.tmp[l] / total
        if not s.alpha[t * L + m.gold[(g0 + t) * C + c]] > 0.0:
            lost = 1                            # the gold path's mass underflowed here
    if lost or log_z < gold_score - 1e-9 * max(1.0, fabs(gold_score)):
        # the scaled pass lost mass that matters (log Z would leave out the very
        # labelling it is compared with): redo the term in the log domain
        return _chain_term_log(m, s, c, g0, T, grad)
    # backward, marginals, transition gradients
    for l in range(L):
        s.beta[(T - 1) * L + l] = 1.0
    if not untied:
        for k in range(L * L):
            s.counts[k] = 0.0
    t = T - 1
    while t >= 1:
        if untied:
            _untied_transition(m, s, c, t)
            E = s.trans
        _weights(s.psi + t * L, s.beta + t * L, 1.0 / s.norm[t], L, s.w + t * L)
        if untied:
            _mat_vec(E, s.w + t * L, L, s.beta + (t - 1) * L)
        elif sparse:
            _sparse_products(m.sp_row_ptr + m.sp_ptr_off[c], m.sp_col + m.sp_off[c],
                             m.sp_val + m.sp_off[c], s.w + t * L, L, s.beta + (t - 1) * L)
        else:
            matvec(s.w + t * L, <int> L, ET, <int> L, s.beta + (t - 1) * L, 0)
        for l in range(L):
            # a label the forward pass never reached has no marginal; its beta could
            # overflow (it is scaled by the reachable labels' normalisers) and make 0 * inf
            if s.alpha[(t - 1) * L + l] == 0.0:
                s.beta[(t - 1) * L + l] = 0.0
        y, yp = m.gold[(g0 + t) * C + c], m.gold[(g0 + t - 1) * C + c]
        if untied:
            # per-position pair marginals into every untied in-chain template's columns
            drow = s.dscore + t * m.p.width
            for q in range(m.p.chain_untied_ptr[c], m.p.chain_untied_ptr[c + 1]):
                e = m.p.chain_untied[q]
                for lp in range(L):
                    a = s.alpha[(t - 1) * L + lp]
                    for l in range(L):
                        drow[m.p.e_col[e] + lp * L + l] += a * E[lp * L + l] * s.w[t * L + l]
                drow[m.p.e_col[e] + yp * L + y] -= 1.0
            # the tied templates' share: sum over positions
            for lp in range(L):
                a = s.alpha[(t - 1) * L + lp]
                for l in range(L):
                    s.counts[lp * L + l] = a * E[lp * L + l] * s.w[t * L + l]
            _add_tied_transition(m, c, s.counts, yp * L + y, grad)
        else:
            _add_tied_gold(m, c, yp * L + y, grad)
        t = t - 1
    if not untied:
        if T > 1 and sparse:
            _sparse_counts(m, c, s.alpha, s.w, T, L, s.counts)
        elif T > 1:
            gemm_tn_acc(s.alpha, s.w + L, T - 1, <int> L, <int> L, s.counts)
        for k in range(L * L):
            s.counts[k] *= E[k]
        _add_tied_expected(m, c, s.counts, grad)
    # unary and coupling gradients
    for t in range(T):
        for l in range(L):
            s.tmp[l] = s.alpha[t * L + l] * s.beta[t * L + l]
        _add_token_gradient(m, s, c, g0, t, grad)
    return log_z - gold_score


cdef void _chain_terms_lanes(const Model* m, Scratch* s, const Lanes* q, Py_ssize_t c,
                             const Py_ssize_t* g0, const Py_ssize_t* T, const int* live,
                             double* part, double* grad) noexcept nogil:
    """:func:`_chain_term` of chain ``c`` (tied transitions, sparse) for a group of
    ``SKFCRF_LANES`` sequences at once: lane ``b`` is the sequence of ``T[b]`` tokens
    from ``g0[b]`` with its scratch ``s[b]``, left out where ``live[b]`` is 0; its
    term into ``part[b]``.  The forward and backward passes run in lockstep over
    ``q``'s interleaved rows: one sparse product (``skfcrf_lane_sums``) moves every
    lane, reading each stored transition once, the elementwise steps are vector
    operations across the lanes (``skfcrf_lane_*``), and the transition counts are
    summed for all lanes at once (``skfcrf_lane_counts``).  Every lane's arithmetic
    is :func:`_chain_term`'s, in its order (each product summed over the stored
    transitions in order from 0.0, each count over the tokens in ascending order; a
    lane past its end adds +0.0 terms), so its term and gradient have its bits; the
    gradients are added lane after lane, and a lane whose scaled pass lost mass is
    redone alone in the log domain (:func:`_chain_term_log`) in its turn."""
    cdef Py_ssize_t L = m.p.n_labels[c], C = m.p.n_chains, nl = SKFCRF_LANES
    cdef Py_ssize_t row = L * nl
    cdef const double* E = m.tied_exp + m.p.chain_tied[c]
    cdef const double* W = m.tied_log + m.p.chain_tied[c]
    cdef const long long* col_ptr = m.sp_col_ptr + m.sp_ptr_off[c]
    cdef const long long* row_ptr = m.sp_row_ptr + m.sp_ptr_off[c]
    cdef const int* by_col = m.sp_row + m.sp_off[c]
    cdef const int* by_row = m.sp_col + m.sp_off[c]
    cdef Py_ssize_t t, l, i, k, b, y, yp, T_max = 0
    cdef int run[SKFCRF_LANES]          # the lane's scaled pass is on (not lost)
    cdef int lost[SKFCRF_LANES]
    cdef long long on[SKFCRF_LANES]     # -1: the lane runs at this token, 0: it does not
    cdef double log_z[SKFCRF_LANES]
    cdef double gold_score[SKFCRF_LANES]
    cdef double mx[SKFCRF_LANES]
    cdef double total[SKFCRF_LANES]
    cdef double scale[SKFCRF_LANES]
    cdef double shift = m.tied_shift[c]
    cdef int coupled = _chain_coupled(m, c)
    cdef double a
    cdef double* drow
    cdef double* counts
    cdef double* marg
    cdef double* ut
    cdef double* pt
    cdef double* at
    cdef double* alpha = q.alpha
    cdef double* beta = q.beta
    cdef double* w = q.w
    cdef double* tmp = q.tmp
    for b in range(nl):
        run[b], lost[b], log_z[b], gold_score[b] = live[b], 0, 0.0, 0.0
        if not live[b]:
            continue
        if T[b] > T_max:
            T_max = T[b]
        if coupled:
            _fold_unaries(m, &s[b], c, g0[b], T[b])
            for t in range(T[b]):
                gold_score[b] += s[b].u[t * L + m.gold[(g0[b] + t) * C + c]]
    # forward (_chain_term's steps, each over every lane at once)
    for t in range(T_max):
        # the token's folded unaries interleaved (0.0 where a lane has no token), in a
        # row of their own; a chain without couplings takes its score columns as they
        # are, straight from the score rows (and the gold path's unary score with them)
        ut, pt, at = q.u, q.psi + t * row, alpha + t * row
        for b in range(nl):
            if live[b] and t + LANE_AHEAD < T[b] and not coupled:
                prefetch_span(s[b].scores + (t + LANE_AHEAD) * m.p.width
                              + m.p.label_offset[c], L, 0)
                # and the token's gold labels and allowed labels (further streams, one
                # per lane, that the hardware's prefetchers did not keep up with)
                prefetch_span(<const double*> (m.gold + (g0[b] + t + LANE_AHEAD) * C), 1, 0)
                if m.has_allowed:
                    prefetch_span(<const double*> (m.allowed + (g0[b] + t + LANE_AHEAD)
                                                   * m.p.ltot + m.p.label_offset[c]),
                                  (L + 7) // 8, 0)
            if live[b] and t < T[b] and coupled:
                for l in range(L):
                    ut[l * nl + b] = s[b].u[t * L + l]
            elif live[b] and t < T[b]:
                _fold_uncoupled(m, c, g0[b] + t, s[b].scores + t * m.p.width, ut + b, nl)
                gold_score[b] += ut[m.gold[(g0[b] + t) * C + c] * nl + b]
            else:
                for l in range(L):
                    ut[l * nl + b] = 0.0
        if t == 0:
            for k in range(row):
                tmp[k] = 1.0
        else:
            skfcrf_lane_sums(col_ptr, by_col, m.sp_cval + m.sp_off[c], L,
                             alpha + (t - 1) * row, tmp)
        for b in range(nl):
            mx[b], total[b] = -INFINITY, 0.0
        skfcrf_lane_reach(L, 4.0 * L, ut, tmp, mx)
        skfcrf_lane_shift(L, ut, mx, pt)
        exp_shifted(pt, 0.0, pt, <int> row)
        skfcrf_lane_weigh(L, tmp, pt, total)
        for b in range(nl):
            on[b], scale[b] = 0, 1.0
            if not run[b] or t >= T[b]:
                continue
            if t > 0:
                log_z[b] += shift
            if mx[b] == -INFINITY or not (total[b] > 1e-200) or not isfinite(total[b]):
                run[b] = 0                      # to the log domain
                continue
            s[b].norm[t] = total[b]
            log_z[b] += mx[b] + log(total[b])
            on[b], scale[b] = -1, total[b]
        # alpha = tmp / total in the running lanes, zero (alpha and psi) in the others
        skfcrf_lane_normalize(L, tmp, pt, scale, on, 0.0, at, pt)
        for b in range(nl):
            if on[b] and not at[m.gold[(g0[b] + t) * C + c] * nl + b] > 0.0:
                lost[b] = 1                     # the gold path's mass underflowed here
    # the gold path's transition scores, after its unary scores (_chain_term's order)
    for b in range(nl):
        for t in range(1, T[b] if live[b] else 0):
            y, yp = m.gold[(g0[b] + t) * C + c], m.gold[(g0[b] + t - 1) * C + c]
            gold_score[b] += W[yp * L + y]
    for b in range(nl):
        if run[b] and (lost[b] or log_z[b] < gold_score[b] - 1e-9 * max(1.0, fabs(gold_score[b]))):
            run[b] = 0
    # backward: a lane's last token's beta is 1, then beta_{t-1} = E w_t
    t = T_max - 1
    while t >= 1:
        for b in range(nl):
            on[b], scale[b] = 0, 1.0
            if run[b] and t < T[b]:
                on[b], scale[b] = -1, 1.0 / s[b].norm[t]
                if t == T[b] - 1:
                    for l in range(L):
                        beta[t * row + l * nl + b] = 1.0
        skfcrf_lane_scale(L, q.psi + t * row, beta + t * row, scale, on, 1, w + t * row)
        skfcrf_lane_sums(row_ptr, by_row, m.sp_val + m.sp_off[c], L, w + t * row,
                         beta + (t - 1) * row)
        skfcrf_lane_clear(row, alpha + (t - 1) * row, beta + (t - 1) * row)
        t = t - 1
    for b in range(nl):
        if run[b] and T[b] == 1:
            for l in range(L):
                beta[l * nl + b] = 1.0
    for k in range(row_ptr[L] * nl):
        q.counts[k] = 0.0
    if T_max > 1:
        skfcrf_lane_counts(row_ptr, by_row, L, alpha, w, T_max, q.counts)
    # the marginals alpha * beta, each lane's into its own rows (s[b].alpha); without
    # couplings, each token's marginals minus the gold label's indicator go straight
    # into the lane's own score gradient rows (_add_token_gradient's sums: no other
    # lane touches them, so the order of the lanes does not matter)
    for t in range(T_max):
        for b in range(nl):
            if run[b] and t < T[b] and coupled:
                marg = s[b].alpha + t * L
                for l in range(L):
                    marg[l] = alpha[t * row + l * nl + b] * beta[t * row + l * nl + b]
            elif run[b] and t < T[b]:
                if t + LANE_AHEAD < T[b]:
                    prefetch_span(s[b].dscore + (t + LANE_AHEAD) * m.p.width
                                  + m.p.label_offset[c], L, 1)
                drow = s[b].dscore + t * m.p.width + m.p.label_offset[c]
                y = m.gold[(g0[b] + t) * C + c]
                for l in range(L):
                    a = alpha[t * row + l * nl + b] * beta[t * row + l * nl + b]
                    if l == y:
                        a = a - 1.0
                    drow[l] += a
    # each lane's gradient, in _chain_term's order
    for b in range(nl):
        if not live[b]:
            continue
        if not run[b]:
            if not coupled:
                _fold_unaries(m, &s[b], c, g0[b], T[b])
            part[b] = _chain_term_log(m, &s[b], c, g0[b], T[b], grad)
            continue
        t = T[b] - 1
        while t >= 1:
            y, yp = m.gold[(g0[b] + t) * C + c], m.gold[(g0[b] + t - 1) * C + c]
            _add_tied_gold(m, c, yp * L + y, grad)
            t = t - 1
        counts = s[b].counts
        for k in range(L * L):
            counts[k] = 0.0
        if T[b] > 1:
            for i in range(L):
                for k in range(row_ptr[i], row_ptr[i + 1]):
                    counts[i * L + by_row[k]] = q.counts[k * nl + b]
        for k in range(L * L):
            counts[k] *= E[k]
        _add_tied_expected(m, c, counts, grad)
        for t in range(T[b] if coupled else 0):
            for l in range(L):
                s[b].tmp[l] = s[b].alpha[t * L + l]
            _add_token_gradient(m, &s[b], c, g0[b], t, grad)
        part[b] = log_z[b] - gold_score[b]


cdef inline void _sparse_products(const long long* ptr, const int* index, const double* val,
                                  const double* x, Py_ssize_t L, double* out) noexcept nogil:
    """``out[q] = sum_p x[index[p]] * val[p]`` over ``p`` in ``ptr[q] .. ptr[q + 1]``: by
    column, ``x`` times the matrix; by row, the matrix times ``x``."""
    cdef Py_ssize_t q, p
    cdef double acc
    for q in range(L):
        acc = 0.0
        for p in range(ptr[q], ptr[q + 1]):
            acc = acc + x[index[p]] * val[p]
        out[q] = acc


cdef void _sparse_counts(const Model* m, Py_ssize_t c, const double* alpha, const double* w,
                         Py_ssize_t T, Py_ssize_t L, double* counts) noexcept nogil:
    """``counts[i, j] += sum_t alpha[t-1, i] * w[t, j]`` (t = 1 .. T-1) at chain c's
    nonzero transitions only, summed over t in ascending order.  Four tokens per pass
    over the transitions: each count is read and written once for the four terms (one
    at a time, every count and index was loaded and the count stored at every token),
    which are added in the same order."""
    cdef const long long* row_ptr = m.sp_row_ptr + m.sp_ptr_off[c]
    cdef const int* col = m.sp_col + m.sp_off[c]
    cdef Py_ssize_t t = 1, i, p, j
    cdef double a0, a1, a2, a3, v
    cdef const double* at
    cdef const double* wt
    while t + 3 < T:
        at = alpha + (t - 1) * L
        wt = w + t * L
        for i in range(L):
            a0, a1, a2, a3 = at[i], at[L + i], at[2 * L + i], at[3 * L + i]
            for p in range(row_ptr[i], row_ptr[i + 1]):
                j = col[p]
                v = counts[i * L + j]
                v = v + a0 * wt[j]
                v = v + a1 * wt[L + j]
                v = v + a2 * wt[2 * L + j]
                v = v + a3 * wt[3 * L + j]
                counts[i * L + j] = v
        t = t + 4
    while t < T:
        at = alpha + (t - 1) * L
        wt = w + t * L
        for i in range(L):
            a0 = at[i]
            for p in range(row_ptr[i], row_ptr[i + 1]):
                counts[i * L + col[p]] += a0 * wt[col[p]]
        t = t + 1


cdef inline void _mat_vec(const double* M, double* x, Py_ssize_t L,
                          double* out) noexcept nogil:
    """``out = M x`` for a row-major ``L x L`` matrix (BLAS dgemv)."""
    cdef char trans = b"T"
    cdef int n = <int> L, one = 1
    cdef double alpha = 1.0, beta = 0.0
    dgemv(&trans, &n, &n, &alpha, <double*> M, &n, x, &one, &beta, out, &one)


cdef inline void _weights(const double* psi, const double* beta, double inv_norm,
                          Py_ssize_t L, double* w) noexcept nogil:
    cdef Py_ssize_t j
    for j in range(L):
        w[j] = psi[j] * beta[j] * inv_norm


cdef inline void _add_edge_grad(const Model* m, double* drow, Py_ssize_t e, Py_ssize_t k,
                                double v, double* grad) noexcept nogil:
    if v == 0.0:
        return
    if m.p.e_col[e] >= 0:
        drow[m.p.e_col[e] + k] += v
    else:
        grad[m.p.bias_edge[e] + k] += v


cdef void _add_tied_transition(const Model* m, Py_ssize_t c, const double* marg,
                               Py_ssize_t gold_k, double* grad) noexcept nogil:
    """Tied in-chain templates of chain c: add a position's pair marginal minus gold."""
    cdef Py_ssize_t e, k, L = m.p.n_labels[c]
    for e in range(m.p.n_edges):
        if m.p.e_kind[e] == 0 and m.p.e_a[e] == c and m.p.e_col[e] < 0:
            for k in range(L * L):
                grad[m.p.bias_edge[e] + k] += marg[k]
            grad[m.p.bias_edge[e] + gold_k] -= 1.0


cdef void _add_tied_gold(const Model* m, Py_ssize_t c, Py_ssize_t gold_k,
                         double* grad) noexcept nogil:
    cdef Py_ssize_t e
    for e in range(m.p.n_edges):
        if m.p.e_kind[e] == 0 and m.p.e_a[e] == c and m.p.e_col[e] < 0:
            grad[m.p.bias_edge[e] + gold_k] -= 1.0


cdef void _add_tied_expected(const Model* m, Py_ssize_t c, const double* counts,
                             double* grad) noexcept nogil:
    cdef Py_ssize_t e, k, L = m.p.n_labels[c]
    for e in range(m.p.n_edges):
        if m.p.e_kind[e] == 0 and m.p.e_a[e] == c and m.p.e_col[e] < 0:
            for k in range(L * L):
                grad[m.p.bias_edge[e] + k] += counts[k]


cdef void _scores(const Model* m, Scratch* s, CSR direct, CSR diff, int has_diff,
                  Py_ssize_t g0, Py_ssize_t T) noexcept nogil:
    """One sequence's score rows into ``s.scores`` (feature table and biases), its
    ``s.dscore`` cleared."""
    cdef Py_ssize_t k, t, r, lo, hi, width = m.p.width
    if m.whole:
        for k in range(T * width):
            s.scores[k] = 0.0
            s.dscore[k] = 0.0
    else:
        # the other columns are neither read nor written (a table reduced to some chains)
        for t in range(T):
            for r in range(m.n_ranges):
                lo, hi = t * width + m.ranges[2 * r], t * width + m.ranges[2 * r + 1]
                for k in range(lo, hi):
                    s.scores[k] = 0.0
                    s.dscore[k] = 0.0
    for k in range(T * width, T * width + 32):
        s.dscore[k] = 0.0     # read by the dense rows (into gradient slots never used)
    # the unary and untied edges' biases (the columns of m.ranges) last
    if m.p.n_table:
        sequence_scores(direct, diff, has_diff, m.p.feat_ptr, m.p.ent_col, m.theta, g0, T,
                        width, s.scores, s.acc, &m.dense if m.has_dense else NULL,
                        m.ranges, m.n_ranges, m.bias)
    else:
        add_row_biases(s.scores, T, width, m.bias, m.ranges, m.n_ranges)


cdef void _score_gradient(const Model* m, Scratch* s, CSR direct, CSR diff, int has_diff,
                          Py_ssize_t g0, Py_ssize_t T, double* grad,
                          double* dense_grad) noexcept nogil:
    """Add one sequence's score gradient ``s.dscore`` to ``grad`` (the biases' column
    sums, the feature table's entries) and the dense rows' part to ``dense_grad``."""
    cdef Py_ssize_t k, t, r, width = m.p.width
    cdef Dense dgrad = m.dense
    cdef double* sums = s.acc
    dgrad.values = dense_grad
    # the biases' gradient: the columns' sums over the tokens (in the table's pass over
    # the rows when there is a table), then each into grad
    for r in range(m.n_ranges):
        for k in range(m.ranges[2 * r], m.ranges[2 * r + 1]):
            sums[k] = 0.0
    if m.p.n_table:
        sequence_gradient(direct, diff, has_diff, m.p.feat_ptr, m.p.ent_col, g0, T, width,
                          s.dscore, grad, &dgrad if m.has_dense else NULL, m.ranges,
                          m.n_ranges, sums)
    else:
        for t in range(T):
            add_to_column_sums(sums, s.dscore + t * width, m.ranges, m.n_ranges)
    for r in range(m.n_ranges):
        for k in range(m.ranges[2 * r], m.ranges[2 * r + 1]):
            grad[m.col_bias[k]] += sums[k]


cdef void _lane_group(const Model* m, Scratch* s, const Lanes* q, CSR direct, CSR diff,
                      int has_diff, const long long* seq_ptr, const long long* seqs,
                      Py_ssize_t B, double* grad, double* dense_grad,
                      double* losses) noexcept nogil:
    """Losses and gradient of the ``B`` (at most ``SKFCRF_LANES``) sequences ``seqs``:
    per chain ``losses[seq, c]`` (``n_chains`` per row); adds their gradient to
    ``grad`` (one block's accumulator), the dense rows' part to ``dense_grad``.
    Each sequence's score rows first, then chain by chain every sequence's term
    (the sparse tied chains' in lockstep, :func:`_chain_terms_lanes`; the others
    one after another), then each sequence's score gradient.  A sequence whose term
    is not finite (no allowed labelling) adds nothing more."""
    cdef Py_ssize_t b, c, n_live = 0, C = m.p.n_chains
    cdef Py_ssize_t g0[SKFCRF_LANES]
    cdef Py_ssize_t T[SKFCRF_LANES]
    cdef int live[SKFCRF_LANES]
    cdef double part[SKFCRF_LANES]
    for b in range(SKFCRF_LANES):
        g0[b], T[b], live[b] = 0, 0, 0
        if b < B:
            g0[b] = seq_ptr[seqs[b]]
            T[b] = seq_ptr[seqs[b] + 1] - g0[b]
            live[b] = T[b] > 0
        if live[b]:
            n_live += 1
            _scores(m, &s[b], direct, diff, has_diff, g0[b], T[b])
    for c in range(C):
        if m.chain_on != NULL and not m.chain_on[c]:
            continue
        if (n_live > 1 and m.sp_on[c]
                and m.p.chain_untied_ptr[c + 1] == m.p.chain_untied_ptr[c]):
            _chain_terms_lanes(m, s, q, c, g0, T, live, part, grad)
        else:
            for b in range(SKFCRF_LANES):
                if live[b]:
                    part[b] = _chain_term(m, &s[b], c, g0[b], T[b], grad)
        for b in range(SKFCRF_LANES):
            if live[b]:
                losses[seqs[b] * C + c] = part[b]
                if not isfinite(part[b]):
                    live[b] = 0
                    n_live -= 1
    for b in range(SKFCRF_LANES):
        if live[b]:
            _score_gradient(m, &s[b], direct, diff, has_diff, g0[b], T[b], grad, dense_grad)


def _score_columns(ParameterTables tables, chain_on, dense_span):
    """The score columns an evaluation touches (module docstring): int32 pairs ``lo,
    hi`` of ascending, disjoint column ranges, and per column the offset of its bias
    in ``theta``.  Every column without ``chain_on`` (per chain, whether its term is
    computed); with it the unary columns of those chains, the untied edges' columns
    that touch one of them, every column of a feature-table entry and the dense
    rows' (``dense_span``: their first column and length, or None without)."""
    width = tables.width
    col_bias = np.empty(max(width, 1), np.int64)
    col_bias[:tables.total_labels] = tables.bias_unary + np.arange(tables.total_labels)
    n_labels, e_col = np.asarray(tables.n_labels), np.asarray(tables.e_col)
    used = np.zeros(width + 1, bool)
    on = None if chain_on is None else np.asarray(chain_on).astype(bool)
    if on is not None:
        off = np.asarray(tables.label_offset)
        for c in np.flatnonzero(on):
            used[off[c]:off[c + 1]] = True
    for e in range(tables.n_edges):
        if e_col[e] < 0:
            continue
        a, b = tables.e_a[e], tables.e_b[e]
        size = int(n_labels[a] * n_labels[b])
        col_bias[e_col[e]:e_col[e] + size] = tables.bias_edge[e] + np.arange(size)
        if on is not None and (on[a] or on[b]):
            used[e_col[e]:e_col[e] + size] = True
    if on is None:
        return np.array([0, width], np.int32), col_bias
    used[np.asarray(tables.ent_col)] = True
    if dense_span is not None:
        used[dense_span[0]:min(dense_span[0] + dense_span[1], width)] = True
    used[width] = False
    bounds = np.flatnonzero(np.diff(np.concatenate([[0], used.astype(np.int8)])))
    return bounds.astype(np.int32), col_bias


def _sparse_transitions(ParameterTables tables, tied_exp, bint lockstep=False):
    """The sparse forms of the chains' tied transitions ``tied_exp`` (module docstring):
    ``(sp_on, sp_ptr_off, sp_off, sp_row_ptr, sp_col, sp_val, sp_col_ptr, sp_row,
    sp_cval)``, each array at least one entry long.  A chain has one where at most
    :data:`SPARSE_TRANSITIONS` of its transitions are nonzero, or with ``lockstep``
    (the sequences run in lanes, :func:`_in_lanes`) :data:`LANE_TRANSITIONS`."""
    cdef double threshold = LANE_TRANSITIONS if lockstep else SPARSE_TRANSITIONS
    n_chains = tables.n_chains
    on = np.zeros(n_chains, np.uint8)
    ptr_off = np.zeros(n_chains, np.int32)
    off = np.zeros(n_chains, np.int64)
    rows, cols = [np.zeros(1, np.int64)], [np.zeros(1, np.int64)]
    by_row, by_col = [np.zeros(1, np.int32)], [np.zeros(1, np.int32)]
    val, cval = [np.zeros(1)], [np.zeros(1)]
    n_ptr, n_nz = 1, 1
    for ch in range(n_chains):
        o, nl = tables.chain_tied[ch], tables.n_labels[ch]
        E = np.asarray(tied_exp[o:o + nl * nl]).reshape(nl, nl)
        nonzero = E != 0.0
        if nonzero.sum() > threshold * nl * nl:
            continue
        on[ch], ptr_off[ch], off[ch] = 1, n_ptr, n_nz
        i, j = np.nonzero(nonzero)                  # row-major order
        jc, ic = np.nonzero(nonzero.T)              # column-major order
        rows.append(np.concatenate([[0], np.cumsum(nonzero.sum(axis=1))]).astype(np.int64))
        cols.append(np.concatenate([[0], np.cumsum(nonzero.sum(axis=0))]).astype(np.int64))
        by_row.append(j.astype(np.int32))
        by_col.append(ic.astype(np.int32))
        val.append(E[i, j])
        cval.append(E[ic, jc])
        n_ptr += nl + 1
        n_nz += len(i)
    return (on, ptr_off, off, np.concatenate(rows), np.concatenate(by_row),
            np.concatenate(val), np.concatenate(cols), np.concatenate(by_col),
            np.concatenate(cval))


def _slots_for(slot, Py_ssize_t nnz, bint has_dense):
    """``slot`` as int64, checked to resolve ``nnz`` stored observations, none of them
    to a dense row unless there are dense rows."""
    slot = np.ascontiguousarray(slot, dtype=np.int64)
    if slot.ndim != 1 or slot.shape[0] != nnz:
        raise ValueError(f"slots for {slot.shape} observations, the batch has {nnz}")
    if not has_dense and slot.size and slot.min() < 0:
        raise ValueError("the slots name dense rows, and the kernel was given none")
    return slot


def chainwise_objective(ParameterTables tables, obs, const int[:, ::1] gold,
                        const double[::1] theta, int n_threads=1, allowed=None, chain_on=None,
                        dense=None, bint couplings=True, dict workspace=None, slots=None):
    """Per-sequence and chain losses ``(n_seq, n_chains)`` and the gradient of their sum.

    ``tables`` is the model (:class:`~skfcrf._kernels._contract.ParameterTables`;
    ``theta`` is laid out for it), ``obs`` the batch's observation rows
    (``seq_ptr``, ``direct``, ``diff``; :class:`~skfcrf.estimators.
    _observation_rows.ObservationRows`), ``gold`` ``(N, n_chains)`` int32.  See
    the module docstring for the rest: ``allowed`` (optional ``(N, Ltot)``
    uint8) restricts the labels; ``chain_on`` (optional, per chain): only the
    chains where it is non-zero get their term; the others' losses stay zero
    and add no gradient.  ``dense``: the feature table's dense rows
    (:func:`~skfcrf._kernels._contract.dense_rows` of ``tables``), or None.
    ``couplings=False`` leaves the couplings out of every chain's unaries and
    gradient: the results of coupling weights at zero with none of their
    assignments forbidden, on every weight but the couplings' (whose gradient is
    then zero), without their work (the independent chains' objective).
    ``slots`` (optional): the observations of ``obs.direct`` and ``obs.diff``
    resolved against ``tables`` and ``dense``
    (:func:`~skfcrf._kernels._contract.resolve_slots`; either may be None).
    ``workspace`` (optional): a dict the caller keeps between calls, where the
    blocks' gradient accumulators stay allocated while their shape fits (a fresh
    ``(n_blocks, n_params)`` array every call cost a tenth of a one-chain CoNLL-2000
    evaluation in page faults: over the allocator's mapping threshold, it comes
    back from the kernel unmapped and zeroed page by page).
    """
    cdef Model m
    cdef const int[::1] dense_of
    cdef double[::1] dense_theta
    cdef double[:, ::1] block_dgrad
    cdef const long long[::1] seq_ptr = obs.seq_ptr
    cdef Py_ssize_t n_seq = seq_ptr.shape[0] - 1
    cdef Py_ssize_t n = gold.shape[0]
    cdef const unsigned char[:, ::1] allowed_view
    cdef const unsigned char[::1] chain_on_view
    cdef const int[::1] ranges
    cdef const long long[::1] col_bias
    cdef const double[::1] bias
    cdef Py_ssize_t n_blocks, b, sq, t_max
    cdef size_t per
    cdef Block scratch
    cdef unsigned int fp
    cdef char* base
    cdef Carver c
    cdef Scratch* s
    cdef Lanes q
    tied_log_arr, tied_exp_arr, tied_shift_arr = tables.chain_transitions(theta)
    tied_expT_arr = np.empty_like(tied_exp_arr)
    for ch in range(tables.n_chains):
        o, nl = tables.chain_tied[ch], tables.n_labels[ch]
        tied_expT_arr[o:o + nl * nl] = tied_exp_arr[o:o + nl * nl].reshape(nl, nl).T.ravel()
    lockstep = _in_lanes(tables, tied_exp_arr, chain_on)
    sparse = _sparse_transitions(tables, tied_exp_arr, lockstep)
    cdef const unsigned char[::1] sp_on = sparse[0]
    cdef const int[::1] sp_ptr_off = sparse[1]
    cdef const long long[::1] sp_off = sparse[2]
    cdef const long long[::1] sp_row_ptr = sparse[3]
    cdef const int[::1] sp_col = sparse[4]
    cdef const double[::1] sp_val = sparse[5]
    cdef const long long[::1] sp_col_ptr = sparse[6]
    cdef const int[::1] sp_row = sparse[7]
    cdef const double[::1] sp_cval = sparse[8]
    cdef const double[::1] tied_expT = tied_expT_arr
    cdef const double[::1] tied_log = tied_log_arr
    cdef const double[::1] tied_exp = tied_exp_arr
    cdef const double[::1] tied_shift = tied_shift_arr
    losses_arr = np.zeros((n_seq, tables.n_chains))
    cdef double[:, ::1] losses = losses_arr
    blocks_arr = sequence_blocks(seq_ptr, theta.shape[0], CHAINWISE_BLOCKS)
    cdef const long long[::1] block_ptr = blocks_arr
    # each block zeroes its own row (below), just before it adds to it
    block_grad_arr = block_accumulators(workspace, (len(blocks_arr) - 1, theta.shape[0]))
    cdef double[:, ::1] block_grad = block_grad_arr
    cdef size_t row_bytes = theta.shape[0] * sizeof(double)
    d_ip, d_ix, d_v = obs.direct
    f_ip, f_ix, f_v = triple_or_empty(obs.diff, n)
    cdef CSR xd = as_csr(d_ip, d_ix, d_v)
    cdef CSR xf = as_csr(f_ip, f_ix, f_v)
    cdef int has_diff = obs.diff is not None
    cdef const long long[::1] d_slot, f_slot
    n_blocks = block_ptr.shape[0] - 1
    t_max = longest_sequence(seq_ptr)
    m.p = tables.view()
    m.tied_shift, m.tied_log, m.tied_exp = &tied_shift[0], &tied_log[0], &tied_exp[0]
    m.tied_expT = &tied_expT[0]
    m.sp_on, m.sp_ptr_off, m.sp_off = &sp_on[0], &sp_ptr_off[0], &sp_off[0]
    m.sp_row_ptr, m.sp_col, m.sp_val = &sp_row_ptr[0], &sp_col[0], &sp_val[0]
    m.sp_col_ptr, m.sp_row, m.sp_cval = &sp_col_ptr[0], &sp_row[0], &sp_cval[0]
    m.theta = &theta[0]
    m.gold = &gold[0, 0] if n else NULL
    m.has_allowed = allowed is not None
    if m.has_allowed:
        allowed_view = allowed
        m.allowed = &allowed_view[0, 0] if n else NULL
    else:
        m.allowed = NULL
    m.couplings_on = 1 if couplings else 0
    m.chain_on = NULL
    if chain_on is not None:
        chain_on_view = chain_on
        if chain_on_view.shape[0] != m.p.n_chains:
            raise ValueError(f"chain_on has {chain_on_view.shape[0]} entries for "
                             f"{m.p.n_chains} chains")
        m.chain_on = &chain_on_view[0]
    m.has_dense = dense is not None and int(np.max(dense[0], initial=-1)) >= 0
    if m.has_dense:
        if int(dense[3]) not in DENSE_LENGTHS:
            raise ValueError(f"dense rows of {dense[3]} values: the row products take "
                             f"{DENSE_LENGTHS}")
        dense_of, slot = dense[0], np.asarray(dense[1])
        entries = np.flatnonzero(slot >= 0)
        n_dense = (int(np.max(dense_of)) + 1) * int(dense[3])
        dense_theta_arr = np.zeros(n_dense)
        dense_theta_arr[slot[entries]] = np.asarray(theta)[entries]
        dense_theta = dense_theta_arr
        block_dgrad_arr = np.zeros((len(blocks_arr) - 1, n_dense))
        block_dgrad = block_dgrad_arr
        m.dense.of, m.dense.values, m.dense.base = &dense_of[0], &dense_theta[0], dense[2]
        m.dense.width = dense[3]
    if slots is not None:   # (a dense row's slot with no dense rows would read nothing valid)
        if slots[0] is not None:
            d_slot = _slots_for(slots[0], xd.nnz, m.has_dense)
            xd.slot = &d_slot[0] if xd.nnz else NULL
        if slots[1] is not None and has_diff:
            f_slot = _slots_for(slots[1], xf.nnz, m.has_dense)
            xf.slot = &f_slot[0] if xf.nnz else NULL
    ranges_arr, col_bias_arr = _score_columns(tables, chain_on,
                                              (int(dense[2]), int(dense[3])) if m.has_dense
                                              else None)
    ranges, col_bias = np.concatenate([ranges_arr, [0, 0]]).astype(np.int32), col_bias_arr
    bias = np.asarray(theta)[col_bias_arr]
    m.ranges, m.n_ranges, m.col_bias = &ranges[0], len(ranges_arr) // 2, &col_bias[0]
    m.bias = &bias[0]
    m.whole = m.n_ranges == 1 and ranges[0] == 0 and ranges[1] == m.p.width
    cdef Py_ssize_t lanes = SKFCRF_LANES if lockstep else 1
    order_arr = (_lane_order(seq_ptr, blocks_arr) if lockstep
                 else np.arange(n_seq, dtype=np.int64))
    cdef const long long[::1] order = order_arr
    n_threads = max(1, n_threads)
    c = carver(NULL)
    _carve_thread(&c, t_max, m.p.width, m.p.max_labels)
    _carve_lanes(&c, t_max, m.p.max_labels)
    per = c.used
    scratch = allocate(n_threads * per, 1)     # MemoryError if it cannot
    base = <char*> scratch.ptr
    with nogil, parallel(num_threads=n_threads):
        # assigned in the parallel block, so private to each thread
        fp = skfcrf_subnormals_off()
        c = carver(base + threadid() * per)
        s = _carve_thread(&c, t_max, m.p.width, m.p.max_labels)
        q = _carve_lanes(&c, t_max, m.p.max_labels)
        for b in prange(n_blocks, schedule="dynamic", chunksize=1):
            sq = block_ptr[b]
            memset(&block_grad[b, 0], 0, row_bytes)
            while sq < block_ptr[b + 1]:
                _lane_group(&m, s, &q, xd, xf, has_diff, &seq_ptr[0], &order[sq],
                            min(lanes, block_ptr[b + 1] - sq),
                            &block_grad[b, 0], &block_dgrad[b, 0] if m.has_dense else NULL,
                            &losses[0, 0])
                sq = sq + lanes
        skfcrf_restore_fp(fp)
    if m.has_dense:
        # the dense rows' gradient back to their entries (which the blocks left at 0)
        block_grad_arr[:, entries] = block_dgrad_arr[:, slot[entries]]
    return losses_arr, summed_rows(block_grad_arr)
