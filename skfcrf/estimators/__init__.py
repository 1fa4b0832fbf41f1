"""Estimators: :class:`FactorialCRF`, and :func:`training_problem` (the objective a fit minimises).

This package is the thin top: parameter and data validation, observation
encoding (:mod:`._observations`), the order of a fit's stages (:mod:`._fcrf`),
early stopping and model files (:mod:`._persistence`, :mod:`._npz_io`).  What a
model is lives in :mod:`skfcrf.model`, what a fit minimises in
:mod:`skfcrf.objectives`, how in :mod:`skfcrf.solvers`, and how a fitted model
decodes in :mod:`skfcrf.inference`.
"""
from skfcrf.estimators._fcrf import FactorialCRF, training_problem
from skfcrf.inference import SequenceDecoding

__all__ = ["FactorialCRF", "SequenceDecoding", "training_problem"]
