"""Render a recognised report structure as Markdown or HTML.

:func:`render_text` writes the plain-text layout of a typed report, which
:func:`skfcrf.structure.parse_report` reads back (headings ``HEADING:`` on their own
line, ``1.  item`` lists, ``Subheading:  text`` subsections, one paragraph per line).

The layout follows the three dictation chains (see
:func:`skfcrf.datasets.make_dictations`): chain 2 segments are sections with a
heading, chain 1 segments are paragraphs, enumeration elements (numbered lists),
typed subsections (shown with their subheading) or ``None`` segments (the dictated
heading), chain 0 segments are headings, subheadings, sentences and enumeration
markers.  With fewer chains the missing levels are treated as one untitled section
(two chains) or one paragraph (one chain).
"""
import html
import re

from skfcrf._dictation_vocab import SECTION_HEADINGS, SUBSECTION_HEADINGS
from skfcrf.structure._parse import DEFAULT_SUBSECTIONS, _lookup
from skfcrf.structure._segments import LabelScheme, Segment, chains_to_segments

__all__ = ["render_markdown", "render_html", "render_text", "heading_for", "DICTATED_PUNCTUATION_WORDS"]

#: Dictated punctuation (recognizer tokens) -> written mark; ``""`` drops the words
#: (paragraph breaks come from the structure).
DICTATED_PUNCTUATION_WORDS = {
    ("period",): ".",
    ("full", "stop"): ".",
    ("comma",): ",",
    ("colon",): ":",
    ("semicolon",): ";",
    ("question", "mark"): "?",
    ("exclamation", "mark"): "!",
    ("new", "paragraph"): "",
    ("next", "paragraph"): "",
    ("new", "line"): "",
}

_ATTACH_LEFT = frozenset(".,:;?!)%")
_ATTACH_RIGHT = frozenset("(")
_TYPED_MARKER = re.compile(r"^(?:\d{1,2}|[A-Z])[.)]$")  # a typed list marker, kept as typed
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


_SECTION_NAMES = {k: v[0] for k, v in SECTION_HEADINGS.items()}
_SUBSECTION_NAMES = {k: v[0] for k, v in SUBSECTION_HEADINGS.items()}


def heading_for(label, headings=None, subsection=False):
    """Heading text for a segment type.

    ``headings`` (a dict type -> text) wins; then the canonical dictation headings
    (``HistoryOfPresentIllness`` -> ``"HISTORY OF PRESENT ILLNESS"``,
    ``Habits`` -> ``"SOCIAL HISTORY"``); otherwise the CamelCase type is split and
    upper-cased (``FooBarBaz`` -> ``"FOO BAR BAZ"``).
    """
    if headings and label in headings:
        return headings[label]
    names = _SUBSECTION_NAMES if subsection else _SECTION_NAMES
    if label in names:
        return names[label]
    text = str(label).replace("_", " ").replace("-", " ")
    return " ".join(_CAMEL.sub(" ", text).split()).upper()


def _word(tok):
    return tok if isinstance(tok, str) else str(tok.get("word", ""))


def _clean(words, punctuation, drop_words):
    """Turn dictated punctuation into marks and drop unwanted words."""
    if drop_words:
        words = [w for w in words if w.lower() not in drop_words]
    if not punctuation:
        return words
    maxlen = max(len(k) for k in punctuation)
    out = []
    i = 0
    low = [w.lower() for w in words]
    while i < len(words):
        for n in range(maxlen, 0, -1):
            key = tuple(low[i:i + n])
            if len(key) == n and key in punctuation:
                mark = punctuation[key]
                if mark and out and out[-1] not in _ATTACH_LEFT:
                    out.append(mark)
                i += n
                break
        else:
            out.append(words[i])
            i += 1
    return out


def _join(words):
    """Join words, attaching punctuation marks to their neighbours."""
    parts = []
    glue = True
    for w in words:
        if parts and not glue and not (len(w) == 1 and w in _ATTACH_LEFT):
            parts.append(" ")
        parts.append(w)
        glue = len(w) == 1 and w in _ATTACH_RIGHT
    return "".join(parts)


class _Opts:
    def __init__(self, headings, subheadings, dictated_punctuation, capitalize, drop_words,
                 generate_headings):
        self.headings = headings
        self.subheadings = subheadings
        if dictated_punctuation is True:
            dictated_punctuation = DICTATED_PUNCTUATION_WORDS
        self.punct = {tuple(w.lower() for w in k): v for k, v in (dictated_punctuation or {}).items()}
        self.capitalize = capitalize
        self.drop = frozenset(w.lower() for w in (drop_words or ()))
        self.generate = generate_headings


