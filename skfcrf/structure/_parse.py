"""Parse a formatted report (plain text) into tokens and the three dictation chains.

This is the first half of the thesis's semi-automatic annotation (Jancsary 2008,
§3.2-3.3): a report typed or corrected by a medical transcriptionist is parsed into
its structure, a hedge of the report grammar (figure 3.2)::

    Report      -> Section+
    Section     -> section<Heading (Subsection | Enumeration | Paragraph)+>
    Subsection  -> subsection<Subheading Paragraph>
    Enumeration -> enumeration<Enumelement+>
    Enumelement -> enumelement<Enummarker Paragraph+>
    Paragraph   -> paragraph<Sentence+>

and written as the three label chains of :func:`skfcrf.datasets.make_dictations`
(one row per token, chain 0 finest):

========  ==================================================================
chain 0   ``BeginHeading``/``Heading``, ``BeginSubheading``/``Subheading``,
          ``BeginSentence``/``Sentence``, ``Enummarker`` (one token, no Begin form)
chain 1   ``BeginNone``/``None`` (the segment holding a section heading),
          ``BeginParagraph``/``Paragraph``, ``BeginEnumelement``/``Enumelement``,
          ``Begin<Type>``/``<Type>`` for a typed subsection (subheading + its text)
chain 2   ``Begin<Type>``/``<Type>`` per section
========  ==================================================================

Line kinds (the layout the parser reads; blank lines are ignored):

* **section heading**: an ALL-CAPS phrase ending in ``:`` at the start of a line,
  alone or followed by text (``PLAN:  The patient ...``; the text is the section's
  first paragraph).  Before the first heading, an ALL-CAPS line without ``:`` and
  without final punctuation is a title heading too (``CIRCUMCISION - NEONATAL``).
* **subheading** (inside a section): a phrase ending in ``:`` at the start of a
  line that matches a subsection pattern (``HEENT:``, ``ABDOMEN:``) or is not in
  capitals (``Vitals:``, ``General:``), alone (the next line is its text) or
  followed by text (a capitalised phrase alone on its line is a section heading).
  In a line that started with a subheading, a capitalised
  phrase ending in ``:`` after the end of a sentence starts the next subsection
  (``HEENT:  No headaches.  Respiratory:  No cough.``).
* **enumeration element**: ``1.  text``, ``2) text`` or ``A.  text``; the marker is
  one ``Enummarker`` token.
* **paragraph**: any other line; one line is one paragraph.

Sentences are split inside lines after ``.``, ``?`` or ``!`` when the next token
starts with a capital letter, a digit or an opening quote or bracket.  Tokens are
the whitespace-separated words with punctuation split off (``.``, ``,``, ``:``, ``%``,
``;``, ``?``, ``!``, brackets and quotes), except that abbreviations keep their
periods (``Dr.``, ``b.i.d.``, ``q.4h.``) and hyphenated words stay whole
(``67-year-old``).  Every character of the text other than white space is in
exactly one token, except the commas of repaired lines (below).

What the parser could not place by the grammar, or repaired, it reports as
:class:`ReportProblem` (a warning by default; ``errors="raise"`` or the list with
``return_problems=True``), never silently:

* ``"repaired"``: a heading or list marker glued to the previous text by a comma
  (``PREOPERATIVE DIAGNOSES,1.  Adrenal mass``, as flattened exports leave them)
  was put on a line of its own (a capitalised phrase before a glued list marker is
  then a heading without its colon);
* ``"unplaced"``: a line the grammar has no place for: an enumeration marker or a
  subheading with no text, a line with no letter or digit (``**``); its tokens
  are kept (as a paragraph, or a marker or subheading alone);
* ``"empty-section"``: a heading followed directly by another heading;
* ``"no-heading"``: the report has no heading at all (it is one section of
  ``default_section_type``).
"""
import re
import warnings
from dataclasses import dataclass

import numpy as np

from skfcrf.structure._segments import find_violations

__all__ = ["parse_report", "ReportProblem", "ReportParseWarning", "DEFAULT_SECTION_TYPES",
           "DEFAULT_SUBSECTION_TYPES", "tokenize_report_text"]


def _anchored(variants):
    return "^(?:" + "|".join(re.escape(v) for v in variants) + ")$"


