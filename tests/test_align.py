"""skfcrf.structure.align_transcript and its kernel (skfcrf._kernels._align)."""
import functools

import jellyfish
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skfcrf._kernels import _align as kernel
from skfcrf.datasets import make_dictations
from skfcrf.structure import AlignmentStats, align_transcript, chains_to_segments, find_violations

# ---------------------------------------------------------------------------------------
# the kernel against a brute-force edit distance
# ---------------------------------------------------------------------------------------


def _brute_cost(rw, rk, dc, rs, tw, tk, ic, sub):
    """Minimum-cost edit distance by plain recursion (memoised)."""

    @functools.cache
    def best(i, j):
        if i == 0 and j == 0:
            return 0.0
        options = []
        if i > 0:
            options.append(best(i - 1, j) + dc[i - 1])
        if j > 0:
            options.append(best(i, j - 1) + ic[j - 1])
        if i > 0 and j > 0:
            s = 0.0 if rw[i - 1] == tw[j - 1] else sub[rk[i - 1], tk[j - 1]] + rs[i - 1]
            options.append(best(i - 1, j - 1) + s)
        return min(options)

    return best(len(rw), len(tw))


@st.composite
def _problems(draw):
    n = draw(st.integers(0, 7))
    m = draw(st.integers(0, 7))
    n_words = draw(st.integers(1, 4))
    n_rkeys = draw(st.integers(1, 3))
    n_tkeys = draw(st.integers(1, 3))
    cost = st.sampled_from([0.0, 0.05, 0.1, 0.2, 0.5, 1.0, 1.45, 2.7])
    rw = draw(st.lists(st.integers(0, n_words - 1), min_size=n, max_size=n))
    tw = draw(st.lists(st.integers(0, n_words - 1), min_size=m, max_size=m))
    rk = draw(st.lists(st.integers(0, n_rkeys - 1), min_size=n, max_size=n))
    tk = draw(st.lists(st.integers(0, n_tkeys - 1), min_size=m, max_size=m))
    dc = draw(st.lists(cost, min_size=n, max_size=n))
    ic = draw(st.lists(cost, min_size=m, max_size=m))
    late = draw(st.lists(st.integers(0, 1), min_size=n, max_size=n))
    rs = draw(st.lists(st.sampled_from([0.0, 0.3, 1.0]), min_size=n, max_size=n))
    sub = np.array(draw(st.lists(cost, min_size=n_rkeys * n_tkeys, max_size=n_rkeys * n_tkeys)),
                   dtype=np.float64).reshape(n_rkeys, n_tkeys)
    return rw, rk, dc, late, rs, tw, tk, ic, sub


@settings(max_examples=300, deadline=None)
@given(_problems())
def test_kernel_cost_is_the_brute_force_minimum(problem):
    rw, rk, dc, late, rs, tw, tk, ic, sub = problem
    cost, r2t, t2r, ops = kernel.align(
        np.array(rw, np.int32), np.array(rk, np.int32), np.array(dc, np.float64),
        np.array(late, np.int8), np.array(rs, np.float64), np.array(tw, np.int32),
        np.array(tk, np.int32), np.array(ic, np.float64), sub)
    assert cost == pytest.approx(_brute_cost(tuple(rw), tuple(rk), tuple(dc), tuple(rs), tuple(tw),
                                             tuple(tk), tuple(ic), sub), abs=1e-7)
    # the back-trace's operations re-sum to the optimal cost and agree with r2t / t2r
    i = j = 0
    total = 0.0
    for op in ops:
        if op == 0:
            assert r2t[i] == j and t2r[j] == i
            total += 0.0 if rw[i] == tw[j] else sub[rk[i], tk[j]] + rs[i]
            i += 1
            j += 1
        elif op == 1:
            assert r2t[i] == -1
            total += dc[i]
            i += 1
        else:
            assert t2r[j] == -1
            total += ic[j]
            j += 1
    assert (i, j) == (len(rw), len(tw))
    assert total == pytest.approx(cost, abs=1e-7)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.text("ABKNSTX", max_size=6), min_size=1, max_size=5),
       st.sampled_from([0.0, 1.0]))
