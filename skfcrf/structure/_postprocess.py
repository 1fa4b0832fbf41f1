"""The remaining post-processing rules of the thesis's algorithms 7 and 8, and presets.

Algorithm 7 (formatted reports, ``cor``) and algorithm 8 (recognizer output, ``rcg``)
of ``000`` (appendix; section 6.1.2) list the steps below.  The formal steps (every
segment starts with a Begin label; a new sentence starts at every paragraph
boundary) are :func:`repair`'s own constraints; the others are rules:

====  ========================================================  ==================================
step  constraint                                                rule
====  ========================================================  ==================================
7.2   typed subsections start only at a subheading              :func:`typed_subsections_start_at`
                                                                (not in :data:`COR_RULES`)
7.4   no untyped paragraph between typed subsections            :func:`no_untyped_between_typed`
7.5   section boundaries only at the start of a heading         :func:`sections_at_headings`
                                                                (when headings and sections agree)
8.1   section boundaries only at the start of a heading or      :data:`RULE_8_1` (``raw``), opt-in:
      paragraph                                                 not in :data:`RCG_RULES`
8.3   adjacent sections of one type merged, starting at a       :func:`merge_same_type_at_heading`
      heading
8.5   no inappropriate double Begins at the subsection level    :func:`no_double_begins`
8.6   an enumeration has at least two elements                  :func:`min_enumeration_elements`
8.9   over-long headings shortened or split                     :func:`fix_long_headings`
====  ========================================================  ==================================

The dictation label set (:func:`skfcrf.datasets.make_dictations`): chain 0 holds
``Heading``, ``Subheading``, ``Sentence`` and ``Enummarker``; chain 1 the subsection
level: ``None`` (the holder of a section heading), ``Paragraph``, ``Enumelement`` --
the *untyped* subsections -- and typed subsections (``VitalSigns``, ``Abdomen``, ...);
chain 2 the section types.  The thesis gives an outline only ("the actual
implementations contain some refined heuristics"); where a step leaves a choice, the
rule's docstring states the one made.

Each rule function here returns the rule, a callable ``rule(root) -> root`` for
:func:`repair`'s ``rules``, like the factories of :mod:`skfcrf.structure._repair`.
"""
from skfcrf.structure._repair import (
    _headings_to_text,
    _merge_into,
    _merge_where,
    _prepend_into,
    _sibling_rule,
    _split,
    merge_unless_starts_with,
    min_enumeration_elements,
    starts_with,
)
from skfcrf.structure._segments import Segment

__all__ = [
    "typed_subsections_start_at",
    "no_untyped_between_typed",
    "merge_same_type_at_heading",
    "sections_at_headings",
    "no_double_begins",
    "fix_long_headings",
    "COR_RULES",
    "RCG_RULES",
    "RCG_RULES_WITH_8_1",
    "RULE_8_1",
    "REPAIR_PRESETS",
    "UNTYPED_SUBSECTIONS",
    "resolve_rules",
]

#: Subsection-level (chain 1) labels of the dictation scheme that carry no type.
UNTYPED_SUBSECTIONS = ("None", "Paragraph", "Enumelement")


def _is_typed(seg, untyped):
    return seg.label is not None and seg.label not in untyped


def typed_subsections_start_at(first_labels=("Subheading",), level=1, untyped=UNTYPED_SUBSECTIONS):
    """Rule: a typed subsection starts only at a subheading (algorithm 7, step 2).

    A typed segment of chain ``level`` (a label not in ``untyped``) that does not
    start with a chain-0 segment in ``first_labels`` and follows a typed segment in
    the same section is merged into it (the boundary was spurious).  Untyped
    segments (paragraphs, enumeration elements, heading holders) are never merged,
    and neither is a typed segment after an untyped one (nothing to merge it into
    that keeps a type; :func:`no_untyped_between_typed` handles the other case).

    Examples
    --------
    >>> from skfcrf.structure import repair
    >>> labels = [("BeginSubheading", "BeginNeck", "BeginPE"), ("BeginSentence", "Neck", "PE"),
    ...           ("BeginSentence", "BeginAbdomen", "PE"), ("Sentence", "Abdomen", "PE")]
    >>> repair(labels, [typed_subsections_start_at()])[:, 1].tolist()
    ['BeginNeck', 'Neck', 'Neck', 'Neck']
    """
    first = {0: first_labels}
    untyped = frozenset(untyped)

    def joins(prev, seg):
        return _is_typed(seg, untyped) and _is_typed(prev, untyped) and not starts_with(seg, first)

    return _sibling_rule(level, "typed_subsections_start_at", lambda kids: _merge_where(kids, joins))


