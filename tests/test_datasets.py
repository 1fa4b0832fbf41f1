"""Tests for skfcrf.datasets: the dictation generator and CoNLL column I/O."""
import io
import re
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skfcrf.datasets import (
    DICTATED_PUNCTUATION,
    DICTATION_CHAINS,
    DICTATION_LABELS,
    SECTION_HEADINGS,
    SECTION_LABELS,
    SECTION_TYPES,
    SENTENCE_LABELS,
    SUBSECTION_LABELS,
    SUBSECTION_TYPES,
    make_dictations,
    read_conll,
    write_conll,
)

# --------------------------------------------------------------------------------------
# generator
# --------------------------------------------------------------------------------------

@pytest.fixture(scope="module", params=["cor", "rcg"])
def corpus(request):
    return request.param, make_dictations(60, style=request.param, random_state=7)


def _type(label):
    return label[5:] if label.startswith("Begin") else label


def _is_boundary(label):
    return label.startswith("Begin") or label == "Enummarker"


def test_inventories():
    assert DICTATION_CHAINS == ("sentence", "subsection", "section")
    assert SENTENCE_LABELS == ("BeginHeading", "Heading", "BeginSubheading", "Subheading",
                               "BeginSentence", "Sentence", "Enummarker")
    for types, labels in ((SUBSECTION_TYPES, SUBSECTION_LABELS), (SECTION_TYPES, SECTION_LABELS)):
        assert len(labels) == 2 * len(types)
        for t in types:
            assert "Begin" + t in labels and t in labels
    assert {"None", "Paragraph", "Enumelement", "VitalSigns", "HEENT"} <= set(SUBSECTION_TYPES)
    assert 18 <= len(SECTION_TYPES) <= 26
    assert set(SECTION_HEADINGS) == set(SECTION_TYPES)
    assert DICTATION_LABELS == (SENTENCE_LABELS, SUBSECTION_LABELS, SECTION_LABELS)
    assert DICTATED_PUNCTUATION[("period",)] == "."


def test_shapes_and_label_sets(corpus):
    style, (X, y) = corpus
    assert len(X) == len(y) == 60
    for toks, lab in zip(X, y):
        assert isinstance(toks, list) and all(isinstance(t, str) and t for t in toks)
        assert lab.dtype == object and lab.shape == (len(toks), 3)
        for c in range(3):
            assert set(lab[:, c]) <= set(DICTATION_LABELS[c])


def test_lengths_in_range(corpus):
    style, (X, y) = corpus
    lengths = [len(t) for t in X]
    assert min(lengths) >= 400 and max(lengths) <= 900


def test_every_segment_starts_with_begin_and_hierarchy_holds(corpus):
    style, (X, y) = corpus
    for lab in y:
        n = lab.shape[0]
        for c in range(3):
            col = lab[:, c]
            assert _is_boundary(col[0])
            for t in range(1, n):
                if not _is_boundary(col[t]):
                    assert _type(col[t - 1]) == col[t], (c, t, col[t - 1], col[t])
        for c in range(2):
            for t in range(n):
                if _is_boundary(lab[t, c + 1]):
                    assert _is_boundary(lab[t, c]), (c, t, lab[t])
        # None (chain 1) exactly spans headings (chain 0)
        heading = np.isin(lab[:, 0], ["BeginHeading", "Heading"])
        none = np.isin(lab[:, 1], ["BeginNone", "None"])
        assert (heading == none).all()


def test_cor_style():
    X, y = make_dictations(30, style="cor", random_state=7)
    for toks, lab in zip(X, y):
        # every section starts with a heading in the formatted report
        starts = [t for t in range(len(toks)) if lab[t, 2].startswith("Begin")]
        assert all(lab[t, 0] == "BeginHeading" for t in starts)
        assert all(toks[t].isupper() for t in starts if toks[t].isalpha())
        assert "." in toks
        sent_starts = [toks[t] for t in range(len(toks)) if lab[t, 0] == "BeginSentence"]
        assert all(not s[0].isalpha() or s[0].isupper() for s in sent_starts)
        markers = [toks[t] for t in range(len(toks)) if lab[t, 0] == "Enummarker"]
        assert all(re.fullmatch(r"\d+\.", m) for m in markers)


