"""skfcrf: factorial conditional random fields for scikit-learn."""
__version__ = "0.1.0"

from skfcrf.estimators import FactorialCRF  # noqa: E402

__all__ = ["FactorialCRF", "__version__"]
