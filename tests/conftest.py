"""Fixtures shared by the test modules.

Plain helper functions live in ``_helpers.py`` (synthetic tasks, gradient checks),
``brute.py`` (brute-force references) and ``_snippets.py`` (running the documentation's
code); test modules never import each other.
"""
import os
from pathlib import Path

import pytest

# Under pytest-xdist (the README's ``-n auto``) two workers share the cores, and each runs
# the kernels' OpenMP threads (n_jobs=2 in many tests): idle OpenMP threads spinning for work
# would take the cores from the other worker's threads.  Passive waiting hands them over.
# Set before any kernel module starts the OpenMP runtime; a value the user set is kept.
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.setdefault("OMP_WAIT_POLICY", "passive")

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


#: The slowest modules (``pytest --durations``), longest first: run before the others, so
#: that under ``pytest -n 2 --dist loadfile`` (the README's command) a worker does not
#: start one of them when the other is about to finish (longest-processing-time-first).
SLOW_MODULES = ("test_tutorials.py", "test_backoff.py", "test_cli.py", "test_docs.py",
                "test_tutorial_fresh_clone.py")


def pytest_collection_modifyitems(config, items):
    """Move the tests of :data:`SLOW_MODULES` to the front, in that order; the order
    within a module, and of the other modules, is kept."""
    rank = {name: i for i, name in enumerate(SLOW_MODULES)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))
