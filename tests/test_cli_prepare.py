"""``skfcrf prepare``: formatted reports + recognizer transcripts -> CoNLL training data."""
import json

import pytest

from skfcrf.cli import main

REPORTS = {
    "b.txt": "CHIEF COMPLAINT:\nBlood in urine.\nPLAN:\n1.  Cystoscopy next week.\n"
             "2.  Follow up in clinic.\n",
    "a.txt": "HISTORY OF PRESENT ILLNESS:\nThe patient is a 67-year-old man with frequency and "
             "nocturia.  He denies fever.\nIMPRESSION:\nBenign prostatic hyperplasia.\n",
    "c.txt": "ALLERGIES:\nNo known drug allergies.\nMEDICATIONS:\nTamsulosin 0.4 mg daily.\n",
    "d.txt": "FAMILY HISTORY:\nHis father had prostate cancer at age seventy.\nSOCIAL HISTORY:\n"
             "He does not smoke and drinks rarely.\n",
}
TRANSCRIPTS = {
    "b.txt": "chief complaint blood in the urine period plan number one cystoscopy next week "
             "period number two follow up in clinic period",
    "a.txt": "history of present illness colon the patient is a 67 year old man with uh frequency "
             "and nocturia period he denies fever period\nimpression benign prostatic hyperplasia",
    "c.txt": "allergies no known drug allergies period\n\nmedications tamsulosin 0.4 mg daily",
    "d.txt": "family history his father had prostate cancer at age seventy period social history "
             "he does not smoke and drinks rarely period",
}


def write_dir(path, files):
    path.mkdir(exist_ok=True)
    for name, content in files.items():
        data = content if isinstance(content, bytes) else content.encode("utf-8")
        (path / name).write_bytes(data)
    return path


def prepare(tmp_path, reports=REPORTS, transcripts=TRANSCRIPTS, *extra):
    r = write_dir(tmp_path / "reports", reports)
    t = write_dir(tmp_path / "transcripts", transcripts)
    out = tmp_path / "out.conll"
    status = main(["prepare", str(r), str(t), "-o", str(out), *extra])
    return status, out


def blocks(out):
    text = out.read_text(encoding="utf-8")
    assert text.endswith("\n") and not text.endswith("\n\n")
    return [b.split("\n") for b in text[:-1].split("\n\n")]


def test_happy_path_format(tmp_path, capsys):
    status, out = prepare(tmp_path)
    assert status == 0
    got = blocks(out)
    # one block per pair, in sorted name order, the tokens exactly the transcript's
    assert len(got) == len(TRANSCRIPTS)
    for lines, name in zip(got, sorted(TRANSCRIPTS)):
        rows = [ln.split(" ") for ln in lines]
        assert all(len(r) == 4 and all(r) for r in rows)
        assert [r[0] for r in rows] == TRANSCRIPTS[name].split()
        assert rows[0][1].startswith("Begin") and rows[0][3].startswith("Begin")
    err = capsys.readouterr().err
    assert "pairs found" in err and "pairs written" in err and "tokens written" in err
    n_tokens = sum(len(t.split()) for t in TRANSCRIPTS.values())
    assert f" {n_tokens}" in err.split("tokens written")[1].splitlines()[0]
    assert "match rate mean" in err and "match rate min" in err
    assert not list(tmp_path.glob(".out.conll.*"))  # no temporary file left


def test_quiet(tmp_path, capsys):
    status, out = prepare(tmp_path, REPORTS, TRANSCRIPTS, "-q")
    assert status == 0 and out.exists()
    assert capsys.readouterr().err == ""


def test_unpaired_files_named(tmp_path, capsys):
    reports = dict(REPORTS, **{"only-report.txt": REPORTS["a.txt"]})
    transcripts = dict(TRANSCRIPTS, **{"only-transcript.txt": TRANSCRIPTS["a.txt"]})
    status, out = prepare(tmp_path, reports, transcripts)
    assert status == 0
    err = capsys.readouterr().err
    assert "only-report.txt: skipped: no transcript" in err
    assert "only-transcript.txt: skipped: no report" in err
    assert len(blocks(out)) == len(REPORTS)


def test_bad_files_reported_and_skipped(tmp_path, capsys):
    reports = dict(REPORTS, **{"e1.txt": "", "e2.txt": REPORTS["a.txt"], "u1.txt": b"PLAN:\n\xff\xfe",
                               "u2.txt": REPORTS["a.txt"], "w.txt": " \n\t\n"})
    transcripts = dict(TRANSCRIPTS, **{"e1.txt": "plan", "e2.txt": "", "u1.txt": "plan",
                                       "u2.txt": b"history \xe9 of", "w.txt": "plan"})
    status, out = prepare(tmp_path, reports, transcripts)
    assert status == 0
    err = capsys.readouterr().err
    assert "e1.txt: skipped: report empty" in err
    assert "e2.txt: skipped: transcript empty" in err
    assert "u1.txt: skipped: report not UTF-8" in err
    assert "u2.txt: skipped: transcript not UTF-8" in err
    assert "w.txt: skipped: report has no token" in err
    got = blocks(out)
    assert [ln[0].split()[0] for ln in got] == [TRANSCRIPTS[n].split()[0] for n in sorted(TRANSCRIPTS)]


