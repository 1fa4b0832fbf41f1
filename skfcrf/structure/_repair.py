"""Constraint repair of decoded label chains (the thesis's post-processing, section 6.1.2).

:func:`repair` enforces the formal constraints of the typed Begin/continuation
notation and then applies pluggable domain rules, repeating until nothing changes:

1. every segment starts with a Begin label: a continuation label that follows a
   different type (or starts the sequence, or follows an outside label) becomes
   the Begin label of its type (``Plan Plan Diagnosis`` -> ``Plan Plan
   BeginDiagnosis``; ``O I-NP`` -> ``O B-NP``);
2. a boundary on a coarser chain implies one on every finer chain at that token:
   the finer label there becomes a Begin label (runs of outside labels are split
   freely and left unchanged);
3. each rule is called with the segment tree (a :class:`Segment` root, see
   :func:`chains_to_segments`) and may edit it in place or return a new root;
   the tree is then written back to labels and step 1-2 run again.

Rules are plain callables ``rule(root) -> root or None``.  A rule with the
attribute ``raw = True`` is applied *before* steps 1-2, to the tree of the labels
as they are: it can see where a coarser boundary cuts a finer segment
(``Segment.continued``), which the formal repair would otherwise turn into new
Begin labels (algorithm 8, step 1 runs before the Begin constraints).  Factories for the rules
of the thesis's algorithms 7 and 8 are provided; :data:`DICTATION_RULES` bundles the
ones that hold for the dictation label set.
"""
import numpy as np

from skfcrf._validation import check_label_sequences
from skfcrf.structure._segments import (
    DEFAULT_BEGIN_PREFIXES,
    DEFAULT_INSIDE_PREFIXES,
    DEFAULT_OUTSIDE_LABELS,
    DEFAULT_SINGLE_TOKEN_LABELS,
    LabelScheme,
    Segment,
    chains_to_segments,
    segments_to_chains,
)

__all__ = [
    "repair",
    "min_enumeration_elements",
    "merge_adjacent_same_type",
    "merge_unless_starts_with",
    "long_headings_to_sentences",
    "DICTATION_RULES",
]


def _formal(arr, sc):
    """Apply the Begin and hierarchy constraints in place; return whether anything changed."""
    n, c = arr.shape
    changed = False
    coarse = np.zeros(n, dtype=bool)
    for k in range(c - 1, -1, -1):
        col = arr[:, k]
        starts, infos = sc.boundaries(col.tolist())
        need = np.array(starts, dtype=bool) | coarse
        for t in np.flatnonzero(need).tolist():
            if infos[t][1] == "I":
                new = sc.begin_form(col[t])
                if new != col[t]:
                    col[t] = new
                    changed = True
        # outside tokens under a coarser boundary are split without a label change
        coarse = need
    return changed