def _default_types():
    from skfcrf._dictation_vocab import SECTION_HEADINGS, SUBSECTION_HEADINGS

    sections = [(_anchored(v), k) for k, v in SECTION_HEADINGS.items()]
    # Keyword rules for headings outside the dictation vocabulary (real reports have
    # hundreds of variants); the more specific rules come first.
    sections += [
        (r"surgical history|previous surger", "PastSurgicalHistory"),
        (r"family history", "FamilyHistory"),
        (r"social history|habits", "Habits"),
        (r"review of systems", "ReviewOfSystems"),
        (r"present illness|brief history|^history\b", "HistoryOfPresentIllness"),
        (r"medical history|past history", "PastHistory"),
        (r"allerg", "Allergies"),
        (r"medication", "Medication"),
        (r"physical exam|^exam", "PhysicalExamination"),
        (r"complaint", "ChiefComplaints"),
        (r"reason for|indication", "ReasonForEncounter"),
        (r"(assessment|impression|diagnosis)\s*(and|/|&)\s*(plan|recommendation)", "DiagnosisAndPlan"),
        (r"diagnos|impression|assessment|\bdx\b", "Diagnosis"),
        (r"plan|recommendation|disposition", "Plan"),
        (r"finding", "Findings"),
        (r"procedure|operation|surgery|technique|operative", "Procedures"),
        (r"laborator|\blabs?\b|imaging|studies|patholog|x-ray|ultrasound|radiolog", "DiagnosticStudies"),
        (r"course", "Course"),
        (r"follow", "FollowUp"),
    ]
    subsections = [(_anchored(v), k) for k, v in SUBSECTION_HEADINGS.items()]
    # common body-system subheadings outside the generator's vocabulary
    subsections += [
        (r"^(?:ENT|ears,? nose,? and throat|eyes,? nose,? and throat)$", "HEENT"),
        (r"^(?:external )?genital(?:ia)?$", "Genitourinary"),
        (r"^dermatolog(?:ic|ical)$", "Skin"),
        (r"^(?:lungs?|chest) and heart$|^cardiopulmonary$", "ThoraxAndLungs"),
    ]
    return tuple(sections), tuple(subsections)


#: Default ``section_types``: the dictation generator's heading variants (anchored),
#: then keyword rules for common medical headings (``PREOPERATIVE DIAGNOSIS`` ->
#: ``Diagnosis``, ``PROCEDURE IN DETAIL`` -> ``Procedures``).  Headings matching none
#: get ``default_section_type``.
#: Default ``subsection_types``: the generator's subheading variants, anchored
#: (``HEENT``, ``Vital signs`` -> ``VitalSigns``, ``Lungs`` -> ``ThoraxAndLungs``).
DEFAULT_SECTION_TYPES, DEFAULT_SUBSECTION_TYPES = _default_types()


@dataclass(frozen=True)
class ReportProblem:
    """A line of a formatted report that the parser repaired or could not place.

    Attributes
    ----------
    line : int
        1-based line number in the text (0 for problems of the whole report).
    text : str
        The line (stripped), or ``""``.
    kind : str
        ``"repaired"``, ``"unplaced"``, ``"empty-section"`` or ``"no-heading"``.
    message : str
        What was found and what the parser did.
    """

    line: int
    text: str
    kind: str
    message: str

    def __str__(self):
        where = f"line {self.line}: " if self.line else ""
        return f"{where}{self.kind}: {self.message}" + (f" ({self.text[:60]!r})" if self.text else "")


class ReportParseWarning(UserWarning):
    """A formatted report had lines the parser repaired or could not place."""


# ------------------------------------------------------------------------------------------
# tokenization
# ------------------------------------------------------------------------------------------

_TITLE_ABBREVIATIONS = frozenset(
    "mr mrs ms dr st jr sr prof vs etc approx dept inc ltd".split())
_LEAD = "([\"'"
_TRAIL = ")]\"',;:!?%"
# b.i.d. / q.4h. / p.r.n. / U.S.: short pieces joined by periods, with a letter (2.2. is a number)
_ABBREVIATION = re.compile(r"^(?=.*[A-Za-z])[A-Za-z0-9]{1,4}(?:\.[A-Za-z0-9]{1,4})+\.$")