def test_rcg_style():
    X, y = make_dictations(60, style="rcg", random_state=7)
    words = set()
    for toks in X:
        for t in toks:
            assert re.fullmatch(r"[a-z0-9]+", t), t
        words.update(toks)
    # recognizer phenomena occur somewhere in the corpus
    assert {"period", "comma", "uh", "paragraph"} <= words
    joined = " ".join(" ".join(t) for t in X)
    assert "scratch that" in joined or "strike that" in joined
    assert "number" in words


def test_rcg_headings_often_not_dictated():
    X, y = make_dictations(80, style="rcg", random_state=1)
    n_sections = sum(sum(1 for lab in a[:, 2] if lab.startswith("Begin")) for a in y)
    n_headings = sum(int((a[:, 0] == "BeginHeading").sum()) for a in y)
    assert 0.2 * n_sections < n_headings < 0.9 * n_sections


def test_determinism_and_seeds():
    X1, y1 = make_dictations(5, style="rcg", random_state=42)
    X2, y2 = make_dictations(5, style="rcg", random_state=42)
    assert X1 == X2
    assert all((a == b).all() for a, b in zip(y1, y2))
    X3, _ = make_dictations(5, style="rcg", random_state=43)
    assert X1 != X3
    rs1, rs2 = np.random.RandomState(3), np.random.RandomState(3)
    assert make_dictations(3, random_state=rs1)[0] == make_dictations(3, random_state=rs2)[0]


def test_styles_are_parallel():
    Xc, yc = make_dictations(4, style="cor", random_state=11)
    Xr, yr = make_dictations(4, style="rcg", random_state=11)
    for a, b in zip(yc, yr):
        seq_c = [lab for lab in a[:, 2] if lab.startswith("Begin")]
        seq_r = [lab for lab in b[:, 2] if lab.startswith("Begin")]
        assert seq_c == seq_r  # same sections in the same order


def test_section_variety():
    X, y = make_dictations(150, style="cor", random_state=0)
    seen = {lab for a in y for lab in a[:, 2]}
    assert len({_type(s) for s in seen}) >= 18
    orders = {tuple(lab for lab in a[:, 2] if lab.startswith("Begin")) for a in y}
    assert len(orders) > 50


def test_bad_arguments():
    with pytest.raises(ValueError, match="style"):
        make_dictations(2, style="ocr")
    with pytest.raises(ValueError, match="n_reports"):
        make_dictations(-1)
    assert make_dictations(0) == ([], [])


def test_speed():
    t = time.perf_counter()
    X, _ = make_dictations(300, style="rcg", random_state=0)
    dt = time.perf_counter() - t
    assert dt < 5.0, dt  # ~1 s for the 1338 reports of the benchmark on a laptop core


# --------------------------------------------------------------------------------------
# CoNLL
# --------------------------------------------------------------------------------------

def test_conll2000_read_and_round_trip(tmp_path, conll2000_train):
    X, y = read_conll(conll2000_train, attributes=("word", "pos"))
    assert len(X) == 8936
    assert sum(len(s) for s in X) == 211727
    assert X[0][0] == {"word": "Confidence", "pos": "NN"}
    assert y[0].ndim == 1 and y[0][0] == "B-NP"
    out = tmp_path / "out.txt"
    write_conll(out, X, y, attributes=("word", "pos"))
    with open(conll2000_train, encoding="utf-8") as f:
        assert out.read_text(encoding="utf-8") == f.read()
    # words only, two label columns (pos and chunk as two chains)
    X2, y2 = read_conll(conll2000_train, n_label_columns=2)
    assert X2[0][:2] == ["Confidence", "in"]
    assert y2[0].shape == (len(X2[0]), 2) and tuple(y2[0][0]) == ("NN", "B-NP")


