"""Input handling shared by all metrics in :mod:`skfcrf.metrics`."""
import numbers

import numpy as np

from skfcrf._validation import check_label_sequences

DEFAULT_BEGIN_PREFIXES = ("Begin", "B-")


def check_y_pair(y_true, y_pred, allow_missing=False):
    """Validate and normalise a pair of label-sequence collections.

    ``allow_missing``: whether ``y_true`` may have missing labels (``None``,
    partial annotation); the token metrics then skip them.  ``y_pred`` must be
    complete.

    Returns
    -------
    true, pred : list of ndarray of dtype object, shape (n_tokens, n_chains)
    n_chains : int
    """
    true, _ = check_label_sequences(y_true, name="y_true", allow_missing=allow_missing)
    pred, _ = check_label_sequences(y_pred, name="y_pred")
    if len(true) != len(pred):
        raise ValueError(
            f"y_true and y_pred have different numbers of sequences: "
            f"{len(true)} != {len(pred)}"
        )
    n_chains = true[0].shape[1]
    if pred[0].shape[1] != n_chains:
        raise ValueError(
            f"y_true has {n_chains} chains but y_pred has {pred[0].shape[1]}"
        )
    for i, (t, p) in enumerate(zip(true, pred)):
        if t.shape[0] != p.shape[0]:
            raise ValueError(
                f"sequence {i} has {t.shape[0]} tokens in y_true but "
                f"{p.shape[0]} in y_pred"
            )
    return true, pred, n_chains


def resolve_chain(chain, n_chains, allow_none=False):
    """Turn ``chain`` into a non-negative chain index (negative counts from the top).

    ``chain=None`` is accepted for single-chain data (meaning chain 0); with
    ``allow_none=True`` it is returned unchanged ("all chains").
    """
    if chain is None:
        if allow_none:
            return None
        if n_chains == 1:
            return 0
        raise ValueError(
            f"y has {n_chains} chains: pass chain=<index> (0..{n_chains - 1}, "
            "or negative to count from the top chain)"
        )
    if isinstance(chain, (bool, np.bool_)) or not isinstance(chain, numbers.Integral):
        raise ValueError(f"chain must be an int, got {chain!r}")
    chain = int(chain)
    if not -n_chains <= chain < n_chains:
        raise ValueError(
            f"chain={chain} is out of range: y has {n_chains} chain(s) "
            f"(valid: 0..{n_chains - 1} or -{n_chains}..-1)"
        )
    return chain % n_chains


def chain_pair(y_true, y_pred, chain, allow_missing=False):
    """Validate inputs and return per-sequence 1-D label arrays of one chain
    (``allow_missing`` as for :func:`check_y_pair`).

    Returns
    -------
    true, pred : list of 1-D object arrays
    chain : int
        The resolved (non-negative) chain index.
    """
    true, pred, n_chains = check_y_pair(y_true, y_pred, allow_missing)
    c = resolve_chain(chain, n_chains)
    return [t[:, c] for t in true], [p[:, c] for p in pred], c


def label_equal(a, b):
    """Element-wise label equality of two 1-D object arrays (bool array)."""
    eq = a == b
    if isinstance(eq, np.ndarray) and eq.dtype == bool and eq.shape == a.shape:
        return eq
    return np.fromiter((bool(x == y) for x, y in zip(a, b)), dtype=bool, count=len(a))


def sort_labels(labels):
    """Sort labels deterministically even when they mix types."""
    labels = list(labels)
    try:
        return sorted(labels)
    except TypeError:
        return sorted(labels, key=lambda lab: (type(lab).__name__, str(lab)))


def begin_test(begin_prefixes):
    """Return a predicate ``label -> bool`` telling whether a label begins a segment.

    ``begin_prefixes`` is a string, a tuple of strings (a label beginning with
    any of them marks a boundary) or a callable ``label -> bool``. Non-string
    labels never match a prefix.
    """
    if callable(begin_prefixes):
        return lambda lab: bool(begin_prefixes(lab))
    if isinstance(begin_prefixes, str):
        prefixes = (begin_prefixes,)
    else:
        prefixes = tuple(begin_prefixes)
    if not prefixes or not all(isinstance(p, str) and p for p in prefixes):
        raise ValueError(
            "begin_prefixes must be a non-empty string, a tuple of non-empty strings "
            f"or a callable, got {begin_prefixes!r}"
        )
    return lambda lab: isinstance(lab, str) and lab.startswith(prefixes)