def no_untyped_between_typed(level=1, untyped=("Paragraph",), typed_exclude=UNTYPED_SUBSECTIONS):
    """Rule: no untyped paragraph between typed subsections (algorithm 7, step 4).

    A run of ``untyped`` segments of chain ``level`` whose neighbours on both sides
    (in the same section) are typed subsections (labels not in ``typed_exclude``)
    is merged into the preceding typed subsection.  A paragraph before the first or
    after the last typed subsection is kept (it occurs in formatted reports).

    Examples
    --------
    >>> from skfcrf.structure import repair
    >>> labels = [("BeginSubheading", "BeginNeck", "BeginPE"), ("BeginSentence", "BeginParagraph", "PE"),
    ...           ("BeginSubheading", "BeginAbdomen", "PE"), ("BeginSentence", "Abdomen", "PE")]
    >>> repair(labels, [no_untyped_between_typed()])[:, 1].tolist()
    ['BeginNeck', 'Neck', 'BeginAbdomen', 'Abdomen']
    """
    untyped = frozenset(untyped)
    exclude = frozenset(typed_exclude)

    def fix(kids):
        out = []
        i = 0
        while i < len(kids):
            seg = kids[i]
            if seg.label in untyped and out and _is_typed(out[-1], exclude):
                j = i
                while j < len(kids) and kids[j].label in untyped:
                    j += 1
                if j < len(kids) and _is_typed(kids[j], exclude):
                    for s in kids[i:j]:
                        _merge_into(out[-1], s)
                    i = j
                    continue
            out.append(seg)
            i += 1
        return out

    return _sibling_rule(level, "no_untyped_between_typed", fix)


def merge_same_type_at_heading(level=2, heading=("Heading",)):
    """Rule: adjacent sections of one type are merged "in a smart way" (algorithm 8, step 3).

    A run of adjacent segments of chain ``level`` with the same type becomes one
    segment that starts at a heading: when the run's first segment starts with a
    chain-0 ``heading`` segment, or none of them does, the run is merged (as
    :func:`merge_adjacent_same_type` does).  Otherwise the part before the first
    segment that starts with a heading was a wrong start of the section: it is
    given to the preceding section (when there is one, with a type), and the merged
    section starts at the heading.

    Examples
    --------
    >>> from skfcrf.structure import repair
    >>> labels = [("BeginHeading", "BeginNone", "BeginPlan"), ("BeginSentence", "BeginParagraph", "Plan"),
    ...           ("BeginSentence", "BeginParagraph", "BeginDx"),
    ...           ("BeginHeading", "BeginNone", "BeginDx"), ("BeginSentence", "BeginParagraph", "Dx")]
    >>> repair(labels, [merge_same_type_at_heading()])[:, 2].tolist()
    ['BeginPlan', 'Plan', 'Plan', 'BeginDx', 'Dx']
    """
    anchor = {0: heading}

    def fix(kids):
        out = []
        i = 0
        while i < len(kids):
            j = i + 1
            while j < len(kids) and kids[i].label is not None and kids[j].label == kids[i].label:
                j += 1
            run = kids[i:j]
            first_head = next((k for k, s in enumerate(run) if starts_with(s, anchor)), 0)
            if first_head > 0 and out and out[-1].label is not None:
                for s in run[:first_head]:
                    _merge_into(out[-1], s)
                run = run[first_head:]
            head = run[0]
            for s in run[1:]:
                _merge_into(head, s)
            out.append(head)
            i = j
        return out

    return _sibling_rule(level, "merge_same_type_at_heading", fix)


def _heading_starts(seg, heading):
    """Starts of the chain-0 ``heading`` segments under ``seg`` (not cut by a coarser boundary)."""
    return [d.start for d in seg.iter()
            if d.level == 0 and d.label in heading and not getattr(d, "continued", False)]