def repair(labels, rules=(), *, tokens=None, scheme=None, begin_prefixes=DEFAULT_BEGIN_PREFIXES,
           inside_prefixes=DEFAULT_INSIDE_PREFIXES, outside_labels=DEFAULT_OUTSIDE_LABELS,
           single_token_labels=DEFAULT_SINGLE_TOKEN_LABELS, max_iter=20):
    """Repair the label chains of one sequence so that they describe a valid segment tree.

    Parameters
    ----------
    labels : array-like, shape (n_tokens,) or (n_tokens, n_chains)
        Decoded labels of one sequence (e.g. one entry of ``FactorialCRF.predict``);
        chain 0 is the finest.  Labels are expected to be strings.
    rules : sequence of callable, default=()
        Domain rules ``rule(root) -> root or None`` over the segment tree, applied
        in order after the formal repair (rules with ``rule.raw = True`` before
        it, on the unrepaired labels); see :data:`COR_RULES`, :data:`RCG_RULES`,
        :data:`DICTATION_RULES`,
        :func:`min_enumeration_elements`, :func:`merge_adjacent_same_type`,
        :func:`merge_unless_starts_with`.
    tokens : sequence, optional
        Made available to rules as ``Segment.tokens``.
    scheme : LabelScheme, optional
        Overrides the four label-convention parameters below.
    begin_prefixes : str or tuple of str, default=("Begin", "B-")
    inside_prefixes : str or tuple of str, default=("I-",)
    outside_labels : tuple, default=("O",)
    single_token_labels : tuple, default=("Enummarker",)
    max_iter : int, default=20
        Bound on formal-repair/rule rounds (rules that keep undoing each other stop
        here; the formal constraints hold regardless).

    Returns
    -------
    repaired : ndarray of dtype object
        Same shape as ``labels`` (1-D in, 1-D out).  Valid input comes back
        unchanged, and ``repair(repair(x)) == repair(x)``.

    Examples
    --------
    >>> repair(["Plan", "Plan", "Diagnosis", "Diagnosis"]).tolist()
    ['BeginPlan', 'Plan', 'BeginDiagnosis', 'Diagnosis']
    >>> repair([("Sentence", "BeginParagraph"), ("Sentence", "BeginParagraph")]).tolist()
    [['BeginSentence', 'BeginParagraph'], ['BeginSentence', 'BeginParagraph']]
    """
    sc = scheme if scheme is not None else LabelScheme(
        begin_prefixes, inside_prefixes, outside_labels, single_token_labels)
    seqs, one_chain = check_label_sequences([labels], name="labels")
    arr = seqs[0]
    if tokens is not None:
        tokens = list(tokens)
        if len(tokens) != arr.shape[0]:
            raise ValueError(f"{len(tokens)} tokens but {arr.shape[0]} labels")
    rules = tuple(rules or ())
    for r in rules:
        if not callable(r):
            raise TypeError(f"rules must be callables, got {r!r}")
    raw_rules = tuple(r for r in rules if getattr(r, "raw", False))
    rules = tuple(r for r in rules if not getattr(r, "raw", False))
    outside = _outside_label(sc)
    for _ in range(max(1, int(max_iter))):
        raw_changed = False
        if raw_rules:
            start = arr.copy()
            arr = _apply_rules(raw_rules, arr, tokens, sc, outside)
            raw_changed = not np.array_equal(arr, start)
        changed = _formal(arr, sc) or raw_changed
        if rules:
            before = arr.copy()
            arr = _apply_rules(rules, arr, tokens, sc, outside)
            _formal(arr, sc)
            changed = raw_changed or not np.array_equal(arr, before)
        if not changed:
            break
    return arr[:, 0].copy() if one_chain else arr


def _apply_rules(rules, arr, tokens, sc, outside):
    """The labels ``arr`` after each rule in turn has edited their segment tree."""
    root = chains_to_segments(tokens, arr, scheme=sc)
    for rule in rules:
        out = rule(root)
        if out is not None:
            root = out
    return segments_to_chains(root, outside_label=outside)


def _outside_label(sc):
    return next(iter(sorted(sc.outside, key=str))) if sc.outside else "O"


# --------------------------------------------------------------------------------------
# rules
# --------------------------------------------------------------------------------------

def _siblings(root):
    """Yield every segment that has children (parents of sibling lists)."""
    for seg in root.iter():
        if seg.children:
            yield seg


def _sibling_rule(level, name, fix):
    """A rule that replaces every list of sibling segments of chain ``level`` by ``fix(siblings)``."""
    def rule(root):
        for parent in _siblings(root):
            if parent.level == level + 1:
                parent.children = fix(parent.children)
        return root

    rule.__name__ = name
    return rule


def _merge_where(kids, joins):
    """``kids`` with every segment ``seg`` for which ``joins(prev, seg)`` merged into ``prev``,
    the segment before it (after the merges so far)."""
    out = []
    for seg in kids:
        if out and joins(out[-1], seg):
            _merge_into(out[-1], seg)
        else:
            out.append(seg)
    return out


