"""parse_report (formatted report -> three chains) and render_text (the way back)."""
import glob
import os
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skfcrf.datasets import make_dictations
from skfcrf.structure import (
    ReportParseWarning,
    chains_to_segments,
    find_violations,
    parse_report,
    render_text,
    tokenize_report_text,
)

REPORTS = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data", "mtsamples-urology")
REAL = sorted(glob.glob(os.path.join(REPORTS, "*.txt")))


def rows(tokens, labels):
    return [(t, *lab) for t, lab in zip(tokens, labels)]


def test_heading_alone_and_with_text():
    toks, labs = parse_report("CHIEF COMPLAINT:\nBlood in urine.\nPLAN:  Cystoscopy.  Follow up.")
    assert rows(toks, labs)[:4] == [
        ("CHIEF", "BeginHeading", "BeginNone", "BeginChiefComplaints"),
        ("COMPLAINT", "Heading", "None", "ChiefComplaints"),
        (":", "Heading", "None", "ChiefComplaints"),
        ("Blood", "BeginSentence", "BeginParagraph", "ChiefComplaints"),
    ]
    i = toks.index("PLAN")
    assert rows(toks, labs)[i:] == [
        ("PLAN", "BeginHeading", "BeginNone", "BeginPlan"),
        (":", "Heading", "None", "Plan"),
        ("Cystoscopy", "BeginSentence", "BeginParagraph", "Plan"),
        (".", "Sentence", "Paragraph", "Plan"),
        ("Follow", "BeginSentence", "Paragraph", "Plan"),
        ("up", "Sentence", "Paragraph", "Plan"),
        (".", "Sentence", "Paragraph", "Plan"),
    ]


def test_odd_real_heading_is_one_heading():
    text = ("PAST MEDICAL HISTORY, FAMILY HISTORY, SOCIAL HISTORY & REVIEW OF SYSTEMS:\n"
            "Noncontributory.")
    toks, labs = parse_report(text)
    n_head = toks.index(":") + 1
    assert toks[:n_head] == ["PAST", "MEDICAL", "HISTORY", ",", "FAMILY", "HISTORY", ",", "SOCIAL",
                             "HISTORY", "&", "REVIEW", "OF", "SYSTEMS", ":"]
    assert labs[0, 0] == "BeginHeading" and set(labs[1:n_head, 0]) == {"Heading"}
    assert labs[0, 2] == "BeginFamilyHistory"  # the first matching default rule wins
    assert list(labs[n_head]) == ["BeginSentence", "BeginParagraph", "FamilyHistory"]


def test_paragraph_lines_and_sentences():
    text = "FINDINGS:\nThe bladder was normal.  No stones were seen.\nThe urethra was patent."
    toks, labs = parse_report(text)
    para = [t for t, lab in zip(toks, labs) if lab[1] == "BeginParagraph"]
    sents = [t for t, lab in zip(toks, labs) if lab[0] == "BeginSentence"]
    assert para == ["The", "The"]
    assert sents == ["The", "No", "The"]


def test_enumerations_digits_letters_and_parenthesis():
    text = "DIAGNOSES:\n1.  Hematuria.\n2) Retention.\nA.  Stage one.\nB.  Stage two."
    toks, labs = parse_report(text)
    markers = [t for t, lab in zip(toks, labs) if lab[0] == "Enummarker"]
    assert markers == ["1.", "2)", "A.", "B."]
    for m in markers:
        i = toks.index(m)
        assert labs[i, 1] == "BeginEnumelement"
        assert labs[i + 1, 0] == "BeginSentence" and labs[i + 1, 1] == "Enumelement"


def test_subheadings_typed_inline_and_alone():
    text = ("REVIEW OF SYSTEMS:\n"
            "HEENT:  No headaches.  Respiratory:  No cough.\n"
            "PHYSICAL EXAMINATION:\n"
            "Vital Signs:\n"
            "Blood pressure 120/80.\n"
            "Urethral Meatus:  Normal.")
    toks, labs = parse_report(text)
    subs = [(t, lab[1]) for t, lab in zip(toks, labs) if lab[0] == "BeginSubheading"]
    assert subs == [("HEENT", "BeginHEENT"), ("Respiratory", "BeginRespiratory"),
                    ("Vital", "BeginVitalSigns"), ("Urethral", "BeginSubsection")]
    # the text after a subheading alone on its line continues its subsection
    i = toks.index("Blood")
    assert list(labs[i]) == ["BeginSentence", "VitalSigns", "PhysicalExamination"]
    # a capitalised known subheading inside a section is not a section heading
    assert labs[toks.index("HEENT"), 2] == "ReviewOfSystems"


def test_capitalised_phrase_alone_is_a_section_heading():
    toks, labs = parse_report("HISTORY:\nNone.\nNEUROLOGIC:\nIntact.")
    assert labs[toks.index("NEUROLOGIC"), 2] == "BeginNeurologic"


