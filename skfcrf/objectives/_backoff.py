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

Each evaluation is exact: one forward-backward per fold over the joint label
states on the grouped transition form (:func:`skfcrf._kernels.joint.
grouped_tables`), about three times the transition work of the closed model's
sparse products on the dictations (one evaluation of the fine-tuning about twice
the closed one's).  Before the fine-tuning the back-off weights start where each
chain's own deleted likelihood puts them (:class:`ChainBackoffStage`, one
forward-backward per chain over its own labels); after it the joint-state
transition weights move alone (:class:`HeldStage`, the held weights' potentials
computed once).  A
joint-state transition weight is dropped, per fold and from the fitted model,
on the same terms as a transition's own weight.
"""
import numpy as np
from scipy.optimize import minimize
from scipy.special import lambertw

from skfcrf._kernels.graph import IN_CHAIN, Graph
from skfcrf._kernels.joint import joint_marginals, state_index
from skfcrf._kernels.states import rescue_sequences
from skfcrf.model._building import BACKOFF_FOLDS, select_sequences
from skfcrf.model._labels import seen_transitions
from skfcrf.model._layout import labelled_pair_rows
from skfcrf.objectives._base import Objective, Restricted, reused_rows

#: :meth:`ChainBackoffStage.solve` stops a chain once no back-off weight's gradient
#: exceeds this many expected transitions (scaled as the loss is): the model's expected
#: back-off transitions into every label within that of the held-out folds' (and the
#: prior's pull).  Beyond it the loss is nearly flat in the weights of labels the
#: folds seldom or never enter, far below zero: on the dictations' 44-label chain
#: L-BFGS-B took 50 more evaluations (83 in all) to move such weights by up to 69
#: more nats for 1.8% of the loss, and the fine-tuning does not move them after
#: (``benchmarks/history``, thirty-eighth session).
BACKOFF_COUNT_TOL = 0.5

__all__ = ["BACKOFF_COUNT_TOL", "ChainBackoffStage", "DeletedLikelihood", "HeldStage",
           "fold_backoff", "fold_state_pair_counts"]


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
    n_folds : int, default=BACKOFF_FOLDS
    **kwargs
        ``sigma``, ``forbidden`` (the explicit forbidden assignments only),
        ``n_threads`` (:class:`~skfcrf.objectives._base.Objective`).
    """

    supports_partial_labels = False

    def __init__(self, batch, *, joint_states, n_folds=BACKOFF_FOLDS, **kwargs):
        super().__init__(batch, **kwargs)
        layout, graph = self.layout, self.layout.graph
        if not layout.n_backoff:
            raise ValueError("DeletedLikelihood needs a layout with back-off weights")
        self.joint_states = joint_states
        self.n_folds = n_folds
        fold_of = _fold_of(batch.n_sequences, n_folds)
        edges = _in_chain_edges(graph)
        pairs = (_state_pair_codes(joint_states, batch.seq_ptr, batch.gold)
                 if layout.n_state_pairs else None)
        self.folds = []
        for k in np.unique(fold_of):
            inside, outside = np.flatnonzero(fold_of == k), np.flatnonzero(fold_of != k)
            other_rows, other_ptr = select_sequences(batch.seq_ptr, outside)
            seen = seen_transitions(graph, other_ptr, batch.gold[other_rows])
            masks = {c: (~seen[edges[c]] | layout.backoff[c])
                     & ~self.forbidden.get(edges[c], np.zeros_like(seen[edges[c]]))
                     for c in layout.backoff}
            active = self._active_pairs(masks)
            if active is not None:
                active &= _state_pairs_seen(len(joint_states), pairs, fold_of != k)
            self.folds.append((batch.subset(inside), masks, active))
        self._node = None       # the folds' node marginals, one fold at a time (_fold_loss)
        self._scores = None     # and their scores (_fold_potentials)

    def _options(self):
        return dict(super()._options(), joint_states=self.joint_states, n_folds=self.n_folds)

    def _active_pairs(self, masks):
        """``(S, S)``: the weighted state pairs of the layout (joint-state transitions)
        not through a back-off transition of ``masks`` (the caller also drops those
        the other folds do not have: a pair new to them has no weight of its own
        either); None without joint-state transitions."""
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

    def _fold_potentials(self, theta, part, masks, reuse=False):
        """Fold ``part``'s potentials at ``theta`` with its back-off transitions
        (``masks``) at the back-off weights: ``unary, pair, edge_offset``.
        ``reuse``: the scores in the one array of every fold's (the caller uses
        them up before the next fold's)."""
        layout = self.layout
        out = None
        if reuse:
            out, self._scores = reused_rows(self._scores, (part.obs.shape[0], layout.score_width),
                                            self._longest_fold)
        unary, pair, eo = layout.potentials(theta, part.obs, self.n_threads, self.forbidden,
                                            out=out)
        self._set_backoff(pair, eo, layout.backoff_weights(theta), masks)
        return unary, pair, eo

    def _set_backoff(self, pair, eo, b, masks):
        edges = _in_chain_edges(self.layout.graph)
        for c, mask in masks.items():
            L = len(b[c])
            block = pair[eo[edges[c]]:eo[edges[c]] + L * L].reshape(L, L)
            np.copyto(block, np.broadcast_to(b[c], (L, L)), where=mask)

    def _fold_loss(self, theta, fold, unary, pair, eo):
        """One fold's loss and its expectations: ``(loss, node, dpair, grad_b,
        grad_state)``, ``node`` minus the gold labels' indicators, ``dpair`` the
        expected minus the gold pair counts (zero at the back-off pairs), ``grad_b``
        chain -> expected minus gold back-off transitions into each label,
        ``grad_state`` the joint-state transition weights' gradient (None)."""
        layout, graph, states = self.layout, self.layout.graph, self.joint_states
        part, masks, active = fold
        stats = part.gold_stats(eo)
        st = None if active is None else np.where(
            active, layout.state_transitions(theta, states), 0.0)
        node, pmarg, log_z, unseen, *expected = joint_marginals(
            graph, states, part.seq_ptr, unary, pair, self.n_threads, pair_marginals=True,
            backoff=masks, state_trans=st, state_pairs=st is not None,
            out=self._node_rows(unary.shape))
        # the gold labelling's score is a lower bound on log Z: a sequence below it (or
        # with marginals not finite) lost mass in the scaled pass and is redone
        gold_score, lower = stats.scores(unary, pair)
        if st is not None:
            lower += part.gold_state_path_scores(states, st)
        rescue_sequences(graph, states, part.seq_ptr, unary, pair, node, pmarg, log_z, lower,
                         self.n_threads, st, expected[0] if expected else None, masks, unseen)
        loss = float(log_z.sum() - gold_score)
        grad_state = None
        if st is not None:
            state_loss, grad_state = self._state_terms(part, active, st, expected[0])
            loss += state_loss
        node.ravel()[stats.unary_index] -= 1.0
        dpair = pmarg - stats.pair_counts
        edges = _in_chain_edges(graph)
        grad_b = {}
        for c, mask in masks.items():
            L = int(graph.n_labels[c])
            at = eo[edges[c]]
            gold = stats.pair_counts[at:at + L * L].reshape(L, L)
            grad_b[c] = unseen[c] - np.where(mask, gold, 0.0).sum(axis=0)
            dpair[at:at + L * L][mask.ravel()] = 0.0
        dpair[~np.isfinite(pair)] = 0.0
        return loss, node, dpair, grad_b, grad_state

    def _state_terms(self, part, active, st, expected):
        """Fold ``part``'s joint-state transition terms: the loss's (minus the gold
        steps' scores ``st``) and the gradient of the weights ``active`` (the
        ``expected`` state pair counts minus the gold ones)."""
        gold_steps = np.where(active, part.gold_state_counts(self.joint_states), 0.0)
        return (-float((gold_steps * st).sum()),
                self.layout.state_transition_gradient(
                    np.where(active, expected - gold_steps, 0.0), self.joint_states))

    def _fold_state_loss(self, theta, fold, unary, pair, eo, gold):
        """:meth:`_fold_loss`'s loss and joint-state transition gradient alone, the
        potentials held (:class:`HeldStage`; ``gold``: the gold labelling's score
        under them, in total and per sequence): one grouped forward-backward without
        the marginals' sums.  Counts that come out not finite are left to
        :meth:`_fold_loss`, whose marginals tell the sequences apart."""
        part, masks, active = fold
        graph, states = self.layout.graph, self.joint_states
        st = np.where(active, self.layout.state_transitions(theta, states), 0.0)
        _, _, log_z, _, expected = joint_marginals(
            graph, states, part.seq_ptr, unary, pair, self.n_threads, pair_marginals=True,
            backoff=masks, state_trans=st, state_pairs=True, marginals=False)
        if not np.isfinite(expected).all():
            loss, _, _, _, grad_state = self._fold_loss(theta, fold, unary, pair, eo)
            return loss, grad_state
        gold_score, lower = gold
        # the gold labelling's score is a lower bound on log Z (as in _fold_loss)
        rescue_sequences(graph, states, part.seq_ptr, unary, pair, None, None, log_z,
                         lower + part.gold_state_path_scores(states, st), self.n_threads, st,
                         expected, masks, None, check_nodes=False)
        state_loss, grad_state = self._state_terms(part, active, st, expected)
        return float(log_z.sum() - gold_score) + state_loss, grad_state

    def _node_rows(self, shape):
        """A ``shape`` view of the one array every fold's node marginals are written
        into: a fold's are used up before the next fold's are computed."""
        view, self._node = reused_rows(self._node, shape, self._longest_fold)
        return view

    @property
    def _longest_fold(self):
        """The most tokens of a fold."""
        return max(len(fold[0].gold) for fold in self.folds)

    def _data_loss_gradient(self, theta):
        layout = self.layout
        loss = 0.0
        grad = np.zeros(layout.n_params)
        for fold in self.folds:
            unary, pair, eo = self._fold_potentials(theta, fold[0], fold[1], reuse=True)
            fold_loss, node, dpair, grad_b, grad_state = self._fold_loss(
                theta, fold, unary, pair, eo)
            loss += fold_loss
            grad += layout.gradient(node, dpair, eo, fold[0].obs, self.n_threads)
            for c, at in layout.bias_backoff.items():
                grad[at:at + len(grad_b[c])] += grad_b[c]
            if grad_state is not None:
                grad[layout.bias_state:layout.bias_state + layout.n_state_pairs] += grad_state
        return loss, grad

    def held_stage(self, theta):
        """This objective over the joint-state transition weights alone, the others
        held at ``theta`` (:class:`HeldStage`)."""
        return HeldStage(self, theta)

    def chain_backoff_stage(self, theta):
        """The back-off weights alone, each chain's under its own deleted likelihood,
        the other weights at ``theta`` (:class:`ChainBackoffStage`)."""
        return ChainBackoffStage(self, theta)


