"""Build the Sphinx documentation with warnings as errors (as CI does)."""
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"

missing = [m for m in ("sphinx", "numpydoc") if importlib.util.find_spec(m) is None]


@pytest.mark.skipif(bool(missing), reason=f"building the docs needs {', '.join(missing)} "
                    "(pip install -e '.[docs]')")
@pytest.mark.skipif(not (DOCS / "conf.py").is_file(), reason="no docs/ in this checkout")
def test_docs_build_without_warnings(tmp_path):
    import os

    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    res = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
         "-d", str(tmp_path / "doctrees"), str(DOCS), str(tmp_path / "html")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600,
    )
    assert res.returncode == 0, f"sphinx failed:\n{res.stdout[-5000:]}\n{res.stderr[-5000:]}"
    for page in ("index.html", "concepts.html", "cli.html", "api/index.html",
                 "tutorials/dictations.html", "api/generated/skfcrf.FactorialCRF.html"):
        assert (tmp_path / "html" / page).is_file(), page


REAL_REPORTS = ROOT.parent / "shared" / "data" / "mtsamples-urology"


def python_blocks(rst):
    """The ``.. code-block:: python`` blocks of an .rst page, dedented."""
    import textwrap

    blocks, lines, inside = [], rst.splitlines(), False
    for line in lines + [""]:
        if line.strip() == ".. code-block:: python":
            inside, block = True, []
            continue
        if inside:
            if line and not line.startswith(" "):
                blocks.append(textwrap.dedent("\n".join(block)))
                inside = False
            else:
                block.append(line)
    if inside:
        blocks.append(textwrap.dedent("\n".join(block)))
    return blocks


@pytest.mark.skipif(not REAL_REPORTS.is_dir(), reason="shared/data/mtsamples-urology not found")
def test_real_reports_tutorial_runs(tmp_path, monkeypatch, capsys):
    """The real-reports tutorial, run as a user would (the reports from shared/)."""
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    code = "\n".join(python_blocks((DOCS / "tutorials" / "real_reports.rst").read_text(encoding="utf-8")))
    code = code.replace('REPORTS = "shared/data/mtsamples-urology"', f"REPORTS = {str(REAL_REPORTS)!r}")
    monkeypatch.chdir(tmp_path)
    namespace = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        exec(compile(code, "real_reports.rst", "exec"), namespace)
    out = capsys.readouterr().out
    assert "PREOPERATIVE   BeginHeading   BeginNone        BeginDiagnosis" in out
    assert len(namespace["X"]) == 136 and namespace["y_pred"]
    assert ":\n" in out  # the rendered report's headings