def test_mismatched_pair_skipped(tmp_path, capsys):
    transcripts = dict(TRANSCRIPTS, **{"a.txt": TRANSCRIPTS["d.txt"]})
    status, out = prepare(tmp_path, REPORTS, transcripts)
    assert status == 0
    err = capsys.readouterr().err
    assert "a.txt: skipped: match rate below --min-match" in err
    assert len(blocks(out)) == len(REPORTS) - 1
    # with --min-match 0 the same pair is kept
    status, out = prepare(tmp_path, REPORTS, transcripts, "--min-match", "0")
    assert status == 0 and len(blocks(out)) == len(REPORTS)


def test_report_without_heading_is_aligned_and_mentioned(tmp_path, capsys):
    reports = {"n.txt": "The patient is doing well.  No complaints.\n"}
    transcripts = {"n.txt": "the patient is doing well period no complaints"}
    status, out = prepare(tmp_path, reports, transcripts)
    assert status == 0
    assert "n.txt: note: the report has no heading" in capsys.readouterr().err
    (lines,) = blocks(out)
    assert [ln.split()[3] for ln in lines[:2]] == ["BeginOther", "Other"]


@pytest.mark.parametrize("content, message", [
    ("[[\"PLAN\", \"Plan\"", "invalid JSON"),
    ("{\"PLAN\": \"Plan\"}", "expected a JSON list"),
    ("[[\"PLAN\"]]", "entry 0"),
    ("[[\"(\", \"Plan\"]]", "invalid regular expression"),
    ("[[\"PLAN\", \"Treatment plan\"]]", "white space"),
    (None, "file not found"),
])
def test_bad_section_types(tmp_path, capsys, content, message):
    path = tmp_path / "types.json"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    status, out = prepare(tmp_path, REPORTS, TRANSCRIPTS, "--section-types", str(path))
    assert status == 2
    err = capsys.readouterr().err
    assert err.startswith("skfcrf: error: argument --section-types") and message in err
    assert len(err.strip().splitlines()) == 1  # one line, no traceback
    assert not out.exists()


def test_section_types_applied(tmp_path, capsys):
    path = tmp_path / "types.json"
    path.write_text(json.dumps([["complaint", "Reason"], ["plan", "Therapy"]]), encoding="utf-8")
    status, out = prepare(tmp_path, REPORTS, TRANSCRIPTS, "--section-types", str(path), "-q")
    assert status == 0
    by_name = dict(zip(sorted(TRANSCRIPTS), blocks(out)))
    chain2 = [ln.split()[3] for ln in by_name["b.txt"]]
    assert chain2[0] == "BeginReason" and "BeginTherapy" in chain2
    # headings matching no pattern get the default type
    assert {ln.split()[3] for ln in by_name["c.txt"]} <= {"BeginOther", "Other"}


def test_nothing_written_exit_1(tmp_path, capsys):
    status, out = prepare(tmp_path, {"a.txt": ""}, {"a.txt": "", "z.txt": "x"})
    assert status == 1
    err = capsys.readouterr().err
    assert "skfcrf: error: no pair was written" in err
    assert not out.exists()
    # no common name at all
    (tmp_path / "again").mkdir()
    status, _ = prepare(tmp_path / "again", {"a.txt": ""}, {"z.txt": "x"})
    assert status == 1 and "no pairs" in capsys.readouterr().err


def test_existing_output_replaced_only_on_success(tmp_path, capsys):
    out = tmp_path / "out.conll"
    out.write_text("old\n", encoding="utf-8")
    status, _ = prepare(tmp_path, {"a.txt": ""}, {"a.txt": "x"})
    assert status == 1 and out.read_text(encoding="utf-8") == "old\n"
    status, _ = prepare(tmp_path)
    assert status == 0 and len(blocks(out)) == len(REPORTS)


def test_missing_directory(tmp_path, capsys):
    status = main(["prepare", str(tmp_path / "nope"), str(tmp_path), "-o", str(tmp_path / "o")])
    assert status == 1
    assert "REPORTS directory not found" in capsys.readouterr().err


def test_n_jobs_same_output(tmp_path, monkeypatch, capsys):
    from skfcrf.cli import _prepare

    status, out = prepare(tmp_path, REPORTS, TRANSCRIPTS, "-q")
    expected = out.read_text(encoding="utf-8")
    monkeypatch.setattr(_prepare, "CHUNK_SIZE", 1)
    status, out = prepare(tmp_path, REPORTS, TRANSCRIPTS, "-q", "--n-jobs", "2")
    assert status == 0 and out.read_text(encoding="utf-8") == expected
