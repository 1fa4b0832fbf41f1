/* Array kernels of the inference and training loops, in plain C that compilers
 * vectorise, and compiled for wider vector units where the CPU has them.
 *
 * The extensions are built for the baseline instruction set (SSE2 on x86-64), so
 * that one build runs on any x86-64 machine.  The few loops where vector width
 * pays (measured in benchmarks/README.md) are also compiled for AVX2 and AVX-512
 * and picked at run time: exp over label scores and the max-product / max-plus
 * matrix-vector products.  That needs GCC on x86-64 Linux (ifuncs and
 * __builtin_cpu_supports); elsewhere only the baseline code is built.
 *
 * 1. skfcrf_exp_shifted: exp over arrays.  libm's exp is a call per element and
 *    the compiler cannot vectorise it without -ffast-math (which would also break
 *    the -inf/NaN handling the kernels rely on).  Instead
 *
 *      exp(x) = 2^k exp(r),  k = round(x / ln 2),  r = x - k ln 2,  |r| <= ln(2) / 2,
 *
 *    with k found by the round-to-nearest "magic number" addition (no
 *    float-to-int conversion), r in two steps (Cody-Waite: ln 2 split into a high
 *    part exact in k * hi and a low part), exp(r) by its Taylor polynomial of
 *    degree 13 (truncation below 4e-18 relative) evaluated by Estrin's scheme,
 *    and 2^k built from k's bits.  Domain: meant for x <= 0 (scores minus their
 *    maximum).  For -708.39 <= x <= 709 the relative error is a few units in the
 *    last place; below -708.39 (where exp leaves the normal range) and for
 *    x = -inf the result is 0; above 709 it is exp(709); NaN gives NaN.
 *
 * 2. skfcrf_mul, skfcrf_pair_update: the elementwise passes of the pseudolikelihood
 *    kernel's tied pair factors (building each instance's scaled exponentials, then
 *    its two conditional marginals and their gradient updates).
 *
 * 3. skfcrf_matvec_sum, skfcrf_gemm_tn_acc: the sum-product matrix-vector products
 *    and outer-product sums of the one-chain forward-backward, in blocks of outputs
 *    summed in a fixed order (identical results from every clone).
 *
 * 4. skfcrf_matmax: out[j] = max_i x[i] * P[i, j] (max-product, x and P >= 0) or
 *    max_i x[i] + P[i, j] (max-plus), P row-major nin x nout.  The wide versions
 *    keep 24 outputs in vector registers while streaming P's rows; the baseline
 *    keeps 8 in four SSE2 registers (GCC does not vectorise the scalar max
 *    pattern on its own), or is scalar without SSE2.  Every version takes the
 *    maxima in the same order, so all give identical results.
 *
 * 5. skfcrf_lane_product: a sparse matrix (CSR rows) times SKFCRF_LANES vectors at
 *    once, their entries interleaved (entry s of vector b at s * SKFCRF_LANES + b):
 *    the joint kernel's sparse forward-backward of several sequences in lockstep.
 *    Each allowed pair's index and value are read once for all the vectors, and the
 *    lanes' sums are one vector operation.  Every lane is summed exactly as the
 *    kernel's one-vector row product (_joint.pyx's _row_dot: four partial sums over
 *    the entries k, k+1, k+2, k+3, the rest into the first, then (v0 + v1) +
 *    (v2 + v3)), so a lane's result has the bits of the one-vector product.
 *    skfcrf_lane_sums: the same rows' sums in ascending order from 0.0, weighted or
 *    plain: the chain-wise kernel's sparse transition products and the state
 *    marginals' sums per label and per coupling entry; skfcrf_lane_counts: the
 *    chain-wise kernel's expected transition counts over interleaved lanes;
 *    skfcrf_lane_reach, skfcrf_lane_shift, skfcrf_lane_weigh, skfcrf_lane_clear: its
 *    elementwise steps (each lane's arithmetic and order as in the one-sequence
 *    loops); skfcrf_lane_best, with the shift and the weighing, the joint
 *    forward-backward's.
 *    skfcrf_lane_tree_sum: the grouped transition form's projection tree, lanes
 *    interleaved; skfcrf_lane_normalize, skfcrf_lane_scale: the forward-backward's
 *    elementwise steps over the lanes; skfcrf_lane_maxplus, skfcrf_lane_tree_max: the
 *    joint Viterbi's sparse and grouped max-plus steps over the lanes.
 */
#ifndef SKFCRF_SIMD_H
#define SKFCRF_SIMD_H

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define SKFCRF_MULTIARCH 1
#define SKFCRF_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define SKFCRF_MULTIARCH 0
#define SKFCRF_CLONES
#endif



/* Subnormal numbers as zero in this thread's floating-point arithmetic (x86's MXCSR:
   flush-to-zero and denormals-are-zero), returning the state for skfcrf_restore_fp.  The
   kernels' parallel regions that run forward-backward in the probability domain turn it
   on: there products of a token's small state masses and backward weights fall below
   2.2e-308, and every operation on such a number takes a microcode assist of about a
   hundred cycles (the joint forward-backward at trained weights spent more time in
   them than in its arithmetic).  What is flushed is below 1e-292 of the token's total,
   which a double sum loses anyway.  Elsewhere a no-op. */
#if defined(__SSE2__)
#include <xmmintrin.h>
static inline unsigned int skfcrf_subnormals_off(void)
{
    const unsigned int old = _mm_getcsr();
    _mm_setcsr(old | 0x8040u);
    return old;
}
static inline void skfcrf_restore_fp(unsigned int old) { _mm_setcsr(old); }
#else
static inline unsigned int skfcrf_subnormals_off(void) { return 0u; }
static inline void skfcrf_restore_fp(unsigned int old) { (void)old; }
#endif

#define SKFCRF_EXP_LO (-708.39)
#define SKFCRF_EXP_HI 709.0

static inline __attribute__((always_inline)) double skfcrf_exp1(double x)
{
    const double log2e = 1.4426950408889634074;
    const double ln2_hi = 6.93147180369123816490e-01; /* 32 significant bits: k * hi exact */
    const double ln2_lo = 1.90821492927058770002e-10;
    const double magic = 6755399441055744.0;            /* 1.5 * 2^52 */
    double xc = x < SKFCRF_EXP_LO ? SKFCRF_EXP_LO : x;
    xc = xc > SKFCRF_EXP_HI ? SKFCRF_EXP_HI : xc;
    double t = xc * log2e + magic;                      /* k in the low bits of t */
    double k = t - magic;
    double r = (xc - k * ln2_hi) - k * ln2_lo;
    /* Taylor coefficients 1/i! by Estrin's scheme: a dependency chain of about
       eight operations instead of Horner's 26, so that consecutive elements overlap */
    double r2 = r * r;
    double r4 = r2 * r2;
    double r8 = r4 * r4;
    double a0 = 1.0 + r;
    double a1 = 0.5 + r * (1.0 / 6.0);
    double a2 = (1.0 / 24.0) + r * (1.0 / 120.0);
    double a3 = (1.0 / 720.0) + r * (1.0 / 5040.0);
    double a4 = (1.0 / 40320.0) + r * (1.0 / 362880.0);
    double a5 = (1.0 / 3628800.0) + r * (1.0 / 39916800.0);
    double a6 = (1.0 / 479001600.0) + r * (1.0 / 6227020800.0);
    double b0 = a0 + r2 * a1;
    double b1 = a2 + r2 * a3;
    double b2 = a4 + r2 * a5;
    double d0 = b0 + r4 * b1;
    double d1 = b2 + r4 * a6;
    double p = d0 + r8 * d1;
    uint64_t bits;
    memcpy(&bits, &t, sizeof bits);
    bits = (bits + 1023u) << 52;                        /* exponent field k + 1023 */
    double scale;
    memcpy(&scale, &bits, sizeof scale);
    double y = p * scale;
    return x < SKFCRF_EXP_LO ? 0.0 : y;
}

/* out[i] = exp(s[i] - shift) for i < n (out may be s); the loader picks the clone. */
SKFCRF_CLONES __attribute__((unused)) static void skfcrf_exp_shifted(const double *s, double shift, double *out, int n)
{
    int i;
    for (i = 0; i < n; i++)
        out[i] = skfcrf_exp1(s[i] - shift);
}


/* ---- pseudolikelihood pair-factor updates (see _pseudolikelihood.pyx, tied_chunk) ---- */