def _majority(pieces):
    """The label covering most tokens of ``pieces`` (ties: the earliest)."""
    cover = {}
    for p in pieces:
        cover[p.label] = cover.get(p.label, 0) + len(p)
    return max(cover, key=cover.get)


def sections_at_headings(level=2, heading=("Heading",), min_agreement=0.6):
    """Rule: sections start at, and only at, heading starts (algorithm 7, step 5), when the
    heading chain is trusted.

    The thesis removes section boundaries that are not at a heading because
    "headings are identified very reliably".  That holds for a report only when the
    decoded heading starts (chain 0) and section starts (chain ``level``) mostly
    agree: their *agreement*, ``|H & S| / |H | S|`` over the heading starts ``H`` and
    section starts ``S`` (the sequence start counted in both), must reach
    ``min_agreement``.  The sections are then re-cut at the heading starts: each
    span from one heading start to the next becomes one section, of the type that
    covers most of its tokens.  Below ``min_agreement`` the report is left alone:
    one of the two chains is wrong and nothing says which (with factor
    pseudolikelihood and TRP decoding the heading chain misses most headings and
    trusting it merged right sections, see the user guide).  Reports with outside
    runs at chain ``level`` are left alone.

    Parameters
    ----------
    level : int, default=2
        Chain of the sections.
    heading : collection of str, default=("Heading",)
        Chain-0 labels that start a section.
    min_agreement : float in [0, 1], default=0.6
        Least agreement at which the headings are trusted (0: always).

    Examples
    --------
    The section boundary at token 2 is one token before the heading at token 3; the
    chains agree on three of the five starts 0, 2, 3, 5, 7 (agreement 0.6):

    >>> from skfcrf.structure import repair
    >>> labels = [("BeginHeading", "BeginNone", "BeginPlan"), ("BeginSentence", "BeginParagraph", "Plan"),
    ...           ("Sentence", "Paragraph", "BeginDx"), ("BeginHeading", "BeginNone", "Dx"),
    ...           ("BeginSentence", "BeginParagraph", "Dx"), ("BeginHeading", "BeginNone", "BeginMeds"),
    ...           ("BeginSentence", "BeginParagraph", "Meds"), ("BeginHeading", "BeginNone", "BeginFU")]
    >>> repair(labels, [sections_at_headings()])[:, 2].tolist()
    ['BeginPlan', 'Plan', 'Plan', 'BeginDx', 'Dx', 'BeginMeds', 'Meds', 'BeginFU']
    >>> repair(labels, [sections_at_headings(min_agreement=0.7)])[:, 2].tolist()
    ['BeginPlan', 'Plan', 'BeginDx', 'Dx', 'Dx', 'BeginMeds', 'Meds', 'BeginFU']
    """
    if not 0 <= min_agreement <= 1:
        raise ValueError(f"min_agreement must be in [0, 1], got {min_agreement!r}")
    heading = frozenset([heading] if isinstance(heading, str) else heading)

    def fix(kids):
        if not kids or any(k.label is None for k in kids):
            return kids
        first, end = kids[0].start, kids[-1].end
        heads = {first} | {h for k in kids for h in _heading_starts(k, heading)}
        starts = {k.start for k in kids}
        if len(heads & starts) / len(heads | starts) < min_agreement:
            return kids
        cuts = sorted(heads) + [end]
        pieces = []
        for seg in kids:  # split every section at the heading starts inside it
            prefix = seg.begin_prefix
            for p in [c for c in cuts if seg.start < c < seg.end]:
                left, seg = _split(seg, p)
                pieces.append(left)
            seg.begin_prefix = prefix if seg.start in starts else seg.begin_prefix
            pieces.append(seg)
        out = []
        for a, b in zip(cuts, cuts[1:]):
            span = [p for p in pieces if a <= p.start < b]
            head = span[0]
            label = _majority(span)
            for p in span[1:]:
                _merge_into(head, p)
            if head.continued:
                head.continued = False
                head.begin_prefix = "Begin" if head.inside_prefix == "" else "B-"
            head.label = label
            out.append(head)
        return out

    return _sibling_rule(level, f"sections_at_headings({min_agreement})", fix)


