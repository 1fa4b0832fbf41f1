"""Partial labels: what training needs when labels are missing (``None`` in ``y``).

Data layout
-----------
``gold``, ``(N, n_chains)`` int32 over the stacked tokens, holds ``-1`` where a
label is missing (:func:`~skfcrf.model._labels.encode_labels`);
``known = gold >= 0``.  The objectives need a *complete* labelling that agrees
with the given labels and that the model's constraints allow (forbidden
transitions and couplings, the joint label states): their loss for a
partially labelled sequence is the usual one of that completion minus the same
loss with the given labels clamped, so the completion's own score cancels
(:mod:`skfcrf.objectives`).  :func:`complete_labels` finds one:
the most probable labelling of the model with all weights zero, clamped to the
given labels -- any allowed labelling scores 0 there, any other ``-inf``.

Which statistics the given labels feed
--------------------------------------
* the label sets (``classes_``): the given labels only;
* feature support (``unary_features="supported"``, untied templates): the
  (observation, label) pairs and label pairs of given labels only;
* ``forbidden_transitions="unseen"``: transitions between two given labels;
* joint label states (:func:`joint_states_given`): the combinations of the
  fully labelled tokens, plus, for a partially labelled token that agrees with
  none of them, its given labels combined with every label of its missing
  chains.
"""
import itertools

import numpy as np
import scipy.sparse as sp

from skfcrf._kernels.joint import joint_states_from_labels
from skfcrf._kernels.states import labelling_scores
from skfcrf.model._fixed import FixedLabels

__all__ = ["labelled_sequences", "joint_states_given", "given_combinations",
           "expand_given_states", "complete_labels"]


def labelled_sequences(y_seqs):
    """Indices of the label sequences with at least one given label.

    A sequence whose every label is missing contributes nothing to training
    (its loss is ``log Z - log Z = 0``), so ``fit`` leaves it out.
    """
    keep = [i for i, seq in enumerate(y_seqs) if np.not_equal(seq, None).any()]
    if not keep:
        raise ValueError("y has no label at all: every label is missing (None)")
    return keep


def joint_states_given(gold, n_labels):
    """The joint label states of partially labelled ``gold`` (``-1``: missing).

    The distinct combinations of the fully labelled rows; a row with missing
    labels that agrees with none of them adds its given labels combined with
    every label (``range(n_labels[c])``) of each missing chain ``c``.
    """
    return expand_given_states(*given_combinations(gold), n_labels)


def given_combinations(gold):
    """``(complete, partial)``: the distinct rows of ``gold`` without and with a missing
    label, sorted int32 arrays.  The pairs of several batches of sequences merge by
    union (:func:`~skfcrf._kernels.joint.joint_states_from_labels` of the stacked arrays);
    :func:`expand_given_states` turns the merged pair into the joint states."""
    gold = np.asarray(gold, dtype=np.int32)
    complete = (gold >= 0).all(axis=1)
    return joint_states_from_labels(gold[complete]), joint_states_from_labels(gold[~complete])


def expand_given_states(complete, partial, n_labels):
    """The joint label states (:func:`joint_states_given`) of the distinct complete and
    partial label combinations (:func:`given_combinations`)."""
    states = complete
    extra = []
    for row in partial:
        given = row >= 0
        if len(states) and ((states[:, given] == row[given]).all(axis=1)).any():
            continue
        choices = [[int(v)] if v >= 0 else range(int(n_labels[c])) for c, v in enumerate(row)]
        extra.extend(itertools.product(*choices))
    if extra:
        states = joint_states_from_labels(np.vstack([states, np.asarray(extra, np.int32)]))
    return np.ascontiguousarray(states, dtype=np.int32)


def complete_labels(layout, seq_ptr, gold, classes, forbidden, method):
    """``gold`` with every missing label filled so that the model's constraints allow it.

    Parameters
    ----------
    layout : ParameterLayout
    seq_ptr : int64 ndarray of shape (n_seq + 1,)
    gold : int32 ndarray of shape (N, n_chains)
        ``-1`` where a label is missing.
    classes : list of ndarray
        The chains' labels (for error messages).
    forbidden : dict
        The model's forbidden assignments (edge -> mask).
    method : skfcrf.inference.InferenceMethod
        The model's inference method.

    Returns
    -------
    int32 ndarray of shape (N, n_chains)

    Raises
    ------
    ValueError
        When no labelling of a sequence agrees with its given labels under the
        constraints, naming the first given label after which none is left.
    """
    graph = layout.graph
    # all weights zero: the observations score nothing, so none are prepared
    n_tokens = len(gold)
    none = layout.observation_rows(sp.csr_matrix((n_tokens, layout.n_features)), seq_ptr)
    unary, pair, _ = layout.potentials(np.zeros(layout.n_params), none, method.n_threads,
                                       forbidden)
    given = FixedLabels(np.ascontiguousarray(gold, dtype=np.int32),
                        np.asarray(seq_ptr, np.int64), classes, name="y")
    clamped = given.clamp(graph, unary)
    # joint-state Viterbi only visits joint states, so its labelling is inside them
    labels, _, _ = method.map(seq_ptr, clamped, pair)
    scores = labelling_scores(graph, seq_ptr, clamped, pair, labels)
    method.check_feasible(seq_ptr, unary, pair, given, scores)
    if not np.isfinite(scores).all():     # TRP's max-product found none (not a proof)
        s = int(np.flatnonzero(~np.isfinite(scores))[0])
        raise ValueError(f"y[{s}]: no labelling agreeing with its given labels was found "
                         "under the model's constraints (forbidden transitions or couplings)")
    return np.ascontiguousarray(labels, dtype=np.int32)