/* out[i] = a[i] * b[i] */
SKFCRF_CLONES __attribute__((unused)) static void skfcrf_mul(const double *a, const double *b,
                                                             double *out, int n)
{
    int i;
    for (i = 0; i < n; i++)
        out[i] = a[i] * b[i];
}

/* One pair factor's conditional marginals, q_u = e_u * r * inv and q_w = e_w * c * inv,
   added to the two variables' unary-gradient rows and taken from their own factor's
   entries; e_u is rescaled by inv in place.  All arrays distinct. */
SKFCRF_CLONES __attribute__((unused)) static void skfcrf_pair_update(
    double *eu, const double *r, double *du_u, double *own_u, int La,
    const double *ew, const double *c, double *du_w, double *own_w, int Lb, double inv)
{
    int i;
    for (i = 0; i < La; i++) {
        double q = eu[i] * r[i] * inv;
        du_u[i] += q;
        own_u[i] -= q;
        eu[i] *= inv;
    }
    for (i = 0; i < Lb; i++) {
        double q = ew[i] * c[i] * inv;
        du_w[i] += q;
        own_w[i] -= q;
    }
}

/* ---- sum-product matrix-vector and outer-product sums (one-chain forward-backward) ---- */

/* Outputs in blocks of up to SKFCRF_BLOCK, each block's sums in a fixed-size array the
   compiler keeps in vector registers: one pass over the rows of P per block, with the
   block's outputs as independent accumulators (blocks of 8 / 4 / 1, as before, left the
   last outputs of a 22-label chain to a dependent chain of scalar additions).  Every
   output is summed over i in ascending order from 0.0, so every clone, and every block
   size, gives the same results (the vector units only widen the blocks). */
#define SKFCRF_BLOCK 24

/* out[j] = sum_i x[i] * P[i, j] for j = j0 .. j0+nb-1 (nb <= SKFCRF_BLOCK). */
static inline __attribute__((always_inline)) void skfcrf_matvec_sum_block(
    const double *x, int nin, const double *P, int nout, int j0, int nb, double *out)
{
    double acc[SKFCRF_BLOCK];
    int i, j;
    for (j = 0; j < SKFCRF_BLOCK; j++)
        acc[j] = 0.0;
    for (i = 0; i < nin; i++) {
        const double xi = x[i];
        const double *Pi = P + (size_t)i * nout + j0;
        for (j = 0; j < nb; j++)
            acc[j] += xi * Pi[j];
    }
    for (j = 0; j < nb; j++)
        out[j0 + j] = acc[j];
}

/* The last block (or the only one: a chain of at most SKFCRF_BLOCK labels) with its size
   a constant in each case, so that its sums stay in registers and its loop over the
   outputs is unrolled: a 7-label chain's product took 59 ns with the size a variable, 40
   with it a constant (23 labels 152 and 104 ns, 45 labels 327 and 235).  The same sums in
   the same order. */
_Static_assert(SKFCRF_BLOCK == 24, "SKFCRF_TAIL_CASES lists the sizes 1 .. SKFCRF_BLOCK - 1");
#define SKFCRF_TAIL_CASES(CALL) \
    CALL(1) CALL(2) CALL(3) CALL(4) CALL(5) CALL(6) CALL(7) CALL(8) CALL(9) CALL(10) \
    CALL(11) CALL(12) CALL(13) CALL(14) CALL(15) CALL(16) CALL(17) CALL(18) CALL(19) \
    CALL(20) CALL(21) CALL(22) CALL(23)

/* out[j] = sum_i x[i] * P[i, j], P row-major nin x nout. */
SKFCRF_CLONES __attribute__((unused)) static void skfcrf_matvec_sum(
    const double *x, int nin, const double *P, int nout, double *out)
{
    int j0 = 0;
    for (; j0 + SKFCRF_BLOCK <= nout; j0 += SKFCRF_BLOCK)
        skfcrf_matvec_sum_block(x, nin, P, nout, j0, SKFCRF_BLOCK, out);
    switch (nout - j0) {
#define SKFCRF_MATVEC_TAIL(n) \
    case n: skfcrf_matvec_sum_block(x, nin, P, nout, j0, n, out); break;
    SKFCRF_TAIL_CASES(SKFCRF_MATVEC_TAIL)
#undef SKFCRF_MATVEC_TAIL
    default: break;
    }
}

/* C[i, j] += sum_k A[k, i] * B[k, j] for j = j0 .. j0+nb-1 of row i; the sum over k in
   ascending order from 0.0. */
static inline __attribute__((always_inline)) void skfcrf_gemm_tn_block(
    const double *A, const double *B, long K, int M, int N, int i, int j0, int nb, double *C)
{
    double acc[SKFCRF_BLOCK];
    long k;
    int j;
    for (j = 0; j < SKFCRF_BLOCK; j++)
        acc[j] = 0.0;
    for (k = 0; k < K; k++) {
        const double xi = A[(size_t)k * M + i];
        const double *Bk = B + (size_t)k * N + j0;
        for (j = 0; j < nb; j++)
            acc[j] += xi * Bk[j];
    }
    for (j = 0; j < nb; j++)
        C[(size_t)i * N + j0 + j] += acc[j];
}

/* C[i, j] += sum_k A[k, i] * B[k, j] (A: K x M, B: K x N, C: M x N, row-major). */
SKFCRF_CLONES __attribute__((unused)) static void skfcrf_gemm_tn_acc(
    const double *A, const double *B, long K, int M, int N, double *C)
{
    int i, j0;
    for (i = 0; i < M; i++) {
        j0 = 0;
        for (; j0 + SKFCRF_BLOCK <= N; j0 += SKFCRF_BLOCK)
            skfcrf_gemm_tn_block(A, B, K, M, N, i, j0, SKFCRF_BLOCK, C);
        switch (N - j0) {       /* a constant size, as skfcrf_matvec_sum's last block */
#define SKFCRF_GEMM_TAIL(n) \
        case n: skfcrf_gemm_tn_block(A, B, K, M, N, i, j0, n, C); break;
        SKFCRF_TAIL_CASES(SKFCRF_GEMM_TAIL)
#undef SKFCRF_GEMM_TAIL
        default: break;
        }
    }
}

/* ---- feature-table products of one token (see _table.pxd) ---- */

/* Dense rows cover at most SKFCRF_DENSE_WIDTH score columns from `base`
   (_contract.DENSE_WIDTH). */
#define SKFCRF_DENSE_WIDTH 32

/* The dense rows of a feature table: per observation its row or -1 (`of`), the rows,
   `width` doubles each (`values`; a multiple of 8, at most SKFCRF_DENSE_WIDTH), and
   their first score column (`base`). */
typedef struct {
    const int *of;
    double *values;
    long base;
    long width;
} skfcrf_dense;

/* Prefetch a dense row of `width` doubles, a cache line (8 doubles) at a time. */
#define SKFCRF_PREFETCH_ROW(row, width, rw) do {                                    \
    long skfcrf_o_;                                                               \
    for (skfcrf_o_ = 0; skfcrf_o_ < (width); skfcrf_o_ += 8)                      \
        __builtin_prefetch((row) + skfcrf_o_, (rw), 0);                           \
    } while (0)

/* Prefetch ahead in the observations' CSR order: feat_ptr of the observation 32
   entries ahead, and the table entries (ent_col and the weights or the gradient) of
   the one 16 entries ahead, whose feat_ptr the first prefetch has brought in
   (measured on CoNLL-2000 chunking tables, 34 M entry updates per pass).  A macro,
   not a function: GCC treats a function whose only effect is a prefetch as pure and
   deletes its calls. */
#define SKFCRF_PREFETCH_AHEAD(indices, nnz, j, feat_ptr, ent_col, entry_values, rw) do { \
    if ((j) + 32 < (nnz))                                                         \
        __builtin_prefetch(&(feat_ptr)[(indices)[(j) + 32]], 0, 0);               \
    if ((j) + 16 < (nnz)) {                                                       \
        long long skfcrf_q_ = (feat_ptr)[(indices)[(j) + 16]];                    \
        __builtin_prefetch(&(ent_col)[skfcrf_q_], 0, 0);                          \
        __builtin_prefetch(&(entry_values)[skfcrf_q_], (rw), 0);                  \
    } } while (0)

/* With dense rows: `of` and `feat_ptr` of the observation 32 ahead (the one read 16
   ahead would otherwise miss the cache: that stall was a fifth of the score pass on
   CoNLL-2000 chunking), and the dense row or the table entries of the one 16 ahead. */