def no_double_begins(level=1, allowed=("None", "Enumelement")):
    """Rule: remove inappropriate double Begins at the subsection level (algorithm 8, step 5).

    Two Begin labels in a row on chain ``level`` make a one-token segment.  It is
    inappropriate when the next segment of the section has the same type (a
    one-token paragraph followed by a paragraph: the decoder started the paragraph
    twice); the one-token segment is then joined to the next one, which starts one
    token earlier.  A one-token segment before a segment of another type is kept, as
    are those with a label in ``allowed``: both occur in dictations (a one-word
    heading's holder ``None``; ``deferred`` as a whole typed subsection; an
    enumeration element of one word without a dictated number).

    Examples
    --------
    >>> from skfcrf.structure import repair
    >>> labels = [("BeginSentence", "BeginParagraph", "BeginPlan"),
    ...           ("BeginSentence", "BeginParagraph", "Plan"),
    ...           ("Sentence", "Paragraph", "Plan")]
    >>> repair(labels, [no_double_begins()])[:, 1].tolist()
    ['BeginParagraph', 'Paragraph', 'Paragraph']
    """
    allowed = frozenset(allowed)

    def fix(kids):
        out = []
        for k, seg in enumerate(kids):
            if k + 1 < len(kids) and len(seg) == 1 and seg.label is not None \
                    and seg.label not in allowed and kids[k + 1].label == seg.label:
                _prepend_into(kids[k + 1], seg)
                continue
            out.append(seg)
        return out

    return _sibling_rule(level, "no_double_begins", fix)


def _word(tok):
    return tok if isinstance(tok, str) else str(tok.get("word", ""))


def _has_lower(word):
    return any(c.islower() for c in word)


def _heading_cuts(words, max_tokens, end_words):
    """Cut points of an over-long heading: ends of heading pieces of at most ``max_tokens``.

    A piece ends after a token that is (or ends with) a colon word of ``end_words``,
    or where a run of uppercase tokens (and tokens without letters) ends.
    """
    cuts = []
    start = 0
    n = len(words)
    while start < n:
        cut = None
        for k in range(start + 1, min(n, start + max_tokens) + 1):
            w = words[k - 1]
            if w.lower() in end_words or w.endswith(":"):
                cut = k
                break
            if k < n and _has_lower(words[k]) and not any(_has_lower(x) for x in words[start:k]) \
                    and any(c.isupper() for x in words[start:k] for c in x):
                cut = k  # an uppercase run (punctuation such as ":" included) ends here
                break
        if cut is None:
            break
        cuts.append(cut)
        start = cut
    return cuts