class ChainBackoffStage(Restricted):
    """The back-off weights alone, each chain's under its own deleted likelihood.

    Chain ``c``'s back-off weights ``b_c`` minimise the deleted likelihood of
    chain ``c``'s linear-chain model alone: its unary and in-chain potentials at
    ``theta`` (no couplings, joint-state transitions or other chains), fold ``k``
    scored with the transitions of the :class:`DeletedLikelihood`'s masks at
    ``b_c``.  The chains do not interact, so each is solved on its own
    (:meth:`solve`); an evaluation is one forward-backward per fold over the
    chain's own labels (the grouped back-off form, :func:`~skfcrf._kernels.joint.
    joint_marginals` with one state per label), a small part of the joint one's.

    The estimator starts the fine-tuning from these weights.  Under the joint
    deleted likelihood the fine-tuning hardly moves the back-off weights from a
    constant start, and a joint stage of their own after it cost as much as the
    fine-tuning itself (``benchmarks/history``, thirty-fourth session).

    Parameters
    ----------
    deleted : DeletedLikelihood
    theta : ndarray of shape (n_params,)
        All the weights (of ``deleted.layout``); the back-off ones are the start.
    """

    def __init__(self, deleted, theta):
        layout = deleted.layout
        first = layout.bias_state + layout.n_state_pairs
        super().__init__(deleted, np.arange(layout.n_params) >= first, theta)
        held = self.theta[~self.free]
        self._held_penalty = 0.5 * deleted.inv_var * float(held @ held)
        graph = layout.graph
        edges = _in_chain_edges(graph)
        # per chain and fold: its unary columns, in-chain block, back-off mask,
        # sequences, the gold score without the back-off transitions and the gold
        # back-off transitions into each label, then the last two per sequence
        self._parts = {c: [] for c in layout.bias_backoff}
        self._node = None       # the node marginals of one fold at a time (chain_loss_gradient)
        # per chain its one-chain graph and one joint state per label
        self._chain_graphs = {
            c: (Graph.build([int(graph.n_labels[c])], [(0, 0, IN_CHAIN, True)]),
                np.arange(int(graph.n_labels[c]), dtype=np.int32)[:, None])
            for c in layout.bias_backoff}
        for part, masks, _ in deleted.folds:
            unary, pair, eo = deleted._fold_potentials(self.theta, part, masks)
            rows = labelled_pair_rows(part.gold, part.seq_ptr)
            n_seq = part.n_sequences
            seq_of = np.repeat(np.arange(n_seq), np.diff(part.seq_ptr))
            for c in layout.bias_backoff:
                L, lo = int(graph.n_labels[c]), int(graph.label_offset[c])
                u = np.ascontiguousarray(unary[:, lo:lo + L])
                block = np.array(pair[eo[edges[c]]:eo[edges[c]] + L * L]).reshape(L, L)
                gold = part.gold[:, c]
                prev, cur = gold[rows - 1], gold[rows]
                new = masks[c][prev, cur]
                fixed_seq = (np.bincount(seq_of, u[np.arange(len(gold)), gold], n_seq)
                             + np.bincount(seq_of[rows[~new]], block[prev[~new], cur[~new]],
                                           n_seq))
                fixed = (u[np.arange(len(gold)), gold].sum()
                         + block[prev[~new], cur[~new]].sum())
                counts_seq = np.zeros((n_seq, L))
                np.add.at(counts_seq, (seq_of[rows[new]], cur[new]), 1.0)
                self._parts[c].append((u, block, masks[c], part.seq_ptr, fixed,
                                       counts_seq.sum(axis=0), fixed_seq, counts_seq))

    def chain_loss_gradient(self, c, b):
        """Chain ``c``'s scaled deleted negative log-likelihood at its back-off
        weights ``b`` and its gradient (no penalty)."""
        deleted = self.objective
        L = len(b)
        graph, states = self._chain_graphs[c]
        loss, grad = 0.0, np.zeros(L)
        longest = max(len(part[0]) for part in self._parts[c])
        for u, block, mask, seq_ptr, fixed, counts, fixed_seq, counts_seq in self._parts[c]:
            pair = block.copy()
            np.copyto(pair, np.broadcast_to(b, (L, L)), where=mask)
            pair = pair.ravel()
            # one array for every fold's node marginals, used up before the next fold's
            # (a new one is faulted in page by page at every call)
            out, self._node = reused_rows(self._node, u.shape, longest)
            node, pmarg, log_z, unseen = joint_marginals(graph, states, seq_ptr, u, pair,
                                                         deleted.n_threads, pair_marginals=True,
                                                         backoff={0: mask}, out=out)
            # below the gold labelling's score, or expectations not finite: mass lost
            # in the scaled pass, redone (the node marginals are not used)
            rescue_sequences(graph, states, seq_ptr, u, pair, node, pmarg, log_z,
                             fixed_seq + counts_seq @ b, deleted.n_threads, backoff={0: mask},
                             unseen=unseen, check_nodes=not np.isfinite(unseen[0]).all())
            loss += float(log_z.sum()) - fixed - float(counts @ b)
            grad += unseen[0] - counts
        return deleted.scale * loss, deleted.scale * grad

    def loss_gradient(self, v):
        v = np.asarray(v, dtype=np.float64)
        loss, grad = self._held_penalty + 0.5 * self.objective.inv_var * float(v @ v), \
            self.objective.inv_var * v
        for c, (lo, hi) in self._spans().items():
            chain_loss, chain_grad = self.chain_loss_gradient(c, v[lo:hi])
            loss += chain_loss
            grad[lo:hi] += chain_grad
        return loss, grad

    def _spans(self):
        """Chain -> its back-off weights' span in the free weights."""
        layout = self.objective.layout
        first = layout.bias_state + layout.n_state_pairs
        return {c: (at - first, at - first + int(layout.graph.n_labels[c]))
                for c, at in layout.bias_backoff.items()}

    def rare_start(self, c, b):
        """Chain ``c``'s back-off weights one step from ``b``, each label's the
        minimiser of its penalised loss were back-off transitions rare.

        Then the expected number of back-off transitions into label ``j`` is
        ``K_j exp(b_j)`` (``K_j`` read at ``b``), and label ``j``'s loss
        ``K_j exp(b_j) - G_j b_j`` (``G_j`` the gold ones) is least at
        ``log(G_j / K_j)``; with ``G_j = 0`` the penalty keeps it finite,
        ``K_j exp(b_j) + b_j**2 / (2 sigma**2)`` least at ``-W(K_j sigma**2)``
        (Lambert's W).  At seed scale L-BFGS-B from there reached the same
        minimum in about half the time it took from ``b`` (thirty-fourth
        session's log)."""
        deleted = self.objective
        _, grad = self.chain_loss_gradient(c, b)
        gold = deleted.scale * sum(part[5] for part in self._parts[c])
        with np.errstate(over="ignore"):
            K = (grad + gold) * np.exp(-b)
        start = np.array(b, dtype=np.float64)
        seen = (K > 0) & (gold > 0) & np.isfinite(K)
        start[seen] = np.log(gold[seen] / K[seen])
        never = (K > 0) & (gold == 0) & np.isfinite(K)
        start[never] = -lambertw(K[never] / deleted.inv_var).real
        return start

    def solve(self, max_iter, tol):
        """The back-off weights minimising each chain's penalised loss, chain by
        chain (scipy's L-BFGS-B from :meth:`rare_start`, at most ``max_iter``
        iterations, relative loss reduction ``tol``, largest gradient
        :data:`BACKOFF_COUNT_TOL`): ``(weights, iterations)``, the iterations of
        the chain that took the most."""
        inv_var = self.objective.inv_var
        gtol = BACKOFF_COUNT_TOL * self.objective.scale
        v, most = self.start, 0
        for c, (lo, hi) in self._spans().items():
            def fun(b, c=c):
                loss, grad = self.chain_loss_gradient(c, b)
                return loss + 0.5 * inv_var * float(b @ b), grad + inv_var * b
            result = minimize(fun, self.rare_start(c, v[lo:hi]), jac=True,
                              method="L-BFGS-B",
                              options=dict(maxiter=max_iter, ftol=tol, gtol=gtol))
            v[lo:hi] = result.x
            most = max(most, int(result.nit))
        return v, most