#define SKFCRF_PREFETCH_DENSE(indices, nnz, j, feat_ptr, ent_col, entry_values, dense, rw) do { \
    if ((j) + 32 < (nnz)) {                                                       \
        __builtin_prefetch(&(dense)->of[(indices)[(j) + 32]], 0, 0);              \
        __builtin_prefetch(&(feat_ptr)[(indices)[(j) + 32]], 0, 0);               \
    }                                                                             \
    if ((j) + 16 < (nnz)) {                                                       \
        int skfcrf_f_ = (indices)[(j) + 16], skfcrf_k_ = (dense)->of[skfcrf_f_];   \
        if (skfcrf_k_ >= 0) {                                                     \
            SKFCRF_PREFETCH_ROW((dense)->values + (size_t)skfcrf_k_ * (dense)->width, \
                                (dense)->width, (rw));                            \
        } else {                                                                  \
            long long skfcrf_q_ = (feat_ptr)[skfcrf_f_];                          \
            __builtin_prefetch(&(ent_col)[skfcrf_q_], 0, 0);                      \
            __builtin_prefetch(&(entry_values)[skfcrf_q_], (rw), 0);              \
        } } } while (0)

/* A row's dense-row sums `acc` into its score columns from dense->base (those of the
   dense->width that the row has). */
static inline __attribute__((always_inline)) void skfcrf_add_dense_sums(
    const double *acc, double *out, long width, const skfcrf_dense *dense)
{
    long n = width - dense->base, i;
    double *o = out + dense->base;
    if (n > dense->width)
        n = dense->width;
    for (i = 0; i < n; i++)
        o[i] += acc[i];
}

/* out[ent_col[p]] += x[g, f] * theta[p] over row g's observations f and their
   entries p (out: `width` score columns).  With dense rows, those observations'
   rows (theta's values) are summed in vector registers first, in the order of the
   observations, and added to out's columns from dense->base at the end of the row.
   Each function below has an inline body (`_w`) for a dense-row length `dw` fixed at
   compile time, one copy per length (8, 16, 24, 32), and is the switch between
   them: with a variable length the sums left the registers and CoNLL-2000
   chunking's rows of 24 were 4% slower than its rows of 32 had been. */
#define SKFCRF_BY_DENSE_WIDTH(dense, body, ...) do {                               \
    switch ((dense) ? (dense)->width : SKFCRF_DENSE_WIDTH) {                      \
    case 8: body(__VA_ARGS__, 8); break;                                          \
    case 16: body(__VA_ARGS__, 16); break;                                        \
    case 24: body(__VA_ARGS__, 24); break;                                        \
    default: body(__VA_ARGS__, SKFCRF_DENSE_WIDTH);                               \
    } } while (0)

static inline __attribute__((always_inline)) void skfcrf_row_scores_w(
    const int *indptr, const int *indices, const double *data, long nnz, long g,
    const long long *feat_ptr, const int *ent_col, const double *theta,
    double *out, long width, const skfcrf_dense *dense, const long dw)
{
    double acc[SKFCRF_DENSE_WIDTH];
    long j, p;
    int f, k, i, any = 0;
    double v;
    for (i = 0; i < dw; i++)
        acc[i] = 0.0;
    for (j = indptr[g]; j < indptr[g + 1]; j++) {
        if (dense)
            SKFCRF_PREFETCH_DENSE(indices, nnz, j, feat_ptr, ent_col, theta, dense, 0);
        else
            SKFCRF_PREFETCH_AHEAD(indices, nnz, j, feat_ptr, ent_col, theta, 0);
        f = indices[j];
        v = data[j];
        if (dense && (k = dense->of[f]) >= 0) {
            const double *d = dense->values + (size_t)k * dw;
            for (i = 0; i < dw; i++)
                acc[i] += v * d[i];
            any = 1;
            continue;
        }
        for (p = feat_ptr[f]; p < feat_ptr[f + 1]; p++)
            out[ent_col[p]] += v * theta[p];
    }
    if (any)
        skfcrf_add_dense_sums(acc, out, width, dense);
}

SKFCRF_CLONES __attribute__((unused)) static void skfcrf_row_scores(
    const int *indptr, const int *indices, const double *data, long nnz, long g,
    const long long *feat_ptr, const int *ent_col, const double *theta,
    double *out, long width, const skfcrf_dense *dense)
{
    SKFCRF_BY_DENSE_WIDTH(dense, skfcrf_row_scores_w, indptr, indices, data, nnz, g,
                          feat_ptr, ent_col, theta, out, width, dense);
}

/* grad[p] += x[g, f] * drow[ent_col[p]] over row g's observations and entries; an
   observation with a dense row adds x[g, f] * drow[base .. base+dense->width-1]
   to its row of dense->values (a gradient accumulator, whose slots without an entry
   are never read) instead: drow needs that many readable doubles from base. */
static inline __attribute__((always_inline)) void skfcrf_row_gradient_w(
    const int *indptr, const int *indices, const double *data, long nnz, long g,
    const long long *feat_ptr, const int *ent_col, const double *drow,
    double *grad, const skfcrf_dense *dense, const long dw)
{
    long j, p;
    int f, k, i;
    double v;
    for (j = indptr[g]; j < indptr[g + 1]; j++) {
        if (dense)
            SKFCRF_PREFETCH_DENSE(indices, nnz, j, feat_ptr, ent_col, grad, dense, 1);
        else
            SKFCRF_PREFETCH_AHEAD(indices, nnz, j, feat_ptr, ent_col, grad, 1);
        f = indices[j];
        v = data[j];
        if (dense && (k = dense->of[f]) >= 0) {
            double *d = dense->values + (size_t)k * dw;
            const double *r = drow + dense->base;
            for (i = 0; i < dw; i++)
                d[i] += v * r[i];
            continue;
        }
        for (p = feat_ptr[f]; p < feat_ptr[f + 1]; p++)
            grad[p] += v * drow[ent_col[p]];
    }
}

SKFCRF_CLONES __attribute__((unused)) static void skfcrf_row_gradient(
    const int *indptr, const int *indices, const double *data, long nnz, long g,
    const long long *feat_ptr, const int *ent_col, const double *drow,
    double *grad, const skfcrf_dense *dense)
{
    SKFCRF_BY_DENSE_WIDTH(dense, skfcrf_row_gradient_w, indptr, indices, data, nnz, g,
                          feat_ptr, ent_col, drow, grad, dense);
}

/* ---- the same products over observations resolved against one table ----

   slot[j], per stored observation j of the CSR (skfcrf._kernels._contract.
   resolve_slots): >= 0 packs the observation's table entries, start << SKFCRF_SLOT_BITS
   | count; < 0 is its dense row, -slot[j] - 1.  The loops then read one sequential
   array instead of two dependent random ones (the observation's dense-row index and
   its feat_ptr pair), and prefetch the table entries 16 ahead straight from it. */
#define SKFCRF_SLOT_BITS 20

#define SKFCRF_PREFETCH_SLOT(slot, nnz, j, ent_col, entry_values, dense, rw) do {    \
    if ((j) + 16 < (nnz)) {                                                       \
        long long skfcrf_s_ = (slot)[(j) + 16];                                   \
        if (skfcrf_s_ < 0) {                                                      \
            SKFCRF_PREFETCH_ROW((dense)->values                                   \
                                + (size_t)(-skfcrf_s_ - 1) * (dense)->width,      \
                                (dense)->width, (rw));                            \
        } else {                                                                  \
            long long skfcrf_q_ = skfcrf_s_ >> SKFCRF_SLOT_BITS;                  \
            __builtin_prefetch(&(ent_col)[skfcrf_q_], 0, 0);                      \
            __builtin_prefetch(&(entry_values)[skfcrf_q_], (rw), 0);              \
        } } } while (0)

