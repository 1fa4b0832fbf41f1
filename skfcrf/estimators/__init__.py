"""Estimators: :class:`FactorialCRF`."""
from skfcrf.estimators._fcrf import FactorialCRF

__all__ = ["FactorialCRF"]
