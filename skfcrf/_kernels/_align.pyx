# cython: language_level=3
"""Minimum-cost alignment of two sequences of small integer ids (generalised Levenshtein).

The thesis's Algorithm 1 (Hirschberg-free: full back-pointer matrix), for
:func:`skfcrf.structure.align_transcript`.  One alignment of ``n`` report units
(rows) with ``m`` transcript units (columns):

``rw``, ``tw`` : int32 ``(n,)``, ``(m,)``
    Word ids in one id space: equal ids are equal words and substitute at cost 0.
``rk``, ``tk`` : int32 ``(n,)``, ``(m,)``
    Row / column of the substitution-cost table ``sub`` of the unit's key.
``sub`` : float64 ``(n_row_keys, n_col_keys)``
    Cost of substituting units of different words: ``sub[rk[i], tk[j]]``.
``dcost``, ``icost`` : float64 ``(n,)``, ``(m,)``
    Cost of deleting report unit ``i`` / inserting transcript unit ``j``.
``rsub`` : float64 ``(n,)``
    Added to every substitution of report unit ``i`` by a different word (a surcharge
    on units whose misalignment costs more, such as heading words).

So a cell costs a handful of loads and comparisons: ``O(n m)`` time, two rows of
float64 and an ``(n + 1) x (m + 1)`` int8 back-pointer matrix.  Ties (within
``1e-9``) go to insertion, then to substitution before deletion for report units
flagged in ``rlate`` (int8 ``(n,)``) and deletion before substitution for the
others: followed back from the end, the path aligns the *first* copy of a word the
transcript repeats (the repetition is the insertion), the *last* of two flagged
report units the transcript has once (words: a heading word not dictated, then the
same word in the text) and the *first* of two unflagged ones (a paragraph break
dictated after a paragraph, not after the next heading).

:func:`key_distances` fills the table of normalised Levenshtein distances
between phonetic keys (int32 codes, concatenated, with offsets), from which the
caller derives ``sub``.
"""
import numpy as np

from ._alloc cimport allocate, Block

cdef enum:
    OP_SUB = 0
    OP_DEL = 1
    OP_INS = 2

cdef double TIE = 1e-9  # cost differences below this are ties


cdef double _lev(const int* a, int la, const int* b, int lb, int* prev, int* cur,
                 double smooth) noexcept nogil:
    """Levenshtein distance of ``a`` and ``b`` over ``smooth`` plus the longer length (0 if both empty)."""
    cdef int i, j, x, y, z
    cdef int* tmp
    if la == 0 and lb == 0:
        return 0.0
    for j in range(lb + 1):
        prev[j] = j
    for i in range(1, la + 1):
        cur[0] = i
        for j in range(1, lb + 1):
            x = prev[j - 1] + (a[i - 1] != b[j - 1])
            y = prev[j] + 1
            z = cur[j - 1] + 1
            if y < x:
                x = y
            if z < x:
                x = z
            cur[j] = x
        tmp = prev
        prev = cur
        cur = tmp
    return prev[lb] / ((la if la > lb else lb) + smooth)


def key_distances(const int[::1] codes, const long long[::1] offsets, const int[::1] rows,
                  const int[::1] cols, double smooth=0.0):
    """Normalised edit distances: ``out[a, b] = lev(key[rows[a]], key[cols[b]]) / (max len + smooth)``.

    Key ``q`` is ``codes[offsets[q]:offsets[q + 1]]``.
    """
    cdef Py_ssize_t nr = rows.shape[0], nc = cols.shape[0], a, b
    cdef int longest = 1, q, L
    for q in range(offsets.shape[0] - 1):
        L = <int> (offsets[q + 1] - offsets[q])
        if L > longest:
            longest = L
    out = np.empty((nr, nc), dtype=np.float64)
    cdef double[:, ::1] ov = out
    cdef Block scratch = allocate(2 * (longest + 1), sizeof(int))
    cdef int* prev = <int*> scratch.ptr
    cdef int* cur = prev + longest + 1
    cdef long long ra, cb
    if not smooth >= 0:
        raise ValueError(f"smooth must be >= 0, got {smooth}")
    with nogil:
        for a in range(nr):
            ra = offsets[rows[a]]
            for b in range(nc):
                cb = offsets[cols[b]]
                ov[a, b] = _lev(&codes[ra], <int> (offsets[rows[a] + 1] - ra),
                                &codes[cb], <int> (offsets[cols[b] + 1] - cb), prev, cur, smooth)
    return out