def test_key_distances_are_normalised_levenshtein(keys, smooth):
    codes = np.array([ord(c) for k in keys for c in k], dtype=np.int32)
    offsets = np.cumsum([0] + [len(k) for k in keys]).astype(np.int64)
    idx = np.arange(len(keys), dtype=np.int32)
    got = kernel.key_distances(codes, offsets, idx, idx[::-1].copy(), smooth)
    for a, ka in enumerate(keys):
        for b, kb in enumerate(reversed(keys)):
            longest = max(len(ka), len(kb))
            want = 0.0 if longest == 0 else jellyfish.levenshtein_distance(ka, kb) / (longest + smooth)
            assert got[a, b] == pytest.approx(want)


# ---------------------------------------------------------------------------------------
# align_transcript
# ---------------------------------------------------------------------------------------

REPORT = ["CHIEF", "COMPLAINT", "Pain", "in", "the", "67-year-old", ".", "DIAGNOSES",
          "1.", "Hypertension", ".", "2.", "Gout", "."]
LABELS = np.array([
    ["BeginHeading", "BeginNone", "BeginChiefComplaints"],
    ["Heading", "None", "ChiefComplaints"],
    ["BeginSentence", "BeginParagraph", "ChiefComplaints"],
    ["Sentence", "Paragraph", "ChiefComplaints"],
    ["Sentence", "Paragraph", "ChiefComplaints"],
    ["Sentence", "Paragraph", "ChiefComplaints"],
    ["Sentence", "Paragraph", "ChiefComplaints"],
    ["BeginHeading", "BeginNone", "BeginDiagnosis"],
    ["Enummarker", "BeginEnumelement", "Diagnosis"],
    ["BeginSentence", "Enumelement", "Diagnosis"],
    ["Sentence", "Enumelement", "Diagnosis"],
    ["Enummarker", "BeginEnumelement", "Diagnosis"],
    ["BeginSentence", "Enumelement", "Diagnosis"],
    ["Sentence", "Enumelement", "Diagnosis"],
], dtype=object)


def test_transfer_of_a_dictation():
    spoken = ("pain in the 67 year old full stop new paragraph uh diagnoses number one "
              "hypotension period next number gout").split()
    y, stats = align_transcript(REPORT, LABELS, spoken)
    assert not find_violations(y)
    assert y[:, 0].tolist() == [
        "BeginSentence"] + ["Sentence"] * 10 + [  # pain ... new paragraph uh
        "BeginHeading",  # diagnoses
        "Enummarker", "Enummarker",  # number one
        "BeginSentence", "Sentence",  # hypotension period
        "Enummarker", "Enummarker",  # next number
        "BeginSentence"]  # gout
    # uh, inserted after the break (aligned to the paragraph's end), joins the paragraph
    assert y[:12, 2].tolist() == ["BeginChiefComplaints"] + ["ChiefComplaints"] * 10 + ["BeginDiagnosis"]
    assert y[12:14, 1].tolist() == ["BeginEnumelement", "Enumelement"]
    # the pieces of 67-year-old all map to the one report token; the heading was not dictated
    assert stats.report_index[3:6].tolist() == [5, 5, 5]
    assert stats.report_index[10] == -1 and stats.report_index[11] == 7
    assert isinstance(stats, AlignmentStats)
    assert stats.n_report_words == 9  # 3 punctuation marks and 2 markers are not words
    assert stats.n_matched == 6  # pain in the 67-year-old diagnoses gout
    assert stats.n_substituted == 1  # hypertension -> hypotension
    assert stats.n_deleted == 2  # CHIEF COMPLAINT
    assert stats.n_inserted == 1  # uh
    assert stats.match_rate == pytest.approx(6 / 9)