def min_enumeration_elements(min_elements=2, element="Enumelement", replacement="Paragraph",
                             marker="Enummarker", sentence="Sentence", keep_marked=True):
    """Rule: an enumeration needs at least ``min_elements`` elements (algorithm 8, step 6).

    A run of fewer than ``min_elements`` consecutive ``element`` segments becomes
    ``replacement`` segments.  Their ``marker`` children (the dictated "number one")
    are merged into the following ``sentence`` segment, or relabelled ``sentence``
    when none follows.

    Parameters
    ----------
    min_elements : int, default=2
    element, replacement, marker, sentence : str
        Labels of the enumeration elements and of what a short run becomes (chain 1),
        of the markers and of the sentences (chain 0).
    keep_marked : bool, default=True
        Keep a short run in which some element holds a ``marker`` and text: a dictated
        "number one" says the text is an enumeration, and the decoder rather missed
        the boundaries between its elements than the enumeration itself.  On
        the generator's test sets relabelling such runs cost joint accuracy (up to
        0.6 points, see the user guide); ``False`` relabels every short run.

    Returns
    -------
    rule : callable

    Examples
    --------
    >>> from skfcrf.structure import repair
    >>> lone = [("BeginSentence", "BeginEnumelement", "BeginPlan"), ("Sentence", "Enumelement", "Plan")]
    >>> repair(lone, [min_enumeration_elements()])[:, 1].tolist()
    ['BeginParagraph', 'Paragraph']
    >>> marked = [("Enummarker", "BeginEnumelement", "BeginPlan"), ("BeginSentence", "Enumelement", "Plan")]
    >>> repair(marked, [min_enumeration_elements()])[:, 1].tolist()
    ['BeginEnumelement', 'Enumelement']
    >>> repair(marked, [min_enumeration_elements(keep_marked=False)])[:, :2].tolist()
    [['BeginSentence', 'BeginParagraph'], ['Sentence', 'Paragraph']]
    """
    if min_elements < 1:
        raise ValueError("min_elements must be at least 1")

    def marked(run):
        return keep_marked and any(
            any(c.label == marker for c in seg.children) and any(c.label != marker for c in seg.children)
            for seg in run)

    def rule(root):
        for parent in _siblings(root):
            kids = parent.children
            i = 0
            while i < len(kids):
                if kids[i].label != element:
                    i += 1
                    continue
                j = i
                while j < len(kids) and kids[j].label == element:
                    j += 1
                if j - i < min_elements and not marked(kids[i:j]):
                    for seg in kids[i:j]:
                        seg.label = replacement
                        seg.children = _drop_markers(seg.children, marker, sentence)
                i = j
        return root

    rule.__name__ = f"min_enumeration_elements({min_elements}{'' if keep_marked else ', keep_marked=False'})"
    return rule


def _drop_markers(children, marker, sentence):
    out = []
    for ch in reversed(children):
        if ch.label == marker:
            if out and out[-1].label == sentence:
                _prepend_into(out[-1], ch)
                continue
            ch.label = sentence
            ch.begin_prefix, ch.inside_prefix = "Begin", ""
        out.append(ch)
    out.reverse()
    return out


def _merge_into(a, b):
    """Append segment ``b`` to segment ``a`` (adjacent siblings)."""
    a.end = b.end
    if a.tokens is not None and b.tokens is not None:
        a.tokens = list(a.tokens) + list(b.tokens)
    a.children.extend(b.children)


def _prepend_into(b, a):
    """Put segment ``a`` in front of segment ``b`` (adjacent siblings, ``a`` first)."""
    b.start = a.start
    b.children = a.children + b.children
    if b.tokens is not None and a.tokens is not None:
        b.tokens = list(a.tokens) + list(b.tokens)


def merge_adjacent_same_type(level, labels=None):
    """Rule: merge adjacent segments of the same type on chain ``level`` (algorithm 8, step 3).

    Two sections of the same type in a row are one section that the decoder split.

    Parameters
    ----------
    level : int
        Chain whose segments are merged (2 = sections in the dictation scheme).
    labels : collection of str, optional
        Only merge these types (default: all but outside runs).
    """
    keep = None if labels is None else frozenset(labels)

    def joins(prev, seg):
        return seg.label is not None and seg.label == prev.label and (keep is None or seg.label in keep)

    return _sibling_rule(level, f"merge_adjacent_same_type(level={level})",
                         lambda kids: _merge_where(kids, joins))


def _anchors(first_labels):
    """``{chain: frozenset of labels or None (any label)}`` from a collection or a dict."""
    if isinstance(first_labels, dict):
        return {int(k): (None if v is None else frozenset([v] if isinstance(v, str) else v))
                for k, v in first_labels.items()}
    return {0: frozenset([first_labels] if isinstance(first_labels, str) else first_labels)}


def starts_with(seg, anchors):
    """Whether a segment of an anchor chain with an anchor label really starts where ``seg`` does.

    ``anchors`` maps a chain to a collection of labels (``None``: any label but an
    outside run); a segment cut by a coarser boundary (``Segment.continued``) does
    not count as starting there.
    """
    d = seg
    while d.children:
        d = d.children[0]
        labels = anchors.get(d.level, False)
        if labels is False or d.continued or d.label is None:
            continue
        if labels is None or d.label in labels:
            return True
    return False


def _anchor_starts(seg, anchors):
    """Token positions inside ``seg`` (after its start) where an anchor segment really starts."""
    out = []
    for d in seg.iter():
        if d is seg or d.start == seg.start or d.continued or d.label is None:
            continue
        labels = anchors.get(d.level, False)
        if labels is not False and (labels is None or d.label in labels):
            out.append(d.start)
    return out


