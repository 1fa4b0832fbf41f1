"""Back-off transitions learnt by a deleted (held-out) likelihood.

A model with back-off transitions (``forbidden_transitions="backoff"``,
:func:`skfcrf.model._building.forbidden_assignments`) scores every in-chain
transition ``(i, j)`` of chain ``c`` that it has no weight of its own for by one
weight ``b_c[j]`` of its target label, so a labelling with a transition never
seen in training is improbable, not impossible.  The training data cannot tell
how probable such a transition is -- it has none, by definition, so its
likelihood drives ``b`` to ``-inf`` -- and weights trained with those
transitions forbidden lean on that: reopened, such a model prefers new
transitions wherever its unary scores disagree with the closed structure.  So the
joint stage of the fit trains every weight on a *deleted* likelihood
(:class:`DeletedLikelihood`): the training sequences are split into folds, and
fold ``k`` is scored with every transition not seen in the other folds as a
back-off transition -- as in Jelinek and Mercer's deleted interpolation, the
held-out folds say how often a transition new to the rest of the data occurs,
and the other weights learn to label such stretches from the observations.

The grouped joint-state kernel (:func:`skfcrf._kernels.joint.grouped_tables`)
keeps each evaluation exact and about as fast as the closed model's.
"""
import numpy as np

from skfcrf._kernels.graph import IN_CHAIN
from skfcrf._kernels.joint import joint_marginals
from skfcrf.model._building import select_sequences
from skfcrf.model._labels import seen_transitions
from skfcrf.objectives._base import Objective

__all__ = ["DeletedLikelihood", "fold_backoff"]

def _in_chain_edges(graph):
    return {int(graph.edge_a[e]): e for e in range(graph.n_edges)
            if graph.edge_kind[e] == IN_CHAIN}


