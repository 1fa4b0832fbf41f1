"""Run the docstring examples of skfcrf.metrics."""
import doctest
import importlib

import pytest

MODULES = ["_accuracy", "_labels", "_segments", "_stats", "_scorer"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(f"skfcrf.metrics.{name}")
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 or name == "_scorer"
    assert result.failed == 0
