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
