"""Solvers: batch L-BFGS (scipy), OWL-QN (L1), online L-BFGS, with one convergence monitor.

A solver minimises any objective of :mod:`skfcrf.objectives`
(``objective.loss_gradient(theta) -> (loss, grad)``) from a starting point and
reports every iteration (epoch, for the online solver) to a
:class:`ConvergenceMonitor`, which keeps the loss curve, prints progress and asks
the user's callback whether to stop.  ``solve`` returns a :class:`SolverResult`.

:class:`BlockLBFGS` needs more: a :class:`BlockObjective`, whose loss is a sum of
functions of disjoint weight blocks.

This package owns how a fit minimises; it knows nothing of models or data.
"""
from skfcrf.solvers._block import BlockLBFGS, BlockObjective
from skfcrf.solvers._lbfgs import LBFGS, two_loop
from skfcrf.solvers._monitor import ConvergenceMonitor, SolverResult, warn_if_not_converged
from skfcrf.solvers._online import OnlineLBFGS
from skfcrf.solvers._owlqn import OWLQN, pseudo_gradient

__all__ = ["ConvergenceMonitor", "SolverResult", "LBFGS", "BlockObjective", "BlockLBFGS",
           "OnlineLBFGS", "OWLQN",
           "SOLVERS", "pseudo_gradient", "two_loop", "warn_if_not_converged"]


#: ``solver=`` name -> solver class.
SOLVERS = {"lbfgs": LBFGS, "olbfgs": OnlineLBFGS}
