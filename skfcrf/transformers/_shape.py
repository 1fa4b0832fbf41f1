"""Character-class word shapes (pattern generalisation): :class:`WordShape`, :func:`word_shape`."""
import re
import string
import unicodedata

from skfcrf.transformers._base import (
    SequenceTransformerMixin,
    check_attribute,
    check_offsets,
    token_attribute_values,
    value_list,
    window_rows,
)

__all__ = ["WordShape", "word_shape"]

_ASCII_TABLE = str.maketrans(
    {
        **{c: "A" for c in string.ascii_uppercase},
        **{c: "a" for c in string.ascii_lowercase},
        **{c: "i" for c in string.digits},
    }
)
_RUNS = re.compile(r"([Aai])\1+")
_MODES = ("ccpg", "repg")


def _char_class(c):
    if c.isupper() or c.istitle():
        return "A"
    if c.islower():
        return "a"
    if c.isdigit():
        return "i"
    if c.isalpha():  # letters of caseless scripts (CJK, Arabic, Hebrew, ...)
        return "a"
    if unicodedata.combining(c):  # combining mark: part of the preceding letter
        return ""
    return c


def word_shape(word, mode="ccpg"):
    """Character-class shape of a word.

    ``ccpg`` (character class pattern generalisation, Chou 2006): each uppercase
    letter becomes ``A``, each lowercase letter ``a``, each digit ``i``; all other
    characters are kept.  ``repg`` (regular-expression pattern generalisation): as
    ``ccpg``, then every run of two or more equal classes is collapsed to ``A+``,
    ``a+`` or ``i+`` (runs of other characters are kept as they are).

    Non-ASCII policy: classes follow Python's Unicode character properties:
    ``str.isupper`` or ``str.istitle`` -> ``A``; ``str.islower`` -> ``a``;
    ``str.isdigit`` -> ``i`` (so other scripts' digits and superscripts count as
    digits); letters without case (``str.isalpha`` only, e.g. CJK, Arabic) -> ``a``;
    non-ASCII words are NFC-normalised first and combining marks left over are
    dropped (they belong to the preceding letter), so NFC and NFD spellings get the
    same shape; everything else (punctuation, symbols, emoji, spaces) is kept.

    Parameters
    ----------
    word : str
    mode : {"ccpg", "repg"}

    Returns
    -------
    str

    Examples
    --------
    >>> word_shape("T."), word_shape("Moloney"), word_shape("Moloney", "repg"), word_shape("1993", "repg")
    ('A.', 'Aaaaaaa', 'Aa+', 'i+')
    """
    if word.isascii():
        s = word.translate(_ASCII_TABLE)
    else:
        s = "".join([_char_class(c) for c in unicodedata.normalize("NFC", word)])
    if mode == "repg":
        s = _RUNS.sub(r"\1+", s)
    elif mode != "ccpg":
        raise ValueError(f"mode must be 'ccpg' or 'repg', got {mode!r}")
    return s


class WordShape(SequenceTransformerMixin):
    """Character-class shape of each token, as one binary observation.

    The observation is named ``{mode}={shape}``, e.g. ``ccpg=Aaaaa`` or
    ``repg=Aa+`` for ``Fever``, ``repg=i+.i`` for ``37.5``; see :func:`word_shape`
    for the classes and the policy for non-ASCII characters.

    Parameters
    ----------
    mode : {"ccpg", "repg"}, default="ccpg"
        ``"ccpg"`` maps every character to its class (``A``/``a``/``i``, other
        characters kept); ``"repg"`` additionally collapses runs of a class to
        ``A+``/``a+``/``i+``.
    attribute : str, default="word"
        Token attribute whose shape is taken.  A multi-valued attribute (list,
        tuple or set) gives one observation per distinct shape of its values.
    offsets : sequence of int or None, default=None
        ``None``: the token's own shape, named ``{mode}={shape}``.  A sequence of
        distinct offsets: the shapes of the tokens at those offsets, named
        ``{mode}@{o}={shape}`` (e.g. ``repg@-1=Aa+``); positions beyond the
        sequence edges emit nothing (pair with :class:`NGramWindow` for the
        edges).

    Attributes
    ----------
    feature_names_out_ : ndarray of str
        The ``{mode}`` shape observation names seen in ``fit``, sorted.

    Examples
    --------
    >>> from skfcrf.transformers import WordShape
    >>> WordShape(mode="repg").transform([["Dr.", "Smith", "2024"]])
    [[{'repg=Aa.': 1.0}, {'repg=Aa+': 1.0}, {'repg=i+': 1.0}]]
    >>> WordShape(mode="repg", offsets=(-1, 0)).transform([["Dr.", "Smith"]])
    [[{'repg@0=Aa.': 1.0}, {'repg@-1=Aa.': 1.0, 'repg@0=Aa+': 1.0}]]
    """

    def __init__(self, mode="ccpg", attribute="word", offsets=None):
        self.mode = mode
        self.attribute = attribute
        self.offsets = offsets

    def _validate_params(self):
        if self.mode not in _MODES:
            raise ValueError(f"mode must be 'ccpg' or 'repg', got {self.mode!r}")
        check_attribute(self.attribute)
        return None if self.offsets is None else check_offsets(self.offsets)

    def _transform_named(self, seqs, prefix, weight, cache):
        offsets = self._validate_params()
        mode = self.mode
        values = token_attribute_values(seqs, self.attribute, cache)
        if offsets is not None:
            return window_rows(values, offsets, self._local, prefix, weight)
        memo = {}  # str value -> name; tuple value (multi-valued) -> tuple of names
        base = f"{prefix}{mode}="
        out = []
        append = out.append
        multi = False
        for vals in values:
            new = set(vals).difference(memo)
            for v in new:
                if v.__class__ is tuple:
                    multi = True
                    memo[v] = tuple(base + b for _, b in self._local(v))
                else:
                    memo[v] = base + word_shape(v, mode)
            names = list(map(memo.__getitem__, vals))
            if multi and any(k.__class__ is tuple for k in names):
                append([dict.fromkeys(k, weight) if k.__class__ is tuple else {k: weight}
                        for k in names])
            else:
                append([{k: weight} for k in names])
        return out

    def _local(self, value):
        """``(mode, shape)`` pairs of one (possibly multi-valued) attribute value."""
        mode = self.mode
        return dict.fromkeys((mode, word_shape(x, mode)) for x in value_list(value))
