"""Training objectives: the penalised negative log-(pseudo)likelihood of a training batch.

Every objective is an object over a :class:`TrainingBatch` with one method the
solvers call, ``loss_gradient(theta) -> (loss, grad)``, in the manner of
scikit-learn's ``LinearModelLoss``::

    loss(theta) = scale * data_loss(theta) + sum(theta ** 2) / (2 * sigma ** 2)

``data_loss`` is the unpenalised negative log-(pseudo)likelihood summed over the
batch's sequences; ``scale`` is 1 for the whole training set and
``n_sequences / batch_size`` for a mini-batch (:meth:`Objective.subset`), so a
mini-batch loss is an unbiased estimate of the full one.  ``theta`` is laid out
as :class:`~skfcrf.estimators._model.ParameterLayout` describes.

Partial labels (``None`` in ``y``): the batch's ``gold`` is then a complete
labelling that agrees with the given labels (the gaps filled by
:func:`skfcrf.estimators._partial.complete_labels`) and ``known`` marks the
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
:meth:`~skfcrf.estimators._model.ParameterLayout.kernel_tables` builds once per
objective (offsets, edge tables, feature table, forbidden assignments); a call
passes only ``theta``, the observation rows and the gold labels.  The chain-wise
objectives own their kernel state as a :class:`ChainTerms`; the independent
chains are a :class:`~skfcrf.estimators._solvers.BlockObjective`.

:data:`OBJECTIVES` maps the estimator's ``objective=`` names to the classes.
"""
import numpy as np
from threadpoolctl import threadpool_limits

from skfcrf._kernels._chainwise import chainwise_objective
from skfcrf._kernels.states import state_steps
from skfcrf.estimators._fixed import FixedLabels
from skfcrf.estimators._inspection import weight_mask
from skfcrf.estimators._model import GoldStatistics
from skfcrf.estimators._solvers import BlockObjective
from skfcrf.inference import resolve_method

__all__ = ["TrainingBatch", "Objective", "PseudoLikelihood", "ChainTerms",
           "ChainPseudoLikelihood", "IndependentChains",
           "Likelihood", "Restricted", "StateTransitionStage", "OBJECTIVES", "allowed_by_joint_states"]


class TrainingBatch:
    """Training sequences in the form the kernels need.

    Parameters
    ----------
    X : scipy.sparse.csr_matrix of shape (N, n_features)
        Encoded observations of all tokens, sequences stacked.
    seq_ptr : int64 ndarray of shape (n_seq + 1,)
        Sequence ``s`` owns rows ``seq_ptr[s]:seq_ptr[s + 1]``.
    gold : ndarray of shape (N, n_chains)
        Gold label index of every token and chain.
    layout : ParameterLayout
        The model's parameter layout (it prepares the observation rows).
    seeds : uint64 ndarray of shape (n_seq,)
        Per-sequence seeds of TRP's spanning trees.
    known : bool ndarray of shape (N, n_chains), optional
        Which labels of ``gold`` were given (partial labels); None: all.
    """

    def __init__(self, X, seq_ptr, gold, layout, seeds, known=None):
        self.X = X
        self.seq_ptr = np.asarray(seq_ptr, dtype=np.int64)
        self.gold = np.ascontiguousarray(gold, dtype=np.int32)
        self.layout = layout
        self.seeds = seeds
        self.known = None if known is None or known.all() else np.asarray(known, dtype=bool)
        self.obs = layout.observation_rows(X, self.seq_ptr)
        self._gold_stats = None

    @property
    def n_sequences(self):
        return len(self.seq_ptr) - 1

    def given_labels(self):
        """The given labels as :class:`~skfcrf.estimators._fixed.FixedLabels`
        (``-1`` where missing), for clamping."""
        index = self.gold if self.known is None else np.where(self.known, self.gold, -1)
        return FixedLabels(index.astype(np.int32), self.seq_ptr, None)

    def partial_sequences(self):
        """Indices of the sequences with a missing label."""
        if self.known is None:
            return np.zeros(0, dtype=np.int64)
        missing = ~self.known.all(axis=1)
        seq_of = np.repeat(np.arange(self.n_sequences), np.diff(self.seq_ptr))
        return np.unique(seq_of[missing])

    def gold_stats(self, edge_offset):
        """The gold labelling's statistics for the likelihood (built once)."""
        if self._gold_stats is None:
            self._gold_stats = GoldStatistics(self.layout.graph, self.seq_ptr, self.gold,
                                              edge_offset)
        return self._gold_stats

    def gold_state_counts(self, states):
        """``(S, S)``: how often each pair of ``states`` follows each other in ``gold``
        (built once per ``states``)."""
        cached = getattr(self, "_gold_state_counts", None)
        if cached is None or cached[0] is not states:
            _, prev, cur = state_steps(states, self.seq_ptr, self.gold)
            counts = np.zeros((len(states), len(states)))
            np.add.at(counts, (prev, cur), 1.0)
            cached = self._gold_state_counts = (states, counts)
        return cached[1]

    def subset(self, seq_index):
        """The batch restricted to the given sequences (in that order)."""
        lengths = np.diff(self.seq_ptr)[seq_index]
        rows = np.concatenate([np.arange(self.seq_ptr[s], self.seq_ptr[s + 1])
                               for s in seq_index])
        seq_ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        known = None if self.known is None else self.known[rows]
        return TrainingBatch(self.X[rows], seq_ptr, self.gold[rows], self.layout,
                             self.seeds[seq_index], known)