def test_section_types_first_match_anywhere_case_insensitive():
    text = "PREOPERATIVE DIAGNOSIS:\nStone.\nANESTHESIA:\nGeneral.\nESTIMATED BLOOD LOSS:\nMinimal."
    types = [(r"diagnos", "Dx"), (r"anesth", "Anesthesia"), (r"diagnosis", "Never")]
    toks, labs = parse_report(text, section_types=types, default_section_type="Misc")
    begins = [lab for lab in labs[:, 2] if lab.startswith("Begin")]
    assert begins == ["BeginDx", "BeginAnesthesia", "BeginMisc"]


def test_text_before_first_heading_gets_the_default_type():
    toks, labs = parse_report("Dictated on Monday.\nPLAN:\nRest.", default_section_type="Preamble")
    assert labs[0, 2] == "BeginPreamble" and labs[toks.index("PLAN"), 2] == "BeginPlan"


def test_title_line_before_first_heading():
    toks, labs, problems = parse_report("CIRCUMCISION - NEONATAL\nPROCEDURE:\nDone.",
                                        return_problems=True, errors="ignore")
    assert labs[0, 0] == "BeginHeading" and labs[toks.index("PROCEDURE"), 0] == "BeginHeading"
    assert [p.kind for p in problems] == ["empty-section"]


def test_glued_heading_is_split_and_reported():
    text = "ANESTHESIA:\nGeneral epidural,ESTIMATED BLOOD LOSS:\n100 mL.\nDIAGNOSES,1.  Hematuria."
    toks, labs, problems = parse_report(text, return_problems=True, errors="ignore")
    assert [p.kind for p in problems] == ["repaired", "repaired"]
    assert labs[toks.index("ESTIMATED"), 0] == "BeginHeading"
    assert labs[toks.index("DIAGNOSES"), 0] == "BeginHeading"  # the heading that lost its colon
    assert labs[toks.index("1."), 0] == "Enummarker"
    assert "," not in toks  # the glueing commas are layout, not text


def test_unplaced_lines_are_reported_and_kept():
    text = "PLAN:\n1.\n**\nVitals:\nNOTES:\nok."
    with pytest.warns(ReportParseWarning, match="3 problem"):
        toks, labs = parse_report(text)
    _, _, problems = parse_report(text, return_problems=True, errors="ignore")
    assert [(p.line, p.kind) for p in problems] == [(2, "unplaced"), (3, "unplaced"), (4, "unplaced")]
    assert toks == ["PLAN", ":", "1.", "**", "Vitals", ":", "NOTES", ":", "ok", "."]
    assert not find_violations(labs)
    with pytest.raises(ValueError, match="unplaced"):
        parse_report(text, errors="raise")


def test_no_heading_is_reported():
    with pytest.warns(ReportParseWarning, match="no heading"):
        toks, labs = parse_report("The patient is well.")
    assert set(labs[:, 2]) == {"BeginOther", "Other"}


def test_tokenizer_keeps_abbreviations_and_splits_sentence_periods():
    assert tokenize_report_text("Given q.d.. Then 2.2. Dr. Smith saw 86% at 3 p.m.") == [
        "Given", "q.d.", ".", "Then", "2.2", ".", "Dr.", "Smith", "saw", "86", "%", "at", "3", "p.m."]
    assert tokenize_report_text('"Smelly" urine (mild).') == [
        '"', "Smelly", '"', "urine", "(", "mild", ")", "."]


@pytest.mark.parametrize("bad, match", [
    (b"PLAN:", "decode"), (None, "must be a str"), ("", "no token"), ("  \n\t", "no token"),
])
def test_bad_text(bad, match):
    with pytest.raises(ValueError, match=match):
        parse_report(bad)


@pytest.mark.parametrize("kwargs, match", [
    ({"section_types": "plan"}, "pairs"), ({"section_types": [("plan",)]}, "pairs"),
    ({"section_types": [("(", "Plan")]}, "invalid regular expression"),
    ({"section_types": [("plan", 3)]}, "pattern str, type str"),
    ({"default_section_type": ""}, "non-empty"), ({"default_section_type": "BeginX"}, "Begin"),
    ({"errors": "loud"}, "errors"),
])
def test_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        parse_report("PLAN:\nRest.", **kwargs)


# ------------------------------------------------------------------------------------------
# round trips
# ------------------------------------------------------------------------------------------

def without_heading_colons(tokens, labels):
    keep = [i for i, (t, lab) in enumerate(zip(tokens, labels)) if not (t == ":" and lab[0] == "Heading")]
    return [tokens[i] for i in keep], np.asarray(labels, dtype=object)[keep]


def test_generated_reports_round_trip():
    """render_text of the generator's formatted reports parses back to their labels."""
    X, y = make_dictations(40, style="cor", random_state=11)
    for tokens, labels in zip(X, y):
        labels = np.asarray(labels, dtype=object)
        toks, labs = without_heading_colons(*parse_report(render_text(tokens, labels), errors="raise"))
        assert toks == list(tokens)
        # CARDIAC heads both a Cardiac (review of systems) and a Cardiovascular subsection
        # in the generator's vocabulary: text alone cannot tell them apart
        same = np.vectorize(lambda s: s.replace("Cardiac", "Cardiovascular"), otypes=[object])
        np.testing.assert_array_equal(same(labs), same(labels))


