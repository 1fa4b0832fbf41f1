"""Smoke test of benchmarks/thesis_tables.py: a --quick run writes every table with its columns."""
import csv
import json
import sys
from pathlib import Path

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.fixture(scope="module")
def thesis_tables():
    if not (BENCH / "thesis_tables.py").is_file():
        pytest.skip("no benchmarks/ in this checkout")
    sys.path.insert(0, str(BENCH))
    try:
        import thesis_tables
    finally:
        sys.path.remove(str(BENCH))
    return thesis_tables


def _read(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def test_quick_run_writes_every_table(thesis_tables, tmp_path):
    thesis_tables.main(["--quick", "--out", str(tmp_path)])
    files = {"accuracy": thesis_tables.ACCURACY_COLUMNS, "f1": thesis_tables.F1_COLUMNS,
             "windowdiff": thesis_tables.WINDOWDIFF_COLUMNS, "trp": thesis_tables.TRP_COLUMNS}
    rows = {}
    for name, columns in files.items():
        with open(tmp_path / f"{name}.csv", newline="") as fh:
            assert next(csv.reader(fh)) == list(columns)
        rows[name] = _read(tmp_path / f"{name}.csv")
    acc = rows["accuracy"]
    assert {r["table"] for r in acc} == {"6.1", "6.2", "6.11", "6.12"}
    assert {r["postprocessing"] for r in acc} == {"none", "cor", "rcg"}
    # the word error rate sweep: ALL and BEST rows at both quick rates, raw and post-processed
    sweep = {(r["corpus"], float(r["word_error_rate"])) for r in acc if r["table"] == "6.12"}
    assert sweep == {(c, w) for c in ("RCG-ALL", "RCG-BEST") for w in (0.0, 0.2)}
    for r in acc:
        joint, chains = float(r["joint"]), [float(r[f"chain{c}"]) for c in range(3)]
        assert 0 <= joint <= min(chains) <= 1
        assert float(r["average"]) == pytest.approx(np.mean(chains), abs=1e-4)
    f1 = rows["f1"]
    assert {r["table"] for r in f1} == {"6.3", "6.4", "6.5", "6.6", "6.7", "6.8"}
    totals = [r for r in f1 if r["label"] == "Total"]
    assert len(totals) == 2 * 3 * 2  # corpora x chains x with/without post-processing
    for t in totals:  # the Total row pools the counts of its labels
        labels = [r for r in f1 if r["label"] != "Total" and
                  all(r[k] == t[k] for k in ("corpus", "chain", "postprocessing"))]
        assert int(t["n"]) == sum(int(r["n"]) for r in labels)
        assert int(t["correct"]) == sum(int(r["correct"]) for r in labels)
    assert {(r["table"], r["postprocessing"]) for r in rows["windowdiff"]} == \
        {("6.9", "none"), ("6.9", "cor"), ("6.10", "none"), ("6.10", "rcg")}
    trp = rows["trp"]
    assert [(r["corpus"], r["objective"]) for r in trp] == [
        (c, o) for o in ("independent", "pseudolikelihood") for c in ("COR-ALL", "COR-BEST", "RCG-ALL",
                                                                     "RCG-BEST")]
    assert all(0 <= float(r["converged"]) <= 1 for r in trp)
    meta = json.loads((tmp_path / "thesis_tables.json").read_text())
    assert meta["settings"]["quick"] and set(meta) >= {"times", "accuracy", "f1", "windowdiff", "trp"}


def test_best_half_takes_the_lowest_error_rates(thesis_tables):
    assert thesis_tables.best_half(np.array([0.3, 0.1, 0.2, 0.0])).tolist() == [1, 3]
    assert thesis_tables.best_half(np.zeros(5)).tolist() == [0, 1]   # ties: the first ones
    assert thesis_tables.best_half(np.array([0.5])).tolist() == [0]


def test_report_wer_against_the_error_free_transcripts(thesis_tables):
    from skfcrf.datasets import make_dictation_pairs

    ref = make_dictation_pairs(3, word_error_rate=0, random_state=4)
    noisy = make_dictation_pairs(3, word_error_rate=0.3, random_state=4)
    assert thesis_tables.report_wer(ref, ref).tolist() == [0, 0, 0]
    wer = thesis_tables.report_wer(ref, noisy)
    assert np.all((wer > 0.1) & (wer < 0.5))


def test_bench_postprocessing_writes_one_row_per_variant(thesis_tables, tmp_path):
    import bench_postprocessing as bench  # importable: the fixture put benchmarks/ on the path once

    rows = bench.main(["--datasets", "cor:6:0", "--decodings", "exact", "--variants", "formal", "cor",
                       "--out", str(tmp_path)])
    assert [r["rules"] for r in rows] == ["none", "formal", "cor"]
    with open(tmp_path / "postprocessing.csv", newline="") as fh:
        assert next(csv.reader(fh)) == list(bench.COLUMNS)
    raw = rows[0]
    assert raw["changed"] == 0 and all(r["n_test"] == 2 for r in rows)
    meta = json.loads((tmp_path / "postprocessing.json").read_text())
    assert meta["decoding"]["cor:6:0"]["exact"]["exact"] == 1.0
