"""Fixed labels for clamped decoding and marginals (``decode(X, fixed=...)``).

The user gives, per sequence, an array-like ``(n_tokens, n_chains)`` -- or
``(n_tokens,)`` for a model fitted on 1-D label sequences -- of labels, with
``None`` where a label is free; ``None`` in place of a token's row or of a whole
sequence leaves it free.  :func:`encode_fixed` turns this into a :class:`FixedLabels`: an int32
array ``(N, n_chains)`` of label indices over the stacked tokens, ``-1`` where
free.

Clamping a label sets the unary log-potentials of the chain's other labels at
that token to ``-inf`` (:meth:`FixedLabels.clamp`): every inference method --
one chain, product space, joint label states (a state whose label differs gets
score ``-inf``), TRP -- then infers given the fixed labels.

:func:`check_fixed` rejects what no labelling can satisfy locally: two fixed
labels in a forbidden transition or forbidden coupling.  Fixed labels in a
label combination never seen in training are no error: inference over joint
label states extends its states for the call
(:mod:`skfcrf.inference._joint`).  Other conflicts (through free tokens in
between) are found by exact inference and located by
:meth:`skfcrf.inference.InferenceMethod.locate_conflict`.
"""
import numpy as np

from skfcrf._kernels.graph import IN_CHAIN
from skfcrf._kernels.states import following_tokens
from skfcrf.model._labels import label_index

__all__ = ["FixedLabels", "encode_fixed", "check_fixed"]


class FixedLabels:
    """Fixed label indices ``index`` ``(N, C)`` (``-1``: free) and how to name them
    (``name``: the argument they came from, ``"fixed"`` or ``"y"``; ``numbers``:
    the number the user knows each sequence by, when these are a sub-batch's,
    :meth:`subset`)."""

    def __init__(self, index, seq_ptr, classes, name="fixed", numbers=None):
        self.index = index
        self.seq_ptr = seq_ptr
        self.classes = classes
        self.name = name
        self.numbers = numbers

    def subset(self, seqs, seq_ptr, rows):
        """The fixed labels of the sequences ``seqs`` as those of a sub-batch whose
        ``seq_ptr`` holds the global token ``rows``; messages keep the numbers
        of ``seqs``."""
        numbers = np.asarray(seqs) if self.numbers is None else np.asarray(self.numbers)[seqs]
        return FixedLabels(self.index[rows], np.asarray(seq_ptr, np.int64), self.classes,
                           self.name, numbers)

    @property
    def any(self):
        return bool((self.index >= 0).any())

    def in_sequence(self, s):
        """Fixed ``(token, chain)`` pairs of sequence ``s``, token-major."""
        block = self.index[self.seq_ptr[s]:self.seq_ptr[s + 1]]
        return [tuple(map(int, tc)) for tc in np.argwhere(block >= 0)]

    def sequences(self):
        """Indices of the sequences with at least one fixed label."""
        per_row = (self.index >= 0).any(axis=1)
        n_seq = len(self.seq_ptr) - 1
        seq_of = np.repeat(np.arange(n_seq), np.diff(self.seq_ptr))
        return np.unique(seq_of[per_row])

    def label(self, s, t, c):
        return self.classes[c][self.index[self.seq_ptr[s] + t, c]]

    def where(self, s, t, c):
        """``"fixed[s] token t chain c (label 'x')"``, for error messages."""
        number = s if self.numbers is None else int(self.numbers[s])
        return f"{self.name}[{number}] token {t} chain {c} (label {self.label(s, t, c)!r})"

    def clamp(self, graph, unary):
        """``unary`` with every non-fixed label of a fixed variable at ``-inf`` (a copy)."""
        out = np.array(unary, dtype=np.float64, copy=True)
        for c in range(graph.n_chains):
            rows = np.flatnonzero(self.index[:, c] >= 0)
            if rows.size == 0:
                continue
            lo, hi = int(graph.label_offset[c]), int(graph.label_offset[c + 1])
            value = out[rows, lo + self.index[rows, c]]
            out[rows, lo:hi] = -np.inf
            out[rows, lo + self.index[rows, c]] = value
        return out


def _label_indices(values, classes, s, c):
    """Indices of the labels ``values`` (object array, None = free) of chain ``c``,
    -1 where free; ``classes`` is the model's per-chain label list."""
    out = np.full(len(values), -1, np.int32)
    for t in np.flatnonzero(np.array([v is not None for v in values], dtype=bool)):
        out[t] = label_index(classes, c, values[t], f"fixed[{s}] token {t} chain {c}")
    return out


