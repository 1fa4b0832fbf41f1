"""Tests for the post-processing rules of algorithms 7 and 8 (skfcrf.structure._postprocess)
and the generalised merge_unless_starts_with (anchors on any chain, raw mode)."""
import doctest

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skfcrf.datasets import make_dictations
from skfcrf.structure import (
    COR_RULES,
    DICTATION_RULES,
    RCG_RULES,
    RCG_RULES_WITH_8_1,
    UNTYPED_SUBSECTIONS,
    LabelScheme,
    _postprocess,
    chains_to_segments,
    find_violations,
    fix_long_headings,
    merge_same_type_at_heading,
    merge_unless_starts_with,
    min_enumeration_elements,
    no_double_begins,
    no_untyped_between_typed,
    repair,
    sections_at_headings,
    typed_subsections_start_at,
)


def _arr(rows):
    return np.array(rows, dtype=object)


H, N, S, SUB, P = "Heading", "None", "Sentence", "Subheading", "Paragraph"


def _rows(spec):
    """Rows from (chain0, chain1, chain2) triples; a leading '+' means Begin."""
    return _arr([tuple(("Begin" + x[1:]) if x.startswith("+") else x for x in row) for row in spec])


# ----------------------------------------------------------------------------- 7.2

def test_typed_subsections_start_at_subheading():
    # Neck [subheading, sentence] then a spurious Abdomen boundary at a sentence: merged
    labs = _rows([("+Subheading", "+Neck", "+PE"), ("+Sentence", "Neck", "PE"),
                  ("+Sentence", "+Abdomen", "PE"), ("Sentence", "Abdomen", "PE"),
                  ("+Subheading", "+Back", "PE"), ("+Sentence", "Back", "PE")])
    out = repair(labs, [typed_subsections_start_at()])
    assert out[:, 1].tolist() == ["BeginNeck", "Neck", "Neck", "Neck", "BeginBack", "Back"]
    assert out[:, 0].tolist() == labs[:, 0].tolist()
    # type filter: paragraphs and enumeration elements that start at sentences are not merged
    untyped = _rows([("+Heading", "+None", "+Dx"), ("+Sentence", "+Paragraph", "Dx"),
                     ("+Sentence", "+Paragraph", "Dx"), ("Enummarker", "+Enumelement", "Dx"),
                     ("+Sentence", "Enumelement", "Dx"), ("Enummarker", "+Enumelement", "Dx"),
                     ("+Sentence", "Enumelement", "Dx")])
    assert (repair(untyped, [typed_subsections_start_at()]) == untyped).all()
    # a typed subsection after an untyped one is left alone (nothing typed to merge into)
    after_par = _rows([("+Sentence", "+Paragraph", "+PE"), ("+Sentence", "+Neck", "PE")])
    assert (repair(after_par, [typed_subsections_start_at()]) == after_par).all()


# ----------------------------------------------------------------------------- 7.4

def test_no_untyped_paragraph_between_typed():
    labs = _rows([("+Subheading", "+Neck", "+PE"), ("+Sentence", "Neck", "PE"),
                  ("+Sentence", "+Paragraph", "PE"), ("+Sentence", "+Paragraph", "PE"),
                  ("+Subheading", "+Back", "PE"), ("+Sentence", "Back", "PE"),
                  ("+Sentence", "+Paragraph", "PE")])
    out = repair(labs, [no_untyped_between_typed()])
    assert out[:, 1].tolist() == ["BeginNeck", "Neck", "Neck", "Neck", "BeginBack", "Back", "BeginParagraph"]
    # sentences stay sentences
    assert out[:, 0].tolist() == labs[:, 0].tolist()
    # a paragraph between typed subsections of different sections is not "between"
    other = _rows([("+Subheading", "+Neck", "+PE"), ("+Sentence", "+Paragraph", "PE"),
                   ("+Subheading", "+Back", "+ROS")])
    assert (repair(other, [no_untyped_between_typed()]) == other).all()


# ----------------------------------------------------------------------------- 7.5 / 8.1

