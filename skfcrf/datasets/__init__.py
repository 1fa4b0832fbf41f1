"""Data sets and file formats: synthetic medical dictations and CoNLL-style column files."""
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
    make_dictations,
)

__all__ = [
    "read_conll",
    "write_conll",
    "make_dictations",
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
