"""The standard observation set of the dictation experiments, as one factory.

:func:`make_dictation_features` builds the :class:`SequenceFeatureUnion` used by
``skfcrf demo``, ``skfcrf train`` (from its feature configuration) and the
dictation benchmarks: n-gram windows over token attributes, a bag of concepts
around each token, the token's relative position in the sequence and,
optionally, its word shape, prefixes and suffixes, casing and length, and the classes
of a lexicon.
"""
from skfcrf.transformers._affix import Affixes
from skfcrf.transformers._casing import Casing
from skfcrf.transformers._concepts import BagOfConcepts
from skfcrf.transformers._lexicon import Lexicon
from skfcrf.transformers._ngram import NGramWindow
from skfcrf.transformers._position import RelativePosition
from skfcrf.transformers._shape import WordShape
from skfcrf.transformers._union import SequenceFeatureUnion

__all__ = ["DICTATION_FEATURE_KINDS", "make_dictation_features"]

#: The feature kinds :func:`make_dictation_features` knows, in documentation order.
DICTATION_FEATURE_KINDS = ("ngram", "concepts", "position", "shape", "affix", "casing", "lexicon")


def make_dictation_features(attributes=("word",), kinds=("ngram", "concepts", "position"), *,
                            lowercase=True, ngram_window=2, concept_window=10, position_bins=8,
                            affix_length=4, lexicon=None):
    """Build the standard feature union of the dictation experiments.

    With the defaults this is the union of the paper's dictation experiments
    (and of ``skfcrf demo``): lowercased word n-grams at offsets -2..2, the
    concepts found within +-10 tokens, and the relative position in 8 bins.

    Parameters
    ----------
    attributes : sequence of str, default=("word",)
        Token attributes.  ``"ngram"`` adds one :class:`NGramWindow` per
        attribute; the other kinds that read tokens read the text attribute,
        ``"word"`` if present, else the first attribute.
    kinds : sequence of str, default=("ngram", "concepts", "position")
        Feature kinds among :data:`DICTATION_FEATURE_KINDS`, in output order:
        ``"ngram"`` (:class:`NGramWindow`), ``"concepts"``
        (:class:`BagOfConcepts`), ``"position"`` (:class:`RelativePosition`),
        ``"shape"`` (:class:`WordShape`), ``"affix"`` (:class:`Affixes`: prefixes
        and suffixes, lowercased), ``"casing"`` (:class:`Casing`: capitalisation,
        digits, length), ``"lexicon"`` (:class:`Lexicon` of ``lexicon``).
    lowercase : bool, default=True
        Lowercase the n-gram values.
    ngram_window : int, default=2
        n-grams at offsets ``-ngram_window .. ngram_window``.
    concept_window : int, default=10
        Bag-of-concepts window, +-``concept_window`` tokens.
    position_bins : int, default=8
        Number of relative-position bins.
    affix_length : int, default=4
        Longest prefix and suffix of ``"affix"``.
    lexicon : dict, optional
        ``phrase -> class(es)`` of ``"lexicon"`` (see :class:`Lexicon`); required
        with that kind.

    Returns
    -------
    SequenceFeatureUnion
        Members named ``ngram_<attribute>`` and after the other kinds
        (``concepts``, ``position``, ...; the prefixes of the observation names).

    Raises
    ------
    ValueError
        For an unknown feature kind, an empty ``attributes``, or ``"lexicon"``
        without ``lexicon``.

    Examples
    --------
    >>> from skfcrf.transformers import make_dictation_features
    >>> union = make_dictation_features()
    >>> [name for name, _ in union.transformer_list]
    ['ngram_word', 'concepts', 'position']
    >>> tokens = union.fit_transform([["Fever", "and", "cough"]])[0]
    >>> sorted(name for name in tokens[0] if name.startswith("ngram_word__word@0"))
    ['ngram_word__word@0=fever']
    >>> make_dictation_features(["word", "pos"], ["ngram", "shape"]).transformer_list[1][0]
    'ngram_pos'
    """
    attributes = list(attributes)
    if not attributes:
        raise ValueError("attributes must name at least one token attribute")
    text_attribute = "word" if "word" in attributes else attributes[0]
    offsets = tuple(range(-int(ngram_window), int(ngram_window) + 1))
    parts = []
    for kind in kinds:
        if kind == "ngram":
            parts += [(f"ngram_{a}", NGramWindow(attribute=a, offsets=offsets,
                                                 lowercase=bool(lowercase)))
                      for a in attributes]
        elif kind == "concepts":
            parts.append(("concepts", BagOfConcepts(window=int(concept_window),
                                                    attribute=text_attribute)))
        elif kind == "position":
            parts.append(("position", RelativePosition(n_bins=int(position_bins))))
        elif kind == "shape":
            parts.append(("shape", WordShape(attribute=text_attribute)))
        elif kind == "affix":
            parts.append(("affix", Affixes(attribute=text_attribute, max_length=int(affix_length))))
        elif kind == "casing":
            parts.append(("casing", Casing(attribute=text_attribute)))
        elif kind == "lexicon":
            if lexicon is None:
                raise ValueError("the 'lexicon' feature kind needs lexicon= (phrase -> class)")
            parts.append(("lexicon", Lexicon(lexicon, attribute=text_attribute)))
        else:
            raise ValueError(f"unknown feature kind {kind!r} "
                             f"(choose from {', '.join(DICTATION_FEATURE_KINDS)})")
    return SequenceFeatureUnion(parts)