def test_section_boundaries_at_heading_or_paragraph_raw():
    # a section boundary in the middle of a paragraph (the decoder's typical error)
    mid = _rows([("+Heading", "+None", "+Plan"), ("+Sentence", "+Paragraph", "Plan"),
                 ("Sentence", "Paragraph", "+Dx"), ("Sentence", "Paragraph", "Dx"),
                 ("+Sentence", "+Paragraph", "+Allergies"), ("Sentence", "Paragraph", "Allergies")])
    rule = merge_unless_starts_with(2, {0: ["Heading"], 1: None}, raw=True)
    out = repair(mid, [rule])
    assert out[:, 2].tolist() == ["BeginPlan"] + ["Plan"] * 3 + ["BeginAllergies", "Allergies"]
    assert out[:, 1].tolist() == mid[:, 1].tolist() and out[:, 0].tolist() == mid[:, 0].tolist()
    assert find_violations(out) == []
    # without raw the formal repair first splits the paragraph, so the boundary stays
    late = repair(mid, [merge_unless_starts_with(2, {0: ["Heading"], 1: None})])
    assert late[2].tolist() == ["BeginSentence", "BeginParagraph", "BeginDx"]
    # chain-0 anchors alone (algorithm 7, step 5) merge the Allergies section too
    out = repair(mid, [merge_unless_starts_with(2, ["Heading"])])
    assert out[:, 2].tolist() == ["BeginPlan"] + ["Plan"] * 5
    with pytest.raises(ValueError):
        merge_unless_starts_with(2, {2: ["X"]})


# ----------------------------------------------------------------------------- 8.3

def test_smart_merge_moves_the_boundary_to_the_heading():
    labs = _rows([("+Heading", "+None", "+Plan"), ("+Sentence", "+Paragraph", "Plan"),
                  ("+Sentence", "+Paragraph", "+Dx"), ("Sentence", "Paragraph", "Dx"),
                  ("+Heading", "+None", "+Dx"), ("+Sentence", "+Paragraph", "Dx"),
                  ("+Sentence", "+Paragraph", "+Dx")])
    out = repair(labs, [merge_same_type_at_heading()])
    assert out[:, 2].tolist() == ["BeginPlan", "Plan", "Plan", "Plan", "BeginDx", "Dx", "Dx"]
    # the first of the run starts with a heading: a plain merge
    plain = _rows([("+Heading", "+None", "+Dx"), ("+Sentence", "+Paragraph", "Dx"),
                   ("+Sentence", "+Paragraph", "+Dx")])
    assert repair(plain, [merge_same_type_at_heading()])[:, 2].tolist() == ["BeginDx", "Dx", "Dx"]
    # no preceding section: the run is merged where it starts
    first = _rows([("+Sentence", "+Paragraph", "+Dx"), ("+Heading", "+None", "+Dx"),
                   ("+Sentence", "+Paragraph", "Dx")])
    assert repair(first, [merge_same_type_at_heading()])[:, 2].tolist() == ["BeginDx", "Dx", "Dx"]


# ----------------------------------------------------------------------------- 8.5

def test_no_double_begins():
    labs = _rows([("+Heading", "+None", "+Plan"), ("+Sentence", "+Paragraph", "Plan"),
                  ("+Sentence", "+Paragraph", "Plan"), ("Sentence", "Paragraph", "Plan")])
    out = repair(labs, [no_double_begins()])
    assert out[:, 1].tolist() == ["BeginNone", "BeginParagraph", "Paragraph", "Paragraph"]
    assert out[:, 0].tolist() == labs[:, 0].tolist()  # the sentences are not touched
    # appropriate: a one-word heading holder, a one-token subsection before another type,
    # a one-word enumeration element
    ok = _rows([("+Heading", "+None", "+PE"), ("+Sentence", "+Genitourinary", "PE"),
                ("+Sentence", "+Back", "PE"), ("+Sentence", "+Enumelement", "+Dx"),
                ("+Sentence", "+Enumelement", "Dx")])
    assert (repair(ok, [no_double_begins()]) == ok).all()


# ----------------------------------------------------------------------------- 8.9

def _heading_report(words, n_heading):
    labs = [("BeginHeading", "BeginNone", "BeginPlan")] + [("Heading", "None", "Plan")] * (n_heading - 1)
    labs += [("BeginSentence", "BeginParagraph", "Plan")] + [("Sentence", "Paragraph", "Plan")] * (
        len(words) - n_heading - 1)
    return _arr(labs)


