"""Where the benchmark data shipped beside the repository lives (``../shared/data``)."""
import os
from pathlib import Path

import pytest

_DEFAULT = Path(__file__).resolve().parents[2] / "shared" / "data" / "conll2000" / "train.txt"
CONLL2000 = os.environ.get("SKFCRF_CONLL2000_TRAIN", str(_DEFAULT))

needs_conll2000 = pytest.mark.skipif(
    not os.path.isfile(CONLL2000),
    reason=f"CoNLL-2000 training file not found at {CONLL2000} (set SKFCRF_CONLL2000_TRAIN)",
)