def _split_chunk(chunk, out):
    lead = []
    while len(chunk) > 1 and chunk[0] in _LEAD:
        lead.append(chunk[0])
        chunk = chunk[1:]
    trail = []
    while chunk:
        c = chunk[-1]
        if c in _TRAIL and len(chunk) > 1:
            trail.append(c)
            chunk = chunk[:-1]
        elif c == "." and len(chunk) > 1:
            core = chunk[:-1]
            if chunk.endswith("..") and not chunk.endswith("..."):
                trail.append(".")  # "q.d.." : an abbreviation ending a sentence
                chunk = core
            elif chunk.endswith("...") and len(chunk) > 3:
                trail.append("...")
                chunk = chunk[:-3]
            elif _ABBREVIATION.match(chunk) or core.lower() in _TITLE_ABBREVIATIONS:
                break  # b.i.d. / q.4h. / Dr. keep their period
            else:
                trail.append(".")
                chunk = core
        else:
            break
    out.extend(lead)
    if chunk:
        out.append(chunk)
    out.extend(reversed(trail))


def tokenize_report_text(text):
    """Split formatted text into tokens (punctuation split off, abbreviations kept).

    Examples
    --------
    >>> tokenize_report_text('Cipro 500 mg b.i.d. x five days.  Seen by Dr. X (urology).')
    ... # doctest: +NORMALIZE_WHITESPACE
    ['Cipro', '500', 'mg', 'b.i.d.', 'x', 'five', 'days', '.',
     'Seen', 'by', 'Dr.', 'X', '(', 'urology', ')', '.']
    """
    out = []
    for chunk in _strip_bom(text).split():
        _split_chunk(chunk, out)
    return out


def _strip_bom(text):
    """``text`` without a leading byte-order mark (U+FEFF), which is no part of the text."""
    return text[1:] if text.startswith("\ufeff") else text


_SENTENCE_END = frozenset(".?!")


def _ends_sentence(tok):
    if tok in _SENTENCE_END or tok == "...":
        return True
    return len(tok) > 2 and tok.endswith(".") and _ABBREVIATION.match(tok) is not None


def _starts_sentence(tok):
    c = tok[0]
    return c.isupper() or c.isdigit() or c in "\"'(["


def _sentence_starts(tokens):
    """Token indices (within one span) where a sentence begins."""
    starts = [0]
    for i in range(1, len(tokens)):
        if _ends_sentence(tokens[i - 1]) and _starts_sentence(tokens[i]):
            starts.append(i)
    return starts


# ------------------------------------------------------------------------------------------
# line classification
# ------------------------------------------------------------------------------------------

# a heading phrase: no lower-case letter, at least two capitals, at most 15 words
_HEAD_RE = re.compile(r"^([^:a-z]*[A-Z][^:a-z]*[A-Z][^:a-z]*?)\s*:\s*(.*)$")
_LABEL_RE = re.compile(r"^([A-Za-z][A-Za-z0-9 /&,()'.-]{0,48}?)\s*:(?!//)\s*(.*)$")
_ENUM_RE = re.compile(r"^(\d{1,2}[.)]|[A-Z][.)])\s+(\S.*)?$")
_ENUM_ALONE_RE = re.compile(r"^(\d{1,2}[.)])$")
# a heading or list marker glued to the previous text by a comma (flattened exports)
_GLUED_RE = re.compile(r",(?=(?:[A-Z][A-Z0-9 &/()'-]*[A-Z]\s*:|\d{1,2}\.\s))")
_INLINE_SUB_RE = re.compile(r"(?<=[.!?])\s+(?=[A-Z][A-Za-z/&' -]{0,30}:\s)")
_HAS_WORD = re.compile(r"[A-Za-z0-9]")


def _is_caps(phrase):
    letters = [c for c in phrase if c.isalpha()]
    return len(letters) >= 2 and all(c.isupper() for c in letters)


def _lookup(phrase, patterns):
    for pattern, typ in patterns:
        if pattern.search(phrase):
            return typ
    return None


def _compile_types(types, name):
    if types is None:
        return None
    if isinstance(types, (str, bytes)) or not hasattr(types, "__iter__"):
        raise ValueError(f"{name} must be a list of (regular expression, type) pairs, got {types!r}")
    out = []
    for item in types:
        try:
            pattern, typ = item
        except (TypeError, ValueError):
            raise ValueError(f"{name} must be a list of (regular expression, type) pairs; "
                             f"found {item!r}") from None
        if not isinstance(pattern, str) or not isinstance(typ, str) or not typ:
            raise ValueError(f"{name}: each pair is (pattern str, type str), found {item!r}")
        try:
            out.append((re.compile(pattern, re.IGNORECASE), typ))
        except re.error as exc:
            raise ValueError(f"{name}: invalid regular expression {pattern!r}: {exc}") from None
    return out