class HeldStage(Restricted):
    """:class:`DeletedLikelihood` as a function of the joint-state transition
    weights alone.

    They enter neither the unary nor the coupling potentials, so the held
    weights' potentials are computed once per fold and an evaluation is one
    grouped forward-backward per fold: no observation scores, no feature
    gradient and no marginals (as
    :class:`~skfcrf.objectives._likelihood.StateTransitionStage`;
    :meth:`DeletedLikelihood._fold_state_loss`).
    """

    def __init__(self, deleted, theta):
        layout = deleted.layout
        at = np.arange(layout.n_params)
        free = (at >= layout.bias_state) & (at < layout.bias_state + layout.n_state_pairs)
        super().__init__(deleted, free, theta)
        held = self.theta[~free]
        self._held_penalty = 0.5 * deleted.inv_var * float(held @ held)
        deleted._scores = None      # not needed while the potentials are held
        self._held = [deleted._fold_potentials(self.theta, fold[0], fold[1])
                      for fold in deleted.folds]
        # the gold labellings' scores under the held potentials, in total and per sequence
        self._gold = [fold[0].gold_stats(eo).scores(unary, pair)
                      for fold, (unary, pair, eo) in zip(deleted.folds, self._held)]

    def loss_gradient(self, v):
        v = np.asarray(v, dtype=np.float64)
        deleted = self.objective
        theta = self.full(v)
        loss, grad = 0.0, np.zeros(v.size)
        for fold, (unary, pair, eo), gold in zip(deleted.folds, self._held, self._gold):
            fold_loss, grad_state = deleted._fold_state_loss(theta, fold, unary, pair, eo, gold)
            loss += fold_loss
            grad += grad_state
        return (deleted.scale * loss + self._held_penalty + 0.5 * deleted.inv_var * float(v @ v),
                deleted.scale * grad + deleted.inv_var * v)


