"""The observation matrix of a batch, prepared for the feature-table products.

Every loss/gradient evaluation computes the per-token scores ``X @ W`` and the
weight gradient ``X.T @ dscore`` through the feature table
(:mod:`skfcrf._kernels._features`); the work is, per non-zero ``x[t, f]``, the number
of table entries of observation ``f``.

Some observations hardly change from one token to the next: a bag-of-concepts
count over a +-10 token window changes only where a concept enters or leaves
the window, a relative-position bin only at a bin edge.  For such a column the
*differences* ``D[t] = X[t] - X[t-1]`` (within a sequence; a sequence's first
row is its observations) have far fewer non-zeros than ``X``, and

* ``X[t] @ W`` is the running sum of ``D[t'] @ W`` over ``t' <= t``;
* ``X.T @ dscore = D.T @ S`` with ``S[t]`` the sum of ``dscore[t']`` over the
  rest of the sequence, ``t' >= t``.

Each column takes the cheaper form.  The difference form costs two extra passes
over the score matrix (running sum, suffix sum), so it is used only when it
saves more table work than that.  Both forms give the same products up to
floating-point summation order.
"""
import numpy as np
import scipy.sparse as sp

from skfcrf._kernels._features import add_gradient, add_scores, differencing_saving
from skfcrf._kernels.graph import following_tokens

#: Cost of the running-sum and suffix-sum passes, in table-entry updates per
#: score-matrix entry; differencing is used when it saves more than that.
PASS_COST = 2.0

#: Most stored entries for which :meth:`ObservationRows.from_csr` makes the
#: differencing choice from the entries alone (a few sequences, e.g. one request's).
SMALL_NNZ = 1 << 16


def _kernel_csr(M):
    """``(indptr, indices, data)`` of a CSR matrix as the kernels take them."""
    return (M.indptr.astype(np.int32), M.indices.astype(np.int32),
            M.data.astype(np.float64))


def token_differences(X, seq_ptr):
    """``D`` with ``D[t] = X[t] - X[t-1]`` inside each sequence, ``D[start] = X[start]``."""
    n = X.shape[0]
    inner = following_tokens(seq_ptr, n)
    shift = sp.csr_matrix((np.ones(inner.size), (inner, inner - 1)), shape=(n, n))
    D = (X - shift @ X).tocsr()
    D.eliminate_zeros()
    return D


def _differencing_pays(indptr, indices, data, seq_ptr, feat_ptr, width):
    """Whether :class:`ObservationRows` would difference some column of the CSR arrays:
    its choice to the bit, made from the stored entries alone (no sparse matrices, no
    pass over every column; :func:`differencing_saving`); None for more than
    :data:`SMALL_NNZ` entries or a row with a column twice."""
    n = len(indptr) - 1
    if not len(indices):
        return False
    if len(indices) > SMALL_NNZ:
        return None
    keys = np.asarray(indices, dtype=np.int64) * n + np.repeat(
        np.arange(n, dtype=np.int64), np.diff(indptr))
    order = np.argsort(keys)
    saving = differencing_saving(keys[order], np.asarray(data, dtype=np.float64)[order],
                                 seq_ptr, feat_ptr, n)
    return None if saving < 0 else float(saving) > PASS_COST * n * width


def _take_rows(csr, rows, n_cols):
    """The rows ``rows`` of a kernel CSR triple (:func:`_kernel_csr`), as another."""
    indptr, indices, data = csr
    M = sp.csr_matrix((data, indices, indptr), shape=(len(indptr) - 1, n_cols))
    return _kernel_csr(M[rows])


def _keep_columns(M, keep):
    """``M`` with the entries of columns outside ``keep`` removed."""
    M = M.copy()
    M.data[~keep[M.indices]] = 0.0
    M.eliminate_zeros()
    return M


