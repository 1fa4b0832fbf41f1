"""The conditional likelihood (``objective="likelihood"``, the fine-tuning stage) and
its joint-state transition stage.
"""
import numpy as np

from skfcrf.inference import resolve_method
from skfcrf.objectives._base import Objective, Restricted, reused_rows
from skfcrf.objectives._chainwise import ChainTerms

__all__ = ["Likelihood", "StateTransitionStage"]


class Likelihood(Objective):
    """Conditional log-likelihood with marginals from exact inference or TRP.

    Parameters
    ----------
    method : InferenceMethod or {"exact", "joint", "trp"}
        Inference for the marginals and ``log Z`` (TRP: the Bethe
        approximation; joint: exact over ``joint_states``); a name is
        resolved by :func:`skfcrf.inference.resolve_method`.
    bp_max_iter, bp_tol : int, float
        TRP's iteration cap and tolerance.
    joint_states : ndarray of shape (S, n_chains), optional
        The model's label combinations, for ``method="joint"``.

    With joint-state transition weights in the layout (``method="joint"``
    only) their gradient is the expected minus the gold number of times each
    weighted state pair follows each other.

    One chain with every label given is computed by the fused kernel of the
    chain-wise objectives (:class:`~skfcrf.objectives._chainwise.ChainTerms`:
    scores, forward-backward and gradient per sequence, nothing of size
    tokens x labels kept between them), which is the same likelihood, faster.
    """

    def __init__(self, batch, *, method, bp_max_iter=1000, bp_tol=1e-6, joint_states=None,
                 **kwargs):
        super().__init__(batch, **kwargs)
        if isinstance(method, str):
            method = resolve_method(method, self.layout.graph, joint_states)
        if self.layout.n_state_pairs and not method.over_joint_states:
            raise ValueError("joint-state transitions need inference over the joint label "
                             f"states (inference='joint'), not {method.name!r}")
        self.method = method.bind(max_iter=bp_max_iter, tol=bp_tol, n_threads=self.n_threads,
                                  joint_states=joint_states)
        self.joint_states = joint_states
        self.bp_max_iter = bp_max_iter
        self.bp_tol = bp_tol
        self._converged = []
        self._n_iter = []
        self._node = None
        self._scores = None
        self._fused = (ChainTerms(batch, self.forbidden)
                       if self.layout.graph.n_chains == 1 and batch.known is None
                       and not self.clamp else None)

    def _options(self):
        return dict(super()._options(), method=self.method, bp_max_iter=self.bp_max_iter,
                    bp_tol=self.bp_tol, joint_states=self.joint_states)

    def _record(self, converged, n_iter):
        target = self.parent if self.parent is not None else self
        target._converged.append(np.asarray(converged))
        target._n_iter.append(np.asarray(n_iter))

    def _potentials(self, theta, reuse=False):
        """Log-potentials of the batch at ``theta`` (clamped if ``clamp``):
        ``unary, pair, edge_offset``.  ``reuse``: the scores in this objective's
        array of the previous evaluation (the caller drops them before the next)."""
        out = None
        if reuse:
            out, self._scores = reused_rows(
                self._scores, (self.batch.obs.shape[0], self.layout.score_width))
        unary, pair, edge_offset = self.layout.potentials(theta, self.batch.obs, self.n_threads,
                                                          self.forbidden, out=out)
        if self.clamp:
            unary = self.batch.given_labels().clamp(self.layout.graph, unary)
        return unary, pair, edge_offset

    def _inference(self, unary, pair, stats, state_trans, gold):
        """The method's :meth:`~skfcrf.inference.InferenceMethod.training_marginals` on the
        batch: ``node, pmarg, log_z, state_counts, converged, n_iter``, and ``gold_path``
        (per sequence the gold labelling's score outside ``unary`` and ``pair``, its
        joint-state transitions).  ``gold``: a dict that keeps ``stats.scores(unary,
        pair)`` under ``"scores"`` once a method asked for them (the caller's loss
        then reads the total from there instead of gathering the potentials again)."""
        b = self.batch
        method = self.method.bind(seeds=b.seeds, state_trans=state_trans)
        gold_path = method.extra_scores(b.seq_ptr, b.gold)
        out = None
        if method.writes_out:
            out, self._node = reused_rows(self._node, unary.shape)
        def lower():
            # the gold labelling's score is a lower bound on log Z
            gold["scores"] = stats.scores(unary, pair)
            return gold["scores"][1] + gold_path

        node, pmarg, log_z, state_counts, converged, n_iter = method.training_marginals(
            b.seq_ptr, unary, pair, lower=lower, out=out)
        return node, pmarg, log_z, state_counts, gold_path, converged, n_iter

    def _state_loss_gradient(self, gold_path, state_counts):
        """The joint-state transitions' part of the loss and their gradient."""
        return (-float(np.sum(gold_path)),
                self.layout.state_transition_gradient(
                    state_counts - self.batch.gold_state_counts(self.joint_states),
                    self.joint_states))

    def held_potentials(self, theta):
        """What :meth:`state_transition_loss_gradient` holds fixed: the log-potentials
        of ``theta`` (clamped if ``clamp``) and the gold labelling's score under them,
        in total and per sequence, ``(unary, pair, (gold_score, sequence_scores))``."""
        # a held stage's evaluations compute no scores: the kept array goes before the
        # held potentials are made, not to stand beside them
        self._scores = None
        unary, pair, edge_offset = self._potentials(theta)
        return unary, pair, self.batch.gold_stats(edge_offset).scores(unary, pair)

    def state_transition_loss_gradient(self, theta, held):
        """Unpenalised data loss at ``theta`` with the potentials ``held``
        (:meth:`held_potentials`) in place of ``theta``'s, and its gradient with
        respect to the joint-state transition weights alone (inference over the
        joint states): one joint-state forward-backward, no observation scores and no
        marginals (:meth:`~skfcrf.inference.JointStateInference.state_pair_expectations`)."""
        unary, pair, (gold_score, gold_sequences) = held
        b = self.batch
        state_trans = self.layout.state_transitions(theta, self.joint_states)
        method = self.method.bind(seeds=b.seeds, state_trans=state_trans)
        gold_path = method.extra_scores(b.seq_ptr, b.gold)
        # the gold labelling's score is a lower bound on log Z
        log_z, counts = method.state_pair_expectations(
            b.seq_ptr, unary, pair, lower=lambda: gold_sequences + gold_path)
        state_loss, state_grad = self._state_loss_gradient(gold_path, counts)
        return float(log_z.sum()) - gold_score + state_loss, state_grad

    def _data_loss_gradient(self, theta):
        if self._fused is not None:
            losses, grad = self._fused.losses_gradient(theta, self.n_threads)
            return float(losses.sum()), grad
        b, layout = self.batch, self.layout
        unary, pair, edge_offset = self._potentials(theta, reuse=True)
        stats = b.gold_stats(edge_offset)
        state_trans = layout.state_transitions(theta, self.joint_states)
        gold = {}
        node, pmarg, log_z, state_counts, gold_path, converged, n_iter = self._inference(
            unary, pair, stats, state_trans, gold)
        if not self.method.exact and not self.clamp:
            self._record(converged, n_iter)
        # the bits of stats.score(unary, pair), gathered once for the lower bound too
        gold_score = gold["scores"][0] if "scores" in gold else stats.score(unary, pair)
        loss = float(log_z.sum() - gold_score)
        dunary = node
        dunary.ravel()[stats.unary_index] -= 1.0
        dpair = pmarg - stats.pair_counts
        dpair[~np.isfinite(pair)] = 0.0
        grad = layout.gradient(dunary, dpair, edge_offset, b.obs, self.n_threads)
        if state_trans is not None:
            state_loss, grad[layout.bias_state:layout.bias_state + layout.n_state_pairs] = (
                self._state_loss_gradient(gold_path, state_counts))
            loss += state_loss
        return loss, grad

    def inference_stats(self):
        if not self._converged:
            return None
        return {"method": self.method.name,
                "converged_fraction": float(np.concatenate(self._converged).mean()),
                "mean_iterations": float(np.concatenate(self._n_iter).mean())}


