"""skfcrf: factorial conditional random fields for scikit-learn."""
from skfcrf._version import __version__
from skfcrf.estimators import FactorialCRF

__all__ = ["FactorialCRF", "__version__"]
