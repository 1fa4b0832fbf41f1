"""Report structure: label chains <-> nested segments, constraint repair, rendering.

* :func:`chains_to_segments` / :func:`segments_to_chains`: label chains of one
  sequence <-> a tree of :class:`Segment` (chain 0 finest; Begin/B- prefixes,
  bare or I- continuation labels, O outside, single-token labels such as
  ``Enummarker``; see :class:`LabelScheme`).
* :func:`repair` with :func:`find_violations`: post-processing of decoded labels
  (every segment starts with a Begin label; a coarser boundary implies a finer one;
  pluggable domain rules such as :func:`min_enumeration_elements`); the
  thesis's post-processing as presets, :data:`COR_RULES` (algorithm 7, formatted
  reports) and :data:`RCG_RULES` (algorithm 8, recognizer output), by name in
  :data:`REPAIR_PRESETS` (``"formal"``, ``"cor"``, ``"rcg"``).
* :func:`repair_sequences` repairs whole predictions; :class:`Repaired` wraps an
  estimator (or pipeline) so that ``predict``/``decode`` return repaired labels.
* :func:`to_bioes`, :func:`to_bme`, :func:`to_bio`: one chain between the BIO,
  BIOES and BME (Chou's begin/middle/end states) tagging schemes;
  :class:`SegmentEncoded` trains an estimator on BME (or BIOES) segment chains and
  answers in the user's labels.
* :func:`parse_report`: a formatted report (plain text: headings, subheadings,
  numbered lists, paragraphs) -> tokens and the three dictation chains, with every
  line it repaired or could not place reported (:class:`ReportProblem`).
* :func:`render_markdown` / :func:`render_html` / :func:`render_text`: a recognised
  report as a formatted document, with headings generated for sections whose
  heading was not dictated; :func:`render_text` writes the layout
  :func:`parse_report` reads.
* :func:`render_comparison` / :func:`write_comparison_pages`: gold and predicted
  structure side by side as self-contained HTML pages, disagreements marked.
* :func:`align_transcript`: carry a formatted report's labels over to the recognizer
  transcript of its dictation (phonetic minimum-cost alignment, thesis section 3.3.3),
  with :class:`AlignmentStats`.
"""
from skfcrf.structure import (
    _align,
    _compare,
    _encoded,
    _parse,
    _postprocess,
    _render,
    _repair,
    _repaired,
    _segments,
    _tags,
)
from skfcrf.structure._align import *  # noqa: F403
from skfcrf.structure._compare import *  # noqa: F403
from skfcrf.structure._encoded import *  # noqa: F403
from skfcrf.structure._parse import *  # noqa: F403
from skfcrf.structure._postprocess import *  # noqa: F403
from skfcrf.structure._render import *  # noqa: F403
from skfcrf.structure._repair import *  # noqa: F403
from skfcrf.structure._repaired import *  # noqa: F403
from skfcrf.structure._segments import *  # noqa: F403
from skfcrf.structure._tags import *  # noqa: F403

__all__ = [
    *_segments.__all__,
    *_repair.__all__,
    *_postprocess.__all__,
    *_repaired.__all__,
    *_render.__all__,
    *_compare.__all__,
    *_encoded.__all__,
    *_tags.__all__,
    *_parse.__all__,
    *_align.__all__,
]