def _as_object_array(seq, s):
    """``seq`` (array-like of labels or of per-token label rows) as an object array."""
    if isinstance(seq, np.ndarray):
        return seq.astype(object)
    try:
        items = list(seq)
        width = {len(item) if isinstance(item, (tuple, list, np.ndarray)) else -1
                 for item in items if item is not None}
        if len(width) > 1:
            raise ValueError
        width = width.pop() if width else -1
        arr = np.empty((len(items), width) if width >= 0 else len(items), dtype=object)
        for t, item in enumerate(items):
            if width >= 0:      # rows of per-chain labels; a None row leaves the token free
                arr[t] = [None] * width if item is None else list(item)
            else:
                arr[t] = item
    except (TypeError, ValueError):
        raise ValueError(f"fixed[{s}] must be an array-like (n_tokens, n_chains) of labels "
                         "with None where free") from None
    return arr


def encode_fixed(fixed, seq_ptr, classes, one_chain):
    """Validate ``fixed`` against the sequences ``seq_ptr`` and encode it; None if absent."""
    if fixed is None:
        return None
    if isinstance(fixed, (str, bytes)):
        raise ValueError("fixed must be a list with one entry per sequence")
    fixed = list(fixed)
    n_seq, n_chains = len(seq_ptr) - 1, len(classes)
    if len(fixed) != n_seq:
        raise ValueError(f"fixed has {len(fixed)} entries, X has {n_seq} sequences")
    index = np.full((int(seq_ptr[-1]), n_chains), -1, np.int32)
    for s, seq in enumerate(fixed):
        if seq is None:
            continue
        T = int(seq_ptr[s + 1] - seq_ptr[s])
        if isinstance(seq, (str, bytes)):
            raise ValueError(f"fixed[{s}] is a string; expected an array-like of labels")
        arr = _as_object_array(seq, s)
        if arr.shape[0] == 0 and T == 0:
            continue
        if arr.ndim == 1 and n_chains == 1:
            arr = arr.reshape(-1, 1)
        expected = f"({T},)" if one_chain else f"({T}, {n_chains})"
        if arr.ndim != 2 or arr.shape != (T, n_chains):
            raise ValueError(f"fixed[{s}] has shape {arr.shape}, expected {expected} "
                             "(one entry per token and chain, None where free)")
        start = int(seq_ptr[s])
        for c in range(n_chains):
            index[start:start + T, c] = _label_indices(arr[:, c], classes, s, c)
    return FixedLabels(index, np.asarray(seq_ptr, np.int64), classes)


def _row_position(seq_ptr, row):
    s = int(np.searchsorted(seq_ptr, row, side="right") - 1)
    return s, int(row - seq_ptr[s])


def check_fixed(fixed, graph, forbidden):
    """Raise ValueError where fixed labels break the model's constraints at one token pair.

    ``forbidden``: edge -> boolean ``(L_a, L_b)`` mask (the model's
    ``forbidden_``).  A label combination outside a model's joint label states
    is allowed (the states are extended for the call,
    :meth:`skfcrf.inference.JointStateInference.state_spaces`).
    """
    idx, seq_ptr = fixed.index, fixed.seq_ptr
    n = idx.shape[0]
    inner = following_tokens(seq_ptr, n)
    for e, mask in (forbidden or {}).items():
        a, b = int(graph.edge_a[e]), int(graph.edge_b[e])
        if graph.edge_kind[e] == IN_CHAIN:
            rows = inner[(idx[inner, a] >= 0) & (idx[inner - 1, a] >= 0)]
            bad = rows[mask[idx[rows - 1, a], idx[rows, a]]]
            if bad.size:
                s, t = _row_position(seq_ptr, bad[0])
                raise ValueError(
                    f"{fixed.where(s, t, a)}: the transition from the fixed label "
                    f"{fixed.label(s, t - 1, a)!r} at token {t - 1} is forbidden "
                    "(forbidden_transitions)")
        else:
            rows = np.flatnonzero((idx[:, a] >= 0) & (idx[:, b] >= 0))
            bad = rows[mask[idx[rows, a], idx[rows, b]]]
            if bad.size:
                s, t = _row_position(seq_ptr, bad[0])
                raise ValueError(
                    f"{fixed.where(s, t, b)}: the combination with the fixed label "
                    f"{fixed.label(s, t, a)!r} of chain {a} is forbidden (forbidden_couplings)")

