"""Estimators: :class:`FactorialCRF`, and :func:`training_problem` (the objective a fit minimises)."""
from skfcrf.estimators._decoding import SequenceDecoding
from skfcrf.estimators._fcrf import FactorialCRF, training_problem

__all__ = ["FactorialCRF", "SequenceDecoding", "training_problem"]