/* skfcrf_row_scores with the observations of row g resolved (slot). */
static inline __attribute__((always_inline)) void skfcrf_row_scores_slots_w(
    const int *indptr, const long long *slot, const double *data, long nnz, long g,
    const int *ent_col, const double *theta, double *out, long width,
    const skfcrf_dense *dense, const long dw)
{
    double acc[SKFCRF_DENSE_WIDTH];
    long j, p, end;
    long long sl;
    int i, any = 0;
    double v;
    for (i = 0; i < dw; i++)
        acc[i] = 0.0;
    for (j = indptr[g]; j < indptr[g + 1]; j++) {
        SKFCRF_PREFETCH_SLOT(slot, nnz, j, ent_col, theta, dense, 0);
        sl = slot[j];
        v = data[j];
        if (sl < 0) {
            const double *d = dense->values + (size_t)(-sl - 1) * dw;
            for (i = 0; i < dw; i++)
                acc[i] += v * d[i];
            any = 1;
            continue;
        }
        p = (long)(sl >> SKFCRF_SLOT_BITS);
        end = p + (long)(sl & ((1LL << SKFCRF_SLOT_BITS) - 1));
        for (; p < end; p++)
            out[ent_col[p]] += v * theta[p];
    }
    if (any)
        skfcrf_add_dense_sums(acc, out, width, dense);
}

SKFCRF_CLONES __attribute__((unused)) static void skfcrf_row_scores_slots(
    const int *indptr, const long long *slot, const double *data, long nnz, long g,
    const int *ent_col, const double *theta, double *out, long width,
    const skfcrf_dense *dense)
{
    SKFCRF_BY_DENSE_WIDTH(dense, skfcrf_row_scores_slots_w, indptr, slot, data, nnz, g,
                          ent_col, theta, out, width, dense);
}

/* skfcrf_row_gradient with the observations of row g resolved (slot). */
static inline __attribute__((always_inline)) void skfcrf_row_gradient_slots_w(
    const int *indptr, const long long *slot, const double *data, long nnz, long g,
    const int *ent_col, const double *drow, double *grad, const skfcrf_dense *dense,
    const long dw)
{
    long j, p, end;
    long long sl;
    int i;
    double v;
    for (j = indptr[g]; j < indptr[g + 1]; j++) {
        SKFCRF_PREFETCH_SLOT(slot, nnz, j, ent_col, grad, dense, 1);
        sl = slot[j];
        v = data[j];
        if (sl < 0) {
            double *d = dense->values + (size_t)(-sl - 1) * dw;
            const double *r = drow + dense->base;
            for (i = 0; i < dw; i++)
                d[i] += v * r[i];
            continue;
        }
        p = (long)(sl >> SKFCRF_SLOT_BITS);
        end = p + (long)(sl & ((1LL << SKFCRF_SLOT_BITS) - 1));
        for (; p < end; p++)
            grad[p] += v * drow[ent_col[p]];
    }
}

SKFCRF_CLONES __attribute__((unused)) static void skfcrf_row_gradient_slots(
    const int *indptr, const long long *slot, const double *data, long nnz, long g,
    const int *ent_col, const double *drow, double *grad, const skfcrf_dense *dense)
{
    SKFCRF_BY_DENSE_WIDTH(dense, skfcrf_row_gradient_slots_w, indptr, slot, data, nnz, g,
                          ent_col, drow, grad, dense);
}

/* ---- max-product / max-plus matrix-vector products ---- */

/* Outputs j0 .. j0+nb-1 (nb <= SKFCRF_BLOCK), accumulated in a fixed-size block
   the compiler keeps in vector registers. */
static inline __attribute__((always_inline)) void skfcrf_matmax_block(
    const double *x, int nin, const double *P, int nout, int j0, int nb, double *out, int plus)
{
    double acc[SKFCRF_BLOCK];
    int i, j;
    for (j = 0; j < SKFCRF_BLOCK; j++)
        acc[j] = plus ? -__builtin_inf() : 0.0;
    for (i = 0; i < nin; i++) {
        const double xi = x[i];
        const double *Pi = P + (size_t)i * nout + j0;
        if (plus) {
            for (j = 0; j < nb; j++) {
                double v = xi + Pi[j];
                acc[j] = v > acc[j] ? v : acc[j];
            }
        } else {
            for (j = 0; j < nb; j++) {
                double v = xi * Pi[j];
                acc[j] = v > acc[j] ? v : acc[j];
            }
        }
    }
    for (j = 0; j < nb; j++)
        out[j0 + j] = acc[j];
}

#define SKFCRF_MATMAX_WIDE(name, isa)                                               \
    __attribute__((target(isa))) static void name(                                  \
        const double *x, int nin, const double *P, int nout, double *out, int plus) \
    {                                                                               \
        int j0 = 0;                                                                 \
        for (; j0 + SKFCRF_BLOCK <= nout; j0 += SKFCRF_BLOCK)                       \
            skfcrf_matmax_block(x, nin, P, nout, j0, SKFCRF_BLOCK, out, plus);      \
        if (j0 < nout)                                                              \
            skfcrf_matmax_block(x, nin, P, nout, j0, nout - j0, out, plus);         \
    }

#if SKFCRF_MULTIARCH
SKFCRF_MATMAX_WIDE(skfcrf_matmax_avx512, "avx512f")
SKFCRF_MATMAX_WIDE(skfcrf_matmax_avx2, "avx2")
#endif

#if defined(__SSE2__) || defined(_M_X64)
#include <emmintrin.h>
/* Outputs j0 .. j0+7 in four SSE2 registers. */
static inline void skfcrf_matmax8(const double *x, int nin, const double *P, int nout, int j0,
                                  double *out, int plus)
{
    __m128d a0, a1, a2, a3, xi;
    int i;
    if (plus) {
        a0 = a1 = a2 = a3 = _mm_set1_pd(-__builtin_inf());
        for (i = 0; i < nin; ++i) {
            const double *Pi = P + (size_t)i * nout + j0;
            xi = _mm_set1_pd(x[i]);
            a0 = _mm_max_pd(_mm_add_pd(xi, _mm_loadu_pd(Pi)), a0);
            a1 = _mm_max_pd(_mm_add_pd(xi, _mm_loadu_pd(Pi + 2)), a1);
            a2 = _mm_max_pd(_mm_add_pd(xi, _mm_loadu_pd(Pi + 4)), a2);
            a3 = _mm_max_pd(_mm_add_pd(xi, _mm_loadu_pd(Pi + 6)), a3);
        }
    } else {
        a0 = a1 = a2 = a3 = _mm_setzero_pd();
        for (i = 0; i < nin; ++i) {
            const double *Pi = P + (size_t)i * nout + j0;
            xi = _mm_set1_pd(x[i]);
            a0 = _mm_max_pd(_mm_mul_pd(xi, _mm_loadu_pd(Pi)), a0);
            a1 = _mm_max_pd(_mm_mul_pd(xi, _mm_loadu_pd(Pi + 2)), a1);
            a2 = _mm_max_pd(_mm_mul_pd(xi, _mm_loadu_pd(Pi + 4)), a2);
            a3 = _mm_max_pd(_mm_mul_pd(xi, _mm_loadu_pd(Pi + 6)), a3);
        }
    }
    _mm_storeu_pd(out + j0, a0);
    _mm_storeu_pd(out + j0 + 2, a1);
    _mm_storeu_pd(out + j0 + 4, a2);
    _mm_storeu_pd(out + j0 + 6, a3);
}
#endif

/* Which wide version this CPU runs: 2 AVX-512, 1 AVX2, 0 neither (computed once;
   concurrent first calls store the same value). */
static inline int skfcrf_vector_level(void)
{
#if SKFCRF_MULTIARCH
    static int level = -1;
    int got = __atomic_load_n(&level, __ATOMIC_RELAXED);
    if (got < 0) {
        __builtin_cpu_init();
        got = __builtin_cpu_supports("avx512f") ? 2 : __builtin_cpu_supports("avx2") ? 1 : 0;
        __atomic_store_n(&level, got, __ATOMIC_RELAXED);
    }
    return got;
#else
    return 0;
#endif
}

/* The version for vector level `level` (at most skfcrf_vector_level(); tests run each). */
static inline void skfcrf_matmax_at(int level, const double *x, int nin, const double *P,
                                    int nout, double *out, int plus)
{
    int i, j0 = 0;
#if SKFCRF_MULTIARCH
    if (level == 2) {
        skfcrf_matmax_avx512(x, nin, P, nout, out, plus);
        return;
    }
    if (level == 1) {
        skfcrf_matmax_avx2(x, nin, P, nout, out, plus);
        return;
    }
#else
    (void)level;
#endif
#if defined(__SSE2__) || defined(_M_X64)
    for (; j0 + 8 <= nout; j0 += 8)
        skfcrf_matmax8(x, nin, P, nout, j0, out, plus);
#endif
    for (; j0 < nout; j0++) {
        double a = plus ? -__builtin_inf() : 0.0;
        for (i = 0; i < nin; i++) {
            double v = plus ? x[i] + P[(size_t)i * nout + j0] : x[i] * P[(size_t)i * nout + j0];
            a = v > a ? v : a;
        }
        out[j0] = a;
    }
}