class Objective:
    """Base class: Gaussian-penalised data loss of a training batch.

    Parameters
    ----------
    batch : TrainingBatch
    sigma : float
        Prior standard deviation (``np.inf``: no penalty).
    forbidden : dict, optional
        Edge index -> boolean ``(L_a, L_b)`` mask of forbidden assignments.
    n_threads : int, default=1
        Threads of the kernels.
    scale : float, default=1.0
        Factor on the data loss (see the module docstring).
    clamp : bool, default=False
        Evaluate with the batch's given labels clamped (the second term of
        the partial-label loss; see the module docstring).
    """

    #: whether the objective marginalises over missing labels
    supports_partial_labels = True

    def __init__(self, batch, *, sigma, forbidden=None, n_threads=1, scale=1.0, clamp=False):
        self.batch = batch
        self.layout = batch.layout
        self.sigma = sigma
        self.forbidden = forbidden or {}
        self.n_threads = n_threads
        self.scale = scale
        self.clamp = clamp
        self.parent = None      # the full-batch objective a mini-batch one came from
        if batch.known is not None and not self.supports_partial_labels:
            raise ValueError(
                f"{type(self).__name__} needs every label: its terms condition on the "
                "neighbouring labels, and y has missing labels (None); use the "
                "'independent' or 'likelihood' objective, which marginalise over them")
        self._clamped = None

    @property
    def n_params(self):
        return self.layout.n_params

    @property
    def inv_var(self):
        """``1 / sigma**2`` (0 without a prior)."""
        return 0.0 if np.isinf(self.sigma) else 1.0 / self.sigma ** 2

    def data_loss_gradient(self, theta):
        """Unpenalised loss summed over the batch, and its gradient."""
        return self._minus_given(lambda objective: objective._data_loss_gradient(theta))

    def _minus_given(self, evaluate):
        """``evaluate(self)`` minus ``evaluate`` of the clamped part, if any: the
        ``(value, gradient)`` of the partial-label loss (module docstring)."""
        value, grad = evaluate(self)
        given = self.clamped_part()
        if given is not None:
            value_given, grad_given = evaluate(given)
            value, grad = value - value_given, grad - grad_given
        return value, grad

    def clamped_part(self):
        """This objective over the partially labelled sequences, their given labels
        clamped (built once); None when every label is given."""
        if self._clamped is None and not self.clamp and self.batch.known is not None:
            part = self.batch.subset(self.batch.partial_sequences())
            self._clamped = type(self)(part, clamp=True, **self._options())
        return self._clamped

    def _data_loss_gradient(self, theta):
        """The loss and gradient with ``gold`` taken as complete (clamped if ``clamp``)."""
        raise NotImplementedError

    def loss_gradient(self, theta):
        """Penalised loss and gradient at ``theta`` (what the solvers minimise)."""
        loss, grad = self.data_loss_gradient(theta)
        inv_var = self.inv_var
        return (self.scale * loss + 0.5 * inv_var * (theta @ theta),
                self.scale * grad + inv_var * theta)

    def _options(self):
        """Keyword arguments that rebuild this objective over another batch."""
        return dict(sigma=self.sigma, forbidden=self.forbidden, n_threads=self.n_threads)

    def subset(self, seq_index):
        """The objective of a mini-batch, scaled to estimate the full loss."""
        sub = type(self)(self.batch.subset(seq_index), scale=self.batch.n_sequences
                         / len(seq_index), **self._options())
        sub.parent = self
        return sub

    def inference_stats(self):
        """Summary of the inference run by the evaluations so far (None: no inference)."""
        return None