def test_fix_long_headings_shorten_split_and_fallback():
    words = "plan colon we will see him again in two weeks full stop".split()
    labs = _heading_report(words, 10)
    out = repair(labs, [fix_long_headings()], tokens=words)
    assert out[:, 0].tolist() == ["BeginHeading", "Heading", "BeginSentence"] + ["Sentence"] * 9
    assert out[:, 1].tolist() == ["BeginNone", "None", "BeginParagraph"] + ["Paragraph"] * 9
    # two dictated headings run together: split into two headings
    words = "allergies colon medications colon none known full stop".split()
    labs = _heading_report(words, 6)
    out = repair(labs, [fix_long_headings(max_tokens=3)], tokens=words)
    assert out[:, 0].tolist() == ["BeginHeading", "Heading", "BeginHeading", "Heading",
                                  "BeginSentence", "Sentence", "Sentence", "Sentence"]
    assert out[:, 1].tolist() == ["BeginNone", "None", "None", "None", "BeginParagraph", "Paragraph",
                                  "Paragraph", "Paragraph"]
    # the rest of the heading becomes a paragraph of its own when no paragraph follows
    words = "allergies colon none known".split()
    labs = _arr([("BeginHeading", "BeginNone", "BeginAllergies")] + [("Heading", "None", "Allergies")] * 3)
    out = repair(labs, [fix_long_headings(max_tokens=3)], tokens=words)
    assert out[:, 0].tolist() == ["BeginHeading", "Heading", "BeginSentence", "Sentence"]
    assert out[:, 1].tolist() == ["BeginNone", "None", "BeginParagraph", "Paragraph"]
    # formatted report: the uppercase run is the heading
    words = "PLAN AND DISCUSSION Benign course expected here today".split()
    out = repair(_heading_report(words, 7), [fix_long_headings(max_tokens=5)], tokens=words)
    assert out[:, 0].tolist() == ["BeginHeading", "Heading", "Heading", "BeginSentence"] + ["Sentence"] * 4
    words = "VITAL SIGNS : Stable and afebrile today".split()  # the colon token stays in the heading
    out = repair(_heading_report(words, 6), [fix_long_headings(max_tokens=4)], tokens=words)
    assert out[:, 0].tolist() == ["BeginHeading", "Heading", "Heading", "BeginSentence"] + ["Sentence"] * 3
    # no cut point, or no tokens: the heading becomes a sentence of a paragraph
    words = "the patient is a fifty year old man with pain".split()
    for toks in (words, None):
        out = repair(_heading_report(words, 9), [fix_long_headings()], tokens=toks)
        assert out[:, 1].tolist() == ["BeginParagraph"] + ["Paragraph"] * 8 + ["BeginParagraph"]
        assert out[:, 0].tolist() == ["BeginSentence"] + ["Sentence"] * 8 + ["BeginSentence"]
    with pytest.raises(ValueError):
        fix_long_headings(0)


# ----------------------------------------------------------------------------- presets

@pytest.mark.parametrize("style,rules", [("cor", COR_RULES), ("rcg", RCG_RULES),
                                         ("rcg", RCG_RULES_WITH_8_1)])
def test_presets_leave_gold_dictations_unchanged(style, rules):
    X, Y = make_dictations(n_reports=40, style=style, random_state=7)
    for x, y in zip(X, Y):
        assert (repair(y, rules, tokens=x) == np.asarray(y, dtype=object)).all()


def test_docstring_examples():
    result = doctest.testmod(_postprocess)
    assert result.failed == 0 and result.attempted >= 5


# ----------------------------------------------------------------------------- properties

_GOLD = {st_: make_dictations(n_reports=4, style=st_, random_state=11) for st_ in ("cor", "rcg")}
_VOCAB = {st_: [sorted({row[k] for y in Y for row in y}) for k in range(3)] for st_, (_, Y) in _GOLD.items()}


@st.composite
def corrupted(draw, style):
    X, Y = _GOLD[style]
    i = draw(st.integers(0, len(X) - 1))
    n = len(X[i])
    a = draw(st.integers(0, max(0, n - 60)))
    x, y = list(X[i][a:a + 60]), np.array(Y[i][a:a + 60], dtype=object)
    for _ in range(draw(st.integers(0, 12))):
        t = draw(st.integers(0, len(x) - 1))
        k = draw(st.integers(0, 2))
        y[t, k] = draw(st.sampled_from(_VOCAB[style][k]))
    return x, y


def _repaired_sections(case, rules):
    """Repair a corrupted ``case`` with ``rules``, check the result is valid and a fixed point;
    return the sections (chain 2 segments) of the result."""
    x, y = case
    out = repair(y, rules, tokens=x)
    assert find_violations(out) == []
    assert (repair(out, rules, tokens=x) == out).all()
    return chains_to_segments(None, out).children


