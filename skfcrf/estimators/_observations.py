"""Turning observation sequences into one stacked sparse matrix, with pre-pruning.

Accepted per-sequence forms (see DESIGN.md): a list of per-token dicts
``{name: value}``; a list of per-token lists of names (value 1.0); or a 2-D
scipy.sparse matrix / numeric array ``(n_tokens, n_observations)`` whose columns
mean the same in every sequence.

Observation values must be finite and at most :data:`MAX_OBSERVATION_VALUE` in
magnitude: a potential is a sum of weight x value products, and beyond that
bound the first solver steps (weights of order one, or of order ``sigma``)
overflow the potentials and the squared gradient norm to ``inf``.
"""
import numbers

import numpy as np
import scipy.sparse as sp

from .._kernels._dicts import read_dict_sequence

#: Largest accepted magnitude of an observation value (see the module docstring).
MAX_OBSERVATION_VALUE = 1e100

NAMES = "names"
MATRIX = "matrix"


def _is_matrix(seq):
    return sp.issparse(seq) or (isinstance(seq, np.ndarray) and seq.ndim == 2
                                and seq.dtype.kind in "fiub")


def _check_sequence_list(X):
    if X is None or isinstance(X, (str, bytes)) or sp.issparse(X):
        raise ValueError(
            "X must be a list of sequences (each a list of per-token observation dicts, "
            f"lists of observation names, or a 2-D sparse matrix), got {type(X).__name__}"
        )
    try:
        X = list(X)
    except TypeError:
        raise ValueError(f"X must be a list of sequences, got {type(X).__name__}") from None
    if not X:
        raise ValueError("X is empty: at least one sequence is required")
    return X


def _token_by_token(i, tokens, vocabulary, grow):
    """Sequence ``X[i]`` read token by token: ``(indices, values, counts)`` with the
    values as given (a list, checked by the caller); ValueError naming the first
    token that is not a dict or list of names, or a name that is not a string."""
    indices, data, counts = [], [], []
    lookup = vocabulary.get
    for t, tok in enumerate(tokens):
        if isinstance(tok, dict):
            items = tok.items()
        elif isinstance(tok, (list, tuple, set, frozenset)):
            items = ((name, 1.0) for name in tok)
        else:
            raise ValueError(
                f"X[{i}] token {t}: expected a dict of observations or a list of "
                f"observation names, got {type(tok).__name__}"
            )
        before = len(indices)
        for name, value in items:
            try:
                j = lookup(name)
            except TypeError:  # unhashable, e.g. a nested list of names
                raise ValueError(
                    f"X[{i}] token {t}: observation names must be strings, got {name!r}"
                ) from None
            if j is None:
                if not grow:
                    continue
                if not isinstance(name, str):
                    raise ValueError(
                        f"X[{i}] token {t}: observation names must be strings, got {name!r}"
                    )
                j = vocabulary[name] = len(vocabulary)
            indices.append(j)
            data.append(value)
        counts.append(len(indices) - before)
    return np.asarray(indices, dtype=np.int64), data, np.asarray(counts, dtype=np.int64)


def _values(data, indptr, seq_ptr):
    """The observation values as float64; ValueError naming the first non-number.

    A number is a real scalar (bool, int, float, numpy scalar): numeric strings,
    complex numbers and arrays are refused, not converted.
    """
    try:
        values = np.asarray(data) if data else np.zeros(0)
    except (TypeError, ValueError):  # e.g. arrays of different lengths among the values
        values = None
    if values is not None and values.ndim == 1 and values.dtype.kind in "fiub":
        return values.astype(np.float64, copy=False)
    bad = next((k for k, v in enumerate(data) if not isinstance(v, numbers.Real)), None)
    if bad is not None:
        row = int(np.searchsorted(indptr, bad, side="right") - 1)
        s, t = _locate(seq_ptr, row)
        raise ValueError(
            f"X[{s}] token {t}: observation values must be numbers, got {data[bad]!r}")
    # all real but not one numpy dtype, e.g. ints beyond int64: convert one by one
    return np.array([_real(v) for v in data], dtype=np.float64)


