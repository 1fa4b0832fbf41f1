# cython: language_level=3
"""Per-token products through the feature table (header only, no module).

The *feature table* lists, for every observation column ``f``, the weights that
observation carries: entries ``p`` in ``feat_ptr[f]:feat_ptr[f + 1]``, each
scoring column ``ent_col[p]`` of the per-token score matrix.  A token's scores
are ``sum_f x[g, f] * theta[p]`` over its observations' entries, and the
weight gradient collects ``x[g, f] * dscore[g, ent_col[p]]``.

These are the inner loops of :mod:`skfcrf._kernels._features` (whole batches) and of
the fused objectives (one sequence at a time, in cache), in C in ``_simd.h``
(``skfcrf_row_scores``, ``skfcrf_row_gradient``, one token each).

*Dense rows* (optional; :func:`skfcrf._kernels._contract.dense_rows`): an
observation with several entries, all in 32 score columns from the table's first
-- a frequent one, which carries weights for many labels of a chain -- is stored again
as one row of values, zeros where it has no entry: as many as the rows' columns need,
rounded up to a vector of 8 (8 for a 7-label chain's table, 32 at most; at most
:data:`~skfcrf._kernels._contract.DENSE_MAX_ROWS` rows, those updated most
often, so that they stay in cache).  A token's dense rows are summed in vector
registers and added to its score row once, instead of one scattered entry at a
time (the scores equal the entry-by-entry sums up to rounding); their gradient is
collected in such rows (a vector update each) and gathered back to the entries
afterwards.

Over a large table the other observations are bound by memory latency, not
arithmetic: an observation's entries sit at a random place of the table (megabytes),
found through ``feat_ptr[f]`` (another random place), so every stored observation
costs two dependent cache misses.  A caller that keeps the batch can resolve its
observations once (:func:`skfcrf._kernels._contract.resolve_slots`, the chain-wise
objectives do): per stored observation one int64 *slot* with the start and count of
its entries, or its dense row, in ``CSR.slot``; the loops then read that sequential
array instead of the two lookups (x1.2 an evaluation on CoNLL-2000 chunking).
Otherwise the loops prefetch ahead in the
observations' CSR order (which runs on across rows, ``SKFCRF_PREFETCH_AHEAD`` in
``_simd.h``): ``feat_ptr`` of the observation 32 entries ahead, and the table
entries (``ent_col`` and the weights or the gradient) of the one 16 entries ahead,
whose ``feat_ptr`` the first prefetch has brought in.  The prefetches change no
result.
"""

cdef extern from "_simd.h" nogil:
    # one token's products (C, vectorised AVX-512/AVX2 where the CPU has them), with
    # the prefetching described above; the dense rows (see the module docstring)
    ctypedef struct Dense "skfcrf_dense":
        const int* of           # per observation: its dense row, or -1 (entries one by one)
        double* values          # the rows, width doubles each: theta's values, or a gradient
        long base               # the rows' first score column
        long width              # the rows' length: a multiple of 8, at most 32
    void skfcrf_row_scores(const int* indptr, const int* indices, const double* data,
                           long nnz, long g, const long long* feat_ptr, const int* ent_col,
                           const double* theta, double* out, long width, const Dense* dense)
    void skfcrf_row_gradient(const int* indptr, const int* indices, const double* data,
                             long nnz, long g, const long long* feat_ptr, const int* ent_col,
                             const double* drow, double* grad, const Dense* dense)
    # the same over resolved observations (``CSR.slot``, see the module docstring)
    void skfcrf_row_scores_slots(const int* indptr, const long long* slot,
                                 const double* data, long nnz, long g, const int* ent_col,
                                 const double* theta, double* out, long width,
                                 const Dense* dense)
    void skfcrf_row_gradient_slots(const int* indptr, const long long* slot,
                                   const double* data, long nnz, long g, const int* ent_col,
                                   const double* drow, double* grad, const Dense* dense)