def _split(seg, p):
    """Split ``seg`` (and the descendants that straddle ``p``) at token ``p``.

    Returns ``(left, right)``; ``right`` continues ``seg`` (continuation prefix,
    ``continued``) so that the labels only change where the formal repair says so.
    """
    left = Segment(level=seg.level, label=seg.label, start=seg.start, end=p, children=[],
                   begin_prefix=seg.begin_prefix, inside_prefix=seg.inside_prefix,
                   tokens=None if seg.tokens is None else list(seg.tokens[:p - seg.start]))
    right = Segment(level=seg.level, label=seg.label, start=p, end=seg.end, children=[],
                    begin_prefix=seg.inside_prefix, inside_prefix=seg.inside_prefix,
                    tokens=None if seg.tokens is None else list(seg.tokens[p - seg.start:]))
    right.continued = True
    for ch in seg.children:
        if ch.end <= p:
            left.children.append(ch)
        elif ch.start >= p:
            right.children.append(ch)
        else:
            a, b = _split(ch, p)
            left.children.append(a)
            right.children.append(b)
    return left, right


def _move_boundary(prev, seg, anchors):
    """Move the boundary between siblings ``prev`` and ``seg`` to the nearest anchor start.

    Returns the new ``(prev, seg)`` pair, or None when neither holds an anchor.
    """
    back = _anchor_starts(prev, anchors)
    fwd = _anchor_starts(seg, anchors)
    b = max(back) if back else None
    f = min(fwd) if fwd else None
    if b is None and f is None:
        return None
    if f is None or (b is not None and seg.start - b <= f - seg.start):
        left, right = _split(prev, b)
        _prepend_into(seg, right)
        return left, seg
    left, right = _split(seg, f)
    right.begin_prefix, right.continued = seg.begin_prefix, False
    _merge_into(prev, left)
    return prev, right