def _check_sections_start_at_heading(secs):
    for prev, sec in zip(secs, secs[1:]):
        assert prev.label is None or sec.label is None or _first_leaf(sec).label == H


def _typed(label):
    return label is not None and label not in UNTYPED_SUBSECTIONS


def _first_leaf(seg):
    while seg.children:
        seg = seg.children[0]
    return seg


def _agreement(secs):
    """|H & S| / |H | S| of the heading starts H and section starts S (sequence start in both)."""
    starts = {s.start for s in secs}
    heads = {secs[0].start} | {d.start for s in secs for d in s.iter()
                                if d.level == 0 and d.label == H and not d.continued}
    return len(heads & starts) / len(heads | starts)


def _check_no_paragraph_between_typed(secs):
    for sec in secs:
        labels = [s.label for s in sec.children]
        k = 0
        while k < len(labels):  # 7.4: no run of paragraphs with typed subsections on both sides
            j = k
            while j < len(labels) and labels[j] == P:
                j += 1
            if j > k and k > 0 and j < len(labels):
                assert not (_typed(labels[k - 1]) and _typed(labels[j])), labels
            k = max(j, k + 1)


@settings(max_examples=60, deadline=None)
@given(corrupted("cor"))
def test_cor_rules_property(case):
    """7.5 re-cuts the sections at the headings (agreement 1) or leaves a report whose
    chains disagree (agreement below 0.6); 7.4 holds everywhere."""
    secs = _repaired_sections(case, COR_RULES)
    agreement = _agreement(secs)
    assert agreement == 1 or agreement < 0.6
    if agreement == 1:
        _check_sections_start_at_heading(secs)
    _check_no_paragraph_between_typed(secs)


@settings(max_examples=60, deadline=None)
@given(corrupted("cor"))
def test_typed_subsections_start_at_property(case):
    """Step 7.2 alone (no longer in the cor preset): typed after typed starts at a subheading."""
    for sec in _repaired_sections(case, [typed_subsections_start_at()]):
        for a, b in zip(sec.children, sec.children[1:]):
            if _typed(a.label) and _typed(b.label):
                assert _first_leaf(b).label == SUB


def test_sections_at_headings_recuts_when_headings_agree():
    # sections Plan | Dx | Meds | FU with the Dx boundary one token before its heading:
    # 3 of the 5 starts agree (0.6); re-cut at the headings, each span's majority type
    labs = _rows([("+Heading", "+None", "+Plan"), ("+Sentence", "+Paragraph", "Plan"),
                  ("Sentence", "Paragraph", "+Dx"), ("+Heading", "+None", "Dx"),
                  ("+Sentence", "+Paragraph", "Dx"), ("+Heading", "+None", "+Meds"),
                  ("+Sentence", "+Paragraph", "Meds"), ("+Heading", "+None", "+FU")])
    out = repair(labs, [sections_at_headings()])
    assert out[:, 2].tolist() == ["BeginPlan", "Plan", "Plan", "BeginDx", "Dx", "BeginMeds", "Meds",
                                  "BeginFU"]
    assert find_violations(out) == []
    # a section inside a heading span takes the majority: Dx covers 2 of the 3 tokens
    maj = labs.copy()
    maj[1, 2], maj[2, 2] = "BeginDx", "Dx"
    assert repair(maj, [sections_at_headings()])[:3, 2].tolist() == ["BeginDx", "Dx", "Dx"]
    # a heading inside a section starts a new section (of that section's type)
    inner = _rows([("+Heading", "+None", "+Plan"), ("+Sentence", "+Paragraph", "Plan"),
                   ("+Heading", "+None", "Plan"), ("+Sentence", "+Paragraph", "Plan"),
                   ("+Heading", "+None", "+Dx"), ("+Sentence", "+Paragraph", "Dx")])
    assert repair(inner, [sections_at_headings(min_agreement=0.5)])[:, 2].tolist() == \
        ["BeginPlan", "Plan", "BeginPlan", "Plan", "BeginDx", "Dx"]