class PseudoLikelihood(Objective):
    """Factor-based pseudolikelihood: every factor conditioned on its gold Markov blanket.

    Computed by the fused kernel of :mod:`skfcrf._kernels._pseudolikelihood`, one
    sequence at a time; bit-identical for every ``n_threads``.  Needs every
    label (``ValueError`` with missing ones).
    """

    supports_partial_labels = False

    def __init__(self, batch, **kwargs):
        super().__init__(batch, **kwargs)
        self._tables = self.layout.kernel_tables(self.forbidden)

    def _data_loss_gradient(self, theta):
        b = self.batch
        losses, grad = self.layout.pseudolikelihood(theta, b.obs, b.gold, self.n_threads,
                                                    tables=self._tables)
        return float(losses.sum()), grad


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

    def _options(self):
        return dict(super()._options(), method=self.method, bp_max_iter=self.bp_max_iter,
                    bp_tol=self.bp_tol, joint_states=self.joint_states)

    def _record(self, converged, n_iter):
        target = self.parent if self.parent is not None else self
        target._converged.append(np.asarray(converged))
        target._n_iter.append(np.asarray(n_iter))

    def _potentials(self, theta):
        """Log-potentials of the batch at ``theta`` (clamped if ``clamp``):
        ``unary, pair, edge_offset``."""
        unary, pair, edge_offset = self.layout.potentials(theta, self.batch.obs, self.n_threads,
                                                          self.forbidden)
        if self.clamp:
            unary = self.batch.given_labels().clamp(self.layout.graph, unary)
        return unary, pair, edge_offset

    def _inference(self, unary, pair, stats, state_trans):
        """The method's :meth:`~skfcrf.inference.InferenceMethod.training_marginals` on the
        batch: ``node, pmarg, log_z, state_counts, converged, n_iter``, and ``gold_path``
        (per sequence the gold labelling's score outside ``unary`` and ``pair``, its
        joint-state transitions)."""
        b = self.batch
        method = self.method.bind(seeds=b.seeds, state_trans=state_trans)
        gold_path = method.extra_scores(b.seq_ptr, b.gold)
        # the gold labelling's score is a lower bound on log Z
        node, pmarg, log_z, state_counts, converged, n_iter = method.training_marginals(
            b.seq_ptr, unary, pair, lower=lambda: stats.sequence_scores(unary, pair) + gold_path)
        return node, pmarg, log_z, state_counts, gold_path, converged, n_iter

    def _state_loss_gradient(self, gold_path, state_counts):
        """The joint-state transitions' part of the loss and their gradient."""
        return (-float(np.sum(gold_path)),
                self.layout.state_transition_gradient(
                    state_counts - self.batch.gold_state_counts(self.joint_states),
                    self.joint_states))

    def held_potentials(self, theta):
        """What :meth:`state_transition_loss_gradient` holds fixed: the log-potentials
        of ``theta`` (clamped if ``clamp``), the gold statistics and the gold
        labelling's score under them, ``(unary, pair, stats, gold_score)``."""
        unary, pair, edge_offset = self._potentials(theta)
        stats = self.batch.gold_stats(edge_offset)
        return unary, pair, stats, stats.score(unary, pair)

    def state_transition_loss_gradient(self, theta, held):
        """Unpenalised data loss at ``theta`` with the potentials ``held``
        (:meth:`held_potentials`) in place of ``theta``'s, and its gradient with
        respect to the joint-state transition weights alone (inference over the
        joint states): one joint-state forward-backward, no observation scores."""
        unary, pair, stats, gold_score = held
        state_trans = self.layout.state_transitions(theta, self.joint_states)
        _, _, log_z, counts, gold_path, _, _ = self._inference(unary, pair, stats, state_trans)
        state_loss, state_grad = self._state_loss_gradient(gold_path, counts)
        return float(log_z.sum()) - gold_score + state_loss, state_grad

    def _data_loss_gradient(self, theta):
        b, layout = self.batch, self.layout
        unary, pair, edge_offset = self._potentials(theta)
        stats = b.gold_stats(edge_offset)
        state_trans = layout.state_transitions(theta, self.joint_states)
        node, pmarg, log_z, state_counts, gold_path, converged, n_iter = self._inference(
            unary, pair, stats, state_trans)
        if not self.method.exact and not self.clamp:
            self._record(converged, n_iter)
        loss = float(log_z.sum() - stats.score(unary, pair))
        dunary = node
        dunary.ravel()[stats.unary_index] -= 1.0
        dpair = pmarg - stats.pair_counts
        dpair[~np.isfinite(pair)] = 0.0
        grad = layout.gradient(dunary, dpair, edge_offset, b.obs, self.n_threads)
        if state_trans is not None:
            state_loss, grad[layout.bias_state:] = self._state_loss_gradient(gold_path,
                                                                             state_counts)
            loss += state_loss
        return loss, grad

    def inference_stats(self):
        if not self._converged:
            return None
        return {"method": self.method.name,
                "converged_fraction": float(np.concatenate(self._converged).mean()),
                "mean_iterations": float(np.concatenate(self._n_iter).mean())}


