"""The structure viewer: render_comparison / write_comparison_pages (HTML, no browser)."""
import re
from pathlib import Path

import numpy as np
import pytest

from skfcrf.datasets import DICTATION_CHAINS, make_dictations
from skfcrf.estimators import SequenceDecoding
from skfcrf.metrics import chain_accuracy, joint_accuracy, windowdiff
from skfcrf.structure import (
    chains_to_segments,
    comparison_scores,
    render_comparison,
    write_comparison_pages,
)


def perturbed(gold):
    """A prediction with a wrong section type, a missed sentence start and a moved section."""
    pred = np.array(gold, dtype=object, copy=True)
    root = chains_to_segments(None, gold)
    secs = root.children
    s = secs[1]  # second section: another type
    pred[s.start, 2] = "BeginPlan" if s.label != "Plan" else "BeginDiagnosis"
    pred[s.start + 1:s.end, 2] = pred[s.start, 2][len("Begin"):]
    sents = [x for x in root.iter(level=0) if x.label == "Sentence" and x.start > secs[1].end]
    t = sents[3].start  # a sentence start predicted as a continuation
    pred[t, 0] = "Sentence"
    return pred


@pytest.fixture(scope="module")
def report():
    X, y = make_dictations(n_reports=1, style="rcg", random_state=3)
    return X[0], y[0], perturbed(y[0])


def test_page_shows_every_gold_section_and_marks_disagreements(report):
    tokens, gold, pred = report
    page = render_comparison(tokens, gold, pred, chain_names=DICTATION_CHAINS)
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    gold_col = page.split('<section class="column gold">')[1].split('<section class="column predicted">')[0]
    for sec in chains_to_segments(tokens, gold).children:
        assert f'data-level="2" data-type="{sec.label}"' in gold_col
    n_diff = int(np.sum(np.any(gold != pred, axis=1)))
    assert n_diff >= 2
    # every differing token is marked in both columns, and only those
    marked = re.findall(r'class="tok diff[^"]*" data-i="(\d+)"', page)
    assert sorted(set(map(int, marked))) == np.flatnonzero(np.any(gold != pred, axis=1)).tolist()
    assert len(marked) == 2 * n_diff
    assert 'class="tok diff d2"' in page and 'class="tok diff d0"' in page
    assert "unmatched" in page and f"{n_diff} of {len(tokens)} tokens labelled differently" in page
    # the scores shown are the package's metrics
    assert f"{100 * joint_accuracy([gold], [pred]):.2f}%" in page
    for c in range(3):
        assert f"{100 * chain_accuracy([gold], [pred], chain=c):.2f}%" in page


def test_page_is_self_contained(report):
    page = render_comparison(*report)
    assert not re.search(r"(src|href)\s*=|@import|url\(|<link|https?:", page, re.I)
    assert "<style>" in page and "<script>" in page


def test_decoding_status_in_header(report):
    tokens, gold, pred = report
    dec = SequenceDecoding(labels=pred, status="converged", n_iter=12, log_prob=-3.25)
    page = render_comparison(tokens, gold, dec)  # labels taken from the record
    assert '<span class="badge warn">converged</span>' in page
    assert "12 iterations" in page and "-3.250" in page
    assert "not given" in render_comparison(tokens, gold, pred)
    assert "invalid" not in render_comparison(tokens, gold, dec)
    bad = SequenceDecoding(labels=pred, status="exact", n_iter=1, log_prob=12.0)
    assert "12.000 <span class=\"badge bad\">invalid: &gt; 0</span>" in render_comparison(tokens, gold, bad)


def test_identical_structures_have_no_disagreement(report):
    tokens, gold, _ = report
    page = render_comparison(tokens, gold, gold)
    assert 'class="tok diff' not in page.split("<main>")[1]
    assert "unmatched" not in page.split("<main>")[1]
    assert "100.00%" in page


def test_comparison_scores_match_metrics(report):
    _, gold, pred = report
    sc = comparison_scores(gold, pred)
    assert sc["joint"] == pytest.approx(joint_accuracy([gold], [pred]))
    assert sc["accuracy"] == pytest.approx(list(chain_accuracy([gold], [pred])))
    assert sc["windowdiff"] == pytest.approx([windowdiff([gold], [pred], chain=c) for c in range(3)])
    # a chain without Begin boundaries (POS-like) has no WindowDiff
    pos = [["DT", "NN"], ["NN", "NN"]]
    assert comparison_scores(np.array(pos).T, np.array(pos).T)["windowdiff"] == [None, None]


def test_errors(report):
    tokens, gold, pred = report
    with pytest.raises(ValueError, match="tokens but"):
        render_comparison(tokens[:-1], gold, pred)
    with pytest.raises(ValueError, match="shape"):
        render_comparison(tokens, gold, pred[:, :2])
    with pytest.raises(ValueError, match="chain names"):
        render_comparison(tokens, gold, pred, chain_names=["a"])


def test_write_pages_and_index(tmp_path):
    X, y = make_dictations(n_reports=3, style="rcg", random_state=0)
    preds = [perturbed(g) for g in y]
    decs = [SequenceDecoding(labels=p, status="exact", n_iter=1) for p in preds]
    index = write_comparison_pages(tmp_path / "out", X, y, decs, chain_names=DICTATION_CHAINS)
    files = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert files == ["index.html", "report-0001.html", "report-0002.html", "report-0003.html"]
    text = Path(index).read_text(encoding="utf-8")
    for k in (1, 2, 3):
        assert f'href="report-{k:04d}.html"' in text
    pooled = joint_accuracy(y, preds)
    assert f"{100 * pooled:.2f}%" in text and "all 3 reports (pooled)" in text
    second = (tmp_path / "out" / "report-0002.html").read_text(encoding="utf-8")
    assert 'href="index.html"' in second and 'href="report-0001.html"' in second
    assert 'href="report-0003.html"' in second
    with pytest.raises(ValueError, match="reports"):
        write_comparison_pages(tmp_path / "bad", X, y[:2], preds)


def test_write_pages_of_sentences(tmp_path):
    """``unit`` names what a sequence is (CoNLL sentences are no reports): the page files,
    the index and its errors say it; unnamed chains read "chain 1", not "chain 1 (chain 1)"."""
    X = [["the", "cat"], ["a", "dog", "ran"]]
    y = [[("DT", "B-NP"), ("NN", "I-NP")], [("DT", "B-NP"), ("NN", "I-NP"), ("VBD", "B-VP")]]
    index = write_comparison_pages(tmp_path / "out", X, y, y, unit="sentence")
    files = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert files == ["index.html", "sentence-0001.html", "sentence-0002.html"]
    text = Path(index).read_text(encoding="utf-8")
    assert "<th>sentence</th>" in text and "all 2 sentences (pooled)" in text
    assert "2 sentences: token accuracy" in text and "report" not in text.lower()
    page = (tmp_path / "out" / "sentence-0001.html").read_text(encoding="utf-8")
    assert "chain 1 segment" in page and "(chain 1)" not in page and "report" not in page.lower()
    with pytest.raises(ValueError, match="sentences"):
        write_comparison_pages(tmp_path / "bad", X, y[:1], y, unit="sentence")
    with pytest.raises(ValueError, match="one lowercase word"):
        write_comparison_pages(tmp_path / "bad", X, y, y, unit="../x")
