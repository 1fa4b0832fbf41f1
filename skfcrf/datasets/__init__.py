"""Data sets and file formats: synthetic medical dictations, a speech-recognizer noise model for
formatted reports, and CoNLL-style column files."""
from skfcrf.datasets._conll import read_conll, write_conll
from skfcrf.datasets._dictations import (
    DICTATED_PUNCTUATION,
    DICTATION_CHAINS,
    DICTATION_LABELS,
    SECTION_HEADINGS,
    SECTION_LABELS,
    SECTION_TYPES,
    SENTENCE_LABELS,
    SUBSECTION_HEADINGS,
    SUBSECTION_LABELS,
    SUBSECTION_TYPES,
)
from skfcrf.datasets._transcripts import (
    DictationPair,
    dictate_report,
    make_dictation_pairs,
    make_dictations,
    word_edit_distance,
)

__all__ = [
    "read_conll",
    "write_conll",
    "make_dictations",
    "dictate_report",
    "make_dictation_pairs",
    "DictationPair",
    "word_edit_distance",
    "DICTATION_CHAINS",
    "DICTATION_LABELS",
    "SENTENCE_LABELS",
    "SUBSECTION_LABELS",
    "SECTION_LABELS",
    "SECTION_TYPES",
    "SUBSECTION_TYPES",
    "SECTION_HEADINGS",
    "SUBSECTION_HEADINGS",
    "DICTATED_PUNCTUATION",
]
