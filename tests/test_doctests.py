"""Run the docstring examples of every Python module of skfcrf.

Compiled kernels (``skfcrf._kernels._*`` extension modules) have no Python source to read and are
skipped; ``skfcrf.__main__`` only starts the command line. A module whose source shows an
example (``>>>``) must have doctest find and run at least one, so an example doctest cannot
see (e.g. in a comment or a class doctest skips) is noticed.
"""
import doctest
import importlib
import importlib.util
import pkgutil

import pytest

import skfcrf

# skfcrf.dask needs the optional dask and distributed (tests/test_dask.py covers it)
_NO_DASK = any(importlib.util.find_spec(m) is None for m in ("dask", "distributed"))

MODULES = sorted(
    info.name for info in pkgutil.walk_packages(skfcrf.__path__, prefix="skfcrf.")
    if info.name != "skfcrf.__main__" and not (info.name == "skfcrf.dask" and _NO_DASK)
    and (importlib.util.find_spec(info.name).origin or "").endswith(".py")
)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
    assert result.failed == 0, f"{result.failed} docstring example(s) of {name} failed (see output)"
    with open(module.__file__, encoding="utf-8") as f:
        has_examples = ">>>" in f.read()
    assert result.attempted > 0 or not has_examples, f"{name} shows examples doctest does not run"
