"""Solvers: batch L-BFGS (scipy), OWL-QN (L1), online L-BFGS, and CRFsuite's online
trainers (per-sequence SGD, averaged perceptron, passive-aggressive, AROW), with one
convergence monitor.

A solver minimises any objective of :mod:`skfcrf.objectives`
(``objective.loss_gradient(theta) -> (loss, grad)``) from a starting point and
reports every iteration (epoch, for the online solver) to a
:class:`ConvergenceMonitor`, which keeps the loss curve, prints progress and asks
the user's callback whether to stop.  ``solve`` returns a :class:`SolverResult`.

:class:`BlockLBFGS` needs more: a :class:`BlockObjective`, whose loss is a sum of
functions of disjoint weight blocks.

The online trainers (:data:`SEQUENCE_SOLVERS`) work one sequence at a time on a
*sequence oracle* (:class:`skfcrf.objectives.SequenceTerms`) instead of an
objective: per sequence the likelihood term (SGD) or the difference between the
gold and the decoded labelling (:mod:`skfcrf.solvers._margin`).

This package owns how a fit minimises; it knows nothing of models or data.
"""
from skfcrf.solvers._arow import AROW
from skfcrf.solvers._block import BlockLBFGS, BlockObjective
from skfcrf.solvers._lbfgs import LBFGS, two_loop
from skfcrf.solvers._monitor import ConvergenceMonitor, SolverResult, warn_if_not_converged
from skfcrf.solvers._online import OnlineLBFGS
from skfcrf.solvers._owlqn import OWLQN, pseudo_gradient
from skfcrf.solvers._passive_aggressive import PassiveAggressive
from skfcrf.solvers._perceptron import AveragedPerceptron
from skfcrf.solvers._sgd import SGD

__all__ = ["ConvergenceMonitor", "SolverResult", "LBFGS", "BlockObjective", "BlockLBFGS",
           "OnlineLBFGS", "OWLQN", "SGD", "AveragedPerceptron", "PassiveAggressive", "AROW",
           "SOLVERS", "SEQUENCE_SOLVERS", "pseudo_gradient", "two_loop", "warn_if_not_converged"]


#: ``solver=`` name -> solver class.
SOLVERS = {"lbfgs": LBFGS, "olbfgs": OnlineLBFGS, "sgd": SGD, "perceptron": AveragedPerceptron,
           "passive_aggressive": PassiveAggressive, "arow": AROW}

#: The solvers that train on a sequence oracle, one sequence at a time.
SEQUENCE_SOLVERS = ("sgd", "perceptron", "passive_aggressive", "arow")
