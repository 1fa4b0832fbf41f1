# cython: language_level=3
"""Observation-weight products through the feature table, for whole batches.

The *feature table* lists, for every observation column ``f``, the weights that
observation carries: entries ``p`` in ``feat_ptr[f]:feat_ptr[f + 1]``, each
adding ``x[g, f] * theta[p]`` to column ``ent_col[p]`` of the per-token score
matrix.  This is the "supported"/"all" structure of every template at once;
its cost is ``nnz(X) x (weights per observation)`` rather than
``nnz(X) x (labels)`` of a dense product.

Observations come in two CSR matrices with a row per token
(:mod:`skfcrf.model._observation_rows`): ``direct`` columns as they are,
and optionally ``diff`` columns stored as differences of consecutive tokens
within a sequence.  Both functions run over sequences in parallel; the inner
loops are those of :mod:`skfcrf._kernels._table`.
"""
from cython.parallel cimport parallel, prange, threadid
from libc.string cimport memset

import numpy as np

from ._alloc cimport Block, allocate
from ._table cimport CSR, as_csr, sequence_gradient, sequence_scores, triple_or_empty


def add_scores(const long long[::1] seq_ptr, direct, diff, const long long[::1] feat_ptr,
               const int[::1] ent_col, const double[::1] theta, double[:, ::1] out,
               int n_threads=1, bint clear=False, bias=None):
    """Add ``X @ W`` to ``out`` (N, width), ``W`` given by the feature table.

    ``direct`` and ``diff`` are ``(indptr, indices, data)`` triples (``diff``
    may be None); ``theta`` holds one weight per table entry (its first
    ``feat_ptr[-1]`` values are used).  ``clear``: write ``X @ W`` instead, each
    sequence's rows zeroed by the thread that adds to them, just before (an
    array reused between evaluations is then neither faulted in again nor
    cleared in a pass of its own).  ``bias`` (optional, ``width`` float64): added
    to every row after its products, in the pass that sums the differenced
    columns (the bits of adding it to the result afterwards, without that pass
    over the whole array).
    """
    cdef Py_ssize_t n_seq = seq_ptr.shape[0] - 1
    cdef Py_ssize_t n = out.shape[0]
    cdef Py_ssize_t width = out.shape[1]
    cdef int has_diff = diff is not None
    d_ip, d_ix, d_v = direct
    f_ip, f_ix, f_v = triple_or_empty(diff, n)
    cdef CSR xd = as_csr(d_ip, d_ix, d_v)
    cdef CSR xf = as_csr(f_ip, f_ix, f_v)
    cdef Py_ssize_t s, g0
    cdef double* acc
    cdef const double[::1] bias_view
    cdef const double* bias_ptr = NULL
    n_threads = max(n_threads, 1)
    if bias is not None:
        bias_view = np.ascontiguousarray(bias, dtype=np.float64)
        if bias_view.shape[0] != width:
            raise ValueError(f"bias must have {width} values, not {bias_view.shape[0]}")
        if width:
            bias_ptr = &bias_view[0]
    if n == 0 or width == 0:
        return
    cdef Block scratch = allocate(n_threads * width, sizeof(double))
    with nogil, parallel(num_threads=n_threads):
        acc = <double*> scratch.ptr + threadid() * width
        for s in prange(n_seq, schedule="dynamic"):
            g0 = seq_ptr[s]
            if clear:
                memset(&out[g0, 0], 0, (seq_ptr[s + 1] - g0) * width * sizeof(double))
            sequence_scores(xd, xf, has_diff, &feat_ptr[0], &ent_col[0], &theta[0], g0,
                            seq_ptr[s + 1] - g0, width, &out[g0, 0], acc, NULL, NULL, 0,
                            bias_ptr)