def _sentence_text(seg, opts):
    words = _clean([_word(t) for t in seg.tokens], opts.punct, opts.drop)
    if opts.capitalize and words:
        words[0] = words[0][:1].upper() + words[0][1:]
        if seg.label == "Sentence" and words[-1] not in _ATTACH_LEFT:
            words.append(".")
    return _join(words)


def _title_text(segs, opts, upper=True):
    words = [_word(t) for s in segs for t in s.tokens]
    words = _clean(words, opts.punct, opts.drop)
    while words and words[-1] in (":", "colon", ".", ",", ";"):  # a title ends with no mark
        words.pop()
    text = _join(words)
    return text.upper() if upper else text


def _subheading_text(text):
    """A subheading for the text layout that :func:`parse_report` reads back as one:
    kept as written unless it is in capitals and not a known subheading (a capitalised
    phrase with a colon is a section heading there), then in sentence case."""
    letters = [c for c in text if c.isalpha()]
    if not letters or not all(c.isupper() for c in letters):
        return text[:1].upper() + text[1:]
    if _lookup(text, DEFAULT_SUBSECTIONS) is not None:
        return text
    return text[:1] + text[1:].lower()


def _structure(tokens, labels, scheme):
    """Sections -> blocks -> leaves, whatever the number of chains."""
    root = chains_to_segments(tokens, labels, scheme=scheme)
    n = root.level
    if n >= 3:
        sections = list(root.iter(level=2))
    elif n == 2:
        sections = [Segment(2, None, 0, root.end, root.children, tokens=root.tokens)]
    else:
        block = Segment(1, "Paragraph", 0, root.end, root.children, tokens=root.tokens)
        sections = [Segment(2, None, 0, root.end, [block], tokens=root.tokens)]
    return sections


def _render(tokens, labels, opts, scheme, fmt):
    if tokens is None:
        raise ValueError("tokens are required for rendering")
    tokens = list(tokens)
    sections = _structure(tokens, labels, scheme)
    out = []
    esc = html.escape if fmt == "html" else _md_escape
    for sec in sections:
        blocks = list(sec.children)
        title = None
        if blocks and blocks[0].label == "None":
            heads = [c for c in blocks[0].children if c.label in ("Heading", "Subheading")]
            if heads:
                title = _title_text(heads, opts)
                rest = [c for c in blocks[0].children if c.label not in ("Heading", "Subheading")]
                blocks = ([Segment(1, "Paragraph", rest[0].start, rest[-1].end, rest,
                                   tokens=tokens[rest[0].start:rest[-1].end])] if rest else []) + blocks[1:]
        if not title and sec.label is not None and opts.generate:
            title = heading_for(sec.label, opts.headings)
        if fmt == "html":
            attr = "" if sec.label is None else f' data-type="{html.escape(str(sec.label), quote=True)}"'
            out.append(f"<section{attr}>")
            if title:
                out.append(f"<h2>{esc(title)}</h2>")
        elif fmt == "text":
            if title:
                out.append(f"{title}:")
        elif title:
            out.append(f"## {esc(title)}\n")
        k = 0
        in_list = False
        for b in blocks:
            if b.label == "Enumelement":
                k += 1
                leaves = [c for c in b.children if c.label != "Enummarker"]
                if not leaves and fmt == "text":
                    leaves = b.children
                # an item of only a marker (or of words all dropped) stays an empty item
                text = " ".join(t for t in (_sentence_text(c, opts) for c in leaves) if t)
                if fmt == "html":
                    if not in_list:
                        out.append("<ol>")
                    out.append(f"<li>{esc(text)}</li>")
                elif fmt == "text":
                    marks = [_word(t) for c in b.children if c.label == "Enummarker" for t in c.tokens]
                    mark = marks[0] if len(marks) == 1 and _TYPED_MARKER.match(marks[0]) else f"{k}."
                    out.append(f"{mark}  {text}")
                else:
                    # an empty item needs content on its line: "2." alone (or "2. " once
                    # trailing spaces are trimmed) continues the previous item in some
                    # renderers; an HTML comment renders as an empty <li> in all of them
                    out.append(f"{k}. {_md_block_escape(esc(text)) if text else _MD_EMPTY_ITEM}")
                in_list = True
                continue
            if in_list:
                if fmt != "text":
                    out.append("</ol>" if fmt == "html" else "")
                in_list = False
                k = 0
            subs = [c for c in b.children if c.label == "Subheading"]
            leaves = [c for c in b.children if c.label != "Subheading"]
            text = " ".join(t for t in (_sentence_text(c, opts) for c in leaves) if t)
            sub = None
            if subs:
                sub = _title_text(subs, opts, upper=fmt != "text")
            elif b.label not in ("Paragraph", "None", None) and opts.generate:
                sub = heading_for(b.label, opts.subheadings, subsection=True)
            if b.label == "None" and not subs:  # a heading in the middle of a section
                sub, text = _title_text(b.children, opts), ""
            if fmt == "html":
                attr = ("" if b.label in (None, "Paragraph")
                        else f' data-type="{html.escape(str(b.label), quote=True)}"')
                lead = f"<strong>{esc(sub)}:</strong> " if sub else ""
                out.append(f"<p{attr}>{lead}{esc(text)}</p>")
            elif fmt == "text":
                if b.label == "None" and not subs:
                    out.append(f"{sub.upper()}:")
                elif sub:
                    out.append(f"{_subheading_text(sub)}:  {text}".rstrip())
                elif text:
                    out.append(text)
            else:
                lead = f"**{esc(sub)}:** " if sub else ""
                out.append(f"{lead}{esc(text) if lead else _md_block_escape(esc(text))}".rstrip() + "\n")
        if in_list and fmt != "text":
            out.append("</ol>" if fmt == "html" else "")
        if fmt == "html":
            out.append("</section>")
    if fmt == "html":
        return "\n".join(out) + "\n"
    if fmt == "text":
        return "\n".join(out) + "\n"
    text = "\n".join(out)
    return re.sub(r"\n{3,}", "\n\n", text).strip() + "\n"


