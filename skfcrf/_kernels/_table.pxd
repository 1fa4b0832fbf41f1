# cython: language_level=3
"""Per-token products through the feature table (header only, no module).

The *feature table* lists, for every observation column ``f``, the weights that
observation carries: entries ``p`` in ``feat_ptr[f]:feat_ptr[f + 1]``, each
scoring column ``ent_col[p]`` of the per-token score matrix.  A token's scores
are ``sum_f x[g, f] * theta[p]`` over its observations' entries, and the
weight gradient collects ``x[g, f] * dscore[g, ent_col[p]]``.

These are the inner loops of :mod:`skfcrf._kernels._features` (whole batches) and of
the fused pseudolikelihood objective (one sequence at a time, in cache).

Both loops are bound by memory latency, not arithmetic: an observation's entries
sit at a random place of the table (megabytes), found through ``feat_ptr[f]``
(another random place), so every stored observation costs two dependent cache
misses.  The loops therefore prefetch ahead in the observations' CSR order
(which runs on across rows, :c:macro:`SKFCRF_PREFETCH_AHEAD`): ``feat_ptr``
of the observation 32 entries ahead, and the table entries (``ent_col`` and the
weights or the gradient) of the one 16 entries ahead, whose ``feat_ptr`` the
first prefetch has brought in.  The prefetches change no result.
"""

cdef extern from *:
    """
    /* PTR_AHEAD = 32, TABLE_AHEAD = 16 stored observations (measured on CoNLL-2000
       chunking tables, 34 M entry updates per pass).  A macro, not a function: GCC
       treats a function whose only effect is a prefetch as pure and deletes its
       calls. */
    #define SKFCRF_PREFETCH_AHEAD(indices, nnz, j, feat_ptr, ent_col, values, rw) do { \\
        if ((j) + 32 < (nnz)) \\
            __builtin_prefetch(&(feat_ptr)[(indices)[(j) + 32]], 0, 0); \\
        if ((j) + 16 < (nnz)) { \\
            long long skfcrf_q_ = (feat_ptr)[(indices)[(j) + 16]]; \\
            __builtin_prefetch(&(ent_col)[skfcrf_q_], 0, 0); \\
            __builtin_prefetch(&(values)[skfcrf_q_], (rw), 0); \\
        } } while (0)
    """
    void prefetch_ahead "SKFCRF_PREFETCH_AHEAD"(
        const int* indices, Py_ssize_t nnz, Py_ssize_t j, const long long* feat_ptr,
        const int* ent_col, const double* values, int write) noexcept nogil


cdef struct CSR:
    const int* indptr
    const int* indices
    const double* data
    Py_ssize_t nnz


cdef inline CSR as_csr(const int[::1] indptr, const int[::1] indices,
                       const double[::1] data) noexcept:
    """A :c:type:`CSR` over the arrays of an ``(indptr, indices, data)`` triple."""
    cdef CSR x
    x.indptr = &indptr[0]
    x.indices = &indices[0] if indices.shape[0] else NULL
    x.data = &data[0] if data.shape[0] else NULL
    x.nnz = indices.shape[0]
    return x


cdef inline tuple triple_or_empty(object triple, Py_ssize_t n_rows):
    """``triple`` itself, or an empty ``(indptr, indices, data)`` of ``n_rows`` rows if None."""
    if triple is not None:
        return tuple(triple)
    import numpy as np
    return (np.zeros(n_rows + 1, dtype=np.int32), np.zeros(0, dtype=np.int32),
            np.zeros(0, dtype=np.float64))


cdef inline void row_scores(CSR x, const long long* feat_ptr, const int* ent_col,
                            const double* theta, Py_ssize_t g, double* out) noexcept nogil:
    """Add row ``g``'s scores ``sum_f x[g, f] theta[p]`` to ``out`` (one score row)."""
    cdef Py_ssize_t j, p
    cdef int f
    cdef double v
    for j in range(x.indptr[g], x.indptr[g + 1]):
        prefetch_ahead(x.indices, x.nnz, j, feat_ptr, ent_col, theta, 0)
        f = x.indices[j]
        v = x.data[j]
        for p in range(feat_ptr[f], feat_ptr[f + 1]):
            out[ent_col[p]] += v * theta[p]


cdef inline void row_gradient(CSR x, const long long* feat_ptr, const int* ent_col,
                              Py_ssize_t g, const double* drow, double* grad) noexcept nogil:
    """Add ``x[g, f] * drow[ent_col[p]]`` to ``grad[p]`` for row ``g``'s table entries."""
    cdef Py_ssize_t j, p
    cdef int f
    cdef double v
    for j in range(x.indptr[g], x.indptr[g + 1]):
        prefetch_ahead(x.indices, x.nnz, j, feat_ptr, ent_col, grad, 1)
        f = x.indices[j]
        v = x.data[j]
        for p in range(feat_ptr[f], feat_ptr[f + 1]):
            grad[p] += v * drow[ent_col[p]]


cdef inline void sequence_scores(CSR direct, CSR diff, int has_diff, const long long* feat_ptr,
                                 const int* ent_col, const double* theta, Py_ssize_t g0,
                                 Py_ssize_t T, Py_ssize_t width, double* out,
                                 double* acc) noexcept nogil:
    """Add the scores of rows ``g0 .. g0+T-1`` to ``out`` (T x width, row-major).

    ``direct`` holds observations used as they are; ``diff`` (when ``has_diff``)
    differences of consecutive tokens, whose running sum within the sequence is
    added.  ``acc`` is ``width`` doubles of scratch.
    """
    cdef Py_ssize_t t, k
    for t in range(T):
        row_scores(direct, feat_ptr, ent_col, theta, g0 + t, out + t * width)
    if not has_diff:
        return
    for k in range(width):
        acc[k] = 0.0
    for t in range(T):
        row_scores(diff, feat_ptr, ent_col, theta, g0 + t, acc)
        for k in range(width):
            out[t * width + k] += acc[k]


cdef inline void suffix_sum_rows(double* a, Py_ssize_t T, Py_ssize_t width) noexcept nogil:
    """Replace each row of ``a`` (T x width) by the sum of it and the rows after it."""
    cdef Py_ssize_t t = T - 2
    cdef Py_ssize_t k
    while t >= 0:
        for k in range(width):
            a[t * width + k] += a[(t + 1) * width + k]
        t = t - 1


cdef inline void sequence_gradient(CSR direct, CSR diff, int has_diff,
                                   const long long* feat_ptr, const int* ent_col,
                                   Py_ssize_t g0, Py_ssize_t T, Py_ssize_t width,
                                   double* dscore, double* grad) noexcept nogil:
    """Add the weight gradient of rows ``g0 .. g0+T-1`` with score gradient ``dscore``.

    ``dscore`` (T x width) is overwritten by its suffix sums when ``has_diff``.
    """
    cdef Py_ssize_t t
    for t in range(T):
        row_gradient(direct, feat_ptr, ent_col, g0 + t, dscore + t * width, grad)
    if not has_diff:
        return
    suffix_sum_rows(dscore, T, width)
    for t in range(T):
        row_gradient(diff, feat_ptr, ent_col, g0 + t, dscore + t * width, grad)