static inline void skfcrf_matmax(const double *x, int nin, const double *P, int nout,
                                 double *out, int plus)
{
    skfcrf_matmax_at(skfcrf_vector_level(), x, nin, P, nout, out, plus);
}

/* ---- sparse products of several sequences in lockstep (_joint.pyx) ---- */

#define SKFCRF_LANES 4

#if defined(__GNUC__)
/* The lanes of one state as one vector (GCC's vector extensions: the AVX2 clone does
   each operation in one instruction, the baseline in two SSE2 ones). */
typedef double skfcrf_v4d __attribute__((vector_size(32)));
typedef long long skfcrf_v4i __attribute__((vector_size(32)));
#define SKFCRF_LD4(p) ({ skfcrf_v4d v_; memcpy(&v_, (p), sizeof v_); v_; })
#define SKFCRF_ST4(p, v) do { skfcrf_v4d w_ = (v); memcpy((p), &w_, sizeof w_); } while (0)

#if defined(__clang__)
#define SKFCRF_SHUF4(a, b, i, j, k, l) __builtin_shufflevector((a), (b), i, j, k, l)
#else
#define SKFCRF_SHUF4(a, b, i, j, k, l) __builtin_shuffle((a), (b), (skfcrf_v4i){i, j, k, l})
#endif

/* Each vector's total over its lanes, {p0, p1, p2, p3}'s, as one vector: every total
   (p[0] + p[1]) + (p[2] + p[3]), a 4 x 4 transpose folded into the additions. */
static inline __attribute__((always_inline)) skfcrf_v4d skfcrf_v4_totals(
    skfcrf_v4d p0, skfcrf_v4d p1, skfcrf_v4d p2, skfcrf_v4d p3)
{
    /* {p0[0] + p0[1], p1[0] + p1[1], p0[2] + p0[3], p1[2] + p1[3]}, and for p2, p3 */
    const skfcrf_v4d t0 = SKFCRF_SHUF4(p0, p1, 0, 4, 2, 6) + SKFCRF_SHUF4(p0, p1, 1, 5, 3, 7);
    const skfcrf_v4d t1 = SKFCRF_SHUF4(p2, p3, 0, 4, 2, 6) + SKFCRF_SHUF4(p2, p3, 1, 5, 3, 7);
    return SKFCRF_SHUF4(t0, t1, 0, 1, 4, 5) + SKFCRF_SHUF4(t0, t1, 2, 3, 6, 7);
}

/* One row of skfcrf_lane_product: counts[k] += the lanes' total of a * x where a != 0
   (a * x masked, so that a zero a with an infinite x adds nothing, as the one-vector
   product skips such rows).  One count per entry, the lanes' sequences summed at
   every token: a quarter of the memory that a count per lane took (39 KB instead of
   156 KB a thread for 4,864 allowed pairs), and no sum over the lanes at the end. */
static inline __attribute__((always_inline)) void skfcrf_lane_row(
    const int *idx, const double *val, long long k, long long hi, const double *x,
    const double *a, double *counts, double *out, const int with_counts)
{
    skfcrf_v4d v0 = {0.0, 0.0, 0.0, 0.0}, v1 = v0, v2 = v0, v3 = v0, ai = v0;
    skfcrf_v4i keep = {0, 0, 0, 0};
    if (with_counts) {
        ai = SKFCRF_LD4(a);
        keep = ai != v0;
    }
    for (; k + 4 <= hi; k += 4) {
        const skfcrf_v4d x0 = SKFCRF_LD4(x + (size_t)idx[k] * SKFCRF_LANES);
        const skfcrf_v4d x1 = SKFCRF_LD4(x + (size_t)idx[k + 1] * SKFCRF_LANES);
        const skfcrf_v4d x2 = SKFCRF_LD4(x + (size_t)idx[k + 2] * SKFCRF_LANES);
        const skfcrf_v4d x3 = SKFCRF_LD4(x + (size_t)idx[k + 3] * SKFCRF_LANES);
        v0 += val[k] * x0;
        v1 += val[k + 1] * x1;
        v2 += val[k + 2] * x2;
        v3 += val[k + 3] * x3;
        if (with_counts)
            SKFCRF_ST4(counts + k, SKFCRF_LD4(counts + k) + skfcrf_v4_totals(
                (skfcrf_v4d)((skfcrf_v4i)(ai * x0) & keep),
                (skfcrf_v4d)((skfcrf_v4i)(ai * x1) & keep),
                (skfcrf_v4d)((skfcrf_v4i)(ai * x2) & keep),
                (skfcrf_v4d)((skfcrf_v4i)(ai * x3) & keep)));
    }
    for (; k < hi; k++) {
        const skfcrf_v4d x0 = SKFCRF_LD4(x + (size_t)idx[k] * SKFCRF_LANES);
        v0 += val[k] * x0;
        if (with_counts) {
            const skfcrf_v4d p = (skfcrf_v4d)((skfcrf_v4i)(ai * x0) & keep);
            counts[k] += (p[0] + p[1]) + (p[2] + p[3]);
        }
    }
    SKFCRF_ST4(out, (v0 + v1) + (v2 + v3));
}

/* out[i, b] = sum_k val[k] * x[idx[k], b] over row i's entries k (ptr[i] .. ptr[i+1]),
   for every lane b (rows i = 0 .. nrows-1; x, out interleaved, see 5. above).  With
   `counts` (or NULL), also counts[k] += sum over the lanes b of a[i, b] * x[idx[k], b]
   where a[i, b] != 0 (the expected transition counts of the backward step, one per
   entry: the lanes' sequences summed). */
SKFCRF_CLONES __attribute__((unused)) static void skfcrf_lane_product(
    const long long *ptr, const int *idx, const double *val, long nrows, const double *x,
    const double *a, double *counts, double *out)
{
    long i;
    if (counts) {
        for (i = 0; i < nrows; i++)
            skfcrf_lane_row(idx, val, ptr[i], ptr[i + 1], x, a + i * SKFCRF_LANES, counts,
                            out + i * SKFCRF_LANES, 1);
    } else {
        for (i = 0; i < nrows; i++)
            skfcrf_lane_row(idx, val, ptr[i], ptr[i + 1], x, NULL, NULL,
                            out + i * SKFCRF_LANES, 0);
    }
}

/* out[j, b] = sum_k val[k] * x[idx[k], b] (val NULL: the plain sum of the x) over row j's
   entries k in ascending order from 0.0, for every lane b (rows j = 0 .. nrows-1; x, out
   interleaved): one sum per lane, as the one-vector loop `acc = acc + x[idx[k]] * val[k]`
   adds them. */
SKFCRF_CLONES __attribute__((unused)) static void skfcrf_lane_sums(
    const long long *ptr, const int *idx, const double *val, long nrows, const double *x,
    double *out)
{
    long j;
    long long k;
    for (j = 0; j < nrows; j++) {
        skfcrf_v4d v = {0.0, 0.0, 0.0, 0.0};
        if (val) {
            for (k = ptr[j]; k < ptr[j + 1]; k++)
                v += val[k] * SKFCRF_LD4(x + (size_t)idx[k] * SKFCRF_LANES);
        } else {
            for (k = ptr[j]; k < ptr[j + 1]; k++)
                v += SKFCRF_LD4(x + (size_t)idx[k] * SKFCRF_LANES);
        }
        SKFCRF_ST4(out + j * SKFCRF_LANES, v);
    }
}

/* out[j, b] = max over row j's entries k of x[idx[k], b] + val[k] (-inf for a row without
   entries), for every lane b (rows j = 0 .. nrows-1; x, out interleaved): the sparse max-plus
   step of the joint Viterbi over lanes.  Four running maxima per row (entries k, k+1, k+2,
   k+3): one running maximum is a latency chain; a maximum does not depend on the order,
   so every lane's result is that of its own sequence alone. */
static inline __attribute__((always_inline)) skfcrf_v4d skfcrf_v4_select(skfcrf_v4i take,
                                                                         skfcrf_v4d v,
                                                                         skfcrf_v4d m)
{
    /* v in the lanes of the all-ones mask take, m elsewhere (bitwise: no rounding) */
    return (skfcrf_v4d)(((skfcrf_v4i)v & take) | ((skfcrf_v4i)m & ~take));
}

