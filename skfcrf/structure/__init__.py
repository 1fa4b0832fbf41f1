"""Report structure: label chains <-> nested segments, constraint repair, rendering.

* :func:`chains_to_segments` / :func:`segments_to_chains`: label chains of one
  sequence <-> a tree of :class:`Segment` (chain 0 finest; Begin/B- prefixes,
  bare or I- continuation labels, O outside, single-token labels such as
  ``Enummarker``; see :class:`LabelScheme`).
* :func:`repair` with :func:`find_violations`: post-processing of decoded labels
  (every segment starts with a Begin label; a coarser boundary implies a finer one;
  pluggable domain rules such as :func:`min_enumeration_elements`); the
  thesis's post-processing as presets, :data:`COR_RULES` (algorithm 7, formatted
  reports) and :data:`RCG_RULES` (algorithm 8, recognizer output).
* :func:`to_bioes`, :func:`to_bme`, :func:`to_bio`: one chain between the BIO,
  BIOES and BME (Chou's begin/middle/end states) tagging schemes.
* :func:`render_markdown` / :func:`render_html`: a recognised report as a formatted
  document, with headings generated for sections whose heading was not dictated.
"""
from skfcrf.structure._postprocess import (
    COR_RULES,
    RCG_RULES,
    UNTYPED_SUBSECTIONS,
    fix_long_headings,
    merge_same_type_at_heading,
    no_double_begins,
    no_untyped_between_typed,
    typed_subsections_start_at,
)
from skfcrf.structure._render import (
    DICTATED_PUNCTUATION_WORDS,
    heading_for,
    render_html,
    render_markdown,
)
from skfcrf.structure._repair import (
    DICTATION_RULES,
    long_headings_to_sentences,
    merge_adjacent_same_type,
    merge_unless_starts_with,
    min_enumeration_elements,
    repair,
)
from skfcrf.structure._segments import (
    LabelScheme,
    Segment,
    chains_to_segments,
    find_violations,
    segments_to_chains,
)
from skfcrf.structure._tags import to_bio, to_bioes, to_bme

__all__ = [
    "Segment",
    "LabelScheme",
    "chains_to_segments",
    "segments_to_chains",
    "find_violations",
    "repair",
    "min_enumeration_elements",
    "merge_adjacent_same_type",
    "merge_unless_starts_with",
    "long_headings_to_sentences",
    "DICTATION_RULES",
    "typed_subsections_start_at",
    "no_untyped_between_typed",
    "merge_same_type_at_heading",
    "no_double_begins",
    "fix_long_headings",
    "COR_RULES",
    "RCG_RULES",
    "UNTYPED_SUBSECTIONS",
    "render_markdown",
    "render_html",
    "heading_for",
    "DICTATED_PUNCTUATION_WORDS",
    "to_bioes",
    "to_bme",
    "to_bio",
]
