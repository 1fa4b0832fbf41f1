"""Token-level metrics: accuracy, per-label P/R/F1, report, confusion matrix, input checks."""
import numpy as np
import pytest

from skfcrf.metrics import (
    average_accuracy,
    chain_accuracy,
    classification_report,
    confusion_matrix,
    joint_accuracy,
    label_counts,
    plot_confusion_matrix,
    precision_recall_fscore,
    segment_f1,
    windowdiff,
)

# Two sequences, three chains (sentence / subsection / section level).
Y_TRUE = [
    [("BeginSentence", "BeginPar", "BeginSec"),
     ("Sentence", "Par", "Sec"),
     ("BeginSentence", "Par", "Sec"),
     ("Sentence", "Par", "Sec")],
    [("BeginHeading", "BeginNone", "BeginHist"),
     ("Heading", "None", "Hist"),
     ("BeginSentence", "BeginPar", "Hist")],
]
Y_PRED = [
    [("BeginSentence", "BeginPar", "BeginSec"),   # all right
     ("Sentence", "Par", "Sec"),                  # all right
     ("Sentence", "Par", "Sec"),                  # chain 0 wrong
     ("Sentence", "BeginPar", "Sec")],            # chain 1 wrong
    [("BeginHeading", "BeginNone", "BeginSec"),   # chain 2 wrong
     ("Heading", "None", "Sec"),                  # chain 2 wrong
     ("BeginSentence", "BeginPar", "Hist")],      # all right
]


def test_chain_accuracy_hand_computed():
    # 7 tokens; chain 0: 6 right, chain 1: 6 right, chain 2: 5 right.
    acc = chain_accuracy(Y_TRUE, Y_PRED)
    np.testing.assert_allclose(acc, [6 / 7, 6 / 7, 5 / 7])
    assert chain_accuracy(Y_TRUE, Y_PRED, chain=2) == pytest.approx(5 / 7)
    assert chain_accuracy(Y_TRUE, Y_PRED, chain=-1) == pytest.approx(5 / 7)
    assert isinstance(chain_accuracy(Y_TRUE, Y_PRED, chain=0), float)


def test_average_and_joint_accuracy_hand_computed():
    assert average_accuracy(Y_TRUE, Y_PRED) == pytest.approx(17 / 21)
    # tokens right in all chains: (0,0), (0,1), (1,2)
    assert joint_accuracy(Y_TRUE, Y_PRED) == pytest.approx(3 / 7)
    assert joint_accuracy(Y_TRUE, Y_PRED) <= average_accuracy(Y_TRUE, Y_PRED)


def test_input_formats_are_equivalent():
    arrays_true = [np.array(s, dtype=object) for s in Y_TRUE]
    arrays_pred = [np.array(s, dtype=object) for s in Y_PRED]
    assert joint_accuracy(arrays_true, arrays_pred) == joint_accuracy(Y_TRUE, Y_PRED)
    # one chain as 1-D sequences, with int labels
    yt = [[0, 1, 1], [2, 2]]
    yp = [np.array([0, 1, 2]), np.array([2, 0])]
    assert chain_accuracy(yt, yp) == pytest.approx([3 / 5])
    assert chain_accuracy(yt, yp, chain=0) == pytest.approx(3 / 5)
    assert joint_accuracy(yt, yp) == pytest.approx(3 / 5)