cdef double _fill(const int[::1] rw, const int[::1] rk, const double[::1] dcost,
                  const signed char[::1] rlate, const double[::1] rsub, const int[::1] tw,
                  const int[::1] tk, const double[::1] icost,
                  const double[:, ::1] sub, double* row0, double* row1,
                  signed char* bp) noexcept nogil:
    """Forward pass: cost of the optimal alignment, back-pointers in ``bp`` (row-major, m + 1 wide)."""
    cdef Py_ssize_t n = rw.shape[0], m = tw.shape[0], i, j, w = m + 1
    cdef double* prev = row0
    cdef double* cur = row1
    cdef double* tmp
    cdef double best, cs, cd, d, extra
    cdef bint late
    cdef signed char op
    cdef int wi, ki
    prev[0] = 0.0
    bp[0] = OP_SUB
    for j in range(1, m + 1):
        prev[j] = prev[j - 1] + icost[j - 1]
        bp[j] = OP_INS
    for i in range(1, n + 1):
        d = dcost[i - 1]
        wi = rw[i - 1]
        ki = rk[i - 1]
        late = rlate[i - 1]
        extra = rsub[i - 1]
        cur[0] = prev[0] + d
        bp[i * w] = OP_DEL
        for j in range(1, m + 1):
            best = cur[j - 1] + icost[j - 1]
            op = OP_INS
            if wi == tw[j - 1]:
                cs = prev[j - 1]
            else:
                cs = prev[j - 1] + sub[ki, tk[j - 1]] + extra
            cd = prev[j] + d
            if late:
                if cs < best - TIE:
                    best = cs
                    op = OP_SUB
                if cd < best - TIE:
                    best = cd
                    op = OP_DEL
            else:
                if cd < best - TIE:
                    best = cd
                    op = OP_DEL
                if cs < best - TIE:
                    best = cs
                    op = OP_SUB
            cur[j] = best
            bp[i * w + j] = op
        tmp = prev
        prev = cur
        cur = tmp
    return prev[m]


def align(const int[::1] rw, const int[::1] rk, const double[::1] dcost,
          const signed char[::1] rlate, const double[::1] rsub, const int[::1] tw,
          const int[::1] tk, const double[::1] icost,
          const double[:, ::1] sub):
    """Optimal alignment of report units (rows) with transcript units (columns).

    ``rlate`` (int8, per report unit): on ties prefer substituting (1) or deleting (0)
    the unit, see the module docstring.

    Returns
    -------
    cost : float
        Total cost of the optimal alignment.
    r2t : int32 ``(n,)``
        Transcript unit substituted for each report unit, -1 if deleted.
    t2r : int32 ``(m,)``
        Report unit each transcript unit substitutes, -1 if inserted.
    ops : int8 ``(n_ops,)``
        The path from the start: 0 substitution, 1 deletion, 2 insertion.
    """
    cdef Py_ssize_t n = rw.shape[0], m = tw.shape[0], w = m + 1
    if (rk.shape[0] != n or dcost.shape[0] != n or rlate.shape[0] != n or rsub.shape[0] != n
            or tk.shape[0] != m
            or icost.shape[0] != m):
        raise ValueError("align: id and cost arrays of one side must have equal lengths")
    if n > 0 and m > 0:
        if sub.shape[0] == 0 or sub.shape[1] == 0:
            raise ValueError("align: empty substitution table")
        if (np.asarray(rk).min() < 0 or np.asarray(rk).max() >= sub.shape[0]
                or np.asarray(tk).min() < 0 or np.asarray(tk).max() >= sub.shape[1]):
            raise ValueError("align: key ids out of the substitution table's range")
    cdef Block rows = allocate(2 * w, sizeof(double))
    cdef Block back = allocate((n + 1) * w, sizeof(signed char))
    cdef double* row0 = <double*> rows.ptr
    cdef signed char* bp = <signed char*> back.ptr
    r2t_a = np.full(n, -1, dtype=np.int32)
    t2r_a = np.full(m, -1, dtype=np.int32)
    ops_a = np.empty(n + m, dtype=np.int8)
    cdef int[::1] r2t = r2t_a
    cdef int[::1] t2r = t2r_a
    cdef signed char[::1] ops = ops_a
    cdef double cost
    cdef Py_ssize_t i = n, j = m, k = n + m
    cdef signed char op
    with nogil:
        cost = _fill(rw, rk, dcost, rlate, rsub, tw, tk, icost, sub, row0, row0 + w, bp)
        while i > 0 or j > 0:
            op = bp[i * w + j]
            k -= 1
            ops[k] = op
            if op == OP_SUB:
                i -= 1
                j -= 1
                r2t[i] = <int> j
                t2r[j] = <int> i
            elif op == OP_DEL:
                i -= 1
            else:
                j -= 1
    return cost, r2t_a, t2r_a, ops_a[k:].copy()
