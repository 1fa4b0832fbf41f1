"""Capitalisation class, character flags and length bucket at offsets: :class:`Casing`."""
import unicodedata

from skfcrf.transformers._base import (
    SequenceTransformerMixin,
    check_int_list,
    token_attribute_values,
    value_list,
    window_rows,
)

__all__ = ["Casing", "case_class", "length_bucket"]

#: Default length bucket edges: lengths 1, 2, 3, 4-5, 6-8, 9-12, 13+.
DEFAULT_LENGTH_BINS = (2, 3, 4, 6, 9, 13)


def case_class(word):
    """Capitalisation class of a word.

    ``"lower"`` (all cased letters lowercase), ``"upper"`` (all uppercase, e.g.
    ``"CT"``), ``"title"`` (first cased letter uppercase, the rest lowercase, e.g.
    ``"Fever"``; a single uppercase letter is ``"upper"``), ``"mixed"`` (anything else,
    e.g. ``"iPhone"``, ``"McDonald"``) or ``"none"`` (no cased letter: ``"37.5"``,
    ``"-"``, CJK).  Uses Python's Unicode case properties.

    Examples
    --------
    >>> [case_class(w) for w in ["fever", "CT", "Fever", "iPhone", "37.5", "É"]]
    ['lower', 'upper', 'title', 'mixed', 'none', 'upper']
    """
    cased = [c for c in word if c.isupper() or c.islower() or c.istitle()]
    if not cased:
        return "none"
    if all(c.islower() for c in cased):
        return "lower"
    if all(c.isupper() for c in cased):
        return "upper"
    if (cased[0].isupper() or cased[0].istitle()) and all(c.islower() for c in cased[1:]):
        return "title"
    return "mixed"


def length_bucket(n, bins=DEFAULT_LENGTH_BINS):
    """Name of the length bucket of a token of ``n`` characters.

    The ascending bucket edges ``bins`` split the lengths into ``[1, bins[0])``, ``[bins[0], bins[1])``, ...,
    ``[bins[-1], inf)``; a bucket is named ``"a"`` when it holds one length, ``"a-b"``
    (inclusive) otherwise, and ``"a+"`` for the last one; length 0 is ``"0"``.

    Examples
    --------
    >>> [length_bucket(n) for n in (0, 1, 3, 5, 13, 40)]
    ['0', '1', '3', '4-5', '13+', '13+']
    """
    if n <= 0:
        return "0"
    lo = 1
    for edge in bins:
        if n < edge:
            return str(lo) if edge - 1 == lo else f"{lo}-{edge - 1}"
        lo = edge
    return f"{lo}+"


def _is_punct(c):
    return unicodedata.category(c)[0] in "PS"


class Casing(SequenceTransformerMixin):
    """Capitalisation class, digit/hyphen/punctuation flags and length bucket, at offsets.

    For the token at position ``t`` and each offset ``o``, the value ``v`` of the
    token at ``t + o`` gives the binary observations

    - ``{attribute}.case@{o}={c}`` with ``c`` = :func:`case_class` of ``v``
      (``lower``, ``upper``, ``title``, ``mixed``, ``none``);
    - ``{attribute}.has@{o}=digit`` / ``=hyphen`` / ``=punct`` when ``v`` contains a
      digit (``str.isdigit``), a hyphen (``-`` or a Unicode dash) or a punctuation
      or symbol character (Unicode category P* or S*, hyphens included);
    - ``{attribute}.is@{o}=digit`` / ``=punct`` when *all* characters are digits /
      punctuation or symbols (``"1993"``, ``"."``);
    - ``{attribute}.len@{o}={bucket}`` with ``bucket`` = :func:`length_bucket` of
      ``len(v)`` (when ``length_bins`` is not None).

    Positions beyond the sequence edges emit nothing.  A multi-valued attribute
    (list, tuple or set) gives the observations of each value (the union).

    Parameters
    ----------
    attribute : str, default="word"
        Token attribute to read.
    offsets : sequence of int, default=(0,)
        Distinct offsets relative to the current token.
    flags : bool, default=True
        Emit the ``has``/``is`` character flags.
    length_bins : tuple of int or None, default=(2, 3, 4, 6, 9, 13)
        Strictly increasing bucket edges (>= 2) of the token length (see
        :func:`length_bucket`); ``None`` emits no length observation.

    Attributes
    ----------
    feature_names_out_ : ndarray of str
        The ``case``/``has``/``is``/``len`` observation names seen in ``fit``, sorted.

    Examples
    --------
    >>> from skfcrf.transformers import Casing
    >>> for token in Casing(length_bins=None).transform([["Dr.", "x-ray", "37"]])[0]:
    ...     print(sorted(token))
    ['word.case@0=title', 'word.has@0=punct']
    ['word.case@0=lower', 'word.has@0=hyphen', 'word.has@0=punct']
    ['word.case@0=none', 'word.has@0=digit', 'word.is@0=digit']
    >>> Casing(offsets=(-1, 0), flags=False, length_bins=(3,)).transform([["CT", "scan"]])[0][1]
    {'word.case@-1=upper': 1.0, 'word.len@-1=1-2': 1.0, 'word.case@0=lower': 1.0, 'word.len@0=3+': 1.0}
    """

    def __init__(self, attribute="word", offsets=(0,), flags=True, length_bins=DEFAULT_LENGTH_BINS):
        self.attribute = attribute
        self.offsets = offsets
        self.flags = flags
        self.length_bins = length_bins

    _param_kinds = {"attribute": "attribute", "offsets": "offsets", "flags": "bool"}

    def _validate_params(self):
        offsets = self._checked_params()["offsets"]
        bins = self.length_bins
        if bins is not None:
            bins = check_int_list(bins, "length_bins", 2, what="a tuple of ints or None")
            if any(a >= b for a, b in zip(bins, bins[1:])):
                raise ValueError(f"length_bins must be strictly increasing, got {self.length_bins!r}")
            bins = tuple(bins)
        return offsets, bins

    def _transform_named(self, seqs, prefix, weight, cache):
        offsets, bins = self._validate_params()
        attr = self.attribute
        flags = bool(self.flags)

        def local(value):
            pairs = {}
            for v in value_list(value):
                pairs[f"{attr}.case", case_class(v)] = None
                if flags:
                    digit = [c.isdigit() for c in v]
                    punct = [_is_punct(c) for c in v]
                    if any(digit):
                        pairs[f"{attr}.has", "digit"] = None
                    if any(c == "-" or unicodedata.category(c) == "Pd" for c in v):
                        pairs[f"{attr}.has", "hyphen"] = None
                    if any(punct):
                        pairs[f"{attr}.has", "punct"] = None
                    if v and all(digit):
                        pairs[f"{attr}.is", "digit"] = None
                    if v and all(punct):
                        pairs[f"{attr}.is", "punct"] = None
                if bins is not None:
                    pairs[f"{attr}.len", length_bucket(len(v), bins)] = None
            return pairs

        values = token_attribute_values(seqs, attr, cache)
        return window_rows(values, offsets, local, prefix, weight)
