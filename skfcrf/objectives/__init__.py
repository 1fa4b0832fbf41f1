"""Training objectives: the penalised negative log-(pseudo)likelihood of a training batch.

This package owns what a fit minimises; the solvers (:mod:`skfcrf.solvers`) own how.
It reads the model through :mod:`skfcrf.model` and computes with the kernels of
:mod:`skfcrf._kernels` and the inference methods of :mod:`skfcrf.inference`.

Every objective is an object over a :class:`TrainingBatch` with one method the
solvers call, ``loss_gradient(theta) -> (loss, grad)``, in the manner of
scikit-learn's ``LinearModelLoss``::

    loss(theta) = scale * data_loss(theta) + sum(theta ** 2) / (2 * sigma ** 2)

``data_loss`` is the unpenalised negative log-(pseudo)likelihood summed over the
batch's sequences; ``scale`` is 1 for the whole training set and
``n_sequences / batch_size`` for a mini-batch (:meth:`Objective.subset`), so a
mini-batch loss is an unbiased estimate of the full one.  ``theta`` is laid out
as :class:`~skfcrf.model._layout.ParameterLayout` describes.

Partial labels (``None`` in ``y``): the batch's ``gold`` is then a complete
labelling that agrees with the given labels (the gaps filled by
:func:`skfcrf.model._partial.complete_labels`) and ``known`` marks the
given ones.  A sequence's loss is ``-log sum_y' p(y' | x)`` over the labellings
``y'`` that agree with its given labels, ``log Z - log Z(given)``: the
objective computed as usual with the completed labels, minus the same
objective over the partially labelled sequences with their given labels
clamped (:meth:`Objective.clamped_part`) -- the completed labels' score
cancels, and the gradient is ``E[f] - E[f | given labels]``.  Clamping sets the
other labels' unary scores to ``-inf`` (likelihood) or leaves them out of the
chain's label set (the independent chains).  The pseudolikelihood objectives
condition every term on its neighbours' labels and refuse missing ones.

An objective owns whatever its inference produces along the way: the
likelihood objective keeps, per evaluation, which sequences' TRP runs converged
and how many trees they took (:meth:`Likelihood.inference_stats`).

The fused kernels (pseudolikelihood, chain-wise) read the model through one
contract, the :class:`~skfcrf._kernels._contract.ParameterTables` that
:meth:`~skfcrf.model._layout.ParameterLayout.kernel_tables` builds once per
objective (offsets, edge tables, feature table, forbidden assignments); a call
passes only ``theta``, the observation rows and the gold labels.  The chain-wise
objectives own their kernel state as a :class:`ChainTerms`; the independent
chains are a :class:`~skfcrf.solvers.BlockObjective`.

:class:`SequenceTerms` is what the online trainers read instead: one sequence
at a time, its likelihood term or the difference between its gold and decoded
labelling, on the few weights it touches.

:data:`OBJECTIVES` maps the estimator's ``objective=`` names to the classes.
"""
from skfcrf.objectives._base import Objective, Restricted
from skfcrf.objectives._batch import TrainingBatch
from skfcrf.objectives._chainwise import (
    ChainPseudoLikelihood,
    ChainTerms,
    IndependentChains,
    allowed_by_joint_states,
)
from skfcrf.objectives._likelihood import Likelihood, StateTransitionStage
from skfcrf.objectives._pseudolikelihood import PseudoLikelihood
from skfcrf.objectives._sequences import Difference, SequenceTerms

__all__ = ["TrainingBatch", "Objective", "PseudoLikelihood", "ChainTerms",
           "ChainPseudoLikelihood", "IndependentChains",
           "Likelihood", "Restricted", "StateTransitionStage", "OBJECTIVES", "allowed_by_joint_states",
           "SequenceTerms", "Difference"]


#: ``objective=`` name -> objective class.
OBJECTIVES = {"pseudolikelihood": PseudoLikelihood, "chainwise": ChainPseudoLikelihood,
              "independent": IndependentChains, "likelihood": Likelihood}
