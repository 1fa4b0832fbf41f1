"""Running the documentation's code as a user would (not a test module itself).

``python_blocks`` and ``readme_python_blocks`` cut the Python code out of an .rst page and
of the README; ``run_snippets`` runs such blocks in order as one script in an empty
directory.  Used by ``test_docs.py`` (README, index page) and ``test_tutorials.py``.
"""
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


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


def readme_python_blocks(markdown):
    """The fenced Python blocks of the README."""
    import re

    return re.findall(r"^```python\n(.*?)^```", markdown, flags=re.S | re.M)


def run_snippets(blocks, name, tmp_path, monkeypatch, replace=()):
    """Run code blocks in order as one script in an empty directory, as a user would:
    every warning is an error (the suite's setting); returns the script's namespace."""
    code = "\n".join(blocks)
    for old, new in replace:
        assert old in code, f"{name}: {old!r} not found"
        code = code.replace(old, new)
    monkeypatch.chdir(tmp_path)
    namespace = {"__name__": "__snippets__"}
    exec(compile(code, name, "exec"), namespace)
    return namespace