def test_label_counts_and_prf_hand_computed():
    yt = [["a", "a", "b", "c"], ["a", "b"]]
    yp = [["a", "b", "b", "b"], ["a", "a"]]
    labels, n, correct, returned = label_counts(yt, yp)
    assert labels == ["a", "b", "c"]
    assert n.tolist() == [3, 2, 1]
    assert correct.tolist() == [2, 1, 0]
    assert returned.tolist() == [3, 3, 0]
    p, r, f, support = precision_recall_fscore(yt, yp, convention="thesis")
    np.testing.assert_allclose(p[:2], [2 / 3, 1 / 3])
    assert np.isnan(p[2])  # Returned = 0: undefined ("N/A")
    np.testing.assert_allclose(r, [2 / 3, 1 / 2, 0.0])
    np.testing.assert_allclose(f[:2], [2 / 3, 2 * (1 / 3) * (1 / 2) / (1 / 3 + 1 / 2)])
    assert np.isnan(f[2])
    assert support.tolist() == [3, 2, 1]
    # macro: mean over defined values only (paper's convention)
    mp, mr, mf, total = precision_recall_fscore(yt, yp, average="macro", convention="thesis")
    assert mp == pytest.approx(0.5)
    assert mr == pytest.approx((2 / 3 + 1 / 2 + 0) / 3)
    assert mf == pytest.approx((2 / 3 + 0.4) / 2)
    assert total == 6
    # micro equals accuracy when every label is included
    up, ur, uf, _ = precision_recall_fscore(yt, yp, average="micro", convention="thesis")
    assert up == ur == uf == pytest.approx(3 / 6)
    # explicit labels and zero_division
    p, r, f, _ = precision_recall_fscore(yt, yp, labels=["c", "a"], zero_division=0.0)
    assert p.tolist() == [0.0, pytest.approx(2 / 3)]
    assert f[0] == 0.0
    up, ur, _, _ = precision_recall_fscore(yt, yp, labels=["a"], average="micro")
    assert (up, ur) == (pytest.approx(2 / 3), pytest.approx(2 / 3))


def test_prf_chain_selection():
    p, r, f, n = precision_recall_fscore(Y_TRUE, Y_PRED, chain=2, convention="thesis")
    # labels sorted: BeginHist, BeginSec, Hist, Sec
    assert n.tolist() == [1, 1, 2, 3]
    np.testing.assert_allclose(r, [0.0, 1.0, 1 / 2, 1.0])
    np.testing.assert_allclose(p[1:], [1 / 2, 1.0, 3 / 4])
    assert np.isnan(p[0])
    with pytest.raises(ValueError, match="average"):
        precision_recall_fscore(Y_TRUE, Y_PRED, chain=0, average="weighted")


def test_classification_report_text():
    yt = [["a", "a", "b", "c"], ["a", "b"]]
    yp = [["a", "b", "b", "b"], ["a", "a"]]
    text = classification_report(yt, yp, chain=0)
    lines = text.splitlines()
    assert lines[0] == "Chain 0"
    assert lines[1].split() == ["Label", "N", "Correct", "Returned", "P", "R", "F1"]
    assert lines[2].split() == ["a", "3", "2", "3", "0.67", "0.67", "0.67"]
    # c is never predicted: P undefined, counted as 0 in Total (scikit-learn's macro); F1 = 0
    assert lines[4].split() == ["c", "1", "0", "0", "N/A", "0.00", "0.00"]
    assert lines[5].split()[:4] == ["Total", "6", "3", "6"]
    assert lines[6].split() == ["Micro", "6", "3", "6", "0.50", "0.50", "0.50"]
    all_chains = classification_report(Y_TRUE, Y_PRED)
    assert "Chain 0" in all_chains and "Chain 2" in all_chains
    assert "BeginHist" in all_chains


def test_confusion_matrix_hand_computed():
    yt = [["a", "a", "b", "c"], ["a", "b"]]
    yp = [["a", "b", "b", "b"], ["a", "a"]]
    cm = confusion_matrix(yt, yp)
    assert cm.tolist() == [[2, 1, 0], [1, 1, 0], [0, 1, 0]]
    assert confusion_matrix(yt, yp, labels=["b", "a"]).tolist() == [[1, 1], [1, 2]]
    assert confusion_matrix(Y_TRUE, Y_PRED, chain=2).sum() == 7


def test_plot_confusion_matrix():
    mpl = pytest.importorskip("matplotlib")
    mpl.use("Agg")
    import matplotlib.pyplot as plt

    ax = plot_confusion_matrix(Y_TRUE, Y_PRED, chain=2)
    assert ax is not None
    ax = plot_confusion_matrix(Y_TRUE, Y_PRED, chain=2, kind="bubble", normalize="true")
    assert [t.get_text() for t in ax.get_xticklabels()][:2] == ["BeginHist", "BeginSec"]
    plt.close("all")


