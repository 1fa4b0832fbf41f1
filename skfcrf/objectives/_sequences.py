"""One training sequence at a time: what the online trainers need of the model.

The structured perceptron, passive-aggressive, AROW and per-sequence SGD
(:mod:`skfcrf.solvers`) update the weights after every sequence.  A sequence
touches few of them: the feature-table entries of the observations active in it,
and the biases.  :class:`SequenceTerms` keeps per sequence its *local* layout
(:meth:`~skfcrf.model._layout.ParameterLayout.local`), observations and gold
statistics, so an update computes potentials, decodes and maps counts back with
the model's own functions on those weights alone (``theta[index]``).

On a one-chain model decoded exactly (no joint-state weights) whole epochs also
run compiled (:mod:`skfcrf._kernels._online`): :attr:`SequenceTerms.compiled`,
:meth:`~SequenceTerms.margin_epoch`, :meth:`~SequenceTerms.sgd_epoch`.  They
give what the per-sequence methods give, to rounding, without the per-sequence
Python work or the local layouts.
"""
from collections import namedtuple

import numpy as np
import scipy.sparse as sp

from skfcrf._kernels import _online
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
    compiled : bool, default=True
        Offer the compiled epochs where the model allows them (module
        docstring); False: the per-sequence methods only.

    Raises
    ------
    ValueError
        With partial labels (a decoded labelling cannot be compared with a
        missing one), inexact inference or back-off transitions.
    """

    def __init__(self, batch, method, *, forbidden=None, joint_states=None, free=None,
                 compiled=True):
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
        self._chain = self._chain_problem() if compiled else None

    def _chain_problem(self):
        """The :class:`skfcrf._kernels._online.ChainProblem` of a one-chain model
        decoded by exact Viterbi without joint-state weights; None otherwise (the
        joint states of one chain are its labels: exact inference ignores them)."""
        layout, graph, b = self.layout, self.layout.graph, self.batch
        if (graph.n_chains != 1 or graph.n_edges > 1 or layout.n_state_pairs
                or self.method.name != "exact"):
            return None
        L = int(graph.n_labels[0])
        edge, bias_edge, edge_col = 0, 0, 0
        forbidden = np.zeros((L, L), dtype=bool)
        if graph.n_edges:
            edge = 1 if graph.edge_tied[0] else 2
            bias_edge, edge_col = int(layout.bias_edge[0]), max(int(layout.edge_col[0]), 0)
            if 0 in self.forbidden:
                forbidden = self.forbidden[0]
        X = sp.csr_matrix(b.X)
        free = np.ones(layout.n_params, dtype=bool) if self.free is None else self.free
        return _online.ChainProblem(
            b.seq_ptr, X.indptr, X.indices, X.data, b.gold[:, 0], layout.feat_ptr,
            layout.ent_col, L, layout.score_width, layout.n_params, layout.bias_unary,
            bias_edge, edge_col, edge, forbidden, free)

    @property
    def compiled(self):
        """Whether :meth:`margin_epoch`, :meth:`sgd_epoch` and :meth:`sequence_losses`
        are available (one chain, exact Viterbi, no joint-state weights)."""
        return self._chain is not None

    def margin_epoch(self, order, theta, total, u, rule, **options):
        """One compiled epoch of a margin trainer over the sequences ``order``, in
        place: ``rule`` ``"perceptron"`` (``theta += delta``),
        ``"passive_aggressive"`` (options ``pa_type``, ``c``, ``error_sensitive``) or
        ``"arow"`` (options ``gamma``, ``covariance``, updated); every step also adds
        ``u * step`` to ``total``, ``u`` counting the visits.  What the epoch loop
        of :mod:`skfcrf.solvers._margin` does with :meth:`difference`.  Returns
        ``(loss, u)``."""
        kind = {"perceptron": _online.PERCEPTRON, "arow": _online.AROW,
                "passive_aggressive": _online.PASSIVE_AGGRESSIVE}[rule]
        return _online.margin_epoch(self._chain, np.ascontiguousarray(order, np.int64), theta,
                                    total, int(u), kind, **options)

    def sgd_epoch(self, order, w, lam, t0, t):
        """One compiled epoch of per-sequence SGD over the sequences ``order``, in
        place (:meth:`skfcrf.solvers.SGD._epoch` with :meth:`loss_gradient`):
        returns ``(loss, t, scale)``, ``w`` still to be multiplied by ``scale``."""
        return _online.sgd_epoch(self._chain, np.ascontiguousarray(order, np.int64), w,
                                 float(lam), float(t0), int(t))

    def sequence_losses(self, order, theta):
        """Sum of the negative log-likelihoods of the sequences ``order`` at ``theta``
        (compiled)."""
        return _online.sequence_losses(self._chain, np.ascontiguousarray(order, np.int64),
                                       np.ascontiguousarray(theta, np.float64))

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