def test_sections_at_headings_leaves_reports_whose_chains_disagree():
    # the heading chain found one of three section headings (agreement 1/3): the old
    # step 7.5 merged the right Dx and Meds sections into Plan; the rule keeps them
    labs = _rows([("+Heading", "+None", "+Plan"), ("+Sentence", "+Paragraph", "Plan"),
                  ("+Sentence", "+Paragraph", "+Dx"), ("Sentence", "Paragraph", "Dx"),
                  ("+Sentence", "+Paragraph", "+Meds"), ("Sentence", "Paragraph", "Meds")])
    assert (repair(labs, [sections_at_headings()]) == repair(labs)).all()
    merged = repair(labs, [merge_unless_starts_with(2, ["Heading"], move=True)])[:, 2].tolist()
    assert merged == ["BeginPlan"] + ["Plan"] * 5
    kept = repair(labs, [merge_unless_starts_with(2, ["Heading"], move=True, otherwise="keep")])
    assert (kept == repair(labs)).all()
    assert (repair(labs, [sections_at_headings(min_agreement=0)])[:, 2] == kept[:, 2]).sum() == 2
    with pytest.raises(ValueError):
        sections_at_headings(min_agreement=1.5)
    with pytest.raises(ValueError):
        merge_unless_starts_with(2, ["Heading"], otherwise="drop")


@pytest.mark.parametrize("rules", [RCG_RULES, RCG_RULES_WITH_8_1], ids=["rcg", "rcg+8.1"])
@settings(max_examples=60, deadline=None)
@given(case=corrupted("rcg"))
def test_rcg_rules_property(rules, case):
    x, y = case
    secs = _repaired_sections(case, rules)
    for a, b in zip(secs, secs[1:]):  # 8.3: no two adjacent sections of one type
        assert a.label is None or a.label != b.label
    for sec in secs:
        kids = sec.children
        for a, b in zip(kids, kids[1:]):  # 8.5
            assert not (len(a) == 1 and a.label == b.label and a.label not in ("None", "Enumelement"))
        k = 0
        while k < len(kids):  # 8.6: enumerations of at least two elements, or dictated markers
            j = k
            while j < len(kids) and kids[j].label == "Enumelement":
                j += 1
            assert j - k != 1 or any(c.label == "Enummarker" for c in kids[k].children)
            k = max(j, k + 1)
        for s in kids:  # 8.9
            if s.label == N:
                assert sum(len(c) for c in s.children if c.label == H) <= 8
    short = repair(y, [fix_long_headings(max_tokens=2)], tokens=x)  # 8.9 with a bound that bites
    assert find_violations(short) == []
    for s in chains_to_segments(None, short).iter(level=1):
        if s.label == N:
            assert sum(len(c) for c in s.children if c.label == H) <= 2


@settings(max_examples=60, deadline=None)
@given(corrupted("rcg"))
def test_section_boundaries_only_where_a_heading_or_subsection_started(case):
    """8.1 on its own: every output section boundary was a real chain-0 heading start or
    chain-1 segment start in the *input* labels (the rule only removes boundaries)."""
    x, y = case
    rule = merge_unless_starts_with(2, {0: ["Heading"], 1: None}, raw=True)
    out = repair(y, [rule])
    sc = LabelScheme()
    starts1, _ = sc.boundaries(list(y[:, 1]))
    starts0, info0 = sc.boundaries(list(y[:, 0]))
    starts2_in, _ = sc.boundaries(list(y[:, 2]))
    starts2, info2 = sc.boundaries(list(out[:, 2]))
    for t in range(1, len(x)):
        if starts2[t] and info2[t][0] is not None and info2[t - 1][0] is not None:
            assert starts2_in[t]
            anchored = (starts0[t] and info0[t][0] == H) or (starts1[t] and sc.parse(y[t, 1])[1] != "O")
            assert anchored, (t, list(y[t]), list(out[t]))
    assert find_violations(out) == []


def test_existing_dictation_rules_unchanged_on_gold():
    X, Y = make_dictations(n_reports=20, style="rcg", random_state=2)
    for x, y in zip(X, Y):
        assert (repair(y, DICTATION_RULES, tokens=x) == np.asarray(y, dtype=object)).all()