static inline __attribute__((always_inline)) skfcrf_v4d skfcrf_v4_max(skfcrf_v4d v,
                                                                      skfcrf_v4d m)
{
    return skfcrf_v4_select(v > m, v, m);
}

SKFCRF_CLONES __attribute__((unused)) static void skfcrf_lane_maxplus(
    const long long *ptr, const int *idx, const double *val, long nrows, const double *x,
    double *out)
{
    long j;
    long long k, hi;
    const skfcrf_v4d lowest = {-INFINITY, -INFINITY, -INFINITY, -INFINITY};
    for (j = 0; j < nrows; j++) {
        skfcrf_v4d m0 = lowest, m1 = lowest, m2 = lowest, m3 = lowest;
        for (k = ptr[j], hi = ptr[j + 1]; k + 4 <= hi; k += 4) {
            m0 = skfcrf_v4_max(SKFCRF_LD4(x + (size_t)idx[k] * SKFCRF_LANES) + val[k], m0);
            m1 = skfcrf_v4_max(SKFCRF_LD4(x + (size_t)idx[k + 1] * SKFCRF_LANES) + val[k + 1],
                               m1);
            m2 = skfcrf_v4_max(SKFCRF_LD4(x + (size_t)idx[k + 2] * SKFCRF_LANES) + val[k + 2],
                               m2);
            m3 = skfcrf_v4_max(SKFCRF_LD4(x + (size_t)idx[k + 3] * SKFCRF_LANES) + val[k + 3],
                               m3);
        }
        for (; k < hi; k++)
            m0 = skfcrf_v4_max(SKFCRF_LD4(x + (size_t)idx[k] * SKFCRF_LANES) + val[k], m0);
        m0 = skfcrf_v4_max(m1, m0);
        m2 = skfcrf_v4_max(m3, m2);
        SKFCRF_ST4(out + j * SKFCRF_LANES, skfcrf_v4_max(m2, m0));
    }
}

/* v[row[r], b] = max(v[row[r], b], max over row r's entries k of v[idx[k], b] + w[k])
   (w NULL: without the w), rows r = 0 .. n_rows-1 in order (a row may read what an
   earlier one wrote), every lane b: the max-plus form of skfcrf_lane_tree_sum, the grouped
   form's projection tree in the joint Viterbi. */
SKFCRF_CLONES __attribute__((unused)) static void skfcrf_lane_tree_max(
    long n_rows, const long long *ptr, const int *row, const int *idx, const double *w,
    double *v)
{
    long r;
    long long k;
    for (r = 0; r < n_rows; r++) {
        double *target = v + (size_t)row[r] * SKFCRF_LANES;
        skfcrf_v4d m = SKFCRF_LD4(target);
        if (w) {
            for (k = ptr[r]; k < ptr[r + 1]; k++)
                m = skfcrf_v4_max(SKFCRF_LD4(v + (size_t)idx[k] * SKFCRF_LANES) + w[k], m);
        } else {
            for (k = ptr[r]; k < ptr[r + 1]; k++)
                m = skfcrf_v4_max(SKFCRF_LD4(v + (size_t)idx[k] * SKFCRF_LANES), m);
        }
        SKFCRF_ST4(target, m);
    }
}

/* counts[k, b] += sum_t a[t - 1, i, b] * w[t, j, b] over t = 1 .. T-1 in ascending order,
   at every entry k of the CSR rows i (k in ptr[i] .. ptr[i+1], j = idx[k]; L rows): the
   expected transition counts of the chain-wise kernel's lanes (a, w: T x L x lanes,
   interleaved; counts: one entry x lanes).  Four tokens per pass over the entries, each
   count loaded and stored once for the four terms, added one after another. */
SKFCRF_CLONES __attribute__((unused)) static void skfcrf_lane_counts(
    const long long *ptr, const int *idx, long L, const double *a, const double *w, long T,
    double *counts)
{
    const long row = L * SKFCRF_LANES;
    long t = 1, i;
    long long k;
    for (; t + 3 < T; t += 4) {
        const double *at = a + (t - 1) * row, *wt = w + t * row;
        for (i = 0; i < L; i++) {
            const skfcrf_v4d a0 = SKFCRF_LD4(at + i * SKFCRF_LANES);
            const skfcrf_v4d a1 = SKFCRF_LD4(at + row + i * SKFCRF_LANES);
            const skfcrf_v4d a2 = SKFCRF_LD4(at + 2 * row + i * SKFCRF_LANES);
            const skfcrf_v4d a3 = SKFCRF_LD4(at + 3 * row + i * SKFCRF_LANES);
            for (k = ptr[i]; k < ptr[i + 1]; k++) {
                const double *wj = wt + (size_t)idx[k] * SKFCRF_LANES;
                skfcrf_v4d v = SKFCRF_LD4(counts + (size_t)k * SKFCRF_LANES);
                v = v + a0 * SKFCRF_LD4(wj);
                v = v + a1 * SKFCRF_LD4(wj + row);
                v = v + a2 * SKFCRF_LD4(wj + 2 * row);
                v = v + a3 * SKFCRF_LD4(wj + 3 * row);
                SKFCRF_ST4(counts + (size_t)k * SKFCRF_LANES, v);
            }
        }
    }
    for (; t < T; t++) {
        const double *at = a + (t - 1) * row, *wt = w + t * row;
        for (i = 0; i < L; i++) {
            const skfcrf_v4d a0 = SKFCRF_LD4(at + i * SKFCRF_LANES);
            for (k = ptr[i]; k < ptr[i + 1]; k++) {
                double *c = counts + (size_t)k * SKFCRF_LANES;
                SKFCRF_ST4(c, SKFCRF_LD4(c) + a0 * SKFCRF_LD4(wt + (size_t)idx[k] * SKFCRF_LANES));
            }
        }
    }
}

/* dst[row[r], b] += sum_k w[k] * src[idx[k], b] (w NULL: the plain sum; store: = instead
   of +=) over row r's entries in ascending order from 0.0, rows r = 0 .. n_rows-1 in
   order (with src == dst a row may read what an earlier one wrote): the grouped form's
   projection tree (_joint.pyx's _lane_step) over interleaved lanes. */
SKFCRF_CLONES __attribute__((unused)) static void skfcrf_lane_tree_sum(
    long n_rows, const long long *ptr, const int *row, const int *idx, const double *w,
    const double *src, double *dst, int store)
{
    long r;
    long long k;
    for (r = 0; r < n_rows; r++) {
        skfcrf_v4d acc = {0.0, 0.0, 0.0, 0.0};
        double *target = dst + (size_t)row[r] * SKFCRF_LANES;
        if (w) {
            for (k = ptr[r]; k < ptr[r + 1]; k++)
                acc += w[k] * SKFCRF_LD4(src + (size_t)idx[k] * SKFCRF_LANES);
        } else {
            for (k = ptr[r]; k < ptr[r + 1]; k++)
                acc += SKFCRF_LD4(src + (size_t)idx[k] * SKFCRF_LANES);
        }
        SKFCRF_ST4(target, store ? acc : SKFCRF_LD4(target) + acc);
    }
}

/* The chain-wise kernel's lanes at one token of the forward pass (_chainwise.pyx,
   _chain_terms_lanes; L labels x lanes, interleaved).  skfcrf_lane_reach: the
   incoming mass tmp[l, b] is dropped (0) where tmp * DBL_MAX < limit (too little to
   carry through the backward pass), and mx[b] becomes the largest u[l, b] over the
   labels kept, from its value on entry, in ascending order of l. */
SKFCRF_CLONES __attribute__((unused)) static void skfcrf_lane_reach(
    long L, double limit, const double *u, double *tmp, double *mx)
{
    long l;
    const skfcrf_v4d big = {DBL_MAX, DBL_MAX, DBL_MAX, DBL_MAX};
    const skfcrf_v4d lim = {limit, limit, limit, limit};
    skfcrf_v4d m;
    memcpy(&m, mx, sizeof m);
    for (l = 0; l < L; l++) {
        const skfcrf_v4d t = SKFCRF_LD4(tmp + l * SKFCRF_LANES);
        const skfcrf_v4d v = SKFCRF_LD4(u + l * SKFCRF_LANES);
        const skfcrf_v4i kept = ~(t * big < lim);
        const skfcrf_v4i take = kept & (v > m);
        SKFCRF_ST4(tmp + l * SKFCRF_LANES, (skfcrf_v4d)((skfcrf_v4i)t & kept));
        m = skfcrf_v4_select(take, v, m);
    }
    memcpy(mx, &m, sizeof m);
}