def allowed_by_joint_states(gold, states, label_offset):
    """``(N, Ltot)`` uint8: may chain ``c`` take label ``l`` at a token, given the others' gold?

    True where the label combination (``l`` on chain ``c``, the gold labels on
    every other chain) is one of ``states`` (an ``(S, C)`` array of label
    indices).
    """
    n, n_chains = gold.shape
    allowed = np.zeros((n, int(label_offset[-1])), dtype=np.uint8)
    for c in range(n_chains):
        others = [k for k in range(n_chains) if k != c]
        if not others:
            allowed[:, label_offset[0]:label_offset[1]] = 1
            continue
        radix = np.maximum(np.max(np.vstack([gold[:, others], states[:, others]]), axis=0) + 1, 1)
        weights = np.concatenate([np.cumprod(radix[::-1])[::-1][1:], [1]]).astype(np.int64)
        token_code = gold[:, others].astype(np.int64) @ weights
        state_code = states[:, others].astype(np.int64) @ weights
        codes, inverse = np.unique(token_code, return_inverse=True)
        for i, code in enumerate(codes):
            labels = states[state_code == code, c]
            if labels.size:
                rows = np.flatnonzero(inverse == i)
                allowed[np.ix_(rows, label_offset[c] + labels)] = 1
    return allowed