_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>#|])")


def _md_escape(text):
    return _MD_SPECIAL.sub(r"\\\1", text)


_MD_BLOCK_START = re.compile(r"^(\d{1,9})([.)])(?=\s|$)|^([-+=])(?=\s|$)")
#: The Markdown of an empty list item (see ``_render``).
_MD_EMPTY_ITEM = "<!-- -->"


def _md_block_escape(text):
    """Escape a leading list marker (``2.``, ``1)``, ``-``, ``+``) so that text starting
    with one stays text instead of opening a (nested) list."""
    m = _MD_BLOCK_START.match(text)
    if not m:
        return text
    if m.group(1):
        return f"{m.group(1)}\\{m.group(2)}{text[m.end():]}"
    return "\\" + text


_DOC_PARAMS = """
    Parameters
    ----------
    tokens : sequence of str or dict
        The tokens of one report (dict tokens contribute their ``"word"``).
    labels : array-like, shape (n_tokens, n_chains) or (n_tokens,)
        Its label chains (chain 0 finest), e.g. gold labels or repaired predictions.
    headings : dict, optional
        Section type -> heading text, for sections whose heading was not dictated
        (defaults: the canonical dictation headings, else the split CamelCase type,
        e.g. ``HistoryOfPresentIllness`` -> ``"HISTORY OF PRESENT ILLNESS"``).
    subheadings : dict, optional
        The same for typed subsections (``VitalSigns`` -> ``"VITAL SIGNS"``).
    dictated_punctuation : bool or dict, default=False
        ``True`` turns dictated punctuation words of recognizer output back into
        marks (``"period"`` -> ``"."``, ``"new paragraph"`` dropped) using
        :data:`DICTATED_PUNCTUATION_WORDS`; a dict ``{tuple_of_words: mark}`` gives
        your own table.
    capitalize : bool, default=False
        Sentence case for recognizer output: upper-case the first letter of every
        sentence and end sentences that lack a final mark with a period.
    drop_words : collection of str, optional
        Words left out, e.g. hesitations ``("uh", "um")``.
    generate_headings : bool, default=True
        Give sections and typed subsections without a dictated (sub)heading one
        derived from their type.
    scheme : LabelScheme, optional
        Label conventions (see :class:`LabelScheme`); defaults to Begin/B- prefixes.
"""