/* skfcrf_lane_best: best[b] becomes the largest phi[s, b] over the states whose
   incoming mass tmp[s, b] is positive, from its value on entry, in ascending order of
   s -- the one-sequence loop's comparisons (_joint.pyx's _weigh_token; a NaN never
   wins). */
SKFCRF_CLONES __attribute__((unused)) static void skfcrf_lane_best(
    long S, const double *tmp, const double *phi, double *best)
{
    long s;
    const skfcrf_v4d zero = {0.0, 0.0, 0.0, 0.0};
    skfcrf_v4d m;
    memcpy(&m, best, sizeof m);
    for (s = 0; s < S; s++) {
        const skfcrf_v4d t = SKFCRF_LD4(tmp + s * SKFCRF_LANES);
        const skfcrf_v4d v = SKFCRF_LD4(phi + s * SKFCRF_LANES);
        const skfcrf_v4i take = (t > zero) & (v > m);
        m = skfcrf_v4_select(take, v, m);
    }
    memcpy(best, &m, sizeof m);
}

/* skfcrf_lane_state_scores: phis[s, b] = tied[s] (0.0 with tied NULL) plus u[index[s, c], b]
   for c = 0 .. C-1 in that order, where on[b] (all ones), else 0.0: the joint kernels'
   state scores of four tokens at once (_joint.pyx's _lane_state_scores), from the
   tokens' unary rows interleaved (u: column k of lane b at k * SKFCRF_LANES + b), each
   state's columns read once for all the lanes; every lane's sum has the one-token
   loop's terms in its order. */
SKFCRF_CLONES __attribute__((unused)) static void skfcrf_lane_state_scores(
    long S, long C, const int *index, const double *tied, const double *u,
    const long long *on, double *phis)
{
    long s, c;
    skfcrf_v4i keep;
    memcpy(&keep, on, sizeof keep);
    for (s = 0; s < S; s++) {
        const int *ix = index + s * C;
        const double t0 = tied ? tied[s] : 0.0;
        skfcrf_v4d v = {t0, t0, t0, t0};
        for (c = 0; c < C; c++)
            v = v + SKFCRF_LD4(u + (size_t)ix[c] * SKFCRF_LANES);
        SKFCRF_ST4(phis + s * SKFCRF_LANES, (skfcrf_v4d)((skfcrf_v4i)v & keep));
    }
}

/* skfcrf_lane_shift: out[l, b] = u[l, b] - mx[b] (then exp'd: psi). */
SKFCRF_CLONES __attribute__((unused)) static void skfcrf_lane_shift(
    long L, const double *u, const double *mx, double *out)
{
    long l;
    skfcrf_v4d m;
    memcpy(&m, mx, sizeof m);
    for (l = 0; l < L; l++)
        SKFCRF_ST4(out + l * SKFCRF_LANES, SKFCRF_LD4(u + l * SKFCRF_LANES) - m);
}

/* skfcrf_lane_weigh: where tmp[l, b] > 0 it becomes tmp * psi and is added to
   total[b] (in ascending order of l; elsewhere +0.0 is added, which changes no
   sum), and psi[l, b] becomes 0 where it is not (an unreachable label). */
SKFCRF_CLONES __attribute__((unused)) static void skfcrf_lane_weigh(
    long L, double *tmp, double *psi, double *total)
{
    long l;
    const skfcrf_v4d zero = {0.0, 0.0, 0.0, 0.0};
    skfcrf_v4d tot;
    memcpy(&tot, total, sizeof tot);
    for (l = 0; l < L; l++) {
        const skfcrf_v4d t = SKFCRF_LD4(tmp + l * SKFCRF_LANES);
        const skfcrf_v4d p = SKFCRF_LD4(psi + l * SKFCRF_LANES);
        const skfcrf_v4i pos = t > zero;
        const skfcrf_v4d x = t * p;
        SKFCRF_ST4(tmp + l * SKFCRF_LANES, skfcrf_v4_select(pos, x, t));
        SKFCRF_ST4(psi + l * SKFCRF_LANES, (skfcrf_v4d)((skfcrf_v4i)p & pos));
        tot = tot + (skfcrf_v4d)((skfcrf_v4i)x & pos);
    }
    memcpy(total, &tot, sizeof tot);
}

/* x[i] = 0 where a[i] == 0 (i < n): a label the forward pass never reached gets no
   backward mass either. */
SKFCRF_CLONES __attribute__((unused)) static void skfcrf_lane_clear(
    long n, const double *a, double *x)
{
    long i;
    const skfcrf_v4d zero = {0.0, 0.0, 0.0, 0.0};
    for (i = 0; i + SKFCRF_LANES <= n; i += SKFCRF_LANES) {
        const skfcrf_v4i nz = SKFCRF_LD4(a + i) != zero;
        SKFCRF_ST4(x + i, (skfcrf_v4d)((skfcrf_v4i)SKFCRF_LD4(x + i) & nz));
    }
    for (; i < n; i++)
        if (a[i] == 0.0)
            x[i] = 0.0;
}

/* The lanes' elementwise steps of the forward-backward, where a lane is `on` (-1) or
   off (0): alpha[s, b] = tmp[s, b] / total[b] and psi[s, b] = phi[s, b] where alpha is
   at least `negligible`, else both zero (off lanes: zero). */
SKFCRF_CLONES __attribute__((unused)) static void skfcrf_lane_normalize(
    long S, const double *tmp, const double *phi, const double *total, const long long *on,
    double negligible, double *alpha, double *psi)
{
    long s;
    skfcrf_v4d tot, least = {negligible, negligible, negligible, negligible};
    skfcrf_v4i lanes;
    memcpy(&tot, total, sizeof tot);
    memcpy(&lanes, on, sizeof lanes);
    for (s = 0; s < S; s++) {
        const skfcrf_v4d v = SKFCRF_LD4(tmp + s * SKFCRF_LANES) / tot;
        const skfcrf_v4i keep = lanes & (v >= least);
        SKFCRF_ST4(alpha + s * SKFCRF_LANES, (skfcrf_v4d)((skfcrf_v4i)v & keep));
        SKFCRF_ST4(psi + s * SKFCRF_LANES,
                   (skfcrf_v4d)((skfcrf_v4i)SKFCRF_LD4(phi + s * SKFCRF_LANES) & keep));
    }
}

/* out[s, b] = psi[s, b] * beta[s, b] / norm[b] where lane b is `on`, else 0 (with
   `multiply`, norm holds reciprocals: psi * beta * norm[b]). */
SKFCRF_CLONES __attribute__((unused)) static void skfcrf_lane_scale(
    long S, const double *psi, const double *beta, const double *norm, const long long *on,
    int multiply, double *out)
{
    long s;
    skfcrf_v4d nrm;
    skfcrf_v4i lanes;
    memcpy(&nrm, norm, sizeof nrm);
    memcpy(&lanes, on, sizeof lanes);
    if (multiply) {
        for (s = 0; s < S; s++) {
            const skfcrf_v4d v = SKFCRF_LD4(psi + s * SKFCRF_LANES)
                                 * SKFCRF_LD4(beta + s * SKFCRF_LANES) * nrm;
            SKFCRF_ST4(out + s * SKFCRF_LANES, (skfcrf_v4d)((skfcrf_v4i)v & lanes));
        }
    } else {
        for (s = 0; s < S; s++) {
            const skfcrf_v4d v = SKFCRF_LD4(psi + s * SKFCRF_LANES)
                                 * SKFCRF_LD4(beta + s * SKFCRF_LANES) / nrm;
            SKFCRF_ST4(out + s * SKFCRF_LANES, (skfcrf_v4d)((skfcrf_v4i)v & lanes));
        }
    }
}

#else  /* the same in plain C */

