"""Prefixes and suffixes at fixed offsets: :class:`Affixes`."""
from skfcrf.transformers._base import (
    SequenceTransformerMixin,
    token_attribute_values,
    value_list,
    window_rows,
)

__all__ = ["Affixes"]


class Affixes(SequenceTransformerMixin):
    """Prefixes and suffixes of tokens, of 1 to ``max_length`` characters, at offsets.

    For the token at position ``t`` and each offset ``o``, the value ``v`` of the
    token at ``t + o`` gives the binary observations ``{attribute}.prefix{n}@{o}={v[:n]}``
    and ``{attribute}.suffix{n}@{o}={v[-n:]}`` for every ``n`` from 1 to
    ``max_length`` with ``n <= len(v)`` (e.g. ``word.suffix3@0=ing``); affixes
    longer than the value are not emitted.  This is the affix part of Marcheggiani's
    baseline features (prefixes and suffixes of 1..4 characters at offsets -1, 0, +1).

    Positions beyond the sequence edges emit nothing (pair with
    :class:`NGramWindow`, which marks the edges).  A multi-valued attribute (list,
    tuple or set) gives the affixes of each value.  Characters are counted as Python
    code points (no normalisation).

    Parameters
    ----------
    attribute : str, default="word"
        Token attribute to read (dict tokens needed for other attributes than "word").
    offsets : sequence of int, default=(0,)
        Offsets relative to the current token; distinct, at least one.
    max_length : int, default=4
        Longest affix, >= 1.
    prefixes, suffixes : bool, default=True
        Which affixes to emit (at least one must be True).
    lowercase : bool, default=True
        Lowercase the value (``str.lower``) before taking affixes.

    Attributes
    ----------
    feature_names_out_ : ndarray of str
        The ``prefix{n}``/``suffix{n}`` observation names seen in ``fit``, sorted.

    Examples
    --------
    >>> from skfcrf.transformers import Affixes
    >>> for token in Affixes(max_length=2).transform([["Fever", "is"]])[0]:
    ...     print(sorted(token))
    ['word.prefix1@0=f', 'word.prefix2@0=fe', 'word.suffix1@0=r', 'word.suffix2@0=er']
    ['word.prefix1@0=i', 'word.prefix2@0=is', 'word.suffix1@0=s', 'word.suffix2@0=is']
    >>> Affixes(offsets=(-1,), max_length=3, prefixes=False).transform([["no", "fever"]])
    [[{}, {'word.suffix1@-1=o': 1.0, 'word.suffix2@-1=no': 1.0}]]
    """

    def __init__(self, attribute="word", offsets=(0,), max_length=4, prefixes=True, suffixes=True,
                 lowercase=True):
        self.attribute = attribute
        self.offsets = offsets
        self.max_length = max_length
        self.prefixes = prefixes
        self.suffixes = suffixes
        self.lowercase = lowercase

    _param_kinds = {"attribute": "attribute", "offsets": "offsets", "max_length": ("int", 1),
                    "prefixes": "bool", "suffixes": "bool", "lowercase": "bool"}

    def _validate_params(self):
        p = self._checked_params()
        if not (p["prefixes"] or p["suffixes"]):
            raise ValueError("at least one of prefixes and suffixes must be True")
        return p["offsets"]

    def _transform_named(self, seqs, prefix, weight, cache):
        offsets = self._validate_params()
        attr = self.attribute
        k = int(self.max_length)
        pre, suf, lower = bool(self.prefixes), bool(self.suffixes), bool(self.lowercase)

        def local(value):
            pairs = {}
            for v in value_list(value):
                if lower:
                    v = v.lower()
                m = min(k, len(v))
                if pre:
                    for n in range(1, m + 1):
                        pairs[f"{attr}.prefix{n}", v[:n]] = None
                if suf:
                    for n in range(1, m + 1):
                        pairs[f"{attr}.suffix{n}", v[-n:]] = None
            return pairs

        values = token_attribute_values(seqs, attr, cache)
        return window_rows(values, offsets, local, prefix, weight)
