"""The speech-recognizer noise model: dictate_report and make_dictation_pairs."""
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import skfcrf.structure as structure
from skfcrf import _dictation_vocab as V
from skfcrf.datasets import (
    DictationPair,
    dictate_report,
    make_dictation_pairs,
    make_dictations,
    word_edit_distance,
)
from skfcrf.datasets._transcripts import _with_heading_colons
from skfcrf.structure import chains_to_segments, find_violations
from skfcrf.structure._spoken import spoken_words

_X, _Y = make_dictations(8, style="cor", random_state=7)
REPORTS = [_with_heading_colons(x, y) for x, y in zip(_X, _Y)]

PUNCT_WORDS = {".": {"period", "full", "stop"}, ",": {"comma"}, ":": {"colon"}, ";": {"semicolon"}}
COMMAND_WORDS = {w for seq in V.NEW_PARAGRAPH + V.META_END for w in seq}
MARKER_WORDS = {"number", "next", *V.ENUM_SPOKEN_NUMBERS}
QUIET = {"p_heading": 1.0, "p_subheading": 1.0}


def _check_valid(tokens, labels, words, y, source):
    n = len(words)
    assert y.shape == (n, 3) and source.shape == (n,)
    if n:
        assert find_violations(y) == []
        chains_to_segments(words, y, strict=True)
    assert all(isinstance(w, str) and w == w.lower() and " " not in w and w for w in words)
    real = source[source >= 0]
    assert np.all(np.diff(real) >= 0)
    assert np.all(real < len(tokens))
    assert np.all(source >= -1)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31 - 2), rate=st.sampled_from([0.0, 0.05, 0.1, 0.3, 0.6, 1.0]),
       disfluencies=st.booleans(), which=st.integers(0, len(REPORTS) - 1))
def test_valid_structure(seed, rate, disfluencies, which):
    tokens, labels = REPORTS[which]
    words, y, source = dictate_report(tokens, labels, word_error_rate=rate, disfluencies=disfluencies,
                                      random_state=seed)
    _check_valid(tokens, labels, words, y, source)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31 - 2), rate=st.floats(0, 1), start=st.integers(0, 400),
       length=st.integers(1, 40))
def test_valid_structure_on_excerpts(seed, rate, start, length):
    """Any slice of a report (cut segments, lone markers, no heading) gives a valid transcript."""
    tokens, labels = REPORTS[seed % len(REPORTS)]
    tokens, labels = tokens[start:start + length], labels[start:start + length]
    words, y, source = dictate_report(tokens, labels, word_error_rate=rate, random_state=seed)
    _check_valid(tokens, labels, words, y, source)


@pytest.mark.parametrize("rate", [0.0, 0.1, 0.3])
def test_word_error_rate_within_tolerance(rate):
    errors = n = 0
    for i, (tokens, labels) in enumerate(REPORTS):
        spoken, _, _ = dictate_report(tokens, labels, word_error_rate=0, random_state=i)
        words, _, _ = dictate_report(tokens, labels, word_error_rate=rate, random_state=i)
        errors += word_edit_distance(spoken, words)
        n += len(spoken)
    assert n > 3000
    if rate == 0:
        assert errors == 0
    else:
        assert abs(errors / n - rate) < 0.02, errors / n


def test_errors_change_words_not_the_spoken_sequence():
    """The speaker does not depend on the rate: at rate 0 the transcript is the spoken sequence."""
    tokens, labels = REPORTS[0]
    a = dictate_report(tokens, labels, word_error_rate=0, random_state=3)
    b = dictate_report(tokens, labels, word_error_rate=0.2, random_state=3)
    assert a[0] != b[0]
    assert 0 < word_edit_distance(a[0], b[0]) < 0.4 * len(a[0])


def _marker_rows(labels):
    return {t for t in range(len(labels)) if labels[t][0] == "Enummarker"}


@pytest.mark.parametrize("disfluencies", [True, False])
def test_sources_point_at_the_words_spelled(disfluencies):
    for i, (tokens, labels) in enumerate(REPORTS[:4]):
        markers = _marker_rows(labels)
        words, y, source = dictate_report(tokens, labels, word_error_rate=0, disfluencies=disfluencies,
                                          random_state=i)
        for w, s in zip(words, source):
            if s < 0:
                continue
            tok = tokens[s]
            if tok in PUNCT_WORDS:
                assert w in PUNCT_WORDS[tok]
            elif s in markers:
                assert w in MARKER_WORDS
                assert y[list(source).index(s), 0] == "Enummarker"
            else:
                assert w in spoken_words(tok)
                if re.fullmatch(r"[A-Za-z]+([-/][A-Za-z0-9]+)*", tok):
                    assert w in re.split(r"[-/]", tok.lower())