def render_markdown(tokens, labels, *, headings=None, subheadings=None, dictated_punctuation=False,
                    capitalize=False, drop_words=None, generate_headings=True, scheme=None):
    opts = _Opts(headings, subheadings, dictated_punctuation, capitalize, drop_words, generate_headings)
    return _render(tokens, labels, opts, scheme or LabelScheme(), "md")


def render_html(tokens, labels, *, headings=None, subheadings=None, dictated_punctuation=False,
                capitalize=False, drop_words=None, generate_headings=True, scheme=None):
    opts = _Opts(headings, subheadings, dictated_punctuation, capitalize, drop_words, generate_headings)
    return _render(tokens, labels, opts, scheme or LabelScheme(), "html")


def render_text(tokens, labels, *, headings=None, subheadings=None, dictated_punctuation=False,
                capitalize=False, drop_words=None, generate_headings=True, scheme=None):
    opts = _Opts(headings, subheadings, dictated_punctuation, capitalize, drop_words, generate_headings)
    return _render(tokens, labels, opts, scheme or LabelScheme(), "text")


render_markdown.__doc__ = """Render one report as Markdown.

    Sections become ``## HEADING`` blocks (the dictated heading, or one generated from
    the section type), paragraphs become text blocks, enumeration elements a numbered
    list (numbered afresh; dictated markers are left out; an element with no text
    becomes the empty item ``N. <!-- -->``) and typed subsections
    ``**SUBHEADING:** text``.  Markdown special characters in the text are escaped,
    and so is a leading list marker (``2.`` -> ``2\\.``).
""" + _DOC_PARAMS + """
    Returns
    -------
    text : str

    Examples
    --------
    >>> toks = ["he", "is", "fine", "period"]
    >>> labs = [("BeginSentence", "BeginParagraph", "BeginHistoryOfPresentIllness"),
    ...         ("Sentence", "Paragraph", "HistoryOfPresentIllness"),
    ...         ("Sentence", "Paragraph", "HistoryOfPresentIllness"),
    ...         ("Sentence", "Paragraph", "HistoryOfPresentIllness")]
    >>> print(render_markdown(toks, labs, dictated_punctuation=True, capitalize=True))
    ## HISTORY OF PRESENT ILLNESS
    <BLANKLINE>
    He is fine.
    <BLANKLINE>
"""

render_html.__doc__ = """Render one report as an HTML fragment.

    Sections become ``<section data-type="...">`` with an ``<h2>`` heading (dictated
    or generated from the type), paragraphs ``<p>``, enumerations ``<ol><li>`` and
    typed subsections ``<p data-type="..."><strong>SUBHEADING:</strong> ...</p>``.
    All text is HTML-escaped.
""" + _DOC_PARAMS + """
    Returns
    -------
    html : str
"""

render_text.__doc__ = """Render one report as the plain text a transcriptionist would type.

    Section headings in capitals with a colon on a line of their own (dictated, or
    generated from the section type), one paragraph per line, enumeration elements
    ``1.  text`` (typed markers such as ``A.`` kept, spoken ones numbered afresh), typed subsections
    ``Subheading:  text``.  :func:`skfcrf.structure.parse_report` reads this layout
    back to the same structure (with ``section_types`` / ``subsection_types`` that map
    the headings to the types).  For recognizer output pass
    ``dictated_punctuation=True, capitalize=True`` (and hesitations in
    ``drop_words``).
""" + _DOC_PARAMS + """
    Returns
    -------
    text : str

    Examples
    --------
    >>> toks = ["plan", "colon", "number", "one", "cystoscopy", "period", "number", "two",
    ...         "follow", "up", "in", "two", "weeks"]
    >>> labs = [("BeginHeading", "BeginNone", "BeginPlan"), ("Heading", "None", "Plan")]
    >>> labs += [("Enummarker", "BeginEnumelement", "Plan"), ("Enummarker", "Enumelement", "Plan")]
    >>> labs += [("BeginSentence", "Enumelement", "Plan"), ("Sentence", "Enumelement", "Plan")]
    >>> labs += [("Enummarker", "BeginEnumelement", "Plan"), ("Enummarker", "Enumelement", "Plan")]
    >>> labs += [("BeginSentence", "Enumelement", "Plan")] + [("Sentence", "Enumelement", "Plan")] * 4
    >>> print(render_text(toks, labs, dictated_punctuation=True, capitalize=True), end="")
    PLAN:
    1.  Cystoscopy.
    2.  Follow up in two weeks.
"""
