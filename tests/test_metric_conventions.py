"""Per-label and macro precision/recall/F1 as scikit-learn computes them (issue 75), and the
thesis's convention by name."""
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.exceptions import UndefinedMetricWarning
from sklearn.metrics import f1_score, precision_recall_fscore_support

from skfcrf.cli._demo_tables import macro_f1_table
from skfcrf.metrics import (
    classification_report,
    pooled_classification_report,
    precision_recall_fscore,
)

# the issue's case: c is never predicted, so its precision is undefined
GOLD, PRED = [["a", "a", "b", "c"]], [["a", "a", "b", "b"]]


def _sklearn(y_true, y_pred, labels, average, zero_division):
    flat_t = [v for s in y_true for v in s]
    flat_p = [v for s in y_pred for v in s]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        return precision_recall_fscore_support(flat_t, flat_p, labels=labels, average=average,
                                               zero_division=zero_division)


def _row(text, name):
    """The P, R, F1 of the row ``name`` of a report (NaN for N/A)."""
    line = next(line for line in text.splitlines() if line.split()[:1] == [name])
    return [float("nan") if v == "N/A" else float(v) for v in line.split()[-3:]]


def test_issue_case_macro_is_scikit_learns():
    p, r, f, n = precision_recall_fscore(GOLD, PRED, average="macro", zero_division=0.0)
    assert (p, r, f, n) == (pytest.approx(0.5), pytest.approx(2 / 3), pytest.approx(5 / 9), 4)
    assert f == pytest.approx(f1_score(GOLD[0], PRED[0], average="macro", zero_division=0.0))
    text = classification_report(GOLD, PRED, digits=4)
    assert _row(text, "Total") == [0.5, 0.6667, 0.5556]
    assert _row(text, "c") == pytest.approx([np.nan, 0.0, 0.0], nan_ok=True)
    assert "Total counts it as 0" in text.splitlines()[-1]
    # the macro F1 no longer lies above both the macro P and R
    total = _row(text, "Total")
    assert total[2] <= max(total[:2])


def test_thesis_convention_by_name():
    p, r, f, _ = precision_recall_fscore(GOLD, PRED, average="macro", convention="thesis")
    assert (p, r, f) == (pytest.approx(0.75), pytest.approx(2 / 3), pytest.approx(5 / 6))
    per_label = precision_recall_fscore(GOLD, PRED, convention="thesis")
    assert np.isnan(per_label[0][2]) and np.isnan(per_label[2][2])  # c: P and F1 N/A
    text = classification_report(GOLD, PRED, convention="thesis")
    assert _row(text, "Total") == [0.75, 0.67, 0.83]
    assert _row(text, "c") == pytest.approx([np.nan, 0.0, np.nan], nan_ok=True)
    assert "convention='thesis'" in text.splitlines()[-1]
    pooled = pooled_classification_report([(GOLD, PRED)], output_dict=True, convention="thesis")
    assert pooled[0]["macro"] == (pytest.approx(0.75), pytest.approx(2 / 3), pytest.approx(5 / 6))