WORDS = st.sampled_from(["pain", "stone", "normal", "left", "kidney", "was", "seen", "mild", "no"])
SENTENCE = st.lists(WORDS, min_size=1, max_size=5).map(lambda w: [w[0].capitalize(), *w[1:], "."])
PARAGRAPH = st.lists(SENTENCE, min_size=1, max_size=3)
BLOCK = st.one_of(
    st.tuples(st.just("Paragraph"), PARAGRAPH),
    st.tuples(st.just("Enum"), st.lists(PARAGRAPH, min_size=1, max_size=3)),
    st.tuples(st.sampled_from(["VitalSigns", "Abdomen", "Subsection"]), PARAGRAPH),
)
SECTION = st.tuples(st.sampled_from(["Plan", "Findings", "Other"]), st.lists(BLOCK, min_size=1, max_size=4))
SUBHEADINGS = {"VitalSigns": ["Vital", "signs"], "Abdomen": ["ABDOMEN"], "Subsection": ["Testes"]}
HEADINGS = {"Plan": ["PLAN"], "Findings": ["FINDINGS"], "Other": ["ANESTHESIA"]}


def build(sections):
    """Tokens and labels of a random report (the grammar of the module docstring)."""
    toks, c0, c1, c2 = [], [], [], []

    def add(words, l0, l1, typ):
        for j, w in enumerate(words):
            toks.append(w)
            c0.append(l0[0] if j == 0 else l0[1])
            c1.append(l1[0] if j == 0 else l1[1])
            c2.append(typ)

    for typ, blocks in sections:
        start = len(toks)
        add(HEADINGS[typ] + [":"], ("BeginHeading", "Heading"), ("BeginNone", "None"), typ)
        c2[start] = "Begin" + typ
        for kind, body in blocks:
            if kind == "Enum":
                for k, para in enumerate(body, start=1):
                    add([f"{k}."], ("Enummarker", "Enummarker"), ("BeginEnumelement",) * 2, typ)
                    for s in para:
                        add(s, ("BeginSentence", "Sentence"), ("Enumelement",) * 2, typ)
                continue
            if kind == "Paragraph":
                first = True
                for s in body:
                    add(s, ("BeginSentence", "Sentence"),
                        ("BeginParagraph" if first else "Paragraph", "Paragraph"), typ)
                    first = False
                continue
            add(SUBHEADINGS[kind] + [":"], ("BeginSubheading", "Subheading"), ("Begin" + kind, kind), typ)
            for s in body:
                add(s, ("BeginSentence", "Sentence"), (kind, kind), typ)
    labels = np.empty((len(toks), 3), dtype=object)
    labels[:, 0], labels[:, 1], labels[:, 2] = c0, c1, c2
    return toks, labels


@settings(max_examples=60, deadline=None)
@given(st.lists(SECTION, min_size=1, max_size=4))
def test_random_structures_round_trip(sections):
    tokens, labels = build(sections)
    assert not find_violations(labels)
    types = [(r"^plan$", "Plan"), (r"^findings$", "Findings"), (r"^anesthesia$", "Other")]
    subtypes = [(r"^vital signs$", "VitalSigns"), (r"^abdomen$", "Abdomen")]
    text = render_text(tokens, labels)
    toks, labs = parse_report(text, section_types=types, subsection_types=subtypes, errors="raise")
    assert toks == tokens
    np.testing.assert_array_equal(labs, labels)


# ------------------------------------------------------------------------------------------
# the shared real reports
# ------------------------------------------------------------------------------------------

needs_reports = pytest.mark.skipif(not REAL, reason="shared/data/mtsamples-urology not found")


@needs_reports
def test_real_reports_parse_with_no_unplaced_line():
    clean = 0
    for path in REAL:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
        toks, labs, problems = parse_report(text, return_problems=True, errors="ignore")
        assert not find_violations(labs)
        clean += not any(p.kind == "unplaced" for p in problems)
        if not any(p.kind == "repaired" for p in problems):
            assert "".join(toks) == re.sub(r"\s", "", text)  # every character in one token
    assert clean / len(REAL) >= 0.95


@needs_reports
def test_real_reports_render_parse_fixpoint():
    """render_text(parse_report(text)) is a fixpoint, and keeps the structure."""
    same = 0
    for path in REAL:
        with open(path, encoding="utf-8") as fh:
            toks, labs = parse_report(fh.read(), errors="ignore")
        r1 = render_text(toks, labs, generate_headings=False)
        t1, l1 = parse_report(r1, errors="ignore")
        assert render_text(t1, l1, generate_headings=False) == r1
        a = [(t.lower(), *lab) for t, lab in zip(*without_heading_colons(toks, labs))]
        b = [(t.lower(), *lab) for t, lab in zip(*without_heading_colons(t1, l1))]
        same += a == b
    assert same / len(REAL) >= 0.95


@needs_reports
def test_real_report_segments_have_text():
    with open(REAL[0], encoding="utf-8") as fh:
        toks, labs = parse_report(fh.read())
    root = chains_to_segments(toks, labs)
    sections = list(root.iter(level=2))
    assert sections[0].label == "Diagnosis" and sections[0].children[0].label == "None"