def test_no_errors_no_disfluencies_gives_the_report_words():
    for i, (tokens, labels) in enumerate(REPORTS[:4]):
        words, y, source = dictate_report(tokens, labels, word_error_rate=0, disfluencies=False,
                                          habits=QUIET, random_state=i)
        markers = _marker_rows(labels)
        # tokens without a source are dictated commands only
        assert {w for w, s in zip(words, source) if s < 0} <= COMMAND_WORDS
        content = [w for w, s in zip(words, source)
                   if s >= 0 and tokens[s] not in PUNCT_WORDS and s not in markers]
        expected = [w for t, tok in enumerate(tokens) if t not in markers for w in spoken_words(tok)]
        assert content == expected
        # the plain words in particular: lowercased, split at hyphens and slashes
        plain = [tok for tok in tokens if re.fullmatch(r"[A-Za-z]+(-[A-Za-z0-9]+)*", tok)]
        assert [w for tok in plain for w in tok.lower().split("-")] == [
            w for w, s in zip(words, source) if s >= 0 and tokens[s] in plain and s not in markers]
        # report tokens keep their segments
        ids = _segment_ids(labels)
        for k in range(3):
            col = [ids[s, k] for s in source if s >= 0]
            assert col == sorted(col)


def _segment_ids(labels):
    root = chains_to_segments(None, labels)
    ids = np.zeros((len(labels), 3), dtype=int)
    for k in range(3):
        for j, seg in enumerate(root.iter(level=k)):
            ids[seg.start:seg.end, k] = j
    return ids


def _sections(labels):
    return [s for s in chains_to_segments(None, labels).children]


@pytest.mark.parametrize("rate", [0.0, 0.3])
def test_undictated_headings_section_begins_at_first_spoken_word(rate):
    habits = {"p_heading": 0.0, "p_subheading": 0.0}
    for i, (tokens, labels) in enumerate(REPORTS[:4]):
        words, y, source = dictate_report(tokens, labels, word_error_rate=rate, habits=habits,
                                          random_state=i)
        _check_valid(tokens, labels, words, y, source)
        heading = {t for t in range(len(tokens)) if labels[t][0] in ("BeginHeading", "Heading",
                                                                       "BeginSubheading", "Subheading")}
        assert not heading & set(source.tolist())
        assert not {"BeginHeading", "Heading", "BeginSubheading", "Subheading", "BeginNone", "None"} & set(
            y.ravel().tolist())
        if rate:
            continue
        # no recognition errors: the first token with a source in a section opens that section
        for sec in _sections(labels):
            inside = np.flatnonzero((source >= sec.start) & (source < sec.end))
            if not len(inside):
                continue
            first = inside[0]
            assert y[first, 2] == "Begin" + sec.label
            assert y[first, 1].startswith("Begin")
            assert y[first, 0].startswith("Begin") or y[first, 0] == "Enummarker"
            assert (y[first:inside[-1] + 1, 2] == sec.label).sum() == inside[-1] - first


def test_headings_dropped_by_habit_start_the_section_there():
    """Per-speaker habits: wherever a heading was not dictated, the section starts at its first word."""
    dropped = 0
    for i, (tokens, labels) in enumerate(REPORTS):
        words, y, source = dictate_report(tokens, labels, word_error_rate=0, disfluencies=False,
                                          random_state=100 + i)
        for sec in _sections(labels):
            head = sec.children[0]
            if head.label != "None":
                continue
            said = np.flatnonzero((source >= head.start) & (source < head.end))
            inside = np.flatnonzero((source >= sec.start) & (source < sec.end))
            if len(said) or not len(inside):
                continue
            dropped += 1
            first = inside[0]
            assert y[first, 2] == "Begin" + sec.label
            assert first == 0 or y[first - 1, 2] != y[first, 2] or y[first - 1, 2].startswith("Begin")
    assert dropped > 0