cdef struct CSR:
    const int* indptr
    const int* indices
    const double* data
    Py_ssize_t nnz
    const long long* slot   # the observations resolved against the table, or NULL


cdef inline void row_scores(CSR x, Py_ssize_t g, const long long* feat_ptr, const int* ent_col,
                            const double* theta, double* out, Py_ssize_t width,
                            const Dense* dense) noexcept nogil:
    """Row ``g``'s products into ``out`` (through ``x.slot`` when it has them)."""
    if x.slot != NULL:
        skfcrf_row_scores_slots(x.indptr, x.slot, x.data, x.nnz, g, ent_col, theta, out,
                                width, dense)
    else:
        skfcrf_row_scores(x.indptr, x.indices, x.data, x.nnz, g, feat_ptr, ent_col, theta,
                          out, width, dense)


cdef inline void row_gradient(CSR x, Py_ssize_t g, const long long* feat_ptr,
                              const int* ent_col, const double* drow, double* grad,
                              const Dense* dense) noexcept nogil:
    """Row ``g``'s gradient into ``grad`` (through ``x.slot`` when it has them)."""
    if x.slot != NULL:
        skfcrf_row_gradient_slots(x.indptr, x.slot, x.data, x.nnz, g, ent_col, drow, grad,
                                  dense)
    else:
        skfcrf_row_gradient(x.indptr, x.indices, x.data, x.nnz, g, feat_ptr, ent_col, drow,
                            grad, dense)


cdef inline CSR as_csr(const int[::1] indptr, const int[::1] indices,
                       const double[::1] data) noexcept:
    """A :c:type:`CSR` over the arrays of an ``(indptr, indices, data)`` triple."""
    cdef CSR x
    x.indptr = &indptr[0]
    x.indices = &indices[0] if indices.shape[0] else NULL
    x.data = &data[0] if data.shape[0] else NULL
    x.nnz = indices.shape[0]
    x.slot = NULL
    return x


cdef inline tuple triple_or_empty(object triple, Py_ssize_t n_rows):
    """``triple`` itself, or an empty ``(indptr, indices, data)`` of ``n_rows`` rows if None."""
    if triple is not None:
        return tuple(triple)
    import numpy as np
    return (np.zeros(n_rows + 1, dtype=np.int32), np.zeros(0, dtype=np.int32),
            np.zeros(0, dtype=np.float64))


cdef inline void add_row_biases(double* out, Py_ssize_t T, Py_ssize_t width, const double* bias,
                                const int* ranges, int n_ranges) noexcept nogil:
    """Add ``bias`` (per score column) to each row of ``out`` (T x width) in the columns of
    ``ranges`` (``n_ranges`` pairs ``lo, hi``)."""
    cdef Py_ssize_t t, k, r
    for t in range(T):
        for r in range(n_ranges):
            for k in range(ranges[2 * r], ranges[2 * r + 1]):
                out[t * width + k] += bias[k]


cdef inline void add_to_column_sums(double* col_sums, const double* row, const int* ranges,
                                    int n_ranges) noexcept nogil:
    """Add ``row`` (one token's score columns) to ``col_sums`` in the columns of ``ranges``."""
    cdef Py_ssize_t k, r
    for r in range(n_ranges):
        for k in range(ranges[2 * r], ranges[2 * r + 1]):
            col_sums[k] += row[k]


