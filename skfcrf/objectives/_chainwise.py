"""Chain-wise objectives: the chain-wise pseudolikelihood (``objective="chainwise"``) and
the independent chains' likelihoods (``objective="independent"``), over one
:class:`ChainTerms` kernel state each.
"""
import numpy as np

from skfcrf._blas import single_blas_thread
from skfcrf._kernels._chainwise import chainwise_objective
from skfcrf._kernels._contract import dense_rows, resolve_slots
from skfcrf._kernels.graph import COUPLING
from skfcrf.model._inspection import weight_mask
from skfcrf.objectives._base import Objective
from skfcrf.solvers import BlockObjective
from skfcrf.solvers._block import side_by_side

__all__ = ["allowed_by_joint_states", "ChainTerms", "ChainPseudoLikelihood", "IndependentChains"]


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
    (:meth:`~skfcrf.model._layout.ParameterLayout.kernel_tables`), the labels
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
        self.occurrences = np.bincount(batch.X.tocsr().indices, minlength=self.layout.n_features)
        self.dense = dense_rows(self.tables.feat_ptr, self.tables.ent_col, self.occurrences)
        self._table_cache = None
        self._slots = None      # (tables, dense, slots) of the last call
        self._workspace = {}    # the kernel's gradient accumulators, kept between calls

    def losses_gradient(self, theta, n_threads, chains=None, couplings=True):
        """Per chain its loss summed over the batch (``(n_chains,)``) and the gradient
        of their sum; ``chains`` (bool per chain, optional): only these chains' terms,
        the others' losses zero, at the feature-table work of their entries alone
        (:meth:`_table_of`).  ``couplings=False``: the couplings are left out, as if
        their weights were zero, and their gradient is zero (only right when none of
        their assignments is forbidden: :attr:`couplings_forbid`)."""
        b, layout = self.batch, self.layout
        theta = np.ascontiguousarray(theta, dtype=np.float64)
        tables, dense, chain_on = self.tables, self.dense, None
        reduced = chains is not None and not np.all(chains)
        if reduced:
            entries, tables, dense = self._table_of(chains)
            # the kernel's theta: the kept table entries, then everything after the table
            theta = np.concatenate([theta[entries], theta[layout.n_table:]])
            chain_on = np.asarray(chains, dtype=np.uint8)
        slots = self._resolved(tables, dense)
        # the kernel calls BLAS on L x L matrices from every thread: BLAS's own threads
        # would only oversubscribe the cores
        with single_blas_thread():
            losses, grad = chainwise_objective(tables, b.obs, b.gold, theta, n_threads,
                                               self.allowed, chain_on, dense, couplings,
                                               self._workspace, slots)
        if reduced:
            full = np.zeros(layout.n_params)
            full[entries] = grad[:len(entries)]
            full[layout.n_table:] = grad[len(entries):]
            grad = full
        return losses.sum(axis=0), grad

    @property
    def couplings_forbid(self):
        """Whether some coupling assignment is forbidden (then a chain's labels depend
        on the others' even with the coupling weights at zero)."""
        graph = self.layout.graph
        return any(np.any(mask) for e, mask in self.forbidden.items()
                   if graph.edge_kind[e] == COUPLING)

    def _resolved(self, tables, dense):
        """The batch's observations resolved against ``tables`` and ``dense``
        (:func:`~skfcrf._kernels._contract.resolve_slots`): a pair for
        ``obs.direct`` and ``obs.diff`` (None where there is none); kept for the
        last pair of objects asked (held, so that their ids stay theirs)."""
        if self._slots is None or self._slots[0] is not tables or self._slots[1] is not dense:
            of = None if dense is None else dense[0]
            direct, diff = self.batch.obs.direct, self.batch.obs.diff
            slots = (resolve_slots(direct[1], tables.feat_ptr, of),
                     None if diff is None else resolve_slots(diff[1], tables.feat_ptr, of))
            self._slots = (tables, dense, slots)
        return self._slots[2]

    def _table_of(self, chains):
        """``(entries, tables, dense)``: the feature-table entries of ``chains`` (bool
        per chain) and of the couplings, the kernel tables of the feature table
        reduced to them and its dense rows; kept for the last ``chains`` asked."""
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
            self._table_cache = (key, (entries, tables,
                                       dense_rows(tables.feat_ptr, tables.ent_col,
                                                  self.occurrences)))
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

    A :class:`~skfcrf.solvers.BlockObjective`: the loss is a sum of
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
        # per weight its block (-1: in none), and the blocks' weights side by side
        self._block_of = np.full(self.layout.n_params, -1, dtype=np.int64)
        for c, blk in enumerate(self.blocks):
            self._block_of[blk] = c
        self._block_perm, self._block_spans = side_by_side(self.blocks)
        self._active_cache = {}         # active blocks -> per weight whether in one of them
        # couplings at zero add nothing to a chain's unaries unless they forbid: the
        # kernel then leaves them out (x1.11 per evaluation on 300 dictations)
        self._couplings = self.terms.couplings_forbid

    def _chain_losses_gradient(self, theta, chains=None):
        # the data terms of the uncoupled model at any weights (the kernel computes the
        # forbidding couplings at zero weights)
        if self._couplings:
            theta = np.where(self._coupling, 0.0, theta)
        losses, grad = self.terms.losses_gradient(theta, self.n_threads, chains,
                                                  couplings=self._couplings)
        grad[self._coupling] = 0.0
        return losses, grad

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
        # each block's penalty over its weights in order (the sums of theta[blk] @
        # theta[blk]), from one gather of all the blocks' weights
        side = theta[self._block_perm]
        losses = np.full(len(self.blocks), np.nan)
        for c, on in enumerate(active):
            if on:
                part = side[self._block_spans[c]]
                losses[c] = self.scale * chain_losses[c] + 0.5 * inv_var * (part @ part)
        grad = self.scale * grad
        grad += np.where(self._active_weights(active), inv_var * theta, 0.0)
        grad[self._coupling] = 0.0
        return losses, grad

    def _active_weights(self, active):
        """Per weight whether it is in one of the blocks ``active`` (the last few
        patterns kept: a fit asks for all blocks or for the same few again and again)."""
        key = tuple(bool(a) for a in active)
        cache = self._active_cache
        if key not in cache:
            if len(cache) >= 4:
                cache.clear()
            cache[key] = np.append(np.asarray(key, dtype=bool), False)[self._block_of]
        return cache[key]

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
        (.23 and .72).  It counts dense products even for a chain the kernel
        multiplies as a sparse matrix (mostly forbidden transitions,
        :data:`skfcrf._kernels._chainwise.SPARSE_TRANSITIONS`), which then costs
        less than estimated: the iteration budgets, and so the fits, stay what
        they were before that kernel.
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
