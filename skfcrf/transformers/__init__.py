"""Token-sequence feature extractors (scikit-learn transformers).

All transformers take ``X`` as a list of sequences of tokens (``str`` or dicts of
attributes such as ``{"word": "fever", "pos": "NN"}``) and return, per sequence, a
list of per-token dicts ``{observation_name: float}`` -- the input format of
:class:`skfcrf.FactorialCRF`.
"""
from skfcrf.transformers._affix import Affixes
from skfcrf.transformers._base import SequenceTransformerMixin
from skfcrf.transformers._casing import Casing, case_class, length_bucket
from skfcrf.transformers._concepts import BagOfConcepts, light_stem
from skfcrf.transformers._dictation import DICTATION_FEATURE_KINDS, make_dictation_features
from skfcrf.transformers._lexicon import Lexicon
from skfcrf.transformers._ngram import BOS, EOS, NGramWindow
from skfcrf.transformers._position import RelativePosition
from skfcrf.transformers._shape import WordShape, word_shape
from skfcrf.transformers._union import SequenceFeatureUnion, make_sequence_union

__all__ = [
    "Affixes",
    "Casing",
    "Lexicon",
    "case_class",
    "length_bucket",
    "BOS",
    "EOS",
    "BagOfConcepts",
    "DICTATION_FEATURE_KINDS",
    "NGramWindow",
    "RelativePosition",
    "SequenceFeatureUnion",
    "SequenceTransformerMixin",
    "WordShape",
    "light_stem",
    "make_dictation_features",
    "make_sequence_union",
    "word_shape",
]