class ObservationRows:
    """A batch's observations split into directly used and differenced columns.

    Parameters
    ----------
    X : scipy.sparse matrix (N, F)
        Stacked observations of the batch.
    seq_ptr : int64 ndarray (n_seq + 1,)
        Sequence boundaries in the rows of ``X``.
    table_counts : int ndarray (F,)
        Number of feature-table entries of each observation (its cost per
        non-zero).
    width : int
        Columns of the per-token score matrix.
    """

    def __init__(self, X, seq_ptr, table_counts, width):
        X = sp.csr_matrix(X)
        self.shape = X.shape
        self.seq_ptr = np.ascontiguousarray(seq_ptr, dtype=np.int64)
        n, n_feat = X.shape
        counts = np.asarray(table_counts, dtype=np.float64)
        D = token_differences(X, self.seq_ptr)
        nnz_x = np.bincount(X.indices, minlength=n_feat)
        nnz_d = np.bincount(D.indices, minlength=n_feat)
        differenced = nnz_d < nnz_x
        saving = float((counts * (nnz_x - nnz_d))[differenced].sum())
        if not saving > PASS_COST * n * width:
            differenced[:] = False
        self.differenced = differenced
        direct = _keep_columns(X, ~differenced) if differenced.any() else X
        #: ``(indptr, indices, data)`` of the columns used as they are
        self.direct = _kernel_csr(direct)
        #: the same for the differenced columns, or None
        self.diff = _kernel_csr(_keep_columns(D, differenced)) if differenced.any() else None

    @classmethod
    def from_csr(cls, indptr, indices, data, seq_ptr, n_columns, feat_ptr, width):
        """``ObservationRows(csr_matrix((data, indices, indptr)), seq_ptr,
        np.diff(feat_ptr), width)``, the same to the bit; for a few tokens (one
        request's) read from the arrays themselves, without sparse matrices or passes
        over every column, when no column is differenced.

        ``feat_ptr`` is the feature table's (observation ``f`` has
        ``feat_ptr[f + 1] - feat_ptr[f]`` entries).
        """
        seq_ptr = np.ascontiguousarray(seq_ptr, dtype=np.int64)
        if _differencing_pays(indptr, indices, data, seq_ptr, feat_ptr, width) is False:
            out = object.__new__(cls)
            out.shape = (len(indptr) - 1, int(n_columns))
            out.seq_ptr = seq_ptr
            out.differenced = np.zeros(int(n_columns), dtype=bool)
            out.direct = (np.asarray(indptr, dtype=np.int32), np.asarray(indices, dtype=np.int32),
                          np.asarray(data, dtype=np.float64))
            out.diff = None
            return out
        X = sp.csr_matrix((data, indices, indptr), shape=(len(indptr) - 1, n_columns))
        return cls(X, seq_ptr, np.diff(feat_ptr), width)

    def take(self, rows, seq_ptr):
        """These rows' observations for the whole sequences whose tokens are ``rows``
        (in order), ``seq_ptr`` their boundaries in the result: the rows copied, with
        this batch's choice of differenced columns (a sequence's differences are its
        own), instead of differencing and choosing again."""
        rows = np.asarray(rows, dtype=np.int64)
        out = object.__new__(type(self))
        out.shape = (len(rows), self.shape[1])
        out.seq_ptr = np.ascontiguousarray(seq_ptr, dtype=np.int64)
        if out.seq_ptr[-1] != len(rows):
            raise ValueError(f"seq_ptr ends at {out.seq_ptr[-1]}, not at the {len(rows)} rows")
        out.differenced = self.differenced
        out.direct = _take_rows(self.direct, rows, self.shape[1])
        out.diff = None if self.diff is None else _take_rows(self.diff, rows, self.shape[1])
        return out

    @property
    def has_differences(self):
        return self.diff is not None

    def add_scores(self, feat_ptr, ent_col, theta, out, n_threads=1, clear=False, bias=None):
        """Add ``X @ W`` to ``out`` (N, width), ``W`` given by the feature table
        (``clear``: write it, whatever ``out`` held), and ``bias`` (per score
        column, optional) to every row in the same pass."""
        add_scores(self.seq_ptr, self.direct, self.diff, feat_ptr, ent_col, theta, out,
                   n_threads, clear, bias)

    def add_gradient(self, feat_ptr, ent_col, dscore, grad, n_threads=1, col_sums=None):
        """Add ``X.T @ dscore`` (mapped through the feature table) to ``grad``, and
        the column sums of ``dscore`` to ``col_sums`` (optional) in the same pass.

        ``dscore`` is overwritten (by its suffix sums) when columns are
        differenced.
        """
        add_gradient(self.seq_ptr, self.direct, self.diff, feat_ptr, ent_col, dscore, grad,
                     n_threads, col_sums)
