"""Decoding: inference methods behind ``predict``, ``decode`` and ``predict_marginals``.

Every decoded sequence gets a :class:`SequenceDecoding` record: its labels and
how far the inference that produced them can be trusted.

``status`` of a labelling
    ``"exact"``: exact inference was used (Viterbi on one chain, over the
    product label space, or over the model's joint label states);
    ``"certified"``: a bound proves the labelling optimal;
    ``"converged"``: loopy max-product messages converged (the labelling is
    then locally optimal, not necessarily globally); ``"approximate"``: none of
    these.  Empty sequences are ``"exact"`` with ``n_iter == 0``.
"""
from dataclasses import dataclass, field

import numpy as np

from skfcrf._bp import inference
from skfcrf._bp.joint import joint_map, joint_marginals, supports_joint

__all__ = ["SequenceDecoding", "STATUSES", "resolve_method", "map_labels", "node_marginals"]

#: The statuses, from most to least trustworthy.
STATUSES = ("exact", "certified", "converged", "approximate")


@dataclass(frozen=True)
class SequenceDecoding:
    """The decoding of one sequence.

    Attributes
    ----------
    labels : ndarray of object
        ``(n_tokens, n_chains)``, or ``(n_tokens,)`` for a model fitted on one
        chain given as 1-D label sequences -- as :meth:`FactorialCRF.predict`.
    status : str
        One of :data:`STATUSES` (see the module docstring).
    n_iter : int
        Inference iterations spent on the sequence (TRP: spanning trees; 1 for
        exact inference, 0 for an empty sequence).
    log_prob : float
        ``log p(labels | x)``; NaN when the inference used gives none.
    gap : float
        Upper bound on how much better the best labelling's score can be;
        NaN when the method gives no bound (0 for exact and certified).
    """

    labels: np.ndarray
    status: str
    n_iter: int
    log_prob: float = field(default=float("nan"))
    gap: float = field(default=float("nan"))

    @property
    def converged(self):
        """True unless the status is ``"approximate"``."""
        return self.status != "approximate"


def resolve_method(inference_param, graph, joint_states=None):
    """The inference method an ``inference=`` setting means for a model.

    ``"auto"``: exact for one chain; for several, ``"joint"`` (exact over the
    model's joint label states) when :func:`~skfcrf._bp.joint.supports_joint`
    holds, else ``"trp"``.
    """
    if inference_param != "auto":
        if inference_param == "joint":
            if joint_states is None or not supports_joint(graph, len(joint_states)):
                raise ValueError("inference='joint' needs tied in-chain templates "
                                 "(transition_features='default') and at most 4096 "
                                 "observed label combinations")
        return inference_param
    if graph.n_chains == 1:
        return "exact"
    if joint_states is not None and supports_joint(graph, len(joint_states)):
        return "joint"
    return "trp"


def _nonempty(seq_ptr):
    """seq_ptr of the non-empty sequences and their indices."""
    lengths = np.diff(seq_ptr)
    keep = np.flatnonzero(lengths > 0)
    return np.concatenate([[0], np.cumsum(lengths[keep])]).astype(np.int64), keep


def _per_sequence(method, n_seq, keep, converged, n_it):
    """Status and iteration count of every sequence, empty ones included."""
    status = np.full(n_seq, "exact", dtype=object)
    n_iter = np.zeros(n_seq, dtype=np.int64)
    n_iter[keep] = n_it
    if method != "exact":
        status[keep] = np.where(converged, "converged", "approximate")
    return status, n_iter


def _all_exact(seq_ptr):
    """Status ``"exact"`` and one iteration for every non-empty sequence."""
    n_seq = len(seq_ptr) - 1
    return np.full(n_seq, "exact", dtype=object), (np.diff(seq_ptr) > 0).astype(np.int64)


def map_labels(graph, seq_ptr, unary, pair, method, *, max_iter, tol, seeds, n_threads,
               joint_states=None):
    """The most probable labelling of every sequence and its status.

    Returns
    -------
    labels : int32 ndarray of shape (N, n_chains)
    status : ndarray of str, shape (n_seq,)
    n_iter : int ndarray of shape (n_seq,)
    """
    if method == "joint":
        labels, _ = joint_map(graph, joint_states, seq_ptr, unary, pair, n_threads)
        return (labels, *_all_exact(seq_ptr))
    ptr, keep = _nonempty(seq_ptr)
    labels, converged, n_it = inference.map_assign(
        graph, ptr, unary, pair, method=method, max_iter=max_iter, tol=tol,
        seeds=seeds[keep], n_threads=n_threads)
    status, n_iter = _per_sequence(method, len(seq_ptr) - 1, keep, converged, n_it)
    return labels, status, n_iter


def node_marginals(graph, seq_ptr, unary, pair, method, *, max_iter, tol, seeds, n_threads,
                   joint_states=None):
    """Per-token label marginals ``(N, Ltot)`` of every chain, with status and iterations.

    The status of marginals is ``"exact"`` or, for TRP sum-product,
    ``"converged"`` / ``"approximate"``.
    """
    if method == "joint":
        node, _ = joint_marginals(graph, joint_states, seq_ptr, unary, pair, n_threads)
        return (node, *_all_exact(seq_ptr))
    ptr, keep = _nonempty(seq_ptr)
    node, _, _, converged, n_it = inference.marginals(
        graph, ptr, unary, pair, method=method, max_iter=max_iter, tol=tol,
        seeds=seeds[keep], n_threads=n_threads)
    status, n_iter = _per_sequence(method, len(seq_ptr) - 1, keep, converged, n_it)
    return node, status, n_iter
