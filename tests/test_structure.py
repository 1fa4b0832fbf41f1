"""Tests for skfcrf.structure: segments <-> chains, repair, rendering."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skfcrf.datasets import make_dictations, read_conll
from skfcrf.structure import (
    DICTATION_RULES,
    LabelScheme,
    Segment,
    chains_to_segments,
    find_violations,
    heading_for,
    long_headings_to_sentences,
    merge_adjacent_same_type,
    merge_unless_starts_with,
    min_enumeration_elements,
    render_html,
    render_markdown,
    repair,
    segments_to_chains,
)


def _arr(rows):
    a = np.empty((len(rows), len(rows[0])), dtype=object)
    for i, r in enumerate(rows):
        a[i, :] = list(r)
    return a


# --------------------------------------------------------------------------------------
# segments <-> chains
# --------------------------------------------------------------------------------------

def test_chains_to_segments_simple_tree():
    toks = "HPI he is ill period".split()
    labs = [
        ("BeginHeading", "BeginNone", "BeginHistoryOfPresentIllness"),
        ("BeginSentence", "BeginParagraph", "HistoryOfPresentIllness"),
        ("Sentence", "Paragraph", "HistoryOfPresentIllness"),
        ("Sentence", "Paragraph", "HistoryOfPresentIllness"),
        ("Sentence", "Paragraph", "HistoryOfPresentIllness"),
    ]
    root = chains_to_segments(toks, labs)
    assert root.level == 3 and root.label is None and (root.start, root.end) == (0, 5)
    (sec,) = root.children
    assert (sec.level, sec.label, sec.start, sec.end) == (2, "HistoryOfPresentIllness", 0, 5)
    assert [(c.label, c.start, c.end) for c in sec.children] == [("None", 0, 1), ("Paragraph", 1, 5)]
    sent = sec.children[1].children[0]
    assert sent == Segment(0, "Sentence", 1, 5, [])
    assert sent.tokens == ["he", "is", "ill", "period"] and sent.text() == "he is ill period"
    assert [s.label for s in root.iter(level=0)] == ["Heading", "Sentence"]
    assert (segments_to_chains(root) == _arr(labs)).all()


def test_bio_outside_and_single_token_labels():
    labs = ["O", "B-NP", "I-NP", "B-VP", "O", "O", "B-NP"]
    root = chains_to_segments(None, labs)
    assert [(s.label, s.start, s.end) for s in root.children] == [
        (None, 0, 1), ("NP", 1, 3), ("VP", 3, 4), (None, 4, 6), ("NP", 6, 7)]
    assert root.children[0].is_outside and not root.is_outside
    assert segments_to_chains(root)[:, 0].tolist() == labs
    root = chains_to_segments(None, ["Enummarker", "Enummarker", "BeginSentence", "Sentence"])
    assert [(s.label, len(s)) for s in root.children] == [("Enummarker", 1), ("Enummarker", 1),
                                                          ("Sentence", 2)]


def test_lenient_parsing_splits_and_round_trips():
    # "Paragraph" continues across a coarser boundary and "Diagnosis" lacks its Begin
    labs = _arr([("BeginSentence", "BeginParagraph", "BeginPlan"),
                 ("Sentence", "Paragraph", "Plan"),
                 ("Sentence", "Paragraph", "Diagnosis"),
                 ("Sentence", "Paragraph", "Diagnosis")])
    assert find_violations(labs) == [(0, 2, "hierarchy"), (1, 2, "hierarchy"), (2, 2, "begin")]
    with pytest.raises(ValueError, match="token 2"):
        chains_to_segments(None, labs, strict=True)
    root = chains_to_segments(None, labs)
    assert [(s.label, s.start, s.end) for s in root.children] == [("Plan", 0, 2), ("Diagnosis", 2, 4)]
    assert root.children[1].begin_prefix == ""
    assert (segments_to_chains(root) == labs).all()
    # the same with BIO labels, and a chain starting with I-
    bio = _arr([("B-NP", "B-S"), ("I-NP", "I-S"), ("I-NP", "B-S"), ("I-VP", "I-S")])
    root = chains_to_segments(None, bio)
    assert [(s.label, s.start, s.end) for s in root.iter(level=0)] == [
        ("NP", 0, 2), ("NP", 2, 3), ("VP", 3, 4)]
    assert (segments_to_chains(root) == bio).all()
    assert segments_to_chains(chains_to_segments(None, ["I-X", "I-X", "O"]))[:, 0].tolist() == [
        "I-X", "I-X", "O"]


def test_segments_to_chains_rejects_bad_trees():
    root = Segment(1, None, 0, 3, [Segment(0, "A", 0, 1), Segment(0, "B", 2, 3)])
    with pytest.raises(ValueError, match="tile"):
        segments_to_chains(root)
    root = Segment(1, None, 0, 3, [Segment(0, "A", 0, 2)])
    with pytest.raises(ValueError, match="end at token 2"):
        segments_to_chains(root)
    hand = Segment(1, None, 0, 3, [Segment(0, "NP", 0, 2, begin_prefix="B-", inside_prefix="I-"),
                                   Segment(0, None, 2, 3)])
    assert segments_to_chains(hand)[:, 0].tolist() == ["B-NP", "I-NP", "O"]


def test_dictations_are_valid_and_round_trip():
    for style in ("cor", "rcg"):
        X, y = make_dictations(15, style=style, random_state=3)
        for toks, lab in zip(X, y):
            assert find_violations(lab) == []
            root = chains_to_segments(toks, lab, strict=True)
            assert (segments_to_chains(root) == lab).all()
            assert (repair(lab, DICTATION_RULES) == lab).all()
            if style == "cor":  # formatted reports: every section starts with its heading
                assert (repair(lab, [merge_unless_starts_with(2, ["Heading"])]) == lab).all()
            # sections are the chain-2 segments, in order and tiling the report
            secs = root.children
            assert secs[0].start == 0 and secs[-1].end == len(toks)


def test_conll_chunks_round_trip(conll2000_train):
    X, y = read_conll(conll2000_train, attributes=("word", "pos"))
    for toks, lab in zip(X[:300], y[:300]):
        root = chains_to_segments(toks, lab)
        assert segments_to_chains(root)[:, 0].tolist() == lab.tolist()
        assert find_violations(lab) == []


@st.composite
def consistent_chains(draw):
    """Random label chains that satisfy every constraint (finer boundaries include coarser)."""
    n = draw(st.integers(1, 25))
    n_chains = draw(st.integers(1, 3))
    bio = draw(st.booleans())
    types = ["A", "B", "Cx"]
    bounds = {0}
    chains = []
    for k in range(n_chains - 1, -1, -1):
        extra = draw(st.sets(st.integers(1, max(1, n - 1)), max_size=n))
        bounds = bounds | {b for b in extra if b < n}
        cuts = sorted(bounds) + [n]
        col = []
        for s, e in zip(cuts[:-1], cuts[1:]):
            if k == 0 and e - s == 1 and draw(st.integers(0, 5)) == 0:
                col.append("Enummarker")
                continue
            if bio and draw(st.integers(0, 4)) == 0:
                col.extend(["O"] * (e - s))
                continue
            t = draw(st.sampled_from(types))
            if bio:
                col.extend(["B-" + t] + ["I-" + t] * (e - s - 1))
            else:
                col.extend(["Begin" + t] + [t] * (e - s - 1))
        chains.append(col)
    chains.reverse()
    arr = np.empty((n, n_chains), dtype=object)
    for k, col in enumerate(chains):
        arr[:, k] = col
    return arr


@settings(max_examples=150, deadline=None)
@given(consistent_chains())
def test_round_trip_property(labs):
    assert find_violations(labs) == []
    root = chains_to_segments(None, labs, strict=True)
    back = segments_to_chains(root)
    assert back.shape == labs.shape and (back == labs).all()
    # every level tiles its parent
    for seg in root.iter():
        if seg.children:
            assert seg.children[0].start == seg.start and seg.children[-1].end == seg.end
    assert (repair(labs) == labs).all()
    if labs.shape[1] == 1:
        flat = labs[:, 0]
        out = repair(flat)
        assert out.ndim == 1 and (out == flat).all()


# --------------------------------------------------------------------------------------
# repair
# --------------------------------------------------------------------------------------

def test_repair_begin_and_hierarchy_by_hand():
    assert repair(["Plan", "Plan", "Diagnosis", "Diagnosis"]).tolist() == [
        "BeginPlan", "Plan", "BeginDiagnosis", "Diagnosis"]
    assert repair(["O", "I-NP", "I-NP", "B-VP", "I-NP"]).tolist() == [
        "O", "B-NP", "I-NP", "B-VP", "B-NP"]
    labs = _arr([("BeginSentence", "BeginParagraph", "BeginPlan"),
                 ("Sentence", "Paragraph", "Plan"),
                 ("Sentence", "Paragraph", "BeginDiagnosis"),
                 ("Sentence", "Paragraph", "Diagnosis")])
    out = repair(labs)
    assert out[2].tolist() == ["BeginSentence", "BeginParagraph", "BeginDiagnosis"]
    assert out[3].tolist() == ["Sentence", "Paragraph", "Diagnosis"]
    assert find_violations(out) == []
    # an Enummarker or outside label already is / may be a boundary: left alone
    labs = _arr([("BeginSentence", "B-X"), ("Enummarker", "B-X"), ("O", "O"), ("O", "B-Y")])
    assert (repair(labs) == labs).all()


def test_repair_lone_enumeration_becomes_paragraph():
    toks = "number one chest pain period".split()
    labs = _arr([("Enummarker", "BeginEnumelement", "BeginDiagnosis"),
                 ("Enummarker", "Enumelement", "Diagnosis"),
                 ("BeginSentence", "Enumelement", "Diagnosis"),
                 ("Sentence", "Enumelement", "Diagnosis"),
                 ("Sentence", "Enumelement", "Diagnosis")])
    # a dictated marker keeps a lone element (issue 31: relabelling cost accuracy)
    assert (repair(labs, DICTATION_RULES, tokens=toks) == labs).all()
    out = repair(labs, [min_enumeration_elements(keep_marked=False)], tokens=toks)
    assert out[:, 1].tolist() == ["BeginParagraph"] + ["Paragraph"] * 4
    assert out[:, 0].tolist() == ["BeginSentence"] + ["Sentence"] * 4
    unmarked = labs.copy()
    unmarked[:2, 0] = ["BeginSentence", "Sentence"]
    assert repair(unmarked, DICTATION_RULES)[:, 1].tolist() == ["BeginParagraph"] + ["Paragraph"] * 4
    # two elements are an enumeration: unchanged
    two = np.concatenate([labs, labs])
    two[5, 2] = "Diagnosis"
    assert (repair(two, DICTATION_RULES) == two).all()
    # a lone element whose marker is not followed by a sentence
    alone = _arr([("BeginSentence", "BeginParagraph", "BeginPlan"),
                  ("Enummarker", "BeginEnumelement", "Plan")])
    assert repair(alone, [min_enumeration_elements()]).tolist() == [
        ["BeginSentence", "BeginParagraph", "BeginPlan"],
        ["BeginSentence", "BeginParagraph", "Plan"]]


def test_merge_rules():
    labs = _arr([("BeginHeading", "BeginNone", "BeginPlan"),
                 ("BeginSentence", "BeginParagraph", "Plan"),
                 ("BeginSentence", "BeginParagraph", "BeginPlan"),
                 ("BeginSentence", "BeginParagraph", "BeginDiagnosis"),
                 ("BeginHeading", "BeginNone", "BeginAllergies")])
    out = repair(labs, [merge_adjacent_same_type(level=2)])
    assert out[:, 2].tolist() == ["BeginPlan", "Plan", "Plan", "BeginDiagnosis", "BeginAllergies"]
    out = repair(labs, [merge_unless_starts_with(2, ["Heading"])])
    assert out[:, 2].tolist() == ["BeginPlan", "Plan", "Plan", "Plan", "BeginAllergies"]
    assert out[:, 1].tolist() == labs[:, 1].tolist()


def test_long_heading_rule():
    labs = _arr([("BeginHeading", "BeginNone", "BeginPlan")] + [("Heading", "None", "Plan")] * 9
                + [("BeginSentence", "BeginParagraph", "Plan")])
    out = repair(labs, [long_headings_to_sentences(max_tokens=8)])
    assert out[:, 0].tolist() == ["BeginSentence"] + ["Sentence"] * 9 + ["BeginSentence"]
    assert out[:, 1].tolist() == ["BeginParagraph"] + ["Paragraph"] * 9 + ["BeginParagraph"]
    short = labs[-4:].copy()
    short[0, :] = ["BeginHeading", "BeginNone", "BeginPlan"]
    assert (repair(short, [long_headings_to_sentences(max_tokens=8)]) == short).all()


_ALPHABET = ["BeginA", "A", "BeginB", "B", "O", "B-X", "I-X", "I-Y", "Enummarker",
             "BeginEnumelement", "Enumelement", "Sentence", "BeginSentence", "Paragraph",
             "Heading", "BeginHeading", "None", "BeginNone"]


@st.composite
def garbage(draw):
    n = draw(st.integers(1, 20))
    c = draw(st.integers(1, 3))
    cells = draw(st.lists(st.sampled_from(_ALPHABET), min_size=n * c, max_size=n * c))
    return np.array(cells, dtype=object).reshape(n, c)


@settings(max_examples=200, deadline=None)
@given(garbage(), st.booleans())
def test_repair_property(labs, with_rules):
    # lenient parsing keeps even inconsistent labels
    assert (segments_to_chains(chains_to_segments(None, labs)) == labs).all()
    rules = (DICTATION_RULES + (merge_unless_starts_with(1, ["Sentence"]),
                                long_headings_to_sentences(max_tokens=2))) if with_rules else ()
    out = repair(labs, rules)
    assert out.shape == labs.shape
    assert find_violations(out) == []
    assert (repair(out, rules) == out).all()  # idempotent
    # the formal repair only adds Begin prefixes: types are kept
    if not with_rules:
        sc = LabelScheme()
        assert [sc.parse(a)[0] for a in labs.ravel()] == [sc.parse(b)[0] for b in out.ravel()]


# --------------------------------------------------------------------------------------
# rendering
# --------------------------------------------------------------------------------------

def _report():
    toks = ["he", "has", "<b>pain</b>", "&", "fever", "period",
            "vital", "signs", "colon", "stable", "period", "number", "one", "flu", "next", "number",
            "cold", "period"]
    hpi, pe, dx = "HistoryOfPresentIllness", "PhysicalExamination", "Diagnosis"
    labs = [("BeginSentence", "BeginParagraph", "Begin" + hpi)] + \
        [("Sentence", "Paragraph", hpi)] * 5 + \
        [("BeginSubheading", "BeginVitalSigns", "Begin" + pe), ("Subheading", "VitalSigns", pe),
         ("Subheading", "VitalSigns", pe), ("BeginSentence", "VitalSigns", pe),
         ("Sentence", "VitalSigns", pe),
         ("Enummarker", "BeginEnumelement", "Begin" + dx), ("Enummarker", "Enumelement", dx),
         ("BeginSentence", "Enumelement", dx),
         ("Enummarker", "BeginEnumelement", dx), ("Enummarker", "Enumelement", dx),
         ("BeginSentence", "Enumelement", dx), ("Sentence", "Enumelement", dx)]
    return toks, _arr(labs)


def test_render_html_escapes_and_generates_headings():
    toks, labs = _report()
    out = render_html(toks, labs, dictated_punctuation=True, capitalize=True)
    assert "<b>pain</b>" not in out and "&lt;b&gt;pain&lt;/b&gt;" in out and "&amp;" in out
    assert "<h2>HISTORY OF PRESENT ILLNESS</h2>" in out
    assert "<h2>PHYSICAL EXAMINATION</h2>" in out and "<h2>DIAGNOSIS</h2>" in out
    assert '<p data-type="VitalSigns"><strong>VITAL SIGNS:</strong> Stable.</p>' in out
    assert "<ol>\n<li>Flu.</li>\n<li>Cold.</li>\n</ol>" in out
    assert 'data-type="HistoryOfPresentIllness"' in out
    assert "period" not in out


def test_render_markdown():
    toks, labs = _report()
    md = render_markdown(toks, labs, dictated_punctuation=True, capitalize=True)
    assert md.startswith("## HISTORY OF PRESENT ILLNESS\n\nHe has \\<b\\>pain\\</b\\> & fever.\n")
    assert "**VITAL SIGNS:** Stable." in md
    assert "1. Flu.\n2. Cold." in md
    raw = render_markdown(toks, labs, generate_headings=False)
    assert "##" not in raw and "period" in raw


def test_render_uses_dictated_heading_and_cor_reports():
    X, y = make_dictations(2, style="cor", random_state=0)
    md = render_markdown(X[0], y[0])
    heads = [line[3:] for line in md.splitlines() if line.startswith("## ")]
    n_sections = sum(1 for lab in y[0][:, 2] if lab.startswith("Begin"))
    assert len(heads) == n_sections
    first = [t for t, lab in zip(X[0], y[0]) if lab[0] in ("BeginHeading", "Heading")]
    assert heads[0] == " ".join(first[:len(heads[0].split())])
    html_out = render_html(X[0], y[0])
    assert html_out.count("<section") == n_sections


def test_render_fewer_chains_and_heading_for():
    assert render_markdown(["a", "b", "."], ["BeginSentence", "Sentence", "Sentence"]) == "a b.\n"
    two = render_html(["x", "y"], [("BeginSentence", "BeginParagraph"), ("BeginSentence", "BeginParagraph")])
    assert two.count("<p>") == 2
    assert heading_for("HistoryOfPresentIllness") == "HISTORY OF PRESENT ILLNESS"
    assert heading_for("VitalSigns", subsection=True) == "VITAL SIGNS"
    assert heading_for("SomeNewSectionType") == "SOME NEW SECTION TYPE"
    assert heading_for("Plan", {"Plan": "RECOMMENDATIONS"}) == "RECOMMENDATIONS"


def test_render_drops_empty_sentence_text():
    from skfcrf.structure import render_html, render_markdown
    toks = ["new", "paragraph", "he", "is", "fine"]
    labels = [("BeginSentence", "BeginParagraph", "BeginPlan"), ("Sentence", "Paragraph", "Plan"),
              ("BeginSentence", "Paragraph", "Plan"), ("Sentence", "Paragraph", "Plan"),
              ("Sentence", "Paragraph", "Plan")]
    md = render_markdown(toks, labels, dictated_punctuation=True)
    html = render_html(toks, labels, dictated_punctuation=True)
    assert "\n He" not in md and "<p> " not in html