def fix_long_headings(max_tokens=8, heading="Heading", holder="None", sentence="Sentence",
                      paragraph="Paragraph", end_words=("colon", ":")):
    """Rule: fix headings of excessive length at the sentence level (algorithm 8, step 9).

    A ``holder`` segment (chain 1 ``None``) whose ``heading`` children span more than
    ``max_tokens`` tokens is fixed by guessing where the heading really ends, from
    the tokens: a heading piece ends after a colon (a token in ``end_words`` --
    ``"colon"`` as dictated -- or ending with ``:``) or where a run of uppercase
    tokens ends (formatted reports), within ``max_tokens`` tokens of its start.

    * one piece found: the heading is shortened to it; the rest is the start of the
      text: it is joined to the first sentence of the following ``paragraph``, or
      becomes a ``paragraph`` of one ``sentence`` when no paragraph follows;
    * several pieces in a row: the heading is split into several headings (the
      rest, if any, becomes a paragraph as above);
    * no piece (or no tokens): the holder becomes a ``paragraph`` and the heading a
      ``sentence``, as :func:`long_headings_to_sentences` does.

    Examples
    --------
    >>> from skfcrf.structure import repair
    >>> words = "plan colon we will see him again in two weeks".split()
    >>> labels = [("BeginHeading", "BeginNone", "BeginPlan")] + [("Heading", "None", "Plan")] * 9
    >>> for row in repair(labels, [fix_long_headings()], tokens=words)[:3].tolist():
    ...     print(row)
    ['BeginHeading', 'BeginNone', 'BeginPlan']
    ['Heading', 'None', 'Plan']
    ['BeginSentence', 'BeginParagraph', 'Plan']
    """
    if max_tokens < 1:
        raise ValueError("max_tokens must be at least 1")
    end_words = frozenset(w.lower() for w in end_words)

    def rule(root):
        for parent in list(root.iter()):
            if not parent.children or parent.children[0].level != 1:
                continue
            out = []
            kids = parent.children
            placed = None  # the paragraph a heading's rest was prepended to (already in out)
            for i, seg in enumerate(kids):
                if seg is placed:
                    continue
                out.append(seg)
                heads = [c for c in seg.children if c.label == heading]
                if seg.label != holder or not heads or sum(len(c) for c in heads) <= max_tokens:
                    continue
                if seg.tokens is None or len(heads) != len(seg.children):
                    _headings_to_text(seg, heading, sentence, paragraph)
                    continue
                words = [_word(t) for t in seg.tokens]
                cuts = _heading_cuts(words, max_tokens, end_words)
                if not cuts:
                    _headings_to_text(seg, heading, sentence, paragraph)
                    continue
                s0, s1, end = seg.start, seg.start + cuts[-1], seg.end
                bounds = [s0] + [s0 + c for c in cuts]
                seg.children = [_leaf(heading, a, b, seg) for a, b in zip(bounds, bounds[1:])]
                seg.end = s1
                if s1 < end:
                    rest = _leaf(sentence, s1, end, seg)
                    nxt = kids[i + 1] if i + 1 < len(kids) else None
                    if nxt is not None and nxt.label == paragraph:
                        _prepend(nxt, rest, sentence)
                        out.append(nxt)
                        placed = nxt
                    else:
                        para = Segment(level=1, label=paragraph, start=s1, end=end,
                                       tokens=seg.tokens[s1 - s0:])
                        para.children = [rest]
                        out.append(para)
                seg.tokens = seg.tokens[:s1 - s0]
            parent.children = out
        return root

    rule.__name__ = f"fix_long_headings({max_tokens})"
    return rule


def _prepend(para, rest, sentence):
    """Put the sentence ``rest`` (a leaf just before ``para``) at the start of paragraph
    ``para``, joined to its first sentence."""
    para.start = rest.start
    if para.tokens is not None and rest.tokens is not None:
        para.tokens = list(rest.tokens) + list(para.tokens)
    first = para.children[0] if para.children else None
    if first is not None and first.label == sentence:
        _prepend_into(first, rest)  # a leaf: only its start and tokens move
    else:
        para.children.insert(0, rest)


def _leaf(label, a, b, holder):
    toks = None if holder.tokens is None else holder.tokens[a - holder.start:b - holder.start]
    return Segment(level=0, label=label, start=a, end=b, tokens=toks)


#: Algorithm 7, post-processing of formatted reports (``cor``): no untyped paragraph
#: between typed subsections (7.4), sections start at, and only at, headings when the
#: heading and section chains agree (7.5, :func:`sections_at_headings`); steps 7.1,
#: 7.3 and 7.6 are the formal Begin constraints that :func:`repair` always enforces.
#:
#: Step 7.2 (:func:`typed_subsections_start_at`) is not included, and step 7.5 no
#: longer merges a section whose heading the decoder missed
#: (:func:`merge_unless_starts_with`, ``move=True``, the preset until 2026-11-25):
#: both trust a chain-0 heading or subheading to be found wherever a segment starts.
#: With TRP decoding on ``make_dictations`` test sets
#: (``benchmarks/bench_postprocessing.py``) 7.2 lowered joint accuracy on every
#: data set and decoding (by 0.2-5 points), and the old 7.5 by 4-52 points: with
#: factor pseudolikelihood and TRP the heading chain found 40% of the section
#: headings, and merging at every missed heading cost 36 points of section
#: accuracy.  Recommended for exact (default) and ``inference="trp"`` decoding,
#: not for ``objective="pseudolikelihood"`` with TRP (see the user guide's table).
COR_RULES = (no_untyped_between_typed(), sections_at_headings())

#: Step 8.1 of algorithm 8 as a rule: section boundaries only at the start of a heading
#: or of a subsection-level segment, checked on the unrepaired labels (``raw``); a
#: boundary elsewhere is moved to the nearest such start, else the two sections are
#: merged keeping the type that covers most tokens.  Opt-in: see :data:`RCG_RULES`.
RULE_8_1 = merge_unless_starts_with(2, {0: ["Heading"], 1: None}, raw=True, move=True,
                                    keep="longest")

