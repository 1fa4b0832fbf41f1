"""Segment metrics: conlleval-compatible segment F1, boundaries, WindowDiff, Pk."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skfcrf.metrics import (
    default_k,
    pk,
    segment_boundaries,
    segment_counts,
    segment_f1,
    windowdiff,
)

nltk_seg = pytest.importorskip("nltk.metrics.segmentation")


# ---------------------------------------------------------------------------
# segment F1
# ---------------------------------------------------------------------------

# A small CoNLL example; segments worked out by hand with conlleval's rules.
CONLL_TRUE = [
    ["B-PER", "I-PER", "O", "B-LOC", "I-LOC", "O"],
    ["I-ORG", "I-ORG", "B-ORG", "O", "B-MISC", "I-MISC"],
    ["B-LOC", "I-LOC"],
]
CONLL_PRED = [
    ["B-PER", "I-PER", "O", "B-ORG", "I-ORG", "I-MISC"],
    ["B-ORG", "I-ORG", "I-ORG", "O", "B-MISC", "B-MISC"],
    ["I-LOC", "I-LOC"],
]
# reference segments: PER[0,1] LOC[3,4] | ORG[0,1] ORG[2,2] MISC[4,5] | LOC[0,1]
# predicted segments: PER[0,1] ORG[3,4] MISC[5,5] | ORG[0,2] MISC[4,4] MISC[5,5] | LOC[0,1]
#   (I-MISC after I-ORG and I-LOC at the start of a sentence both start a segment)
# correct: PER[0,1] and LOC[0,1] -> P = 2/7, R = 2/6, F1 = 4/13 (conlleval FB1 30.77)


def test_segment_f1_conlleval_example():
    assert segment_counts(CONLL_TRUE, CONLL_PRED) == {
        "LOC": (2, 1, 1),
        "MISC": (1, 3, 0),
        "ORG": (2, 2, 0),
        "PER": (1, 1, 1),
    }
    assert segment_f1(CONLL_TRUE, CONLL_PRED) == pytest.approx(4 / 13)
    assert round(100 * segment_f1(CONLL_TRUE, CONLL_PRED), 2) == 30.77
    # macro over types: LOC 2/3, PER 1, others 0
    assert segment_f1(CONLL_TRUE, CONLL_PRED, average="macro") == pytest.approx((2 / 3 + 1) / 4)
    assert segment_f1(CONLL_TRUE, CONLL_TRUE) == 1.0


def test_segment_f1_begin_scheme():
    yt = [["BeginSentence", "Sentence", "Sentence", "BeginSentence", "BeginHeading", "Heading"]]
    yp = [["BeginSentence", "Sentence", "BeginSentence", "Sentence", "Heading", "Heading"]]
    # true: Sentence[0,2] Sentence[3,3] Heading[4,5]
    # pred: Sentence[0,1] Sentence[2,3] Heading[4,5] (type change starts a segment)
    assert segment_counts(yt, yp) == {"Heading": (1, 1, 1), "Sentence": (2, 2, 0)}
    assert segment_f1(yt, yp) == pytest.approx(1 / 3)
    # the same data in B-/I- notation gives the same result
    conv = {"BeginSentence": "B-Sentence", "Sentence": "I-Sentence",
            "BeginHeading": "B-Heading", "Heading": "I-Heading"}
    assert segment_f1([[conv[x] for x in yt[0]]], [[conv[x] for x in yp[0]]]) == pytest.approx(1 / 3)


def test_segment_f1_multichain_and_options():
    yt = [[("B-X", "BeginSec"), ("I-X", "Sec"), ("O", "BeginSec")]]
    yp = [[("B-X", "BeginSec"), ("O", "Sec"), ("O", "BeginHist")]]
    assert segment_f1(yt, yp, chain=0) == 0.0
    # Sec[0,1] matches, Sec[2,2] vs Hist[2,2] does not: P = R = 1/2
    assert segment_f1(yt, yp, chain=1) == pytest.approx(0.5)
    assert segment_f1(yt, yp, chain=-1) == pytest.approx(0.5)
    # "None" as an outside label
    yt = [["BeginPar", "Par", "None", "None"]]
    yp = [["BeginPar", "Par", "None", "BeginPar"]]
    assert segment_f1(yt, yp, outside_labels=("None",)) == pytest.approx(2 / 3)
    assert segment_f1(yt, yp) == pytest.approx(2 * (1 / 3) * (1 / 2) / (1 / 3 + 1 / 2))
    assert segment_f1([["O", "O"]], [["O", "O"]]) == 0.0
    # conlleval: I-X after O starts a segment
    assert segment_f1([["O", "B-X", "I-X", "O"]], [["O", "I-X", "I-X", "O"]]) == 1.0
    assert segment_counts([["B-X", "O", "I-X"]], [["B-X", "I-Y", "I-X"]]) == {
        "X": (2, 2, 2), "Y": (0, 1, 0)}


def _bio_spans(seq):
    """Independent B/I/O span extraction (conlleval semantics for B-/I-/O labels)."""
    spans, start, typ = set(), None, None
    for i, lab in enumerate(list(seq) + ["O"]):
        tag, _, t = lab.partition("-")
        begins = tag == "B" or (tag == "I" and (start is None or t != typ))
        if start is not None and (tag == "O" or begins):
            spans.add((typ, start, i - 1))
            start = None
        if begins:
            start, typ = i, t
    return spans


bio_label = st.sampled_from(["O", "B-A", "I-A", "B-B", "I-B"])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.tuples(bio_label, bio_label), min_size=1, max_size=12),
                min_size=1, max_size=4))
def test_segment_f1_matches_span_matching(docs):
    yt = [[a for a, _ in d] for d in docs]
    yp = [[b for _, b in d] for d in docs]
    ts = [_bio_spans(s) for s in yt]
    ps = [_bio_spans(s) for s in yp]
    n = sum(len(s) for s in ts)
    g = sum(len(s) for s in ps)
    c = sum(len(a & b) for a, b in zip(ts, ps))
    p = c / g if g else 0.0
    r = c / n if n else 0.0
    f = 2 * p * r / (p + r) if p + r else 0.0
    assert segment_f1(yt, yp) == pytest.approx(f, abs=1e-12)
    counts = segment_counts(yt, yp)
    assert sum(v[0] for v in counts.values()) == n
    assert sum(v[1] for v in counts.values()) == g
    assert sum(v[2] for v in counts.values()) == c


# ---------------------------------------------------------------------------
# boundaries, WindowDiff, Pk
# ---------------------------------------------------------------------------

def _labels(bits):
    """Chain labels from between-token boundary slots (first token always begins)."""
    return ["BeginS"] + ["BeginS" if b else "S" for b in bits]


def test_segment_boundaries():
    y = [["BeginS", "S", "BeginS", "B-X", "I-X"], ["S", "BeginS"]]
    assert [b.tolist() for b in segment_boundaries(y)] == [[0, 1, 1, 0], [1]]
    assert [b.tolist() for b in segment_boundaries(y, begin_prefixes="Begin")] == [[0, 1, 0, 0], [1]]
    ints = [[1, 0, 1, 1]]
    assert segment_boundaries(ints, begin_prefixes=lambda v: v == 1)[0].tolist() == [0, 1, 1]
    assert segment_boundaries([["BeginS"]])[0].tolist() == []
    with pytest.raises(ValueError, match="begin_prefixes"):
        segment_boundaries(y, begin_prefixes=())


def test_windowdiff_pk_hand_computed():
    # 10 tokens, boundaries before tokens 3 and 7 (reference) / 4 and 7 (hypothesis)
    ref = [_labels([0, 0, 1, 0, 0, 0, 1, 0, 0])]
    hyp = [_labels([0, 0, 0, 1, 0, 0, 1, 0, 0])]
    # k=2: windows (i, i+2), i = 0..7; slots 2 vs 3 differ in windows i=1 and i=3
    assert windowdiff(ref, hyp, k=2, return_counts=True) == (0.25, (2, 8))
    assert pk(ref, hyp, k=2, return_counts=True) == (0.25, (2, 8))
    # default k: 10 tokens, 3 segments -> round(10 / 6) = 2
    assert default_k(segment_boundaries(ref), [10]) == 2
    assert windowdiff(ref, hyp) == 0.25
    # a missed boundary inside a window with another one: WindowDiff counts, Pk doesn't
    ref = [_labels([1, 1, 0, 0])]
    hyp = [_labels([1, 0, 0, 0])]
    assert windowdiff(ref, hyp, k=2, return_counts=True) == (2 / 3, (2, 3))
    assert pk(ref, hyp, k=2, return_counts=True) == (1 / 3, (1, 3))
    assert windowdiff(ref, hyp, k=2, weighted=True, return_counts=True)[1] == (2, 3)


def test_windowdiff_pooling_over_sequences():
    ref = [_labels([0, 1, 0, 0]), _labels([0, 0, 0, 0, 0, 1, 0])]
    hyp = [_labels([0, 0, 1, 0]), _labels([0, 0, 0, 0, 0, 0, 0])]
    s1 = windowdiff(ref[:1], hyp[:1], k=3, return_counts=True)[1]
    s2 = windowdiff(ref[1:], hyp[1:], k=3, return_counts=True)[1]
    score, (err, win) = windowdiff(ref, hyp, k=3, return_counts=True)
    assert (err, win) == (s1[0] + s2[0], s1[1] + s2[1])
    assert win == (5 - 3) + (8 - 3)
    assert score == err / win
    # sequences too short for the window are skipped; none long enough -> error
    short = [["BeginS", "S"]]
    assert windowdiff(ref + short, hyp + short, k=3, return_counts=True)[1] == (err, win)
    with pytest.raises(ValueError, match="long enough"):
        windowdiff(short, short, k=3)
    with pytest.raises(ValueError, match="k must be"):
        windowdiff(ref, hyp, k=0)


def test_windowdiff_multichain():
    yt = [[("BeginS", "BeginSec"), ("S", "Sec"), ("BeginS", "Sec"), ("S", "BeginSec"), ("S", "Sec")]]
    yp = [[("BeginS", "BeginSec"), ("S", "Sec"), ("BeginS", "Sec"), ("S", "Sec"), ("S", "Sec")]]
    assert windowdiff(yt, yp, chain=0, k=1) == 0.0
    assert windowdiff(yt, yp, chain=1, k=1) == 0.25
    assert windowdiff(yt, yp, chain=-1, k=1) == 0.25


def _nltk_pooled(func, ref_slots, hyp_slots, k):
    num = den = 0.0
    for r, h in zip(ref_slots, hyp_slots):
        if len(r) < k:
            continue
        rs = "".join(map(str, r))
        hs = "".join(map(str, h))
        n_windows = len(rs) - k + 1
        num += func(rs, hs, k) * n_windows
        den += n_windows
    return num / den


def test_windowdiff_pk_agree_with_nltk_random():
    rng = np.random.default_rng(0)
    for _ in range(300):
        n_seq = rng.integers(1, 5)
        ref_slots, hyp_slots = [], []
        for _ in range(n_seq):
            n = int(rng.integers(1, 40))
            pr, ph = rng.uniform(0.02, 0.5, size=2)
            ref_slots.append((rng.random(n - 1) < pr).astype(int))
            hyp_slots.append((rng.random(n - 1) < ph).astype(int))
        longest = max(len(r) for r in ref_slots)
        if longest < 1:
            continue
        k = int(rng.integers(1, longest + 1))
        ref = [_labels(r) for r in ref_slots]
        hyp = [_labels(h) for h in hyp_slots]
        for ours, theirs in ((windowdiff, nltk_seg.windowdiff), (pk, nltk_seg.pk)):
            expected = _nltk_pooled(theirs, ref_slots, hyp_slots, k)
            assert abs(ours(ref, hyp, k=k) - expected) <= 1e-12
        if len(ref_slots) == 1:
            rs = "".join(map(str, ref_slots[0]))
            hs = "".join(map(str, hyp_slots[0]))
            assert abs(windowdiff(ref, hyp, k=k) - nltk_seg.windowdiff(rs, hs, k)) <= 1e-12
            assert abs(pk(ref, hyp, k=k) - nltk_seg.pk(rs, hs, k)) <= 1e-12
            w = nltk_seg.windowdiff(rs, hs, k, weighted=True)
            assert abs(windowdiff(ref, hyp, k=k, weighted=True) - w) <= 1e-12


slots = st.lists(st.booleans(), min_size=1, max_size=30)


@st.composite
def ref_hyp(draw):
    n_seq = draw(st.integers(1, 3))
    ref, hyp = [], []
    for _ in range(n_seq):
        r = draw(slots)
        h = draw(st.lists(st.booleans(), min_size=len(r), max_size=len(r)))
        ref.append(_labels(r))
        hyp.append(_labels(h))
    k = draw(st.integers(1, max(len(s) - 1 for s in ref)))
    return ref, hyp, k


@settings(max_examples=150, deadline=None)
@given(ref_hyp())
def test_properties(data):
    ref, hyp, k = data
    assert windowdiff(ref, ref, k=k) == 0.0
    assert windowdiff(ref, ref) == 0.0
    assert pk(ref, ref, k=k) == 0.0
    wd, (wd_err, wd_win) = windowdiff(ref, hyp, k=k, return_counts=True)
    p, (pk_err, pk_win) = pk(ref, hyp, k=k, return_counts=True)
    assert 0.0 <= wd <= 1.0
    assert 0.0 <= p <= 1.0
    assert 0.0 <= windowdiff(ref, hyp) <= 1.0
    assert 0.0 <= pk(ref, hyp) <= 1.0
    assert wd_win == pk_win
    assert pk_err <= wd_err  # a Pk error always implies a WindowDiff error
    # swapping roles turns false positives into false negatives: same error count
    assert windowdiff(hyp, ref, k=k, return_counts=True)[1] == (wd_err, wd_win)
    assert pk(hyp, ref, k=k, return_counts=True)[1] == (pk_err, pk_win)
