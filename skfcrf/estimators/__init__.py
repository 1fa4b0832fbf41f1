"""Estimators: :class:`FactorialCRF`, and :func:`training_problem` (the objective a fit minimises)."""
from skfcrf.estimators._fcrf import FactorialCRF, training_problem
from skfcrf.inference import SequenceDecoding

__all__ = ["FactorialCRF", "SequenceDecoding", "training_problem"]