def _fold_of(n_seq, n_folds):
    """The fold of every sequence: sequence ``i`` in fold ``i % n_folds``."""
    return np.arange(n_seq) % max(1, min(int(n_folds), n_seq))


def _state_pair_codes(states, seq_ptr, gold):
    """The pairs of ``states`` at consecutive tokens of the labellings ``gold``
    ``(N, C)`` (pairs with a missing label, or a label combination not in
    ``states``, left out): ``(sequence, i * S + j)``, ``i`` the first token's state
    and ``j`` the second's, one entry per pair of tokens."""
    seq_ptr = np.asarray(seq_ptr, np.int64)
    gold = np.asarray(gold)
    rows = labelled_pair_rows(gold, seq_ptr)
    i, j = state_index(states, gold[rows - 1]), state_index(states, gold[rows])
    ok = (i >= 0) & (j >= 0)
    seq = np.searchsorted(seq_ptr, rows[ok], side="right") - 1
    return seq, i[ok] * len(states) + j[ok]


def _state_pairs_seen(S, pairs, selected):
    """``(S, S)``: the state pairs of :func:`_state_pair_codes`'s ``pairs`` in the
    sequences ``selected`` (a boolean per sequence)."""
    seq, code = pairs
    seen = np.zeros(S * S, bool)
    seen[code[selected[seq]]] = True
    return seen.reshape(S, S)