# the default tables, compiled once (parse_report runs per report, render_text per subheading)
DEFAULT_SECTIONS = _compile_types(DEFAULT_SECTION_TYPES, "section_types")
DEFAULT_SUBSECTIONS = _compile_types(DEFAULT_SUBSECTION_TYPES, "subsection_types")


class _Builder:
    """Accumulates tokens and the three label columns."""

    def __init__(self):
        self.tokens, self.c0, self.c1, self.c2 = [], [], [], []
        self.section = None      # current section type
        self.section_start = True
        self.section_has_content = True
        self.heading_line = None

    def _c2(self, n):
        if self.section_start and n:
            self.c2.append("Begin" + self.section)
            self.c2.extend([self.section] * (n - 1))
            self.section_start = False
        else:
            self.c2.extend([self.section] * n)

    def start_section(self, typ):
        self.section = typ
        self.section_start = True

    def heading(self, toks):
        self.tokens.extend(toks)
        n = len(toks)
        self.c0.extend(["BeginHeading"] + ["Heading"] * (n - 1))
        self.c1.extend(["BeginNone"] + ["None"] * (n - 1))
        self._c2(n)

    def sentences(self, toks, c1_label, begin):
        """Sentences of one span; ``begin``: the span starts its chain-1 segment."""
        if not toks:
            return
        starts = set(_sentence_starts(toks))
        for i, t in enumerate(toks):
            self.tokens.append(t)
            self.c0.append("BeginSentence" if i in starts else "Sentence")
            self.c1.append(("Begin" + c1_label) if (begin and i == 0) else c1_label)
        self._c2(len(toks))

    def subheading(self, toks, typ):
        n = len(toks)
        self.tokens.extend(toks)
        self.c0.extend(["BeginSubheading"] + ["Subheading"] * (n - 1))
        self.c1.extend(["Begin" + typ] + [typ] * (n - 1))
        self._c2(n)

    def marker(self, tok):
        self.tokens.append(tok)
        self.c0.append("Enummarker")
        self.c1.append("BeginEnumelement")
        self._c2(1)


def _split_lines(text, problems):
    """Lines of the text, with glued headings / list markers put on lines of their own."""
    out = []
    for no, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line:
            continue
        pieces = [p.strip() for p in _GLUED_RE.split(line)]
        if line.startswith(",") and len(line) > 1:
            pieces[0] = pieces[0][1:].strip()
        pieces = [p for p in pieces if p]
        if len(pieces) > 1 or pieces[0] != line:
            problems.append(ReportProblem(
                no, line, "repaired",
                f"a heading or list marker was glued to the text before it by a comma; "
                f"split into {len(pieces)} line(s)"))
        for k, p in enumerate(pieces):
            # "PREOPERATIVE DIAGNOSES,1.  Adrenal mass": a heading whose line break (and
            # colon) the export lost, recognisable by the list that follows it
            heading = (k + 1 < len(pieces) and _ENUM_RE.match(pieces[k + 1]) is not None
                       and _is_caps(p) and p[-1] not in ".?!,;")
            out.append((no, p, heading))
    return out


