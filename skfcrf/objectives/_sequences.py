"""One training sequence at a time: what the online trainers need of the model.

The structured perceptron, passive-aggressive, AROW and per-sequence SGD
(:mod:`skfcrf.solvers`) update the weights after every sequence.  A sequence
touches few of them: the feature-table entries of the observations active in it,
and the biases.  :class:`SequenceTerms` keeps per sequence its *local* layout
(:meth:`~skfcrf.model._layout.ParameterLayout.local`), observations and gold
statistics, so an update computes potentials, decodes and maps counts back with
the model's own functions on those weights alone (``theta[index]``).
"""
from collections import namedtuple

import numpy as np
import scipy.sparse as sp

from skfcrf.model._layout import GoldStatistics
from skfcrf.objectives._batch import TrainingBatch, state_pair_counts
from skfcrf.objectives._likelihood import Likelihood

__all__ = ["SequenceTerms", "Difference"]

#: What :meth:`SequenceTerms.difference` returns: the parameters ``index`` of the
#: sequence, ``delta`` = feature counts of the gold minus the decoded labelling on
#: them, ``n_wrong`` = Hamming distance (wrong labels, all chains), ``margin`` =
#: score(decoded) - score(gold) (>= 0) and ``n_tokens``.
Difference = namedtuple("Difference", "index delta n_wrong margin n_tokens")

_View = namedtuple("_View", "batch index")


class SequenceTerms:
    """Per-sequence decoding, feature-count differences and likelihood terms.

    Parameters
    ----------
    batch : TrainingBatch
        The training sequences (every label given).
    method : InferenceMethod
        The model's inference; it must be exact (one chain, the product space or
        the joint label states), since the updates assume the true argmax.
    forbidden : dict, optional
        Edge index -> boolean mask of forbidden assignments.
    joint_states : ndarray of shape (S, C), optional
        The model's label combinations (joint-state inference).
    free : bool ndarray of shape (n_params,), optional
        The weights an update may move (the others keep their values); None: all.

    Raises
    ------
    ValueError
        With partial labels (a decoded labelling cannot be compared with a
        missing one), inexact inference or back-off transitions.
    """

    def __init__(self, batch, method, *, forbidden=None, joint_states=None, free=None):
        if batch.known is not None:
            raise ValueError("the online trainers need every label: y has missing "
                             "labels (None); use solver='lbfgs' or 'olbfgs', which "
                             "marginalise over them")
        if not method.exact:
            raise ValueError(f"the online trainers decode every sequence exactly; "
                             f"inference {method.name!r} is approximate (use inference='auto', "
                             "'exact' or 'joint')")
        if batch.layout.n_backoff:
            raise ValueError("the online trainers do not train back-off transitions; use "
                             "forbidden_transitions='auto' or None")
        self.batch = batch
        self.layout = batch.layout
        self.forbidden = forbidden or {}
        self.joint_states = joint_states
        self.method = method.bind(joint_states=joint_states, n_threads=1)
        self.free = None if free is None else np.asarray(free, dtype=bool)
        self._views = [None] * batch.n_sequences

    @property
    def n_sequences(self):
        return self.batch.n_sequences

    @property
    def n_params(self):
        return self.layout.n_params

    def view(self, s):
        """Sequence ``s`` alone as a :class:`TrainingBatch` over its local layout, and
        where that layout's parameters sit in ``theta``: ``(batch, index)`` (built
        on first use)."""
        view = self._views[s]
        if view is None:
            b = self.batch
            lo, hi = int(b.seq_ptr[s]), int(b.seq_ptr[s + 1])
            X = sp.csr_matrix(b.X[lo:hi])
            features = np.unique(X.indices)
            X_local = sp.csr_matrix((X.data, np.searchsorted(features, X.indices), X.indptr),
                                    shape=(hi - lo, len(features)))
            layout, index = self.layout.local(features)
            view = self._views[s] = _View(
                TrainingBatch(X_local, [0, hi - lo], b.gold[lo:hi], layout, b.seeds[s:s + 1]),
                index)
        return view

    def difference(self, s, theta):
        """Decode sequence ``s`` under ``theta``; the :class:`Difference` between
        its gold and decoded labelling (``delta`` zero outside ``free``)."""
        batch, index = self.view(s)
        layout, seq_ptr, gold = batch.layout, batch.seq_ptr, batch.gold
        w = theta[index]
        unary, pair, edge_offset = layout.potentials(w, batch.obs, 1, self.forbidden)
        method = self.method.bind(state_trans=layout.state_transitions(w, self.joint_states))
        labels, _, _ = method.map(seq_ptr, unary, pair)
        n_wrong = int(np.count_nonzero(labels != gold))
        if n_wrong == 0:
            return Difference(index, None, 0, 0.0, len(gold))
        truth = batch.gold_stats(edge_offset)
        pred = GoldStatistics(layout.graph, seq_ptr, labels, edge_offset)
        margin = (pred.score(unary, pair) - truth.score(unary, pair)
                  + float(method.extra_scores(seq_ptr, labels)[0]
                          - method.extra_scores(seq_ptr, gold)[0]))
        dunary = np.zeros_like(unary)
        dunary.ravel()[truth.unary_index] += 1.0
        dunary.ravel()[pred.unary_index] -= 1.0
        delta = layout.gradient(dunary, truth.pair_counts - pred.pair_counts, edge_offset,
                                batch.obs)
        if layout.n_state_pairs:
            states = self.joint_states
            delta[layout.bias_state:layout.bias_state + layout.n_state_pairs] = (
                layout.state_transition_gradient(
                    batch.gold_state_counts(states)
                    - state_pair_counts(states, seq_ptr, labels), states))
        if self.free is not None:
            delta[~self.free[index]] = 0.0
        return Difference(index, delta, n_wrong, max(float(margin), 0.0), len(gold))

    def loss_gradient(self, s, theta, scale=1.0):
        """Sequence ``s``'s unpenalised negative log-likelihood at the weights
        ``scale * theta`` and its gradient on its parameters: ``(index, loss, grad)``
        (``grad`` zero outside ``free``)."""
        batch, index = self.view(s)
        likelihood = Likelihood(batch, method=self.method, joint_states=self.joint_states,
                                sigma=np.inf, forbidden=self.forbidden, n_threads=1)
        loss, grad = likelihood.data_loss_gradient(scale * theta[index])
        if self.free is not None:
            grad[~self.free[index]] = 0.0
        return index, float(loss), grad

    def inference_stats(self):
        """None: exact inference, nothing to summarise."""
        return None