def add_gradient(const long long[::1] seq_ptr, direct, diff, const long long[::1] feat_ptr,
                 const int[::1] ent_col, double[:, ::1] dscore, double[::1] grad,
                 int n_threads=1, double[::1] col_sums=None):
    """Add ``X.T @ dscore``, mapped through the feature table, to ``grad``.

    ``dscore`` (N, width) is the gradient w.r.t. the per-token scores; it is
    overwritten (by suffix sums within each sequence) when ``diff`` is given.
    Each thread accumulates into its own copy of ``grad``.  ``col_sums``
    (optional, ``width``): the column sums of ``dscore`` as given (the biases'
    gradient) are added to it, each thread summing its rows in the pass that
    reads them for the table (instead of a pass of their own over the array).
    """
    cdef Py_ssize_t n_seq = seq_ptr.shape[0] - 1
    cdef Py_ssize_t n = dscore.shape[0]
    cdef Py_ssize_t width = dscore.shape[1]
    cdef Py_ssize_t n_table = feat_ptr[feat_ptr.shape[0] - 1]
    cdef int has_diff = diff is not None
    n_threads = max(n_threads, 1)
    d_ip, d_ix, d_v = direct
    f_ip, f_ix, f_v = triple_or_empty(diff, n)
    cdef CSR xd = as_csr(d_ip, d_ix, d_v)
    cdef CSR xf = as_csr(f_ip, f_ix, f_v)
    if col_sums is not None and col_sums.shape[0] != width:
        raise ValueError(f"col_sums must have {width} values, not {col_sums.shape[0]}")
    if n == 0 or width == 0 or n_table == 0:
        if col_sums is not None and n and width:
            np.add(col_sums, np.asarray(dscore).sum(axis=0), out=np.asarray(col_sums))
        return
    acc_arr = np.zeros((n_threads, n_table), dtype=np.float64)
    cdef double[:, ::1] acc = acc_arr
    sums_arr = np.zeros((n_threads, width if col_sums is not None else 1), dtype=np.float64)
    cdef double[:, ::1] sums = sums_arr
    cdef bint with_sums = col_sums is not None
    cdef Py_ssize_t s, g0
    with nogil, parallel(num_threads=n_threads):
        # sequences dealt round-robin, not on demand: each thread's sum then has the
        # same terms in the same order in every run (the same bits for a thread count)
        for s in prange(n_seq, schedule="static", chunksize=1):
            g0 = seq_ptr[s]
            sequence_gradient(xd, xf, has_diff, &feat_ptr[0], &ent_col[0], g0,
                              seq_ptr[s + 1] - g0, width, &dscore[g0, 0],
                              &acc[threadid(), 0], NULL, NULL, 0,
                              &sums[threadid(), 0] if with_sums else NULL)
    np.add(grad[:n_table], acc_arr.sum(axis=0), out=np.asarray(grad[:n_table]))
    if with_sums:
        np.add(col_sums, sums_arr.sum(axis=0), out=np.asarray(col_sums))


def differencing_saving(const long long[::1] keys, const double[::1] x,
                        const long long[::1] seq_ptr, const long long[::1] feat_ptr,
                        Py_ssize_t n):
    """Table work saved by differencing the columns where it saves any, or -1.

    ``keys`` are the stored entries of an ``(n, F)`` observation matrix as
    ``column * n + row``, sorted, and ``x`` their values; ``seq_ptr`` its
    sequences.  Per column, ``nnz(X) - nnz(D)`` (``D[t] = X[t] - X[t-1]`` inside a
    sequence) sums over its entries one, less one where ``D`` is non-zero, less
    one where the next row of the sequence has no entry (``D = -x`` there); the
    saving sums ``(feat_ptr[f + 1] - feat_ptr[f]) * (nnz(X) - nnz(D))`` over the
    columns where that is positive (:mod:`skfcrf.model._observation_rows`).
    -1 when a key repeats (a row with a column twice).
    """
    cdef Py_ssize_t m = keys.shape[0], i, n_seq = seq_ptr.shape[0] - 1, s
    cdef long long col, row, prev_col = -1, change = 0, saving = 0
    cdef double d
    cdef bint linked
    if m == 0:
        return 0
    start_arr = np.zeros(n + 1, np.uint8)      # rows without a predecessor (and row n)
    cdef unsigned char[::1] start = start_arr
    for s in range(n_seq + 1):
        start[seq_ptr[s]] = 1
    for i in range(m):
        if i and keys[i] == keys[i - 1]:
            return -1
        col = keys[i] // n
        row = keys[i] - col * n
        if col != prev_col:
            if prev_col >= 0 and change > 0:
                saving += (feat_ptr[prev_col + 1] - feat_ptr[prev_col]) * change
            prev_col, change = col, 0
        linked = i > 0 and keys[i - 1] == keys[i] - 1 and not start[row]
        d = x[i] - x[i - 1] if linked else x[i]
        if d == 0:
            change += 1
        if not start[row + 1] and not (i + 1 < m and keys[i + 1] == keys[i] + 1) and x[i] != 0:
            change -= 1
    if change > 0:
        saving += (feat_ptr[prev_col + 1] - feat_ptr[prev_col]) * change
    return saving
