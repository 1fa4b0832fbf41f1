"""Relative position of a token in its sequence: :class:`RelativePosition`."""
from numbers import Integral

import numpy as np

from skfcrf.transformers._base import (
    SequenceTransformerMixin,
    check_distinct,
    check_int,
    check_int_list,
    check_tokens,
)

__all__ = ["RelativePosition"]

#: Most parts a sequence may be split into (``feature_names_out_`` lists every part).
MAX_BINS = 10_000


class RelativePosition(SequenceTransformerMixin):
    """Which of ``n_bins`` equal parts of the sequence a token falls into.

    A sequence of ``n`` tokens is split into ``k`` equal parts; the token at
    position ``t`` (0-based) is in part ``b = floor(t * k / n)``, 0-based, and gets
    one binary observation ``relpos{k}={b}``, e.g. ``relpos8=3`` for a token in the
    fourth eighth.  (When ``n < k`` some parts are empty.)  Several binary
    observations rather than one real-valued position let the model learn a
    *positive* indication for any part, e.g. the beginning of a report.

    Parameters
    ----------
    n_bins : int or tuple of int, default=8
        Number of parts (1 to 10,000).  A tuple such as ``(2, 3, 4, 5)`` emits one
        observation per granularity, in that order; its entries must be distinct.

    Attributes
    ----------
    feature_names_out_ : ndarray of str
        All ``relpos{k}={b}`` names, sorted.  They do not depend on the data, so
        ``fit`` lists all of them, including parts no token fell into.

    Examples
    --------
    >>> from skfcrf.transformers import RelativePosition
    >>> RelativePosition(n_bins=2).transform([["a", "b", "c"]])
    [[{'relpos2=0': 1.0}, {'relpos2=0': 1.0}, {'relpos2=1': 1.0}]]
    """

    def __init__(self, n_bins=8):
        self.n_bins = n_bins

    def _validate_params(self):
        nb = self.n_bins
        if isinstance(nb, Integral) and not isinstance(nb, (bool, np.bool_)):
            return [check_int(nb, "n_bins", 1, MAX_BINS)]
        bins = check_int_list(nb, "n_bins", 1, what="an int or a tuple of ints",
                              maximum=MAX_BINS)
        return check_distinct(bins, "n_bins", "number of parts")

    def _fit_transform_named(self, seqs, prefix, weight, cache):
        out = self._transform_named(seqs, prefix, weight, cache)
        bins = self._validate_params()
        self.feature_names_out_ = np.asarray(
            sorted(f"relpos{k}={b}" for k in bins for b in range(k)), dtype=object
        )
        return out

    def _transform_named(self, seqs, prefix, weight, cache):
        bins = self._validate_params()
        check_tokens(seqs, cache)
        names = [[f"{prefix}relpos{k}={b}" for b in range(k)] for k in bins]
        out = []
        append = out.append
        by_length = {}  # the output only depends on the length: build it once per length
        for seq in seqs:
            n = len(seq)
            if n == 0:
                append([])
                continue
            rows = by_length.get(n)
            if rows is None:
                cols = [[nm[t * k // n] for t in range(n)] for k, nm in zip(bins, names)]
                rows = by_length[n] = [dict.fromkeys(keys, weight) for keys in zip(*cols)]
            append([d.copy() for d in rows])
        return out
