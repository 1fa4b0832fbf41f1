"""Every tutorial's code runs as written: no error, no warning.

The tutorials fit real models, so this is the suite's slowest module; ``conftest.py`` runs
it first, so that with ``pytest -n`` (``--dist loadfile``) the other modules fill the
other workers meanwhile.
"""
from pathlib import Path

import pytest
from _snippets import DOCS, ROOT, python_blocks, run_snippets

REAL_REPORTS = ROOT.parent / "shared" / "data" / "mtsamples-urology"


#: Blocks that cannot run here, by a string they contain, and why.
NEEDS_A_CLUSTER = 'Client("tcp://scheduler:8786")'   # model_selection: a Dask scheduler


def _conll2000_dir():
    import os

    train = Path(os.environ.get("SKFCRF_CONLL2000_TRAIN",
                                ROOT.parent / "shared" / "data" / "conll2000" / "train.txt"))
    return train.parent if (train.parent / "test.txt").is_file() else None


TUTORIALS = ["dictations", "model_selection", "partial_annotation", "conll2000"]


def test_every_tutorial_with_code_is_run():
    pages = {p.stem for p in (DOCS / "tutorials").glob("*.rst")
             if python_blocks(p.read_text(encoding="utf-8"))}
    assert pages == set(TUTORIALS) | {"real_reports"}


@pytest.mark.parametrize("page", TUTORIALS)
def test_tutorial_runs(page, tmp_path, monkeypatch, capsys):
    """Every ``.. code-block:: python`` of a tutorial, in order, as one script: no error,
    no warning.  The tutorials keep their own data sizes modest for this."""
    blocks = python_blocks((DOCS / "tutorials" / f"{page}.rst").read_text(encoding="utf-8"))
    replace = ()
    if page == "model_selection":
        assert sum(NEEDS_A_CLUSTER in b for b in blocks) == 1
        blocks = [b for b in blocks if NEEDS_A_CLUSTER not in b]   # needs a Dask scheduler
    if page == "conll2000":
        data = _conll2000_dir()
        if data is None:
            pytest.skip("the CoNLL-2000 tutorial needs conll2000/train.txt and test.txt "
                        "(set SKFCRF_CONLL2000_TRAIN to the training file)")
        replace = [("conll2000/", f"{data}/")]
    namespace = run_snippets(blocks, f"docs/tutorials/{page}.rst", tmp_path, monkeypatch, replace)
    assert namespace.get("X") or namespace.get("X_train")
    if page == "dictations":
        _check_rendered_comment(blocks, capsys.readouterr().out)


def _check_rendered_comment(blocks, out):
    """The comment under the dictations tutorial's ``print(render_markdown(...))`` shows
    the start of what it prints, line for line (issue 75)."""
    [block] = [b for b in blocks if "print(render_markdown(" in b]
    shown = [line[1:].strip() for line in block.splitlines() if line.startswith("#")]
    assert shown[-1] == "..." and len(shown) > 3
    assert "\n".join(shown[:-1]) + "\n" in out


@pytest.mark.skipif(not REAL_REPORTS.is_dir(), reason="shared/data/mtsamples-urology not found")
def test_real_reports_tutorial_runs(tmp_path, monkeypatch, capsys):
    """The real-reports tutorial, run as a user would (the reports from shared/): no error,
    no warning (every warning is an error in the suite)."""
    code = "\n".join(python_blocks((DOCS / "tutorials" / "real_reports.rst").read_text(encoding="utf-8")))
    code = code.replace('REPORTS = "shared/data/mtsamples-urology"', f"REPORTS = {str(REAL_REPORTS)!r}")
    monkeypatch.chdir(tmp_path)
    namespace = {}
    exec(compile(code, "real_reports.rst", "exec"), namespace)
    out = capsys.readouterr().out
    assert "PREOPERATIVE   BeginHeading   BeginNone        BeginDiagnosis" in out
    assert len(namespace["X"]) == 136 and namespace["y_pred"]
    assert ":\n" in out  # the rendered report's headings