cdef inline void sequence_scores(CSR direct, CSR diff, int has_diff, const long long* feat_ptr,
                                 const int* ent_col, const double* theta, Py_ssize_t g0,
                                 Py_ssize_t T, Py_ssize_t width, double* out,
                                 double* acc, const Dense* dense, const int* ranges,
                                 int n_ranges, const double* bias=NULL) noexcept nogil:
    """Add the scores of rows ``g0 .. g0+T-1`` to ``out`` (T x width, row-major).

    ``direct`` holds observations used as they are; ``diff`` (when ``has_diff``)
    differences of consecutive tokens, whose running sum within the sequence is
    added.  ``acc`` is ``width`` doubles of scratch; ``dense``: the dense rows
    (their values theta's), or NULL.  ``ranges``: ``n_ranges`` pairs ``lo, hi``
    of score columns that hold every column the table's entries and dense rows
    write (a table reduced to some chains'); the running sums touch those alone.
    NULL: every column.  ``bias`` (optional, per score column; then ``ranges``
    must hold every column it is added to): added to every row last, in the
    running sums' pass when there is one (a pass over the rows fewer).
    """
    cdef Py_ssize_t t, k, r
    cdef int whole[2]
    for t in range(T):
        row_scores(direct, g0 + t, feat_ptr, ent_col, theta, out + t * width, width, dense)
    if ranges == NULL:
        whole[0], whole[1] = 0, <int> width
        ranges, n_ranges = whole, 1
    if not has_diff:
        if bias != NULL:
            add_row_biases(out, T, width, bias, ranges, n_ranges)
        return
    for r in range(n_ranges):
        for k in range(ranges[2 * r], ranges[2 * r + 1]):
            acc[k] = 0.0
    for t in range(T):
        row_scores(diff, g0 + t, feat_ptr, ent_col, theta, acc, width, dense)
        for r in range(n_ranges):
            if bias == NULL:
                for k in range(ranges[2 * r], ranges[2 * r + 1]):
                    out[t * width + k] += acc[k]
            else:
                for k in range(ranges[2 * r], ranges[2 * r + 1]):
                    out[t * width + k] = (out[t * width + k] + acc[k]) + bias[k]


cdef inline void suffix_sum_rows(double* a, Py_ssize_t T, Py_ssize_t width, const int* ranges,
                                 int n_ranges) noexcept nogil:
    """Replace each row of ``a`` (T x width) by the sum of it and the rows after it, in the
    columns of ``ranges`` (``n_ranges`` pairs ``lo, hi``)."""
    cdef Py_ssize_t t = T - 2
    cdef Py_ssize_t k, r
    while t >= 0:
        for r in range(n_ranges):
            for k in range(ranges[2 * r], ranges[2 * r + 1]):
                a[t * width + k] += a[(t + 1) * width + k]
        t = t - 1


cdef inline void sequence_gradient(CSR direct, CSR diff, int has_diff,
                                   const long long* feat_ptr, const int* ent_col,
                                   Py_ssize_t g0, Py_ssize_t T, Py_ssize_t width,
                                   double* dscore, double* grad,
                                   const Dense* dense, const int* ranges,
                                   int n_ranges, double* col_sums=NULL) noexcept nogil:
    """Add the weight gradient of rows ``g0 .. g0+T-1`` with score gradient ``dscore``.

    ``dscore`` (T x width) is overwritten by its suffix sums when ``has_diff`` (in
    the columns of ``ranges``, as :func:`sequence_scores`; NULL: every column);
    ``dense``: the dense rows (their gradient into its values; ``dscore`` then
    needs 32 readable doubles from its last row's dense columns), or NULL.
    ``col_sums`` (optional, per score column): the rows of ``dscore`` as given
    are added to it in the columns of ``ranges``, in ascending order (the biases'
    gradient), in the pass that reads them for the table.
    """
    cdef Py_ssize_t t
    cdef int whole[2]
    if ranges == NULL:
        whole[0], whole[1] = 0, <int> width
        ranges, n_ranges = whole, 1
    for t in range(T):
        row_gradient(direct, g0 + t, feat_ptr, ent_col, dscore + t * width, grad, dense)
        if col_sums != NULL:
            add_to_column_sums(col_sums, dscore + t * width, ranges, n_ranges)
    if not has_diff:
        return
    suffix_sum_rows(dscore, T, width, ranges, n_ranges)
    for t in range(T):
        row_gradient(diff, g0 + t, feat_ptr, ent_col, dscore + t * width, grad, dense)