def test_merge_unless_starts_with_move_to_nearest_anchor():
    # the Dx boundary is two tokens after the heading that should start it: moved back
    labs = _rows([("+Heading", "+None", "+Plan"), ("+Sentence", "+Paragraph", "Plan"),
                  ("+Heading", "+None", "Plan"), ("Heading", "None", "Plan"),
                  ("+Sentence", "+Paragraph", "+Dx"), ("Sentence", "Paragraph", "Dx")])
    out = repair(labs, [merge_unless_starts_with(2, ["Heading"], move=True)])
    assert out[:, 2].tolist() == ["BeginPlan", "Plan", "BeginDx", "Dx", "Dx", "Dx"]
    assert out[:, 0].tolist() == labs[:, 0].tolist() and out[:, 1].tolist() == labs[:, 1].tolist()
    # plain merging would have given the whole Dx section to Plan
    merged = repair(labs, [merge_unless_starts_with(2, ["Heading"])])[:, 2].tolist()
    assert merged == ["BeginPlan"] + ["Plan"] * 5
    # the anchor is ahead (closer than any behind): the boundary moves forward
    fwd = _rows([("+Heading", "+None", "+Plan"), ("+Sentence", "+Paragraph", "Plan"),
                 ("Sentence", "Paragraph", "Plan"), ("Sentence", "Paragraph", "+Dx"),
                 ("+Heading", "+None", "Dx"), ("+Sentence", "+Paragraph", "Dx")])
    out = repair(fwd, [merge_unless_starts_with(2, ["Heading"], move=True)])
    assert out[:, 2].tolist() == ["BeginPlan", "Plan", "Plan", "Plan", "BeginDx", "Dx"]
    assert find_violations(out) == []
    # raw mode, mid-paragraph boundary, paragraph start behind: moved there, paragraph kept whole
    mid = _rows([("+Heading", "+None", "+Plan"), ("+Sentence", "+Paragraph", "Plan"),
                 ("+Sentence", "+Paragraph", "Plan"), ("Sentence", "Paragraph", "+Dx"),
                 ("Sentence", "Paragraph", "Dx")])
    out = repair(mid, [merge_unless_starts_with(2, {0: ["Heading"], 1: None}, raw=True, move=True)])
    assert out[:, 2].tolist() == ["BeginPlan", "Plan", "BeginDx", "Dx", "Dx"]
    assert out[:, 1].tolist() == mid[:, 1].tolist()


@settings(max_examples=60, deadline=None)
@given(corrupted("cor"), st.booleans())
def test_move_property(case, raw):
    """With move=True every later section still starts at an anchor, and the result is valid."""
    anchors = {0: ["Heading"], 1: None} if raw else ["Heading"]
    secs = _repaired_sections(case, [merge_unless_starts_with(2, anchors, raw=raw, move=True)])
    if not raw:
        _check_sections_start_at_heading(secs)


def test_merge_keep_longest_type():
    labs = _rows([("+Heading", "+None", "+Plan"), ("+Sentence", "+Paragraph", "Plan"),
                  ("Sentence", "Paragraph", "+Dx"), ("Sentence", "Paragraph", "Dx"),
                  ("Sentence", "Paragraph", "Dx")])
    rule = merge_unless_starts_with(2, ["Heading"], keep="longest")
    assert repair(labs, [rule])[:, 2].tolist() == ["BeginDx"] + ["Dx"] * 4
    merged = repair(labs, [merge_unless_starts_with(2, ["Heading"])])[:, 2].tolist()
    assert merged == ["BeginPlan"] + ["Plan"] * 4
    # ties go to the earliest type
    tie = labs[:4]
    assert repair(tie, [rule])[:, 2].tolist() == ["BeginPlan"] + ["Plan"] * 3
    with pytest.raises(ValueError):
        merge_unless_starts_with(2, ["Heading"], keep="last")


def test_min_enumeration_elements_keeps_a_marked_lone_element():
    # one element holding two dictated items: the decoder missed the boundary between
    # them, not the enumeration; relabelling it a paragraph (keep_marked=False) loses both
    labs = _rows([("+Sentence", "+Paragraph", "+Plan"), ("Enummarker", "+Enumelement", "Plan"),
                  ("+Sentence", "Enumelement", "Plan"), ("Enummarker", "Enumelement", "Plan"),
                  ("+Sentence", "Enumelement", "Plan")])
    assert (repair(labs, [min_enumeration_elements()]) == labs).all()
    out = repair(labs, [min_enumeration_elements(keep_marked=False)])
    assert out[:, 1].tolist() == ["BeginParagraph", "BeginParagraph"] + ["Paragraph"] * 3
    assert out[:, 0].tolist() == ["BeginSentence", "BeginSentence", "Sentence", "BeginSentence", "Sentence"]
    # without a marker the lone element is relabelled either way
    bare = _rows([("+Sentence", "+Paragraph", "+Plan"), ("+Sentence", "+Enumelement", "Plan"),
                  ("Sentence", "Enumelement", "Plan")])
    assert repair(bare, [min_enumeration_elements()])[:, 1].tolist() == ["BeginParagraph", "BeginParagraph",
                                                                         "Paragraph"]