def test_inserted_words_join_the_last_aligned_segment():
    report = ["Pain", "here", ".", "No", "fever", "."]
    labels = [["BeginSentence", "BeginParagraph"], ["Sentence", "Paragraph"], ["Sentence", "Paragraph"],
              ["BeginSentence", "Paragraph"], ["Sentence", "Paragraph"], ["Sentence", "Paragraph"]]
    spoken = "um pain here scratch that no fever thank you".split()
    y, stats = align_transcript(report, labels, spoken)
    assert y[:, 0].tolist() == ["BeginSentence", "Sentence", "Sentence", "Sentence", "Sentence",
                                "BeginSentence", "Sentence", "Sentence", "Sentence"]
    assert y[:, 1].tolist() == ["BeginParagraph"] + ["Paragraph"] * 8
    assert stats.n_inserted == 5


def test_identity_transcript():
    y, stats = align_transcript(REPORT, LABELS, REPORT)
    assert (y == LABELS).all()
    assert stats.match_rate == 1.0 and stats.n_inserted == 0
    assert stats.cost == pytest.approx(5 * 0.05)  # only the 5 paragraph breaks are not in the text
    assert stats.report_index.tolist() == list(range(len(REPORT)))
    X, Y = make_dictations(3, style="cor", random_state=2)
    for x, lab in zip(X, Y):
        y, stats = align_transcript(x, lab, x)
        assert (y == lab).all()
        assert stats.match_rate == 1.0


@pytest.fixture(scope="module")
def small_report():
    X, Y = make_dictations(1, style="cor", random_state=4)
    R, _ = make_dictations(1, style="rcg", random_state=4)
    return X[0][:120], Y[0][:120], R[0]


_EXTRA = ["uh", "um", "period", "full", "stop", "comma", "colon", "new", "next", "paragraph",
          "number", "two", "three", "she", "he", "scratch", "that", "the", "xylophone", "2.", "."]


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_labels_form_a_valid_structure(small_report, data):
    tokens, labels, spoken = small_report
    n = len(tokens)
    lo = data.draw(st.integers(0, n - 1))
    hi = data.draw(st.integers(lo + 1, n))
    transcript = []
    for t in range(lo, hi):
        r = data.draw(st.integers(0, 9))
        if r == 0:
            continue  # deletion
        if r == 1:
            transcript.append(data.draw(st.sampled_from(_EXTRA + spoken[:50])))  # substitution
            continue
        transcript.append(tokens[t].lower() if r < 8 else tokens[t])
        if r == 9:
            transcript.append(data.draw(st.sampled_from(_EXTRA)))  # insertion
    transcript = transcript or [tokens[lo]]
    y, stats = align_transcript(tokens, labels, transcript)
    assert y.shape == (len(transcript), 3)
    assert not find_violations(y)
    chains_to_segments(transcript, y, strict=True)
    assert stats.n_matched + stats.n_substituted + stats.n_deleted == stats.n_report_words
    assert stats.report_index.shape == (len(transcript),)
    aligned = stats.report_index[stats.report_index >= 0]
    assert (np.diff(aligned) >= 0).all()  # monotone


def test_agreement_with_recognizer_truth():
    """cor reports aligned to their rcg transcripts: labels as the generator's truth.

    Measured (default costs, 5 reports per seed, seeds 0-29): per seed at least 99.7%
    on every chain, 99.94% (chain 0), 99.94% (chain 1), 99.98% (chain 2) on average.
    """
    agree = np.zeros(3)
    total = 0
    for seed in (0, 1, 2, 3):
        X, Y = make_dictations(5, style="cor", random_state=seed)
        R, Z = make_dictations(5, style="rcg", random_state=seed)
        for x, lab, r, truth in zip(X, Y, R, Z):
            y, stats = align_transcript(x, lab, r)
            assert not find_violations(y)
            assert stats.match_rate > 0.85
            agree += (y == truth).sum(0)
            total += len(r)
    rate = agree / total
    assert rate[0] >= 0.995 and rate[1] >= 0.995 and rate[2] >= 0.995, rate


def test_empty_transcript():
    y, stats = align_transcript(REPORT, LABELS, [])
    assert y.shape == (0, 3) and y.dtype == object
    assert (stats.n_report_words, stats.n_matched, stats.n_inserted, stats.match_rate) == (0, 0, 0, 0.0)
    assert stats.report_index.shape == (0,)


