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

An objective owns whatever its inference produces along the way: the
likelihood objective keeps, per evaluation, which sequences' TRP runs converged
and how many trees they took (:meth:`Likelihood.inference_stats`).

:data:`OBJECTIVES` maps the estimator's ``objective=`` names to the classes.
"""
import numpy as np

from skfcrf._bp import inference
from skfcrf.estimators._model import GoldStatistics

__all__ = ["TrainingBatch", "Objective", "PseudoLikelihood", "Likelihood", "OBJECTIVES"]


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
    """

    def __init__(self, X, seq_ptr, gold, layout, seeds):
        self.X = X
        self.seq_ptr = np.asarray(seq_ptr, dtype=np.int64)
        self.gold = np.ascontiguousarray(gold, dtype=np.int32)
        self.layout = layout
        self.seeds = seeds
        self.obs = layout.observation_rows(X, self.seq_ptr)
        self._gold_stats = None

    @property
    def n_sequences(self):
        return len(self.seq_ptr) - 1

    def gold_stats(self, edge_offset):
        """The gold labelling's statistics for the likelihood (built once)."""
        if self._gold_stats is None:
            self._gold_stats = GoldStatistics(self.layout.graph, self.seq_ptr, self.gold,
                                              edge_offset)
        return self._gold_stats

    def subset(self, seq_index):
        """The batch restricted to the given sequences (in that order)."""
        lengths = np.diff(self.seq_ptr)[seq_index]
        rows = np.concatenate([np.arange(self.seq_ptr[s], self.seq_ptr[s + 1])
                               for s in seq_index])
        seq_ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        return TrainingBatch(self.X[rows], seq_ptr, self.gold[rows], self.layout,
                             self.seeds[seq_index])


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
    """

    def __init__(self, batch, *, sigma, forbidden=None, n_threads=1, scale=1.0):
        self.batch = batch
        self.layout = batch.layout
        self.sigma = sigma
        self.forbidden = forbidden or {}
        self.n_threads = n_threads
        self.scale = scale
        self.parent = None      # the full-batch objective a mini-batch one came from

    @property
    def n_params(self):
        return self.layout.n_params

    @property
    def inv_var(self):
        """``1 / sigma**2`` (0 without a prior)."""
        return 0.0 if np.isinf(self.sigma) else 1.0 / self.sigma ** 2

    def data_loss_gradient(self, theta):
        """Unpenalised loss summed over the batch, and its gradient."""
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

    Computed by the fused kernel of :mod:`skfcrf._bp._pseudolikelihood`, one
    sequence at a time; bit-identical for every ``n_threads``.
    """

    def data_loss_gradient(self, theta):
        b = self.batch
        losses, grad = self.layout.pseudolikelihood(theta, b.obs, b.gold, self.n_threads,
                                                    self.forbidden)
        return float(losses.sum()), grad


class Likelihood(Objective):
    """Conditional log-likelihood with marginals from exact inference or TRP.

    Parameters
    ----------
    method : {"exact", "trp"}
        Inference for the marginals and ``log Z`` (TRP: the Bethe approximation).
    bp_max_iter, bp_tol : int, float
        TRP's iteration cap and tolerance.
    """

    def __init__(self, batch, *, method, bp_max_iter=1000, bp_tol=1e-6, **kwargs):
        super().__init__(batch, **kwargs)
        self.method = method
        self.bp_max_iter = bp_max_iter
        self.bp_tol = bp_tol
        self._converged = []
        self._n_iter = []

    def _options(self):
        return dict(super()._options(), method=self.method, bp_max_iter=self.bp_max_iter,
                    bp_tol=self.bp_tol)

    def _record(self, converged, n_iter):
        target = self.parent if self.parent is not None else self
        target._converged.append(np.asarray(converged))
        target._n_iter.append(np.asarray(n_iter))

    def data_loss_gradient(self, theta):
        b, layout = self.batch, self.layout
        unary, pair, edge_offset = layout.potentials(theta, b.obs, self.n_threads,
                                                     self.forbidden)
        node, pmarg, log_z, converged, n_iter = inference.marginals(
            layout.graph, b.seq_ptr, unary, pair, method=self.method,
            max_iter=self.bp_max_iter, tol=self.bp_tol, seeds=b.seeds,
            n_threads=self.n_threads)
        if self.method == "trp":
            self._record(converged, n_iter)
        stats = b.gold_stats(edge_offset)
        loss = float(log_z.sum() - stats.score(unary, pair))
        dunary = node
        dunary.ravel()[stats.unary_index] -= 1.0
        dpair = pmarg - stats.pair_counts
        dpair[~np.isfinite(pair)] = 0.0
        grad = layout.gradient(dunary, dpair, edge_offset, b.obs, self.n_threads)
        return loss, grad

    def inference_stats(self):
        if not self._converged:
            return None
        return {"method": self.method,
                "converged_fraction": float(np.concatenate(self._converged).mean()),
                "mean_iterations": float(np.concatenate(self._n_iter).mean())}


#: ``objective=`` name -> objective class.
OBJECTIVES = {"pseudolikelihood": PseudoLikelihood, "likelihood": Likelihood}