def fold_state_pair_counts(states, seq_ptr, gold, n_folds=BACKOFF_FOLDS):
    """``(S, S)``: in how many folds (:func:`fold_backoff`'s) each pair of ``states``
    occurs at consecutive tokens; a joint-state transition weight needs two
    (:class:`DeletedLikelihood`)."""
    fold_of = _fold_of(len(seq_ptr) - 1, n_folds)
    pairs = _state_pair_codes(states, seq_ptr, gold)
    return sum(_state_pairs_seen(len(states), pairs, fold_of == k).astype(int)
               for k in np.unique(fold_of))


def fold_backoff(graph, seq_ptr, gold, forbidden, chains, n_folds=BACKOFF_FOLDS):
    """Chain -> mask of the in-chain transitions a :class:`DeletedLikelihood` model
    scores by back-off weights: those seen in at most one fold of the training
    sequences (sequence ``i`` in fold ``i % n_folds``) -- no fold can learn a weight
    of their own from the others -- and not forbidden by the user (``forbidden``,
    edge -> mask)."""
    seq_ptr = np.asarray(seq_ptr, np.int64)
    fold_of = _fold_of(len(seq_ptr) - 1, n_folds)
    edges = _in_chain_edges(graph)
    n_seen = {c: 0 for c in chains}
    for k in np.unique(fold_of):
        rows, ptr = select_sequences(seq_ptr, np.flatnonzero(fold_of == k))
        seen = seen_transitions(graph, ptr, gold[rows])
        for c in chains:
            n_seen[c] = n_seen[c] + seen[edges[c]]
    return {c: (n_seen[c] <= 1) & ~forbidden.get(edges[c], np.zeros(n_seen[c].shape, bool))
            for c in chains}