def _real(v):
    try:
        return float(v)
    except OverflowError:  # an int beyond float64: refused later as too large
        return np.inf if v > 0 else -np.inf


def _locate(seq_ptr, row):
    s = int(np.searchsorted(seq_ptr, row, side="right") - 1)
    return s, int(row - seq_ptr[s])


def _instance_frequency(indptr, indices, data, seq_ptr, n_columns):
    """Per column the number of sequences in which it has a non-zero value."""
    n_seq = len(seq_ptr) - 1
    row_seq = np.repeat(np.arange(n_seq), np.diff(seq_ptr))
    nnz_seq = np.repeat(row_seq, np.diff(indptr))
    # a sequence x observation incidence matrix with duplicates summed
    active = data != 0
    incidence = sp.csr_matrix(
        (np.ones(int(active.sum()), dtype=np.int32), (nnz_seq[active], indices[active])),
        shape=(n_seq, n_columns))
    incidence.sum_duplicates()
    return np.bincount(incidence.indices, minlength=n_columns)


def _threshold(min_instance_freq, n_seq):
    """In how many of ``n_seq`` sequences pre-pruning needs a column (at least 1)."""
    threshold = min_instance_freq
    if isinstance(threshold, numbers.Real) and not isinstance(threshold, numbers.Integral):
        threshold = int(np.ceil(threshold * n_seq - 1e-9))
    return max(int(threshold), 1)


def _kept(inst_freq, n_seq, min_instance_freq):
    """Boolean mask of the columns that pre-pruning keeps."""
    return inst_freq >= _threshold(min_instance_freq, n_seq)


class ObservationCounts:
    """What pre-pruning needs to know about a training set (:meth:`ObservationEncoder.count`).

    Attributes
    ----------
    kind : {"names", "matrix"}
    names : ndarray of object or None
        Observation names in order of first occurrence (names input).
    n_columns : int
        Number of names, or of matrix columns.
    n_sequences : int
    inst_freq : int ndarray of shape (n_columns,)
        Per observation the number of sequences in which it occurs.
    """

    def __init__(self, kind, names, n_columns, n_sequences, inst_freq):
        self.kind = kind
        self.names = names
        self.n_columns = int(n_columns)
        self.n_sequences = int(n_sequences)
        self.inst_freq = np.asarray(inst_freq, dtype=np.int64)

    @classmethod
    def merge(cls, parts):
        """The counts of the concatenation of the parts, in the given order.

        Names keep their order of first occurrence over the concatenation, so
        the merged counts fit the same encoder as the whole training set would.
        """
        parts = list(parts)
        kinds = {p.kind for p in parts}
        if len(kinds) != 1:
            raise ValueError("every sequence must have the same form; the parts mix "
                             "observation names and matrices")
        n_seq = sum(p.n_sequences for p in parts)
        if parts[0].kind == MATRIX:
            widths = {p.n_columns for p in parts}
            if len(widths) != 1:
                raise ValueError(f"the parts have different numbers of observation columns: "
                                 f"{sorted(widths)}")
            return cls(MATRIX, None, parts[0].n_columns, n_seq,
                       np.sum([p.inst_freq for p in parts], axis=0))
        vocabulary = {}
        for p in parts:
            for name in p.names:
                vocabulary.setdefault(name, len(vocabulary))
        freq = np.zeros(len(vocabulary), dtype=np.int64)
        for p in parts:  # a part's names are distinct
            freq[np.fromiter((vocabulary[name] for name in p.names), dtype=np.int64,
                             count=len(p.names))] += p.inst_freq
        names = np.empty(len(vocabulary), dtype=object)
        names[list(vocabulary.values())] = list(vocabulary.keys())
        return cls(NAMES, names, len(names), n_seq, freq)