def test_transcript_with_nothing_in_common():
    y, stats = align_transcript(REPORT, LABELS, ["xylophone", "zebra"])
    assert not find_violations(y)
    assert y[0, 2].startswith("Begin") and y[0, 0].startswith("Begin")
    assert stats.n_matched == 0 and stats.match_rate == 0.0
    # all inserted (no substitution is cheap enough): the report's first segments
    y, stats = align_transcript(REPORT, LABELS, ["xylophone", "zebra"], dissimilar_cost=10.0)
    assert y.tolist() == [["BeginHeading", "BeginNone", "BeginChiefComplaints"],
                          ["Heading", "None", "ChiefComplaints"]]
    assert stats.n_inserted == 2 and stats.n_deleted == 9


def test_stats_is_frozen():
    _, stats = align_transcript(REPORT, LABELS, ["pain"])
    with pytest.raises(AttributeError):
        stats.n_matched = 3


@pytest.mark.parametrize("args, match", [
    ((REPORT, LABELS[:-1], ["pain"]), "14 report tokens but 13"),
    ((REPORT, LABELS[:, 0], ["pain"]), "2-D"),
    ((REPORT[:-1] + [3], LABELS, ["pain"]), "must be strings"),
    ((REPORT, LABELS, ["pain", None]), "must be strings"),
    (([], np.empty((0, 3), dtype=object), ["pain"]), "nothing to transfer"),
])
def test_bad_input(args, match):
    with pytest.raises(ValueError, match=match):
        align_transcript(*args)


def test_bad_cost():
    with pytest.raises(ValueError, match="word_deletion"):
        align_transcript(REPORT, LABELS, ["pain"], word_deletion=-1.0)


def test_heading_substitution_surcharge():
    """A dissimilar word next to an undictated heading: aligned with the heading word (a
    new section starts at it) unless substituting into headings costs more."""
    report = ["Pain", ".", "PLAN", ":", "Rest", "."]
    labels = [("BeginSentence", "BeginParagraph", "BeginHistory"), ("Sentence", "Paragraph", "History"),
              ("BeginHeading", "BeginNone", "BeginPlan"), ("Heading", "None", "Plan"),
              ("BeginSentence", "BeginParagraph", "Plan"), ("Sentence", "Paragraph", "Plan")]
    spoken = ["pain", "plenty", "rest"]
    y, stats = align_transcript(report, labels, spoken, heading_substitution=0.0)
    assert list(y[:, 2]) == ["BeginHistory", "BeginPlan", "Plan"]
    assert stats.report_index[1] == 2
    y, stats = align_transcript(report, labels, spoken, heading_substitution=5.0)
    assert list(y[:, 2]) == ["BeginHistory", "History", "BeginPlan"]  # "plenty" is an insertion
    assert stats.report_index[1] == -1
    # equal words still align with a heading whatever the surcharge
    y, _ = align_transcript(report, labels, ["pain", "plan", "rest"], heading_substitution=5.0)
    assert list(y[:, 2]) == ["BeginHistory", "BeginPlan", "Plan"]


def test_misrecognised_command_words():
    report = ["Pain", ".", "Rest", "."]
    labels = [("BeginSentence", "BeginParagraph"), ("Sentence", "Paragraph"),
              ("BeginSentence", "Paragraph"), ("Sentence", "Paragraph")]
    spoken = ["pain", "full", "state", "rest"]
    y, stats = align_transcript(report, labels, spoken)
    assert list(stats.report_index) == [0, 1, 1, 2]  # "full state" is the dictated period
    assert list(y[:, 0]) == ["BeginSentence", "Sentence", "Sentence", "BeginSentence"]
    _, stats = align_transcript(report, labels, spoken, command_tolerance=None)
    assert stats.report_index[2] != 1
    # an exact spoken marker inside wins: "anxiety number two" is no "next number"
    from skfcrf.structure._align import _fuzzy_command

    assert _fuzzy_command(["anxiety", "number", "two"], 0, 0.25) is None
    assert _fuzzy_command(["family", "stop"], 0, 0.25) == ("full", "stop")
    assert _fuzzy_command(["full", "stomach"], 0, 0.25) is None