class StateTransitionStage(Restricted):
    """The likelihood as a function of the joint-state transition weights alone.

    The other weights are held where ``theta`` has them: ``loss_gradient(v)`` is
    the likelihood's penalised loss at ``full(v)`` and its gradient with respect
    to the joint-state transition weights ``v`` -- what a solver minimises to
    move only them (the stage of ``FactorialCRF`` after the fine-tuning,
    ``state_transition_iter``).  A :class:`Restricted` likelihood that computes
    the log-potentials of the held weights once, so an evaluation is one
    joint-state forward-backward: no observation scores and no feature
    gradient (:meth:`Likelihood.held_potentials`,
    :meth:`Likelihood.state_transition_loss_gradient`).  With partial labels the
    clamped part (module docstring) is held the same way.  The likelihood must
    compute on this process's batch.

    Parameters
    ----------
    likelihood : Likelihood
        With ``method="joint"`` and a layout that has joint-state transition
        weights.
    theta : ndarray of shape (n_params,)
        All the weights; the joint-state transition weights are the starting point.
    """

    def __init__(self, likelihood, theta):
        if not likelihood.method.over_joint_states or not likelihood.layout.n_state_pairs:
            raise ValueError("the joint-state transition stage needs a likelihood over the "
                             "joint label states with joint-state transition weights")
        layout = likelihood.layout
        super().__init__(likelihood, np.arange(layout.n_params) >= layout.bias_state, theta)
        self.first = layout.bias_state
        held = self.theta[:self.first]
        self._held_penalty = 0.5 * likelihood.inv_var * float(held @ held)
        self._parts = []
        for sign, part in ((1.0, likelihood), (-1.0, likelihood.clamped_part())):
            if part is None:
                continue
            self._parts.append((sign, part, part.held_potentials(self.theta)))

    def loss_gradient(self, v):
        v = np.asarray(v, dtype=np.float64)
        theta = self.full(v)
        loss, grad = 0.0, np.zeros(v.size)
        for sign, part, held in self._parts:
            part_loss, part_grad = part.state_transition_loss_gradient(theta, held)
            loss += sign * part_loss
            grad += sign * part_grad
        lik = self.objective
        return (lik.scale * loss + self._held_penalty + 0.5 * lik.inv_var * float(v @ v),
                lik.scale * grad + lik.inv_var * v)
