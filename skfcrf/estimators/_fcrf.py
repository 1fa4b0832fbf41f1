"""FactorialCRF estimator (work in progress)."""
from sklearn.base import BaseEstimator


class FactorialCRF(BaseEstimator):
    """Factorial CRF (under construction)."""