def test_zero_division_values():
    # nan: the undefined precision is left out, as scikit-learn >= 1.3 does
    p, r, f, _ = precision_recall_fscore(GOLD, PRED, average="macro", zero_division=np.nan)
    assert (p, r, f) == (pytest.approx(0.75), pytest.approx(2 / 3), pytest.approx(5 / 9))
    p, _, _, _ = precision_recall_fscore(GOLD, PRED, average="macro", zero_division=1.0)
    assert p == pytest.approx(2.5 / 3)
    text = classification_report(GOLD, PRED, zero_division=np.nan)
    assert _row(text, "Total") == [0.75, 0.67, 0.56]
    assert "Total leaves it out (zero_division=nan)" in text
    # "warn" (the default) acts as 0 and warns as scikit-learn does, but not in the text reports
    with pytest.warns(UndefinedMetricWarning, match=r"Precision is ill-defined.*\['c'\]"):
        p, _, _, _ = precision_recall_fscore(GOLD, PRED, average="macro")
    assert p == pytest.approx(0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        classification_report(GOLD, PRED)
        pooled_classification_report([(GOLD, PRED)])


@pytest.mark.parametrize("kwargs, match", [
    ({"zero_division": 0.5}, "zero_division must be"),
    ({"zero_division": "nan"}, "zero_division must be"),
    ({"zero_division": True}, "zero_division must be"),
    ({"convention": "paper"}, "convention must be"),
    ({"convention": "thesis", "zero_division": 0.0}, "convention='thesis'.*zero_division=0.0"),
])
def test_bad_convention_or_zero_division(kwargs, match):
    for func in (precision_recall_fscore, classification_report):
        with pytest.raises(ValueError, match=match):
            func(GOLD, PRED, **kwargs)
    with pytest.raises(ValueError, match=match):
        pooled_classification_report([(GOLD, PRED)], **kwargs)


_label = st.sampled_from("abcd")
_pair = st.integers(1, 8).flatmap(lambda n: st.tuples(st.lists(_label, min_size=n, max_size=n),
                                                       st.lists(_label, min_size=n, max_size=n)))


@settings(max_examples=150, deadline=None)
@given(pairs=st.lists(_pair, min_size=1, max_size=4),
       labels=st.none() | st.lists(st.sampled_from("abcde"), min_size=1, max_size=5, unique=True),
       zero_division=st.sampled_from([0.0, 1.0, np.nan, "warn"]))
def test_random_cases_against_scikit_learn(pairs, labels, zero_division):
    y_true = [list(t) for t, _ in pairs]
    y_pred = [list(p) for _, p in pairs]
    if labels is None:
        labels = sorted({v for s in y_true + y_pred for v in s})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        ours = precision_recall_fscore(y_true, y_pred, labels=labels, zero_division=zero_division)
    theirs = _sklearn(y_true, y_pred, labels, None, zero_division)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(np.asarray(a, dtype=float), np.asarray(b, dtype=float))
    for average in ("macro", "micro"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UndefinedMetricWarning)
            ours = precision_recall_fscore(y_true, y_pred, labels=labels, average=average,
                                           zero_division=zero_division)
        theirs = _sklearn(y_true, y_pred, labels, average, zero_division)
        np.testing.assert_allclose(ours[:3], np.asarray(theirs[:3], dtype=float), err_msg=average)
    # the Total row of both reports is scikit-learn's macro average
    macro = np.asarray(_sklearn(y_true, y_pred, labels, "macro", zero_division)[:3], dtype=float)
    text = classification_report(y_true, y_pred, labels=labels, digits=6,
                                 zero_division=zero_division)
    np.testing.assert_allclose(_row(text, "Total"), macro, atol=5e-7)
    half = max(1, len(y_true) // 2)
    folds = [(y_true[:half], y_pred[:half])]
    if y_true[half:]:
        folds.append((y_true[half:], y_pred[half:]))
    pooled = pooled_classification_report(folds, labels=labels, output_dict=True,
                                          zero_division=zero_division)[0]
    np.testing.assert_allclose(pooled["macro"], macro)


def test_warn_matches_scikit_learns_warnings():
    with pytest.warns(UndefinedMetricWarning) as record:  # d: neither true nor predicted
        precision_recall_fscore(GOLD, PRED, labels=["a", "d"])
    assert [str(w.message).split()[0] for w in record] == ["Precision", "Recall", "F-score"]
    assert all("['d']" in str(w.message) for w in record)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        precision_recall_fscore(GOLD, GOLD)  # every score defined: no warning


def test_pooled_folds_row_ignores_labels_absent_from_a_fold():
    # c occurs only in the second fold: the first fold's macro is over a and b alone
    f1 = ([["a", "b"]], [["a", "b"]])
    f2 = ([["a", "c"]], [["a", "c"]])
    d = pooled_classification_report([f1, f2], output_dict=True)[0]
    assert d["folds"]["f1"][0] == pytest.approx(1.0)
    assert d["macro"] == (1.0, 1.0, 1.0)


def test_demo_table_shows_the_corrected_macro_f1():
    pooled = pooled_classification_report([(GOLD, PRED)], output_dict=True)
    table = macro_f1_table(5, [("raw", pooled)], 1)
    assert "55.56" in table and "83.33" not in table


def test_cli_evaluate_prints_scikit_learns_macro(tmp_path):
    """``skfcrf evaluate``'s per-label tables: a gold label the model never predicts counts
    as 0 in the Total row, which equals scikit-learn's macro average of ``skfcrf tag``'s
    labels."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    env = dict(os.environ, PYTHONPATH=str(root) + os.pathsep + os.environ.get("PYTHONPATH", ""),
               PYTHONWARNINGS="ignore")

    def run(*args):
        res = subprocess.run([sys.executable, "-m", "skfcrf", *map(str, args)], env=env,
                             capture_output=True, text=True, timeout=300)
        assert res.returncode == 0, res.stderr
        return res.stdout

    sents = [[("the", "DT"), ("cat", "NN"), ("sat", "VBD")], [("a", "DT"), ("dog", "NN"), ("ran", "VBD")]]
    (tmp_path / "train.txt").write_text("".join(
        "".join(f"{w} {t}\n" for w, t in s) + "\n" for s in sents * 5))
    gold = [[("the", "DT"), ("cat", "NN"), ("sat", "VBD")], [("oh", "UH"), ("dog", "NN"), ("ran", "VBD")]]
    (tmp_path / "test.txt").write_text("".join(
        "".join(f"{w} {t}\n" for w, t in s) + "\n" for s in gold))
    model = tmp_path / "m.model"
    run("train", tmp_path / "train.txt", "--model", model, "--label-columns", 1, "--features",
        "ngram", "--max-iter", 20, "--min-instance-freq", 1, "-q")
    out = run("evaluate", tmp_path / "test.txt", "--model", model, "-q")
    tagged = run("tag", tmp_path / "test.txt", "--model", model, "-q")
    y_pred = [line.split()[-1] for line in tagged.splitlines() if line.strip()]
    y_true = [t for s in gold for _, t in s]
    assert "UH" in y_true and "UH" not in y_pred
    expected = f1_score(y_true, y_pred, average="macro", zero_division=0.0)
    total = next(line for line in out.splitlines() if line.startswith("Total"))
    assert float(total.split()[-1]) == pytest.approx(expected, abs=0.005)
    assert "Total counts it as 0" in out
