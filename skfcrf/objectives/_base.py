"""The objective contract, ``loss_gradient(theta) -> (loss, grad)``, and a restriction
of an objective to some of its weights.
"""
import numpy as np

from skfcrf._blas import axpy

__all__ = ["Objective", "Restricted", "reused_rows"]


def reused_rows(array, shape, n_rows=None):
    """A ``shape`` view of ``array``, an objective's float64 scratch array of
    ``n_rows`` (default ``shape[0]``) rows kept between evaluations, or of a new
    one where ``array`` is None or too small: ``(view, array)``.  A new array of
    the size of a batch's scores or marginals is faulted in and cleared by the
    operating system page by page at every evaluation (8% of a joint likelihood
    evaluation); the caller uses the view up before asking again."""
    n_rows = shape[0] if n_rows is None else n_rows
    if array is None or array.shape[1] != shape[1] or array.shape[0] < shape[0]:
        array = np.empty((max(n_rows, shape[0]), shape[1]))
    return array[:shape[0]], array


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
        theta = np.asarray(theta, dtype=np.float64)
        grad = np.multiply(grad, self.scale, dtype=np.float64)  # a new array: ours to update
        if inv_var:
            axpy(theta, grad, inv_var)
        return self.scale * loss + 0.5 * inv_var * (theta @ theta), grad

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