def merge_unless_starts_with(level, first_labels, *, raw=False, move=False, keep="first",
                             otherwise="merge"):
    """Rule: a segment on chain ``level`` may only start where an anchor segment starts;
    otherwise it is merged into the preceding segment.

    For formatted reports every section starts with a heading (algorithm 7, step 5):
    ``merge_unless_starts_with(2, ["Heading"])`` removes spurious section boundaries.
    For recognizer-style reports a section starts at a heading *or a paragraph*
    (algorithm 8, step 1): ``merge_unless_starts_with(2, {0: ["Heading"], 1: None},
    raw=True)`` (see :data:`RULE_8_1`, opt-in).  The first segment of a sequence is never
    merged, nor a segment that follows an outside run.

    Parameters
    ----------
    level : int
        Chain whose boundaries are checked.
    first_labels : collection of str, or dict
        Labels of chain 0 that may start a ``level`` segment; or a dict ``{chain:
        labels}`` over any finer chains (``None`` as labels: any segment of that
        chain), satisfied when one of them starts there.
    raw : bool, default=False
        Apply the rule to the unrepaired labels (before the formal repair), so that
        a finer segment that the boundary cuts does not count as starting there.
        Needed for anchors on chains above 0: after the formal repair every
        boundary has Begin labels on all finer chains.
    move : bool, default=False
        Instead of removing a boundary that is not at an anchor, move it to the
        nearest anchor start inside the two segments it separates (backwards on a
        tie); merge only when neither holds one.  Decoded boundaries are more often
        a few tokens off than spurious (see the notes of :data:`COR_RULES`).
    keep : {"first", "longest"}, default="first"
        Type of a segment that others were merged into: that of the first one, or
        the type that covers the most tokens of the merged segment (ties: the
        earliest).
    otherwise : {"merge", "keep"}, default="merge"
        What happens to a boundary that is not at an anchor and cannot be moved
        (``move=False``, or no anchor start in the two segments): ``"merge"`` the
        two segments, or ``"keep"`` the boundary where it is.  Merging trusts the
        anchor chain to have found every anchor: a missed heading then merges two
        right sections into one of the wrong type for its second part.  With
        ``"keep"`` the rule only moves boundaries (see the notes of
        :data:`COR_RULES`).

    Examples
    --------
    The section boundary at token 2 has no heading there, and the chain-0 heading
    starts one token later; the one at token 4 has no heading anywhere near
    (the heading chain missed it): it is merged away, or kept:

    >>> from skfcrf.structure import repair
    >>> labels = [("BeginHeading", "BeginNone", "BeginPlan"), ("BeginSentence", "BeginParagraph", "Plan"),
    ...           ("Sentence", "Paragraph", "BeginDx"), ("BeginHeading", "BeginNone", "Dx"),
    ...           ("BeginSentence", "BeginParagraph", "BeginMeds"), ("Sentence", "Paragraph", "Meds")]
    >>> rule = merge_unless_starts_with(2, ["Heading"], move=True)
    >>> repair(labels, [rule])[:, 2].tolist()
    ['BeginPlan', 'Plan', 'Plan', 'BeginDx', 'Dx', 'Dx']
    >>> rule = merge_unless_starts_with(2, ["Heading"], move=True, otherwise="keep")
    >>> repair(labels, [rule])[:, 2].tolist()
    ['BeginPlan', 'Plan', 'Plan', 'BeginDx', 'BeginMeds', 'Meds']
    """
    if keep not in ("first", "longest"):
        raise ValueError(f"keep must be 'first' or 'longest', got {keep!r}")
    if otherwise not in ("merge", "keep"):
        raise ValueError(f"otherwise must be 'merge' or 'keep', got {otherwise!r}")
    anchors = _anchors(first_labels)
    if any(k < 0 or k >= level for k in anchors):
        raise ValueError(f"anchor chains must be finer than chain {level}, got {sorted(anchors)}")

    def fix(kids):
        out = []
        merged = {}  # id(segment) -> {type: tokens} of the segments merged into it
        for seg in kids:
            if out and out[-1].label is not None and seg.label is not None \
                    and not starts_with(seg, anchors):
                moved = _move_boundary(out[-1], seg, anchors) if move else None
                if moved is None and otherwise == "keep":
                    out.append(seg)
                elif moved is None:
                    if keep == "longest":
                        votes = merged.setdefault(id(out[-1]), {out[-1].label: len(out[-1])})
                        votes[seg.label] = votes.get(seg.label, 0) + len(seg)
                    _merge_into(out[-1], seg)
                else:
                    out[-1], seg = moved
                    out.append(seg)
            else:
                out.append(seg)
        for seg in out:
            votes = merged.get(id(seg))
            if votes:
                seg.label = max(votes, key=votes.get)  # first maximum: the earliest type
        return out

    name = f"merge_unless_starts_with(level={level}{', move' if move else ''}" \
           f"{', keep' if otherwise == 'keep' else ''})"
    rule = _sibling_rule(level, name, fix)
    rule.raw = bool(raw)
    return rule


def long_headings_to_sentences(max_tokens=8, heading="Heading", holder="None", sentence="Sentence",
                               paragraph="Paragraph"):
    """Rule: a heading of more than ``max_tokens`` tokens is text (algorithm 8, step 9).

    A ``holder`` segment (chain 1 ``None`` in the dictation scheme) whose ``heading``
    children span more than ``max_tokens`` tokens becomes a ``paragraph`` and the
    headings become one ``sentence``.
    """
    if max_tokens < 1:
        raise ValueError("max_tokens must be at least 1")

    def rule(root):
        for seg in root.iter():
            if seg.label != holder or not seg.children:
                continue
            heads = [c for c in seg.children if c.label == heading]
            if heads and sum(len(c) for c in heads) > max_tokens:
                _headings_to_text(seg, heading, sentence, paragraph)
        return root

    rule.__name__ = f"long_headings_to_sentences({max_tokens})"
    return rule


def _headings_to_text(holder, heading, sentence, paragraph):
    """The ``holder`` segment becomes a ``paragraph`` and its runs of ``heading`` children
    one ``sentence`` each."""
    holder.label = paragraph
    holder.begin_prefix, holder.inside_prefix = "Begin", ""
    kids = []
    for c in holder.children:
        if c.label == heading and kids and kids[-1].label == sentence and kids[-1]._from_heading:
            _merge_into(kids[-1], c)
            continue
        if c.label == heading:
            c.label = sentence
            c.begin_prefix, c.inside_prefix = "Begin", ""
            c._from_heading = True
        kids.append(c)
    holder.children = kids


#: Domain rules that hold for the three-chain dictation labels (rcg and cor):
#: enumerations have at least two elements, adjacent sections of one type are one
#: section, headings are at most 8 tokens long.
DICTATION_RULES = (min_enumeration_elements(), merge_adjacent_same_type(level=2),
                   long_headings_to_sentences())

