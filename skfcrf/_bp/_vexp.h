/* exp() over arrays, in a form the compiler turns into SIMD code.
 *
 * libm's exp is a call per element and the compiler cannot vectorise it
 * without -ffast-math (which would also break the -inf/NaN handling the
 * kernels rely on).  The pseudolikelihood kernel exponentiates every label
 * score of every variable once per evaluation, so this file does it with
 * straight-line arithmetic gcc/clang vectorise at -O3:
 *
 *   exp(x) = 2^k exp(r),  k = round(x / ln 2),  r = x - k ln 2,  |r| <= ln(2) / 2,
 *
 * with k found by the round-to-nearest "magic number" addition (no float-to-int
 * conversion), r in two steps (Cody-Waite: ln 2 split into a high part exact in
 * k * hi and a low part), exp(r) by its Taylor polynomial of degree 13
 * (truncation below 4e-18 relative) evaluated by Estrin's scheme, and 2^k built
 * from k's bits.
 *
 * Domain: meant for x <= 0 (scores minus their maximum).  For -708.39 <= x <= 709
 * the relative error is a few units in the last place; below -708.39 (where exp
 * leaves the normal range) and for x = -inf the result is 0; NaN gives NaN.
 */
#ifndef SKFCRF_VEXP_H
#define SKFCRF_VEXP_H

#include <stdint.h>
#include <string.h>

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

/* On x86-64 Linux with GCC the array loop is compiled three times (AVX-512, AVX2,
   SSE2) and the loader picks the widest the CPU runs (an ifunc): the baseline
   build may only assume SSE2, which gives two lanes, while a 2019 server core has
   eight.  Elsewhere it is compiled once for the baseline. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define SKFCRF_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define SKFCRF_CLONES
#endif

/* out[i] = exp(s[i] - shift) for i < n (out may be s). */
SKFCRF_CLONES static void skfcrf_exp_shifted(const double *s, double shift, double *out, int n)
{
    int i;
    for (i = 0; i < n; i++)
        out[i] = skfcrf_exp1(s[i] - shift);
}

#endif