static void skfcrf_lane_product(const long long *ptr, const int *idx, const double *val,
                                long nrows, const double *x, const double *a, double *counts,
                                double *out)
{
    long i;
    int b;
    for (i = 0; i < nrows; i++) {
        double v[4][SKFCRF_LANES] = {{0.0}}, p[SKFCRF_LANES];
        long long k = ptr[i], hi = ptr[i + 1], q;
        for (; k + 4 <= hi; k += 4)
            for (q = 0; q < 4; q++) {
                for (b = 0; b < SKFCRF_LANES; b++) {
                    const double xb = x[(size_t)idx[k + q] * SKFCRF_LANES + b];
                    v[q][b] += val[k + q] * xb;
                    p[b] = counts && a[i * SKFCRF_LANES + b] != 0.0
                        ? a[i * SKFCRF_LANES + b] * xb : 0.0;
                }
                if (counts)
                    counts[k + q] += (p[0] + p[1]) + (p[2] + p[3]);
            }
        for (; k < hi; k++) {
            for (b = 0; b < SKFCRF_LANES; b++) {
                const double xb = x[(size_t)idx[k] * SKFCRF_LANES + b];
                v[0][b] += val[k] * xb;
                p[b] = counts && a[i * SKFCRF_LANES + b] != 0.0
                    ? a[i * SKFCRF_LANES + b] * xb : 0.0;
            }
            if (counts)
                counts[k] += (p[0] + p[1]) + (p[2] + p[3]);
        }
        for (b = 0; b < SKFCRF_LANES; b++)
            out[i * SKFCRF_LANES + b] = (v[0][b] + v[1][b]) + (v[2][b] + v[3][b]);
    }
}

static void skfcrf_lane_tree_max(long n_rows, const long long *ptr, const int *row,
                                 const int *idx, const double *w, double *v)
{
    long r;
    long long k;
    int b;
    for (r = 0; r < n_rows; r++)
        for (b = 0; b < SKFCRF_LANES; b++) {
            double m = v[(size_t)row[r] * SKFCRF_LANES + b], x;
            for (k = ptr[r]; k < ptr[r + 1]; k++) {
                x = w ? v[(size_t)idx[k] * SKFCRF_LANES + b] + w[k]
                      : v[(size_t)idx[k] * SKFCRF_LANES + b];
                m = x > m ? x : m;
            }
            v[(size_t)row[r] * SKFCRF_LANES + b] = m;
        }
}

static void skfcrf_lane_maxplus(const long long *ptr, const int *idx, const double *val,
                                long nrows, const double *x, double *out)
{
    long j;
    long long k, hi;
    int b;
    for (j = 0; j < nrows; j++)
        for (b = 0; b < SKFCRF_LANES; b++) {
            double m[4] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY}, v;
            int q;
            for (k = ptr[j], hi = ptr[j + 1]; k + 4 <= hi; k += 4)
                for (q = 0; q < 4; q++) {
                    v = x[(size_t)idx[k + q] * SKFCRF_LANES + b] + val[k + q];
                    m[q] = v > m[q] ? v : m[q];
                }
            for (; k < hi; k++) {
                v = x[(size_t)idx[k] * SKFCRF_LANES + b] + val[k];
                m[0] = v > m[0] ? v : m[0];
            }
            m[0] = m[1] > m[0] ? m[1] : m[0];
            m[2] = m[3] > m[2] ? m[3] : m[2];
            out[j * SKFCRF_LANES + b] = m[2] > m[0] ? m[2] : m[0];
        }
}

static void skfcrf_lane_sums(const long long *ptr, const int *idx, const double *val,
                             long nrows, const double *x, double *out)
{
    long j;
    long long k;
    int b;
    for (j = 0; j < nrows; j++)
        for (b = 0; b < SKFCRF_LANES; b++) {
            double v = 0.0;
            for (k = ptr[j]; k < ptr[j + 1]; k++)
                v += (val ? val[k] * x[(size_t)idx[k] * SKFCRF_LANES + b]
                      : x[(size_t)idx[k] * SKFCRF_LANES + b]);
            out[j * SKFCRF_LANES + b] = v;
        }
}

static void skfcrf_lane_counts(const long long *ptr, const int *idx, long L, const double *a,
                               const double *w, long T, double *counts)
{
    const long row = L * SKFCRF_LANES;
    long t, i;
    long long k;
    int b;
    for (t = 1; t < T; t++)
        for (i = 0; i < L; i++)
            for (k = ptr[i]; k < ptr[i + 1]; k++)
                for (b = 0; b < SKFCRF_LANES; b++)
                    counts[(size_t)k * SKFCRF_LANES + b] += a[(t - 1) * row + i * SKFCRF_LANES + b]
                        * w[t * row + (size_t)idx[k] * SKFCRF_LANES + b];
}

static void skfcrf_lane_tree_sum(long n_rows, const long long *ptr, const int *row,
                                 const int *idx, const double *w, const double *src,
                                 double *dst, int store)
{
    long r;
    long long k;
    int b;
    for (r = 0; r < n_rows; r++)
        for (b = 0; b < SKFCRF_LANES; b++) {
            double acc = 0.0;
            for (k = ptr[r]; k < ptr[r + 1]; k++)
                acc += (w ? w[k] * src[(size_t)idx[k] * SKFCRF_LANES + b]
                        : src[(size_t)idx[k] * SKFCRF_LANES + b]);
            if (store)
                dst[(size_t)row[r] * SKFCRF_LANES + b] = acc;
            else
                dst[(size_t)row[r] * SKFCRF_LANES + b] += acc;
        }
}

static void skfcrf_lane_reach(long L, double limit, const double *u, double *tmp, double *mx)
{
    long l;
    int b;
    for (l = 0; l < L; l++)
        for (b = 0; b < SKFCRF_LANES; b++) {
            if (tmp[l * SKFCRF_LANES + b] * DBL_MAX < limit)
                tmp[l * SKFCRF_LANES + b] = 0.0;
            else if (u[l * SKFCRF_LANES + b] > mx[b])
                mx[b] = u[l * SKFCRF_LANES + b];
        }
}

static void skfcrf_lane_state_scores(long S, long C, const int *index, const double *tied,
                                     const double *u, const long long *on, double *phis)
{
    long s, c;
    int b;
    for (s = 0; s < S; s++)
        for (b = 0; b < SKFCRF_LANES; b++) {
            double v = tied ? tied[s] : 0.0;
            for (c = 0; c < C; c++)
                v += u[(size_t)index[s * C + c] * SKFCRF_LANES + b];
            phis[s * SKFCRF_LANES + b] = on[b] ? v : 0.0;
        }
}

static void skfcrf_lane_shift(long L, const double *u, const double *mx, double *out)
{
    long l;
    int b;
    for (l = 0; l < L; l++)
        for (b = 0; b < SKFCRF_LANES; b++)
            out[l * SKFCRF_LANES + b] = u[l * SKFCRF_LANES + b] - mx[b];
}

static void skfcrf_lane_weigh(long L, double *tmp, double *psi, double *total)
{
    long l;
    int b;
    for (l = 0; l < L; l++)
        for (b = 0; b < SKFCRF_LANES; b++) {
            const double t = tmp[l * SKFCRF_LANES + b];
            if (t > 0.0) {
                tmp[l * SKFCRF_LANES + b] = t * psi[l * SKFCRF_LANES + b];
                total[b] += tmp[l * SKFCRF_LANES + b];
            } else {
                psi[l * SKFCRF_LANES + b] = 0.0;
            }
        }
}

static void skfcrf_lane_clear(long n, const double *a, double *x)
{
    long i;
    for (i = 0; i < n; i++)
        if (a[i] == 0.0)
            x[i] = 0.0;
}

static void skfcrf_lane_normalize(long S, const double *tmp, const double *phi,
                                  const double *total, const long long *on, double negligible,
                                  double *alpha, double *psi)
{
    long s;
    int b;
    for (s = 0; s < S; s++)
        for (b = 0; b < SKFCRF_LANES; b++) {
            const double v = tmp[s * SKFCRF_LANES + b] / total[b];
            const int keep = on[b] && v >= negligible;
            alpha[s * SKFCRF_LANES + b] = keep ? v : 0.0;
            psi[s * SKFCRF_LANES + b] = keep ? phi[s * SKFCRF_LANES + b] : 0.0;
        }
}

static void skfcrf_lane_scale(long S, const double *psi, const double *beta, const double *norm,
                              const long long *on, int multiply, double *out)
{
    long s;
    int b;
    for (s = 0; s < S; s++)
        for (b = 0; b < SKFCRF_LANES; b++) {
            const double v = psi[s * SKFCRF_LANES + b] * beta[s * SKFCRF_LANES + b];
            out[s * SKFCRF_LANES + b] = on[b] ? (multiply ? v * norm[b] : v / norm[b]) : 0.0;
        }
}

#endif

#endif
