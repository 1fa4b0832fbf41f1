# cython: language_level=3
"""Observation-weight products through the feature table.

The *feature table* lists, for every observation column ``f``, the weights that
observation carries: entries ``p`` in ``feat_ptr[f]:feat_ptr[f + 1]``, each
adding ``x[g, f] * theta[p]`` to column ``ent_col[p]`` of the per-token score
matrix.  This is the "supported"/"all" structure of every template at once;
its cost is ``nnz(X) x (weights per observation)`` rather than
``nnz(X) x (labels)`` of a dense product, and it parallelises without races.

:func:`running_scores` and :func:`suffix_sums` serve observation columns that
are stored as differences between consecutive tokens
(:mod:`skfcrf.estimators._observation_rows`).
"""
from cython.parallel cimport parallel, prange
from libc.stdlib cimport free, malloc

import numpy as np


def token_scores(const int[::1] indptr, const int[::1] indices, const double[::1] data,
                 const long long[::1] feat_ptr, const int[::1] ent_col,
                 const double[::1] theta, double[:, ::1] out, int n_threads=1):
    """Add ``X @ W`` to ``out`` (N, W) where W is given by the feature table.

    ``X`` is CSR ``(N, F)`` given by ``indptr``/``indices``/``data``; ``theta``
    holds one weight per table entry (its first ``feat_ptr[F]`` values).
    """
    cdef Py_ssize_t n = out.shape[0]
    cdef Py_ssize_t g, j, p, f
    cdef double v
    with nogil:
        for g in prange(n, num_threads=n_threads, schedule="static"):
            for j in range(indptr[g], indptr[g + 1]):
                f = indices[j]
                v = data[j]
                for p in range(feat_ptr[f], feat_ptr[f + 1]):
                    out[g, ent_col[p]] += v * theta[p]


def table_gradient(const int[::1] t_indptr, const int[::1] t_indices, const double[::1] t_data,
                   const long long[::1] feat_ptr, const int[::1] ent_col,
                   const double[:, ::1] dscore, double[::1] grad, int n_threads=1):
    """Add ``sum_g x[g, f] * dscore[g, ent_col[p]]`` to ``grad[p]`` for every table entry.

    ``t_*`` is the CSR form of ``X.T`` (observation-major), so every
    observation's entries are summed by one thread with no write conflicts.
    """
    cdef Py_ssize_t n_feat = feat_ptr.shape[0] - 1
    cdef Py_ssize_t f, j, p, g
    cdef double v
    with nogil:
        for f in prange(n_feat, num_threads=n_threads, schedule="guided"):
            for j in range(t_indptr[f], t_indptr[f + 1]):
                g = t_indices[j]
                v = t_data[j]
                for p in range(feat_ptr[f], feat_ptr[f + 1]):
                    grad[p] += v * dscore[g, ent_col[p]]


def running_scores(const long long[::1] seq_ptr, const int[::1] indptr, const int[::1] indices,
                   const double[::1] data, const long long[::1] feat_ptr, const int[::1] ent_col,
                   const double[::1] theta, double[:, ::1] out, int n_threads=1):
    """Add the running sum of ``D @ W`` within each sequence to ``out`` (N, W).

    ``D`` (CSR, ``N`` rows) holds differences of consecutive tokens' observations
    (a sequence's first row holds its observations), so the running sum of
    ``D[t] @ W`` from the sequence start is ``X[t] @ W``.  Slowly varying
    observations (bag-of-concepts windows, position bins) have far fewer
    entries in ``D`` than in ``X``.
    """
    cdef Py_ssize_t n_seq = seq_ptr.shape[0] - 1
    cdef Py_ssize_t width = out.shape[1]
    cdef Py_ssize_t s, g, j, p, f, k
    cdef double v
    cdef double* acc
    with nogil, parallel(num_threads=n_threads):
        acc = <double*> malloc(sizeof(double) * (width if width > 0 else 1))
        for s in prange(n_seq, schedule="dynamic"):
            for k in range(width):
                acc[k] = 0.0
            for g in range(seq_ptr[s], seq_ptr[s + 1]):
                for j in range(indptr[g], indptr[g + 1]):
                    f = indices[j]
                    v = data[j]
                    for p in range(feat_ptr[f], feat_ptr[f + 1]):
                        acc[ent_col[p]] += v * theta[p]
                for k in range(width):
                    out[g, k] += acc[k]
        free(acc)


def suffix_sums(const long long[::1] seq_ptr, double[:, ::1] a, int n_threads=1):
    """Replace each row of ``a`` by the sum of it and the rows after it in its sequence.

    With ``a`` the gradient w.r.t. the per-token scores, ``D.T @ a`` afterwards is
    the gradient of the weights reached through the differences ``D`` of
    :func:`running_scores`.
    """
    cdef Py_ssize_t n_seq = seq_ptr.shape[0] - 1
    cdef Py_ssize_t width = a.shape[1]
    cdef Py_ssize_t s, g, k
    with nogil:
        for s in prange(n_seq, num_threads=n_threads, schedule="dynamic"):
            g = seq_ptr[s + 1] - 2
            while g >= seq_ptr[s]:
                for k in range(width):
                    a[g, k] += a[g + 1, k]
                g = g - 1