class ChainTerms:
    """The chain-wise kernel's terms over a batch: per chain ``-log p(y_c | y_-c, x)``.

    Owned by the objectives computed with them (:class:`ChainPseudoLikelihood`,
    :class:`IndependentChains`): the kernel tables of the layout
    (:meth:`~skfcrf.estimators._model.ParameterLayout.kernel_tables`), the labels
    each chain may take (``allowed``, ``(N, Ltot)`` uint8 or None: all), and the
    tables of a feature table reduced to some chains' entries.

    Parameters
    ----------
    batch : TrainingBatch
    forbidden : dict
        Edge index -> boolean ``(L_a, L_b)`` mask of forbidden assignments.
    allowed : uint8 ndarray of shape (N, Ltot), optional
    """

    def __init__(self, batch, forbidden, allowed=None):
        self.batch = batch
        self.layout = batch.layout
        self.forbidden = forbidden
        self.allowed = allowed
        self.tables = self.layout.kernel_tables(forbidden)
        self._table_cache = None

    def losses_gradient(self, theta, n_threads, chains=None):
        """Per chain its loss summed over the batch (``(n_chains,)``) and the gradient
        of their sum; ``chains`` (bool per chain, optional): only these chains' terms,
        the others' losses zero, at the feature-table work of their entries alone
        (:meth:`_table_of`)."""
        b, layout = self.batch, self.layout
        theta = np.ascontiguousarray(theta, dtype=np.float64)
        tables, chain_on = self.tables, None
        reduced = chains is not None and not np.all(chains)
        if reduced:
            entries, tables = self._table_of(chains)
            # the kernel's theta: the kept table entries, then everything after the table
            theta = np.concatenate([theta[entries], theta[layout.n_table:]])
            chain_on = np.asarray(chains, dtype=np.uint8)
        # the kernel calls BLAS on L x L matrices from every thread: BLAS's own threads
        # would only oversubscribe the cores
        with threadpool_limits(limits=1, user_api="blas"):
            losses, grad = chainwise_objective(tables, b.obs, b.gold, theta, n_threads,
                                               self.allowed, chain_on)
        if reduced:
            full = np.zeros(layout.n_params)
            full[entries] = grad[:len(entries)]
            full[layout.n_table:] = grad[len(entries):]
            grad = full
        return losses.sum(axis=0), grad

    def _table_of(self, chains):
        """``(entries, tables)``: the feature-table entries of ``chains`` (bool per
        chain) and of the couplings, and the kernel tables of the feature table
        reduced to them; kept for the last ``chains`` asked."""
        key = tuple(np.flatnonzero(chains))
        if self._table_cache is None or self._table_cache[0] != key:
            layout = self.layout
            keep = weight_mask(layout, "coupling", None)
            for c in key:
                keep |= weight_mask(layout, None, c)
            entries = np.flatnonzero(keep[:layout.n_table])
            n_per_feature = np.bincount(self.entry_feature()[entries],
                                        minlength=layout.n_features)
            feat_ptr = np.zeros(layout.n_features + 1, dtype=np.int64)
            np.cumsum(n_per_feature, out=feat_ptr[1:])
            tables = layout.kernel_tables(self.forbidden,
                                          (feat_ptr, layout.ent_col[entries]))
            self._table_cache = (key, (entries, tables))
        return self._table_cache[1]

    def entry_feature(self):
        """Per feature-table entry its observation (feature) index."""
        return np.repeat(np.arange(self.layout.n_features), np.diff(self.layout.feat_ptr))


def _clamped_allowed(batch, allowed):
    """``allowed`` with only the given label left at every given (token, chain)."""
    off = batch.layout.graph.label_offset
    for c in range(len(off) - 1):
        rows = (np.arange(len(batch.gold)) if batch.known is None
                else np.flatnonzero(batch.known[:, c]))
        keep = allowed[rows, off[c] + batch.gold[rows, c]]
        allowed[rows, off[c]:off[c + 1]] = 0
        allowed[rows, off[c] + batch.gold[rows, c]] = keep
    return allowed