def test_spoken_markers_and_paragraph_ends():
    habits = {"marker_w": [1, 0, 0, 0], "p_newpar": 1.0, "newpar_word": "new paragraph", "p_end": 0.0}
    seen_marker = seen_par = False
    for i, (tokens, labels) in enumerate(REPORTS):
        words, y, source = dictate_report(tokens, labels, word_error_rate=0, disfluencies=False,
                                          habits=habits, random_state=i)
        for m in _marker_rows(labels):
            pos = np.flatnonzero(source == m)
            assert [words[p] for p in pos][0] == "number" and len(pos) == 2
            assert words[pos[1]] in V.ENUM_SPOKEN_NUMBERS
            assert all(y[p, 0] == "Enummarker" for p in pos)
            assert y[pos[0], 1] == "BeginEnumelement" and y[pos[1], 1] == "Enumelement"
            seen_marker = True
        for p in range(len(words) - 1):
            if words[p:p + 2] == ["new", "paragraph"] and source[p] == -1:
                seen_par = True
                assert y[p, 1] == y[p + 1, 1] == "Paragraph"  # the end of the paragraph
                assert y[p - 1, 1] in ("Paragraph", "BeginParagraph")
                if p + 2 < len(words):
                    assert y[p + 2, 1].startswith("Begin")
    assert seen_marker and seen_par


def test_next_number_and_silent_markers():
    for w, expected in (([0, 0, 1, 0], {("number", "one"), ("next", "number")}), ([0, 0, 0, 1], {()})):
        for i, (tokens, labels) in enumerate(REPORTS):
            words, y, source = dictate_report(tokens, labels, word_error_rate=0, habits={"marker_w": w},
                                              random_state=i)
            for m in _marker_rows(labels):
                assert tuple(words[p] for p in np.flatnonzero(source == m)) in expected
            if w[3]:
                assert "Enummarker" not in y[:, 0]


def test_disfluencies_flag_only_removes_disfluent_tokens():
    tokens, labels = REPORTS[1]
    with_, yw, sw = dictate_report(tokens, labels, word_error_rate=0, habits={"p_hes": 1.0, "p_rep": 0.5},
                                   random_state=5)
    without, yo, so = dictate_report(tokens, labels, word_error_rate=0, disfluencies=False,
                                     habits={"p_hes": 1.0, "p_rep": 0.5}, random_state=5)
    assert len(with_) > len(without)
    assert [(w, s) for w, s in zip(with_, sw) if s >= 0] == [(w, s) for w, s in zip(without, so) if s >= 0]
    assert set(V.HESITATIONS) & set(with_) and not set(V.HESITATIONS) & set(without)


def test_deterministic():
    tokens, labels = REPORTS[2]
    a = dictate_report(tokens, labels, word_error_rate=0.2, random_state=11)
    b = dictate_report(tokens, labels, word_error_rate=0.2, random_state=np.random.RandomState(11))
    c = dictate_report(tokens, labels, word_error_rate=0.2, random_state=12)
    assert a[0] == b[0] and np.array_equal(a[1], b[1]) and np.array_equal(a[2], b[2])
    assert a[0] != c[0]


def test_empty_report():
    words, y, source = dictate_report([], np.empty((0, 3), dtype=object), random_state=0)
    assert words == [] and y.shape == (0, 3) and source.shape == (0,)


@pytest.mark.parametrize("kwargs, match", [
    ({"tokens": ["a", "b"]}, "2 tokens but 3"),
    ({"labels": [["BeginSentence", "BeginParagraph"]] * 3}, r"shape \(n_tokens, 3\)"),
    ({"labels": ["BeginSentence", "Sentence", "Sentence"]}, r"shape \(n_tokens, 3\)"),
    ({"tokens": "a b c"}, "not one str"),
    ({"word_error_rate": -0.1}, r"\[0, 1\]"),
    ({"word_error_rate": 1.5}, r"\[0, 1\]"),
    ({"word_error_rate": float("nan")}, r"\[0, 1\]"),
    ({"word_error_rate": "0.1"}, r"\[0, 1\]"),
    ({"word_error_rate": True}, r"\[0, 1\]"),
    ({"habits": {"p_louder": 0.5}}, "unknown speaker habit"),
    ({"habits": {"p_heading": 2}}, "probability"),
    ({"habits": {"marker_w": [1, 0]}}, "4 non-negative"),
])
def test_bad_input(kwargs, match):
    args = {"tokens": ["Pain", "today", "."],
            "labels": [["BeginSentence", "BeginParagraph", "BeginPlan"], ["Sentence", "Paragraph", "Plan"],
                       ["Sentence", "Paragraph", "Plan"]]}
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        dictate_report(args.pop("tokens"), args.pop("labels"), **args)


