"""Fixtures shared by the test modules.

Plain helper functions live in ``_helpers.py`` (synthetic tasks, gradient checks) and
``brute.py`` (brute-force references); test modules never import each other.
"""
import os
from pathlib import Path

import pytest

# The CoNLL-2000 training file shipped beside the repository (``../shared/data``), or the
# file named by SKFCRF_CONLL2000_TRAIN.
_CONLL2000_DEFAULT = Path(__file__).resolve().parents[2] / "shared" / "data" / "conll2000" / "train.txt"


@pytest.fixture(scope="session")
def conll2000_train():
    """Path of the CoNLL-2000 training file; the test is skipped when it is not there."""
    path = os.environ.get("SKFCRF_CONLL2000_TRAIN", str(_CONLL2000_DEFAULT))
    if not os.path.isfile(path):
        pytest.skip(f"CoNLL-2000 training file not found at {path} (set SKFCRF_CONLL2000_TRAIN)")
    return path