class _ChainwiseObjective(Objective):
    """An objective whose data loss is a sum of chain terms (:class:`ChainTerms`).

    ``joint_states`` (optional ``(S, n_chains)``): chain ``c`` runs over the
    labels that form one of these combinations with the other chains' gold
    labels.  Clamped (``clamp``), every given label is the only one left.
    """

    def __init__(self, batch, *, joint_states=None, **kwargs):
        super().__init__(batch, **kwargs)
        self.joint_states = joint_states
        off = np.ascontiguousarray(self.layout.graph.label_offset, dtype=np.int32)
        allowed = (None if joint_states is None else
                   allowed_by_joint_states(batch.gold, np.asarray(joint_states), off))
        if self.clamp:
            if allowed is None:
                allowed = np.ones((len(batch.gold), int(off[-1])), np.uint8)
            allowed = _clamped_allowed(batch, allowed)
        self.terms = ChainTerms(batch, self.forbidden, allowed)

    def chain_losses_gradient(self, theta, chains=None):
        """Per chain the unpenalised data loss summed over the batch (``(n_chains,)``),
        and the gradient of their sum.

        ``chains`` (bool per chain, optional): only these chains' terms, the
        others' losses zero; the feature-table work is then that of their
        entries alone (:meth:`ChainTerms.losses_gradient`).
        """
        return self._minus_given(
            lambda objective: objective._chain_losses_gradient(theta, chains))

    def _chain_losses_gradient(self, theta, chains=None):
        return self.terms.losses_gradient(theta, self.n_threads, chains)

    def _data_loss_gradient(self, theta):
        chain_losses, grad = self._chain_losses_gradient(theta)
        return float(chain_losses.sum()), grad


class ChainPseudoLikelihood(_ChainwiseObjective):
    """Chain-wise (blocked) pseudolikelihood: ``sum_c -log p(y_c | y_-c, x)``.

    Each chain's exact conditional likelihood given the other chains' gold
    labels (forward-backward over that chain, couplings folded into its
    unaries): in-chain dependencies are exact, only the couplings are
    conditioned.  With one chain it is the likelihood.  Computed by the fused
    kernel of :mod:`skfcrf._kernels._chainwise`; bit-identical for every
    ``n_threads``.

    Parameters
    ----------
    joint_states : ndarray of shape (S, n_chains), optional
        The label combinations the model allows (e.g. those seen in
        training): chain ``c``'s conditional then runs over the labels that
        form an allowed combination with the other chains' gold labels.

    Needs every label (``ValueError`` with missing ones): a chain's term
    conditions on the other chains' labels.
    """

    supports_partial_labels = False

    def _options(self):
        return dict(super()._options(), joint_states=self.joint_states)


