"""The documentation: the Sphinx build with warnings as errors (as CI does), the README's
and the index page's examples, and the defaults docs/cli.rst and the help texts state.
The tutorials are run by ``test_tutorials.py``."""
import importlib.util
import subprocess
import sys

import pytest
from _snippets import DOCS, ROOT, python_blocks, readme_python_blocks, run_snippets

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


def test_readme_example_runs(tmp_path, monkeypatch, capsys):
    """The README's Python example, without an error or a warning (its last lines once
    raised NotFittedError: a fitted feature union failed check_is_fitted)."""
    blocks = readme_python_blocks((ROOT / "README.md").read_text(encoding="utf-8"))
    assert len(blocks) == 1
    namespace = run_snippets(blocks, "README.md", tmp_path, monkeypatch)
    assert {d.status for d in namespace["decoded"]} == {"exact"}
    assert "{'exact'}" in capsys.readouterr().out


def test_index_example_runs(tmp_path, monkeypatch):
    blocks = python_blocks((DOCS / "index.rst").read_text(encoding="utf-8"))
    assert len(blocks) == 1
    namespace = run_snippets(blocks, "docs/index.rst", tmp_path, monkeypatch)
    assert len(namespace["y_pred"]) == 6


# ----------------------------------------------------------------------------- CLI defaults


def _subparsers():
    """``{command: its argparse parser}`` of the ``skfcrf`` command."""
    import argparse

    from skfcrf.cli import build_parser

    for action in build_parser()._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    raise AssertionError("no subcommands")


def _shown(value):
    """A parser default as the docs write it."""
    if isinstance(value, (list, tuple)):
        return ",".join(map(str, value))
    return str(value)


def _cli_sections():
    """``{command: its prose}`` of docs/cli.rst (code blocks left out, lines joined)."""
    import re

    sections, command, lines, in_code = {}, None, [], False
    for line in (DOCS / "cli.rst").read_text(encoding="utf-8").splitlines():
        head = re.fullmatch(r"``skfcrf (\w+)``", line.strip())
        if head:
            if command:
                sections[command] = " ".join(lines)
            command, lines, in_code = head.group(1), [], False
            continue
        if line.startswith(".. code-block::"):
            in_code = True
            continue
        if in_code and line and not line.startswith(" "):
            in_code = False
        if not in_code:
            lines.append(line.strip())
    if command:
        sections[command] = " ".join(lines)
    return sections


#: stated defaults that are descriptions, not values: (command, option) -> what the docs say
DESCRIBED_DEFAULTS = {("view", "--chain-names"): "chain 0"}   # the parser's None: chain i


def stated_defaults(text):
    """``[(option, stated default)]`` of the statements in ``text``: ``--opt`` followed,
    before any other option, by ``default X`` / ``default: X`` / ``default ``X````, or
    ``--opt VALUE`` followed by ``(default)``."""
    import re

    found = []
    for m in re.finditer(r"``(--[a-z][a-z0-9-]*)((?: [^`]+)?)``([^`]*?(?:``(?!--)[^`]*``[^`]*?)*?)"
                         r"\(?\bdefault(\)|:? ``([^`]+)``|:? ([^\s,;)]+))", text):
        option, value_in_name, tail = m.group(1), m.group(2).strip(), m.group(3)
        if "``--" in tail or ". " in tail:
            continue
        if m.group(4) == ")":
            if tail.strip():        # "(the default)" far from the option: not a statement
                continue
            value = value_in_name
        else:
            value = m.group(5) if m.group(5) is not None else m.group(6)
        found.append((option, value))
    return found


def test_cli_docs_state_the_parsers_defaults():
    """Every ``(default X)`` docs/cli.rst states for an option is that option's argparse
    default (``--objective`` was documented as pseudolikelihood long after it changed)."""
    parsers = _subparsers()
    checked, wrong = [], []
    for command, text in _cli_sections().items():
        options = {opt: action for action in parsers[command]._actions
                   for opt in action.option_strings}
        for option, value in stated_defaults(text):
            assert option in options, f"docs/cli.rst: skfcrf {command} has no option {option}"
            if (command, option) in DESCRIBED_DEFAULTS:
                assert value == DESCRIBED_DEFAULTS[command, option]
                continue
            checked.append((command, option))
            if value != _shown(options[option].default):
                wrong.append(f"skfcrf {command} {option}: docs say {value!r}, "
                             f"the parser {_shown(options[option].default)!r}")
    assert not wrong, "\n".join(wrong)
    train = {opt for cmd, opt in checked if cmd == "train"}
    assert {"--objective", "--features", "--attributes", "--ngram-window"} <= train, checked


def test_cli_help_states_the_parsers_defaults():
    """A help text that writes its default out (not ``%(default)s``) writes the right one."""
    import re

    described = {"current directory": "."}    # stated in words
    wrong = []
    for command, parser in _subparsers().items():
        for action in parser._actions:
            text = (action.help or "").replace("%(default)s", _shown(action.default))
            m = re.search(r"\(default: ([^;)]+)", text)
            if m is None or action.default is None:    # None: the help says what happens
                continue
            if described.get(m.group(1), m.group(1)) != _shown(action.default):
                wrong.append(f"skfcrf {command} {action.option_strings}: help says "
                             f"{m.group(1)!r}, the parser {_shown(action.default)!r}")
    assert not wrong, "\n".join(wrong)
