# cython: language_level=3
"""Python access to the array kernels of ``_simd.h``, for tests and benchmarks.

The kernels themselves are called from C by the training and inference loops;
these wrappers let their results be compared with numpy's.
"""
import numpy as np

cdef extern from "_simd.h" nogil:
    void skfcrf_exp_shifted(const double* s, double shift, double* out, int n)
    void skfcrf_matmax_at(int level, const double* x, int nin, const double* P, int nout,
                          double* out, int plus)
    int skfcrf_vector_level()
    void skfcrf_matvec_sum(const double* x, int nin, const double* P, int nout, double* out)
    void skfcrf_gemm_tn_acc(const double* A, const double* B, long K, int M, int N, double* C)


def exp_shifted(x, double shift=0.0):
    """``exp(x - shift)`` elementwise by the kernels' vectorised exp (1-D float64)."""
    cdef double[::1] xv = np.ascontiguousarray(x, dtype=np.float64)
    out = np.empty(xv.shape[0], dtype=np.float64)
    cdef double[::1] ov = out
    if xv.shape[0]:
        skfcrf_exp_shifted(&xv[0], shift, &ov[0], <int> xv.shape[0])
    return out


def _vector_and_matrix(x, P):
    """``x`` and ``P`` as C-contiguous float64 arrays; ``ValueError`` unless ``P`` is
    ``len(x) x n`` with ``len(x), n > 0``."""
    x = np.ascontiguousarray(x, dtype=np.float64)
    P = np.ascontiguousarray(P, dtype=np.float64)
    if x.ndim != 1 or P.ndim != 2 or P.shape[0] != x.shape[0] or x.shape[0] == 0 \
            or P.shape[1] == 0:
        raise ValueError("P must be len(x) x n with len(x), n > 0")
    return x, P


def matmax(x, P, bint plus=False, level=None):
    """``max_i x[i] * P[i, j]`` (or ``x[i] + P[i, j]`` with ``plus``) for every ``j``.

    ``level`` picks the version (0 baseline, 1 AVX2, 2 AVX-512; at most
    :func:`vector_level`); by default the one the kernels use.
    """
    cdef int lev = skfcrf_vector_level() if level is None else level
    if not 0 <= lev <= skfcrf_vector_level():
        raise ValueError(f"level must be in 0..{skfcrf_vector_level()} on this CPU")
    x, P = _vector_and_matrix(x, P)
    cdef double[::1] xv = x
    cdef double[:, ::1] Pv = P
    out = np.empty(Pv.shape[1], dtype=np.float64)
    cdef double[::1] ov = out
    skfcrf_matmax_at(lev, &xv[0], <int> xv.shape[0], &Pv[0, 0], <int> Pv.shape[1], &ov[0],
                     plus)
    return out


def matvec_sum(x, P):
    """``sum_i x[i] * P[i, j]`` for every ``j``, each summed over ``i`` in ascending order."""
    x, P = _vector_and_matrix(x, P)
    cdef double[::1] xv = x
    cdef double[:, ::1] Pv = P
    out = np.empty(Pv.shape[1], dtype=np.float64)
    cdef double[::1] ov = out
    skfcrf_matvec_sum(&xv[0], <int> xv.shape[0], &Pv[0, 0], <int> Pv.shape[1], &ov[0])
    return out


def gemm_tn_acc(A, B, C):
    """``C += A.T @ B`` in place (``C`` float64 C-contiguous), each entry's sum over the
    rows of ``A`` and ``B`` in ascending order."""
    cdef double[:, ::1] Av = np.ascontiguousarray(A, dtype=np.float64)
    cdef double[:, ::1] Bv = np.ascontiguousarray(B, dtype=np.float64)
    cdef double[:, ::1] Cv = C
    if (Av.shape[0] != Bv.shape[0] or Av.shape[0] == 0 or Cv.shape[0] != Av.shape[1]
            or Cv.shape[1] != Bv.shape[1] or Cv.shape[0] == 0 or Cv.shape[1] == 0):
        raise ValueError("A (K x M), B (K x N) and C (M x N) must match, all non-empty")
    skfcrf_gemm_tn_acc(&Av[0, 0], &Bv[0, 0], Av.shape[0], <int> Av.shape[1], <int> Bv.shape[1],
                       &Cv[0, 0])


def vector_level():
    """Widest vector code the matrix kernels run here: 2 AVX-512, 1 AVX2, 0 baseline."""
    return skfcrf_vector_level()