class IndependentChains(_ChainwiseObjective, BlockObjective):
    """The chains' likelihoods without couplings: ``sum_c -log p(y_c | x)``.

    The coupling-free model is the independent chains: each chain's exact
    likelihood by forward-backward over it alone.  Loss and gradient are those
    of ``theta`` with its coupling weights set to zero, and the gradient is
    zero on them, so a solver never moves them (from zeros, or from a warm
    start's values, which pass through unchanged); a fine-tuning stage with the
    joint likelihood then learns them (``FactorialCRF``'s default).  Computed
    by the chain-wise kernel (:class:`ChainTerms`), whose couplings then
    contribute nothing.

    A :class:`~skfcrf.estimators._solvers.BlockObjective`: the loss is a sum of
    one function per chain's weights (its unary and in-chain templates).

    Missing labels are marginalised: a chain's term for a sequence is
    ``log Z_c - log Z_c(given labels)``, the second forward-backward over the
    chain restricted to its given labels at the tokens that have one.
    """

    supports_partial_labels = True

    def __init__(self, batch, **kwargs):
        super().__init__(batch, **kwargs)
        # the weights that couple chains: couplings and joint-state transitions
        self._coupling = (weight_mask(self.layout, "coupling", None)
                          | weight_mask(self.layout, "state_transition", None))
        self.blocks = [np.flatnonzero(weight_mask(self.layout, None, c) & ~self._coupling)
                       for c in range(self.layout.graph.n_chains)]

    def loss_gradient(self, theta):
        theta = np.array(theta, dtype=np.float64)
        theta[self._coupling] = 0.0
        loss, grad = super().loss_gradient(theta)
        grad[self._coupling] = 0.0
        return loss, grad

    def block_losses_gradient(self, theta, active=None):
        """Per block (chain) its penalised loss, and the gradient (zero on couplings).

        ``active`` (bool per block, optional): only those blocks are evaluated,
        at the cost of their chains alone; the others' losses are NaN and their
        gradient zero.
        """
        theta = np.array(theta, dtype=np.float64)
        theta[self._coupling] = 0.0
        active = np.ones(len(self.blocks), dtype=bool) if active is None else np.asarray(active)
        chain_losses, grad = self.chain_losses_gradient(theta, active)
        inv_var = self.inv_var
        losses = np.array([self.scale * chain_losses[c]
                           + 0.5 * inv_var * (theta[blk] @ theta[blk]) if on else np.nan
                           for c, (blk, on) in enumerate(zip(self.blocks, active))])
        grad = self.scale * grad
        for blk, on in zip(self.blocks, active):
            if on:
                grad[blk] += inv_var * theta[blk]
        grad[self._coupling] = 0.0
        return losses, grad

    def block_costs(self):
        """Estimated time of one evaluation of each block (chain) alone, in units of
        a feature-table update.

        The chain's feature-table work (every non-zero observation times the
        chain's entries of it, for the scores and again for the gradient), the
        pass over every non-zero and over the per-token score matrix that any
        evaluation makes, and forward-backward (``L_c x L_c`` products per
        token).  The weights of the three terms (1 per table update and
        non-zero, 1.8 per score-matrix cell, 0.12 per product term) are timings
        of the kernel on the dictation benchmark, where the estimated ratios to
        the costliest chain (.27 and .65) came within 15% of the measured ones
        (.23 and .72).
        """
        layout, obs = self.layout, self.batch.obs
        nnz = np.bincount(obs.direct[1], minlength=layout.n_features).astype(np.float64)
        if obs.diff is not None:
            nnz += np.bincount(obs.diff[1], minlength=layout.n_features)
        table = 2.0 * nnz[self.terms.entry_feature()]
        n_tokens = len(self.batch.gold)
        shared = 2.0 * nnz.sum() + 1.8 * n_tokens * layout.score_width
        return np.array([table[blk[blk < layout.n_table]].sum() + shared
                         + 0.12 * n_tokens * float(layout.graph.n_labels[c]) ** 2
                         for c, blk in enumerate(self.blocks)])


class Restricted:
    """An objective over some of the weights, the others held where ``theta`` has them.

    ``loss_gradient(u)`` is the objective's at ``full(u)``, with the gradient
    restricted to the free weights: what a solver minimises to move only them.
    Any objective, including one evaluated on a cluster
    (:class:`skfcrf.dask.DaskFactorialCRF`'s joint-state transition stage).

    Parameters
    ----------
    objective : Objective
    free : bool ndarray of shape (n_params,)
        The weights that move.
    theta : ndarray of shape (n_params,)
        Values of all the weights; the free ones are the starting point.
    """

    def __init__(self, objective, free, theta):
        self.objective = objective
        self.free = np.asarray(free, dtype=bool)
        self.theta = np.array(theta, dtype=np.float64)

    @property
    def start(self):
        return self.theta[self.free].copy()

    def full(self, u):
        """All the weights, with ``u`` in place of the free ones."""
        theta = self.theta.copy()
        theta[self.free] = u
        return theta

    def loss_gradient(self, u):
        loss, grad = self.objective.loss_gradient(self.full(u))
        return loss, grad[self.free]

    def inference_stats(self):
        return self.objective.inference_stats()


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


#: ``objective=`` name -> objective class.
OBJECTIVES = {"pseudolikelihood": PseudoLikelihood, "chainwise": ChainPseudoLikelihood,
              "independent": IndependentChains, "likelihood": Likelihood}