@pytest.mark.skipif(not hasattr(structure, "render_text"), reason="skfcrf.structure.render_text missing")
def test_make_dictation_pairs():
    pairs = make_dictation_pairs(3, word_error_rate=0.1, random_state=0)
    assert len(pairs) == 3 and all(isinstance(p, DictationPair) for p in pairs)
    for p in pairs:
        assert isinstance(p.text, str) and p.text
        _check_valid(p.report_tokens, p.report_labels, p.transcript, p.labels, p.source)
        assert find_violations(p.report_labels) == []
        assert len(p.report_tokens) == len(p.report_labels)
        assert p.text == structure.render_text(p.report_tokens, p.report_labels)
        # section headings end with a ":" token, as in a formatted report
        for sec in _sections(p.report_labels):
            head = sec.children[0]
            assert head.label == "None" and p.report_tokens[head.end - 1] == ":"
    again = make_dictation_pairs(3, word_error_rate=0.1, random_state=0)
    assert [p.transcript for p in again] == [p.transcript for p in pairs]
    with pytest.raises(ValueError, match="n_reports"):
        make_dictation_pairs(-1)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        make_dictation_pairs(1, word_error_rate=2)


_UROLOGY = Path(__file__).resolve().parents[2] / "shared" / "data" / "mtsamples-urology"


@pytest.mark.skipif(not hasattr(structure, "parse_report") or not _UROLOGY.is_dir(),
                    reason="skfcrf.structure.parse_report or the shared urology reports missing")
@pytest.mark.filterwarnings("ignore")  # the parser's warnings about odd reports are not tested here
def test_real_reports():
    errors = n = 0
    for i, path in enumerate(sorted(_UROLOGY.glob("*.txt"))[:12]):
        tokens, labels = structure.parse_report(path.read_text(encoding="utf-8"))[:2]
        spoken, _, _ = dictate_report(tokens, labels, word_error_rate=0, random_state=i)
        words, y, source = dictate_report(tokens, labels, word_error_rate=0.1, random_state=i)
        _check_valid(tokens, labels, words, y, source)
        errors += word_edit_distance(spoken, words)
        n += len(spoken)
    assert abs(errors / n - 0.1) < 0.02


def test_word_edit_distance():
    assert word_edit_distance([], ["a"]) == 1
    assert word_edit_distance(["a", "b"], []) == 2
    assert word_edit_distance("a b c d".split(), "a x c d e".split()) == 2
    assert word_edit_distance("a b c".split(), "b c".split()) == 1
    rng = np.random.RandomState(0)
    for _ in range(20):  # against the textbook recursion
        a = list(rng.choice(list("abc"), rng.randint(0, 7)))
        b = list(rng.choice(list("abc"), rng.randint(0, 7)))
        d = np.zeros((len(a) + 1, len(b) + 1), dtype=int)
        d[:, 0] = range(len(a) + 1)
        d[0, :] = range(len(b) + 1)
        for i in range(1, len(a) + 1):
            for j in range(1, len(b) + 1):
                d[i, j] = min(d[i - 1, j] + 1, d[i, j - 1] + 1, d[i - 1, j - 1] + (a[i - 1] != b[j - 1]))
        assert word_edit_distance(a, b) == d[-1, -1]


def test_real_dates_and_symbols_are_spoken():
    """Day-first dates, '&' and accented words in real reports (the generator has none)."""
    tokens = ["Seen", "on", "25/12/2008", "and", "12/25/2008", "for", "T&A", "at", "the", "café", "."]
    labels = np.array([("BeginSentence", "BeginParagraph", "BeginOther")]
                      + [("Sentence", "Paragraph", "Other")] * (len(tokens) - 1), dtype=object)
    transcript, _, _ = dictate_report(tokens, labels, word_error_rate=0, disfluencies=False,
                                      random_state=0)
    words = [w for w in transcript if w not in ("period", "full", "stop")]
    assert words == ["seen", "on", "25", "over", "12", "over", "2008", "and", "december", "25", "2008",
                     "for", "t", "and", "a", "at", "the", "café"]


def test_make_dictations_with_a_word_error_rate():
    X, y = make_dictations(4, style="rcg", random_state=3, word_error_rate=0.2)
    pairs = make_dictation_pairs(4, word_error_rate=0.2, random_state=3)
    assert X == [p.transcript for p in pairs]
    assert all(np.array_equal(a, p.labels) for a, p in zip(y, pairs))
    with pytest.raises(ValueError, match="rcg"):
        make_dictations(2, style="cor", word_error_rate=0.1)
    with pytest.raises(ValueError, match="word_error_rate"):
        make_dictations(2, word_error_rate=1.5)