def test_conll_malformed_reports_file_and_line(tmp_path):
    p = tmp_path / "bad.txt"
    p.write_text("a DT B-NP\nb NN I-NP\n\nc VB\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad\.txt, line 4: expected 3 columns"):
        read_conll(p, attributes=("word", "pos"))
    with pytest.raises(ValueError, match=r"line 1"):
        read_conll(io.StringIO("a b c d\n"), attributes=("word", "pos"))


def test_conll_blank_lines_and_tabs():
    text = "\n\na\tX\n  \nb c\tY\n\n\n"
    X, y = read_conll(io.StringIO(text), sep="\t")
    assert X == [["a"], ["b c"]]
    assert [list(s) for s in y] == [["X"], ["Y"]]
    X, y = read_conll(io.StringIO("a\n"), n_label_columns=0)
    assert X == [["a"]] and y is None


def test_conll_gzip_and_binary_files(tmp_path):
    X, y = [["a", "b"], ["c"]], [["X", "Y"], ["Z"]]
    p = tmp_path / "x.conll.gz"
    write_conll(p, X, y)
    X2, y2 = read_conll(p)
    assert X2 == X and [s.tolist() for s in y2] == y
    with open(p.with_suffix(".bin"), "wb") as f:
        write_conll(f, X, y)
    with open(p.with_suffix(".bin"), "rb") as f:
        X3, _ = read_conll(f)
    assert X3 == X


def test_conll_write_rejects_ambiguous_values():
    with pytest.raises(ValueError, match="separator"):
        write_conll(io.StringIO(), [["a b"]], [["X"]])
    with pytest.raises(ValueError, match="dict"):
        write_conll(io.StringIO(), [["a"]], [["X"]], attributes=("word", "pos"))
    with pytest.raises(ValueError, match="labels"):
        write_conll(io.StringIO(), [["a", "b"]], [["X"]])


def test_conll_round_trip_dictations():
    X, y = make_dictations(3, style="cor", random_state=0)
    buf = io.StringIO()
    write_conll(buf, X, y)
    X2, y2 = read_conll(io.StringIO(buf.getvalue()), n_label_columns=3)
    assert X2 == X
    assert all((a == b).all() for a, b in zip(y, y2))


_value = st.text(
    alphabet=st.characters(blacklist_categories=("Cs", "Zs", "Zl", "Zp", "Cc")), min_size=1, max_size=6
)


@settings(max_examples=60, deadline=None)
@given(
    n_attr=st.integers(1, 3),
    n_lab=st.integers(0, 3),
    data=st.data(),
)
def test_conll_round_trip_property(n_attr, n_lab, data):
    attributes = tuple(f"a{i}" for i in range(n_attr))
    lengths = data.draw(st.lists(st.integers(1, 5), min_size=1, max_size=4))
    X, y = [], []
    for n in lengths:
        if n_attr == 1:
            X.append(data.draw(st.lists(_value, min_size=n, max_size=n)))
        else:
            X.append([
                {a: data.draw(_value) for a in attributes} for _ in range(n)
            ])
        labs = [[data.draw(_value) for _ in range(n_lab)] for _ in range(n)]
        arr = np.empty((n, n_lab), dtype=object)
        for i, row in enumerate(labs):
            arr[i, :] = row
        y.append(arr[:, 0].copy() if n_lab == 1 else arr)
    buf = io.StringIO()
    write_conll(buf, X, y if n_lab else None, attributes=attributes)
    text = buf.getvalue()
    X2, y2 = read_conll(io.StringIO(text), n_label_columns=n_lab, attributes=attributes)
    assert X2 == X
    if n_lab:
        assert all(a.shape == b.shape and (a == b).all() for a, b in zip(y, y2))
    else:
        assert y2 is None
    buf2 = io.StringIO()
    write_conll(buf2, X2, y2, attributes=attributes)
    assert buf2.getvalue() == text