def test_plot_confusion_matrix_without_matplotlib(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    with pytest.raises(ImportError, match=r"skfcrf\[plot\]"):
        plot_confusion_matrix(Y_TRUE, Y_PRED, chain=0)


@pytest.mark.parametrize(
    "func", [chain_accuracy, joint_accuracy, label_counts, confusion_matrix,
             precision_recall_fscore, segment_f1, windowdiff, classification_report],
)
def test_bad_input(func):
    needs_chain = func not in (joint_accuracy, chain_accuracy, classification_report)
    kw = {"chain": 0} if needs_chain else {}
    with pytest.raises(ValueError, match="different numbers of sequences"):
        func(Y_TRUE, Y_PRED[:1], **kw)
    short = [Y_PRED[0], Y_PRED[1][:2]]
    with pytest.raises(ValueError, match="sequence 1 has 3 tokens in y_true but 2"):
        func(Y_TRUE, short, **kw)
    with pytest.raises(ValueError, match="empty"):
        func([], [], **kw)
    with pytest.raises(ValueError, match="empty"):
        func([[]], [[]], **kw)
    with pytest.raises(ValueError, match="chains"):
        func(Y_TRUE, [[t[:2] for t in s] for s in Y_PRED], **kw)


@pytest.mark.parametrize(
    "func", [chain_accuracy, label_counts, confusion_matrix, precision_recall_fscore,
             segment_f1, windowdiff, classification_report],
)
def test_chain_out_of_range(func):
    with pytest.raises(ValueError, match="out of range"):
        func(Y_TRUE, Y_PRED, chain=3)
    with pytest.raises(ValueError, match="out of range"):
        func(Y_TRUE, Y_PRED, chain=-4)
    with pytest.raises(ValueError, match="chain must be an int"):
        func(Y_TRUE, Y_PRED, chain=1.0)


@pytest.mark.parametrize("func", [label_counts, confusion_matrix, segment_f1, windowdiff])
def test_chain_required_for_multichain(func):
    with pytest.raises(ValueError, match="pass chain="):
        func(Y_TRUE, Y_PRED)


# ----------------------------------------------------------------------------- pooled over folds
def test_pooled_classification_report_hand_made_case():
    from skfcrf.metrics import pooled_classification_report

    # chain 1 of fold 1: S S T vs S T T; fold 2: S T vs S T (chain 0 all right)
    f1 = ([[("x", "S"), ("x", "S"), ("y", "T")]], [[("x", "S"), ("x", "T"), ("y", "T")]])
    f2 = ([[("x", "S"), ("y", "T")]], [[("x", "S"), ("y", "T")]])
    d = pooled_classification_report([f1, f2], output_dict=True)
    assert set(d) == {0, 1}
    c1 = d[1]
    assert c1["labels"] == ["S", "T"]
    assert c1["n"].tolist() == [3, 2] and c1["correct"].tolist() == [2, 2]
    assert c1["returned"].tolist() == [2, 3]
    np.testing.assert_allclose(c1["precision"], [1.0, 2 / 3])
    np.testing.assert_allclose(c1["recall"], [2 / 3, 1.0])
    np.testing.assert_allclose(c1["f1"], [0.8, 0.8])
    np.testing.assert_allclose(c1["macro"], [5 / 6, 5 / 6, 0.8])
    # per fold macro P: 0.75 and 1.0 -> mean 0.875, t(0.975, 1) * s / sqrt(2)
    mean, hw = c1["folds"]["precision"]
    assert mean == pytest.approx(0.875)
    assert hw == pytest.approx(12.7062047 * np.std([0.75, 1.0], ddof=1) / np.sqrt(2), rel=1e-6)
    assert d[0]["macro"] == (1.0, 1.0, 1.0)
    text = pooled_classification_report([f1, f2], chain=-1)
    assert text.startswith("Chain 1 (pooled over 2 folds)")
    assert "Total  5        4         5" in text and "0.88 ± " in text
    # one fold: no interval; the pooled table is classification_report's
    one = pooled_classification_report([f1], chain=1, output_dict=True)[1]
    assert one["folds"]["f1"] is None
    with pytest.raises(ValueError, match="at least one"):
        pooled_classification_report([])
    with pytest.raises(ValueError, match="different numbers of chains"):
        pooled_classification_report([f1, ([["a"]], [["a"]])])
