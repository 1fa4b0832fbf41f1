"""The real-reports tutorial runs from a fresh clone, without ``shared/data`` (issue 75).

Its own module, so that with ``pytest -n`` (``--dist loadfile``) it runs beside the
slow ``test_tutorials.py`` on another worker.
"""
from _snippets import DOCS, python_blocks


def test_real_reports_tutorial_runs_from_a_fresh_clone(tmp_path, monkeypatch, capsys):
    """Without shared/data (a fresh clone) the real-reports tutorial writes synthetic
    formatted reports and runs whole on them (issue 75)."""
    code = "\n".join(python_blocks((DOCS / "tutorials" / "real_reports.rst").read_text(encoding="utf-8")))
    assert 'REPORTS = "shared/data/mtsamples-urology"' in code
    monkeypatch.chdir(tmp_path)  # no shared/ here
    namespace = {}
    exec(compile(code, "real_reports.rst", "exec"), namespace)
    out = capsys.readouterr().out
    assert len(namespace["paths"]) == 136 and len(namespace["X"]) == 136 and namespace["y_pred"]
    assert ":\n" in out