#: Algorithm 8, post-processing of recognizer output (``rcg``): adjacent same-type
#: sections merged at a heading (8.3), no one-token subsection-level segments from
#: double Begins (8.5), enumerations of at least two elements (8.6), over-long
#: headings shortened or split (8.9, needs ``tokens``); steps 8.2, 8.4, 8.7 and 8.8
#: are the formal constraints of :func:`repair`.
#:
#: Step 8.1 (:data:`RULE_8_1`) is *not* included; it is opt-in through
#: :data:`RCG_RULES_WITH_8_1` (preset ``"rcg+8.1"``).  On the demo's
#: cross-validation (60 ``rcg`` reports, seed 0, 3 folds, the demo's model) with TRP
#: decoding, where post-processing has labels to fix, it lowered section accuracy on
#: every fold: 84.70 ± 7.21% with 8.1 against 89.76 ± 7.34% without (raw 89.82%),
#: joint accuracy 76.19% against 80.59% (raw 80.15%): on recognizer output the
#: subsection boundaries it anchors sections to are themselves unreliable (90%
#: subsection accuracy), so it moves right section boundaries.  With the default
#: joint-state decoding the predictions are nearly always consistent and 8.1 changed
#: no score.
RCG_RULES = (merge_same_type_at_heading(), no_double_begins(), min_enumeration_elements(),
             fix_long_headings())

#: :data:`RCG_RULES` preceded by step 8.1 (:data:`RULE_8_1`): the thesis's algorithm 8
#: in full (preset ``"rcg+8.1"``).
RCG_RULES_WITH_8_1 = (RULE_8_1, *RCG_RULES)

#: Post-processing presets by name, for ``repair=`` arguments and ``--repair`` options:
#: ``"formal"`` enforces :func:`repair`'s formal constraints only (no domain rule);
#: ``"cor"``, ``"rcg"`` and ``"rcg+8.1"`` add :data:`COR_RULES`, :data:`RCG_RULES` and
#: :data:`RCG_RULES_WITH_8_1`.  Recommended decodings, where no preset lowered joint
#: accuracy on the generator's test sets (``benchmarks/bench_postprocessing.py``; the
#: user guide's table): ``"formal"`` and ``"rcg+8.1"`` with exact decoding (the
#: default), ``"cor"`` and ``"rcg"`` with exact decoding and ``inference="trp"``; none
#: with ``objective="pseudolikelihood"`` and TRP decoding.
REPAIR_PRESETS = {"formal": (), "cor": COR_RULES, "rcg": RCG_RULES,
                  "rcg+8.1": RCG_RULES_WITH_8_1}


def resolve_rules(rules):
    """The rule sequence a ``repair=`` argument stands for.

    Parameters
    ----------
    rules : str or sequence of callable
        A name in :data:`REPAIR_PRESETS` (``"formal"``, ``"cor"``, ``"rcg"``,
        ``"rcg+8.1"``) or
        the rules themselves (``()``: the formal constraints only).

    Returns
    -------
    rules : tuple of callable

    Examples
    --------
    >>> resolve_rules("cor") == COR_RULES, resolve_rules("formal")
    (True, ())
    """
    if isinstance(rules, str):
        try:
            return REPAIR_PRESETS[rules]
        except KeyError:
            raise ValueError(f"unknown repair preset {rules!r}; expected one of "
                             f"{sorted(REPAIR_PRESETS)} or a sequence of rules") from None
    try:
        rules = tuple(rules)
    except TypeError:
        raise TypeError(f"repair rules must be a preset name or a sequence of callables, "
                        f"got {rules!r}") from None
    for r in rules:
        if not callable(r):
            raise TypeError(f"repair rules must be callables, got {r!r}")
    return rules


def preset_name(rules):
    """The name of the preset ``rules`` is (the same tuple object), else None."""
    if isinstance(rules, str):
        return rules if rules in REPAIR_PRESETS else None
    return next((name for name, preset in REPAIR_PRESETS.items() if rules is preset), None)