def parse_report(text, *, section_types=None, default_section_type="Other", subsection_types=None,
                 default_subsection_type="Subsection", errors="warn", return_problems=False):
    """Parse a formatted report into tokens and three label chains.

    Parameters
    ----------
    text : str
        The report as typed: headings, subheadings, numbered lists, one paragraph
        per line (see the module docstring for the line kinds).  A byte-order mark
        at its start (a file read as ``"utf-8"`` rather than ``"utf-8-sig"``) is
        dropped.
    section_types : list of (str, str), optional
        Heading text -> section type: ``(regular expression, type)`` pairs, each
        searched anywhere in the heading text (``re.search``, case-insensitive,
        without the final ``:``); the first match wins.  Default
        :data:`DEFAULT_SECTION_TYPES`.
    default_section_type : str, default="Other"
        Type of sections whose heading matches no pattern, and of text before the
        first heading.
    subsection_types : list of (str, str), optional
        The same for subheadings (default :data:`DEFAULT_SUBSECTION_TYPES`).  A
        capitalised ALL-CAPS phrase that matches one inside a section is a
        subheading, not a section heading (``HEENT:`` in ``PHYSICAL EXAMINATION:``).
    default_subsection_type : str, default="Subsection"
        Type of subsections whose subheading matches no pattern.
    errors : {"warn", "raise", "ignore"}, default="warn"
        What to do when lines were repaired or could not be placed (see
        :class:`ReportProblem`): one :class:`ReportParseWarning` listing them, a
        ``ValueError``, or nothing.
    return_problems : bool, default=False
        Also return the list of :class:`ReportProblem`.

    Returns
    -------
    tokens : list of str
    labels : ndarray of object, shape (n_tokens, 3)
        Chains 0 (sentence level), 1 (subsection level), 2 (section level).
    problems : list of ReportProblem
        Only with ``return_problems=True``.

    Raises
    ------
    ValueError
        ``text`` is not a string, holds no token, or (``errors="raise"``) has
        problems; or the type arguments are malformed.

    Examples
    --------
    >>> text = "CHIEF COMPLAINT:\\nBlood in urine.\\nPLAN:\\n1.  Cystoscopy.\\n2.  Follow up."
    >>> tokens, labels = parse_report(text)
    >>> for tok, lab in zip(tokens[:8], labels[:8]):
    ...     print(f"{tok:10} {lab[0]:14} {lab[1]:16} {lab[2]}")
    CHIEF      BeginHeading   BeginNone        BeginChiefComplaints
    COMPLAINT  Heading        None             ChiefComplaints
    :          Heading        None             ChiefComplaints
    Blood      BeginSentence  BeginParagraph   ChiefComplaints
    in         Sentence       Paragraph        ChiefComplaints
    urine      Sentence       Paragraph        ChiefComplaints
    .          Sentence       Paragraph        ChiefComplaints
    PLAN       BeginHeading   BeginNone        BeginPlan
    >>> for tok, lab in zip(tokens[9:12], labels[9:12]):
    ...     print(tok, *lab)
    1. Enummarker BeginEnumelement Plan
    Cystoscopy BeginSentence Enumelement Plan
    . Sentence Enumelement Plan
    """
    if isinstance(text, bytes):
        raise ValueError("text must be a str; decode the file first (e.g. as UTF-8)")
    if not isinstance(text, str):
        raise ValueError(f"text must be a str, got {type(text).__name__}")
    text = _strip_bom(text)
    if errors not in ("warn", "raise", "ignore"):
        raise ValueError(f"errors must be 'warn', 'raise' or 'ignore', got {errors!r}")
    for name, value in (("default_section_type", default_section_type),
                        ("default_subsection_type", default_subsection_type)):
        if not isinstance(value, str) or not value or value.startswith("Begin"):
            raise ValueError(f"{name} must be a non-empty str not starting with 'Begin', got {value!r}")
    sections = _compile_types(section_types, "section_types")
    if sections is None:
        sections = DEFAULT_SECTIONS
    subsections = _compile_types(subsection_types, "subsection_types")
    if subsections is None:
        subsections = DEFAULT_SUBSECTIONS

    problems = []
    lines = _split_lines(text, problems)
    b = _Builder()
    pending_sub = None   # a subheading alone on its line waits for its text
    n_headings = 0

    def close_section():
        if b.section is not None and not b.section_has_content and b.heading_line is not None:
            problems.append(ReportProblem(b.heading_line[0], b.heading_line[1], "empty-section",
                                          "a heading with no text before the next heading"))

    def check_pending():
        nonlocal pending_sub
        if pending_sub is not None:
            problems.append(ReportProblem(pending_sub[0], pending_sub[1], "unplaced",
                                          "a subheading with no text after it; kept alone"))
            pending_sub = None

    def ensure_section():
        if b.section is None:
            b.start_section(default_section_type)
            b.section_has_content = True
            b.heading_line = None

    def subsection_span(no, line, label, rest, typ):
        """A subheading with the rest of its line (inline subheadings split)."""
        nonlocal pending_sub
        b.subheading(tokenize_report_text(label) + [":"], typ)
        b.section_has_content = True
        if not rest:
            pending_sub = (no, line, typ)
            return
        parts = _INLINE_SUB_RE.split(rest)
        b.sentences(tokenize_report_text(parts[0]), typ, begin=False)
        for part in parts[1:]:
            m = _LABEL_RE.match(part)
            label2, rest2 = m.group(1), m.group(2)
            typ2 = _lookup(label2, subsections) or default_subsection_type
            b.subheading(tokenize_report_text(label2) + [":"], typ2)
            b.sentences(tokenize_report_text(rest2), typ2, begin=False)

    for no, line, glued_heading in lines:
        m_head = _HEAD_RE.match(line)
        m_label = _LABEL_RE.match(line)
        m_enum = _ENUM_RE.match(line) or _ENUM_ALONE_RE.match(line)
        in_section = b.section is not None
        if m_head and len(m_head.group(1).split()) <= 15 and not m_enum:
            phrase, rest = m_head.group(1).strip(), m_head.group(2).strip()
            # a known subheading in capitals followed by its text; alone on its line,
            # a capitalised phrase is a section heading (NEUROLOGIC: is both)
            sub_type = _lookup(phrase, subsections) if in_section and rest else None
            if sub_type is None:
                check_pending()
                close_section()
                n_headings += 1
                b.start_section(_lookup(phrase, sections) or default_section_type)
                b.heading(tokenize_report_text(phrase) + [":"])
                b.heading_line = (no, line)
                b.section_has_content = bool(rest)
                if rest:
                    b.sentences(tokenize_report_text(rest), "Paragraph", begin=True)
                continue
            check_pending()
            subsection_span(no, line, phrase, rest, sub_type)
            continue
        if glued_heading or (not in_section and n_headings == 0 and _is_caps(line)
                             and line[-1] not in ".?!:,;" and len(line.split()) <= 10 and not m_enum):
            # a title line before the first heading: a heading without a colon
            check_pending()
            close_section()
            n_headings += 1
            b.start_section(_lookup(line, sections) or default_section_type)
            b.heading(tokenize_report_text(line))
            b.heading_line = (no, line)
            b.section_has_content = False
            continue
        if m_label and not m_enum and in_section and not _is_caps(m_label.group(1)) \
                and len(m_label.group(1).split()) <= 6 and not m_label.group(1).endswith("."):
            check_pending()
            label, rest = m_label.group(1).strip(), m_label.group(2).strip()
            typ = _lookup(label, subsections)
            if rest or typ is not None or len(label.split()) <= 3:
                # a longer phrase alone on its line introduces what follows
                # ("Our recommendation would be:"): a paragraph
                subsection_span(no, line, label, rest, typ or default_subsection_type)
                continue
        ensure_section()
        b.section_has_content = True
        if pending_sub is not None and not m_enum:
            b.sentences(tokenize_report_text(line), pending_sub[2], begin=False)
            pending_sub = None
            continue
        check_pending()
        if m_enum:
            b.marker(m_enum.group(1))
            rest = (m_enum.group(2) or "").strip() if m_enum.re is _ENUM_RE else ""
            if rest:
                b.sentences(tokenize_report_text(rest), "Enumelement", begin=False)
            else:
                problems.append(ReportProblem(no, line, "unplaced",
                                              "an enumeration marker with no text; kept alone"))
            continue
        toks = tokenize_report_text(line)
        if not _HAS_WORD.search(line):
            problems.append(ReportProblem(no, line, "unplaced",
                                          "a line with no letter or digit; kept as a paragraph"))
        b.sentences(toks, "Paragraph", begin=True)
    check_pending()
    close_section()
    if not b.tokens:
        raise ValueError("the report holds no token (empty or only white space)")
    if n_headings == 0:
        problems.append(ReportProblem(0, "", "no-heading",
                                      f"the report has no heading; it is one section of type "
                                      f"{default_section_type!r}"))
    labels = np.empty((len(b.tokens), 3), dtype=object)
    labels[:, 0], labels[:, 1], labels[:, 2] = b.c0, b.c1, b.c2
    violations = find_violations(labels)
    if violations:  # pragma: no cover - the builder only writes valid structures
        raise RuntimeError(f"parse_report built an invalid structure: {violations[:5]}")
    if problems and errors != "ignore":
        listing = "; ".join(str(p) for p in problems[:10])
        more = f" (and {len(problems) - 10} more)" if len(problems) > 10 else ""
        msg = f"{len(problems)} problem(s) in the report: {listing}{more}"
        if errors == "raise":
            raise ValueError(msg)
        warnings.warn(msg, ReportParseWarning, stacklevel=2)
    if return_problems:
        return b.tokens, labels, problems
    return b.tokens, labels