class DeletedLikelihood(Objective):
    """The joint-state likelihood of a model with back-off transitions, each fold of the
    training sequences scored with the transitions it alone has as back-off ones.

    The training sequences are split into ``n_folds`` folds (sequence ``i`` in
    fold ``i % n_folds``).  The sequences of fold ``k`` are scored by the model
    whose back-off transitions are those not seen in the other folds, plus the
    layout's (``layout.backoff``: the transitions seen in at most one fold, which
    no fold could estimate a weight of their own from): so the back-off weights
    learn how often a transition new to the rest of the data occurs, and the
    other weights learn to label such stretches without the transition
    structure's help.  The loss is the sum over the folds of the negative
    log-likelihood, penalised as every objective is (:mod:`skfcrf.objectives`);
    its gradient moves every weight, the back-off weights included.

    Parameters
    ----------
    batch : TrainingBatch
        Every label given; its layout has the back-off weights.
    joint_states : int32 ndarray of shape (S, C)
    n_folds : int, default=5
    **kwargs
        ``sigma``, ``forbidden`` (the explicit forbidden assignments only),
        ``n_threads`` (:class:`~skfcrf.objectives._base.Objective`).
    """

    supports_partial_labels = False

    def __init__(self, batch, *, joint_states, n_folds=5, **kwargs):
        super().__init__(batch, **kwargs)
        layout, graph = self.layout, self.layout.graph
        if not layout.n_backoff:
            raise ValueError("DeletedLikelihood needs a layout with back-off weights")
        self.joint_states = joint_states
        self.n_folds = n_folds
        n_seq = batch.n_sequences
        fold_of = np.arange(n_seq) % max(1, min(int(n_folds), n_seq))
        edges = _in_chain_edges(graph)
        self.folds = []
        for k in np.unique(fold_of):
            inside, outside = np.flatnonzero(fold_of == k), np.flatnonzero(fold_of != k)
            other_rows, other_ptr = select_sequences(batch.seq_ptr, outside)
            seen = seen_transitions(graph, other_ptr, batch.gold[other_rows])
            masks = {c: (~seen[edges[c]] | layout.backoff[c])
                     & ~self.forbidden.get(edges[c], np.zeros_like(seen[edges[c]]))
                     for c in layout.backoff}
            self.folds.append((batch.subset(inside), masks, self._active_pairs(masks)))

    def _options(self):
        return dict(super()._options(), joint_states=self.joint_states, n_folds=self.n_folds)

    def _active_pairs(self, masks):
        """``(S, S)``: the weighted state pairs of the layout (joint-state transitions)
        not through a back-off transition of ``masks`` -- a pair new to the other
        folds has no weight of its own either; None without joint-state transitions."""
        layout, states = self.layout, self.joint_states
        if not layout.n_state_pairs:
            return None
        i, j = layout._state_pair_index(states)
        ok = (i >= 0) & (j >= 0)
        active = np.zeros((len(states), len(states)), bool)
        active[i[ok], j[ok]] = True
        for c, mask in masks.items():
            active &= ~mask[states[:, c][:, None], states[:, c][None, :]]
        return active

    def _data_loss_gradient(self, theta):
        layout, graph = self.layout, self.layout.graph
        states = self.joint_states
        b = layout.backoff_weights(theta)
        edges = _in_chain_edges(graph)
        loss = 0.0
        grad = np.zeros(layout.n_params)
        grad_b = {c: np.zeros(len(w)) for c, w in b.items()}
        state_trans = layout.state_transitions(theta, states)
        grad_state = np.zeros(layout.n_state_pairs)
        for part, masks, active in self.folds:
            unary, pair, eo = layout.potentials(theta, part.obs, self.n_threads, self.forbidden)
            for c, mask in masks.items():
                L = len(b[c])
                block = pair[eo[edges[c]]:eo[edges[c]] + L * L].reshape(L, L)
                np.copyto(block, np.broadcast_to(b[c], (L, L)), where=mask)
            stats = part.gold_stats(eo)
            st = None if active is None else np.where(active, state_trans, 0.0)
            node, pmarg, log_z, unseen, *expected = joint_marginals(
                graph, states, part.seq_ptr, unary, pair, self.n_threads,
                pair_marginals=True, backoff=masks, state_trans=st,
                state_pairs=st is not None)
            loss += float(log_z.sum() - stats.score(unary, pair))
            if st is not None:
                gold_steps = np.where(active, part.gold_state_counts(states), 0.0)
                loss -= float((gold_steps * st).sum())
                grad_state += layout.state_transition_gradient(
                    np.where(active, expected[0] - gold_steps, 0.0), states)
            node.ravel()[stats.unary_index] -= 1.0
            dpair = pmarg - stats.pair_counts
            for c, mask in masks.items():
                L = len(b[c])
                gold = stats.pair_counts[eo[edges[c]]:eo[edges[c]] + L * L].reshape(L, L)
                grad_b[c] += unseen[c] - np.where(mask, gold, 0.0).sum(axis=0)
                dpair[eo[edges[c]]:eo[edges[c]] + L * L][mask.ravel()] = 0.0
            dpair[~np.isfinite(pair)] = 0.0
            grad += layout.gradient(node, dpair, eo, part.obs, self.n_threads)
        for c, at in layout.bias_backoff.items():
            grad[at:at + len(grad_b[c])] = grad_b[c]
        grad[layout.bias_state:layout.bias_state + layout.n_state_pairs] = grad_state
        return loss, grad


def fold_backoff(graph, seq_ptr, gold, forbidden, chains, n_folds=5):
    """Chain -> mask of the in-chain transitions a :class:`DeletedLikelihood` model
    scores by back-off weights: those seen in at most one fold of the training
    sequences (sequence ``i`` in fold ``i % n_folds``) -- no fold can learn a weight
    of their own from the others -- and not forbidden by the user (``forbidden``,
    edge -> mask)."""
    seq_ptr = np.asarray(seq_ptr, np.int64)
    n_seq = len(seq_ptr) - 1
    fold_of = np.arange(n_seq) % max(1, min(int(n_folds), n_seq))
    edges = _in_chain_edges(graph)
    n_seen = {c: 0 for c in chains}
    for k in np.unique(fold_of):
        rows, ptr = select_sequences(seq_ptr, np.flatnonzero(fold_of == k))
        seen = seen_transitions(graph, ptr, gold[rows])
        for c in chains:
            n_seen[c] = n_seen[c] + seen[edges[c]]
    return {c: (n_seen[c] <= 1) & ~forbidden.get(edges[c], np.zeros(n_seen[c].shape, bool))
            for c in chains}