class ObservationEncoder:
    """Maps observation sequences to a CSR matrix ``(N_tokens, n_observations)``.

    Fitted state: ``kind`` (``"names"`` or ``"matrix"``), ``names`` (kept
    observation names, for names input), ``n_input_columns`` and ``kept_columns``
    (for matrix input).
    """

    def __init__(self):
        self.kind = None
        self.names = None
        self.vocabulary = None
        self.n_input_columns = None
        self.kept_columns = None

    # -- reading -----------------------------------------------------------------
    @staticmethod
    def _read_names(X, vocabulary, grow):
        """Raw (indptr, indices, data, seq_ptr) with names mapped through ``vocabulary``.

        A sequence of plain dicts is read at once (:func:`read_dict_sequence`); any
        other sequence, or one that needs an error message, token by token."""
        index_parts, data_parts, count_parts = [], [], []
        seq_ptr = [0]
        for i, seq in enumerate(X):
            if _is_matrix(seq) or isinstance(seq, (str, bytes, dict)):
                raise ValueError(
                    f"X[{i}]: every sequence must have the same form; expected a list of "
                    f"per-token dicts or name lists, got {type(seq).__name__}"
                )
            try:
                tokens = list(seq)
            except TypeError:
                raise ValueError(f"X[{i}] is not a sequence of tokens") from None
            part = read_dict_sequence(tokens, vocabulary, grow)
            if part is None:
                part = _token_by_token(i, tokens, vocabulary, grow)
            for parts, item in zip((index_parts, data_parts, count_parts), part):
                parts.append(item)
            seq_ptr.append(seq_ptr[-1] + len(tokens))
        counts = np.concatenate(count_parts) if count_parts else np.zeros(0, np.int64)
        indptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        seq_ptr = np.asarray(seq_ptr, dtype=np.int64)
        indices = (np.concatenate(index_parts).astype(np.int64, copy=False) if index_parts
                   else np.zeros(0, np.int64))
        if all(isinstance(d, np.ndarray) for d in data_parts):
            data = (np.concatenate(data_parts) if data_parts else np.zeros(0))
        else:   # some values not read at once: check them all, naming a bad one
            data = _values([v for d in data_parts for v in d], indptr, seq_ptr)
        return indptr, indices, data, seq_ptr

    @staticmethod
    def _read_matrices(X, n_columns):
        blocks = []
        seq_ptr = [0]
        for i, seq in enumerate(X):
            if not _is_matrix(seq):
                raise ValueError(
                    f"X[{i}]: every sequence must have the same form; expected a 2-D "
                    f"sparse matrix, got {type(seq).__name__}"
                )
            m = sp.csr_matrix(seq, dtype=np.float64)
            if n_columns is not None and m.shape[1] != n_columns:
                raise ValueError(
                    f"X[{i}] has {m.shape[1]} observation columns, expected {n_columns}"
                )
            n_columns = m.shape[1]
            blocks.append(m)
            seq_ptr.append(seq_ptr[-1] + m.shape[0])
        mat = sp.vstack(blocks, format="csr") if blocks else None
        return mat, np.asarray(seq_ptr, dtype=np.int64)

    @staticmethod
    def _check_finite(data, indptr, seq_ptr):
        # two reductions, no temporaries: NaN makes both comparisons False
        if not len(data) or (data.max() <= MAX_OBSERVATION_VALUE
                             and data.min() >= -MAX_OBSERVATION_VALUE):
            return
        ok = np.abs(data) <= MAX_OBSERVATION_VALUE  # False for NaN and inf too
        if not ok.all():
            bad = int(np.flatnonzero(~ok)[0])
            row = int(np.searchsorted(indptr, bad, side="right") - 1)
            s, t = _locate(seq_ptr, row)
            raise ValueError(
                f"X[{s}] token {t}: observation values must be finite and at most "
                f"{MAX_OBSERVATION_VALUE:g} in magnitude (rescale them; values of order one "
                f"train best), got {data[bad]}"
            )

    # -- fitting -----------------------------------------------------------------
    def _read_all(self, X):
        """Every observation of ``X``: ``(kind, indptr, indices, data, seq_ptr, n_columns,
        names, vocabulary)`` with names (names input) in order of first occurrence and
        ``vocabulary`` mapping them to their columns (None for matrix input)."""
        if _is_matrix(X[0]):
            mat, seq_ptr = self._read_matrices(X, None)
            self._check_finite(mat.data, mat.indptr, seq_ptr)
            return (MATRIX, mat.indptr.astype(np.int64), mat.indices.astype(np.int64), mat.data,
                    seq_ptr, mat.shape[1], None, None)
        vocabulary = {}
        indptr, indices, data, seq_ptr = self._read_names(X, vocabulary, grow=True)
        self._check_finite(data, indptr, seq_ptr)
        names = np.empty(len(vocabulary), dtype=object)
        names[list(vocabulary.values())] = list(vocabulary.keys())
        return NAMES, indptr, indices, data, seq_ptr, len(vocabulary), names, vocabulary

    def count(self, X):
        """The statistics pre-pruning needs, without fitting: an :class:`ObservationCounts`.

        Counts of several parts of a training set (e.g. the partitions of a
        distributed collection) combine with :meth:`ObservationCounts.merge`;
        :meth:`fit_counts` on the merged counts then learns what
        :meth:`fit_transform` learns from the whole set.
        """
        X = _check_sequence_list(X)
        kind, indptr, indices, data, seq_ptr, n_columns, names, _ = self._read_all(X)
        return ObservationCounts(kind, names, n_columns, len(X),
                                 _instance_frequency(indptr, indices, data, seq_ptr, n_columns))

    def fit_counts(self, counts, min_instance_freq=1):
        """Learn the observations kept after pre-pruning from :class:`ObservationCounts`."""
        keep = _kept(counts.inst_freq, counts.n_sequences, min_instance_freq)
        self._fit_keep(counts.kind, counts.names, counts.n_columns, keep)
        return self

    def _fit_keep(self, kind, names, n_columns, keep, read=None):
        self.kind = kind
        if kind == MATRIX:
            self.n_input_columns = n_columns
        self.kept_columns = np.flatnonzero(keep)
        if kind == NAMES:
            self.names = names[keep]
            if read is not None and len(read) == len(self.names):
                self.vocabulary = read          # every name kept: ``read``, names -> columns
            else:
                self.vocabulary = {name: k for k, name in enumerate(self.names)}

    def fit_transform(self, X, min_instance_freq=1):
        """Learn the observations kept after pre-pruning; return ``(csr, seq_ptr)``."""
        X = _check_sequence_list(X)
        kind, indptr, indices, data, seq_ptr, n_columns, names, read = self._read_all(X)
        threshold = _threshold(min_instance_freq, len(X))
        if threshold == 1:      # a column with any non-zero value: no per-sequence counts
            keep = np.bincount(indices[data != 0], minlength=n_columns) > 0
        else:
            keep = _instance_frequency(indptr, indices, data, seq_ptr, n_columns) >= threshold
        self._fit_keep(kind, names, n_columns, keep, read)
        new_index = np.cumsum(keep) - 1
        csr = self._prune(indptr, indices, data, keep, new_index, int(keep.sum()))
        return csr, seq_ptr

    @staticmethod
    def _prune(indptr, indices, data, keep, new_index, n_kept):
        n_rows = len(indptr) - 1
        nonzero = data != 0
        if n_kept == len(keep) and nonzero.all():
            # every column kept and no stored zero (the default, min_instance_freq=1):
            # the matrix as read, without the masked copies of its millions of entries
            return sp.csr_matrix((data, indices, indptr), shape=(n_rows, n_kept))
        mask = keep[indices] & nonzero
        kept_before = np.concatenate([[0], np.cumsum(mask, dtype=np.int64)])
        new_indptr = kept_before[indptr]
        csr = sp.csr_matrix(
            (data[mask], new_index[indices[mask]], new_indptr), shape=(n_rows, n_kept)
        )
        return csr

    def named(self, names):
        """This encoder, fitted on matrices whose columns are called ``names``, as the
        encoder of named observations that keeps the same columns in the same order
        (a caller that read names into a matrix itself, then reads names again)."""
        if self.kind != MATRIX:
            raise ValueError("named() needs an encoder fitted on matrices")
        if len(names) != self.n_input_columns:
            raise ValueError(f"{len(names)} names for {self.n_input_columns} columns")
        keep = np.zeros(self.n_input_columns, dtype=bool)
        keep[self.kept_columns] = True
        encoder = ObservationEncoder()
        encoder._fit_keep(NAMES, np.asarray(names, dtype=object), self.n_input_columns, keep)
        return encoder

    def transform(self, X):
        """Encode sequences with the fitted observations; unseen ones are dropped."""
        X = _check_sequence_list(X)
        if self.kind == MATRIX:
            mat, seq_ptr = self._read_matrices(X, self.n_input_columns)
            self._check_finite(mat.data, mat.indptr, seq_ptr)
            csr = mat[:, self.kept_columns].tocsr()
            csr.eliminate_zeros()
            return csr, seq_ptr
        if _is_matrix(X[0]):
            raise ValueError("this model was fitted on observation dicts/names, not matrices")
        indptr, indices, data, seq_ptr = self._read_names(X, self.vocabulary, grow=False)
        self._check_finite(data, indptr, seq_ptr)
        n = len(self.names)
        csr = sp.csr_matrix((data, indices, indptr), shape=(len(indptr) - 1, n))
        csr.eliminate_zeros()
        return csr, seq_ptr

    def transform_arrays(self, X):
        """:meth:`transform` as the arrays ``(indptr, indices, data, seq_ptr)`` of its CSR
        matrix, the same entries in the same order; lists of plain dicts are read
        without building the matrix (one request's few tokens), anything else (and
        every error) by :meth:`transform`.  ``X`` may be :class:`EncodedRows`, read
        already."""
        if type(X) is EncodedRows:
            return X.arrays
        X = _check_sequence_list(X)
        if self.kind == NAMES:
            parts = []
            for seq in X:
                part = read_dict_sequence(seq, self.vocabulary, False) if type(seq) is list else None
                if part is None:
                    break
                parts.append(part)
            else:
                return self.arrays_of(X, parts)
        csr, seq_ptr = self.transform(X)
        return csr.indptr, csr.indices, csr.data, seq_ptr

    def arrays_of(self, X, parts):
        """:meth:`transform_arrays` of the sequences ``X`` (lists of tokens) read as
        ``parts``, per sequence ``(columns, values, counts)`` of the kept names
        (:func:`read_dict_sequence`)."""
        if len(parts) == 1:
            indices, data, counts = parts[0]
            seq_ptr = np.array([0, len(X[0])], dtype=np.int64)
        else:
            indices, data, counts = (np.concatenate(p) for p in zip(*parts))
            seq_ptr = np.zeros(len(X) + 1, dtype=np.int64)
            np.cumsum([len(seq) for seq in X], out=seq_ptr[1:])
        indptr = np.empty(len(counts) + 1, dtype=np.int64)
        indptr[0] = 0
        np.cumsum(counts, out=indptr[1:])
        self._check_finite(data, indptr, seq_ptr)
        if not data.all():      # eliminate_zeros (NaN is refused above)
            kept = data != 0
            rows = np.repeat(np.arange(len(counts)), counts)
            indices, data = indices[kept], data[kept]
            np.cumsum(np.bincount(rows[kept], minlength=len(counts)), out=indptr[1:])
        return indptr, indices, data, seq_ptr


class EncodedRows:
    """Sequences read already into an encoder's columns: the arrays ``(indptr,
    indices, data, seq_ptr)`` of :meth:`ObservationEncoder.transform_arrays`, which
    the prediction methods of :class:`~skfcrf.FactorialCRF` take in place of ``X``
    (the CRFsuite drop-in reads its format straight into them)."""

    __slots__ = ("arrays",)

    def __init__(self, indptr, indices, data, seq_ptr):
        self.arrays = (indptr, indices, data, seq_ptr)
