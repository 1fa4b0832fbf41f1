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

``log_prob`` of a labelling
    ``score(labels) - log Z``, the score being the sum of the labelling's
    log-potentials and ``log Z`` the log partition function of the same
    potentials (:func:`log_partition`).  Exact when the status is ``"exact"``
    (forward-backward over one chain or the product space, the forward pass
    over the joint label states; a labelling outside the joint label states
    has ``-inf``).  With
    TRP ``log Z`` is the Bethe estimate (minus the Bethe free energy of TRP's
    sum-product beliefs), so ``log_prob`` is an estimate too, capped at 0.
    With fixed labels both the score and ``log Z`` are those of the clamped
    model, so ``log_prob`` is ``log p(labels | x, fixed labels)``.

n-best (:func:`decode_ranked` with ``n_best > 1``)
    Exact k-best (A* search, :mod:`skfcrf._bp._nbest`) over the states of
    exact inference (one chain's labels, the product space, the joint label
    states): the ``n_best`` best labellings, distinct, best first, all
    ``"exact"``.  With TRP an approximation: best-first search over
    chain-wise moves from the TRP labelling
    (:func:`skfcrf._bp.nbest.chainwise_nbest`); the alternatives are
    ``"approximate"``.
"""
from dataclasses import dataclass, field

import numpy as np

from skfcrf._bp import inference
from skfcrf._bp.graph import pair_layout
from skfcrf._bp.joint import joint_map, joint_marginals, supports_joint, underflowed
from skfcrf._bp.nbest import (
    chainwise_nbest,
    labelling_scores,
    logdomain_state_marginals,
    product_states,
    sequence_pair,
    state_log_partition,
    state_nbest,
    state_path_scores,
)

__all__ = ["SequenceDecoding", "STATUSES", "resolve_method", "map_labels", "node_marginals",
           "sum_product", "log_probs", "decode_ranked", "marginals_given", "check_feasible",
           "locate_conflict"]

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
    alternatives : tuple of SequenceDecoding
        With ``decode(X, n_best=k)``: the next best labellings (ranks 2 to at
        most ``k``), best first, each with its own ``labels``, ``status`` and
        ``log_prob``; empty for ``n_best=1``.
    """

    labels: np.ndarray
    status: str
    n_iter: int
    log_prob: float = field(default=float("nan"))
    gap: float = field(default=float("nan"))
    alternatives: tuple = field(default=())

    @property
    def ranked(self):
        """This labelling followed by its alternatives: the n-best list, best first."""
        return (self, *self.alternatives)

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
               joint_states=None, state_trans=None):
    """The most probable labelling of every sequence and its status.

    Returns
    -------
    labels : int32 ndarray of shape (N, n_chains)
    status : ndarray of str, shape (n_seq,)
    n_iter : int ndarray of shape (n_seq,)
    """
    if method == "joint":
        labels, _ = joint_map(graph, joint_states, seq_ptr, unary, pair, n_threads,
                              state_trans=state_trans)
        return (labels, *_all_exact(seq_ptr))
    ptr, keep = _nonempty(seq_ptr)
    labels, converged, n_it = inference.map_assign(
        graph, ptr, unary, pair, method=method, max_iter=max_iter, tol=tol,
        seeds=seeds[keep], n_threads=n_threads)
    status, n_iter = _per_sequence(method, len(seq_ptr) - 1, keep, converged, n_it)
    return labels, status, n_iter


def sum_product(graph, seq_ptr, unary, pair, method, *, max_iter, tol, seeds, n_threads,
                joint_states=None, state_trans=None):
    """Node marginals ``(N, Ltot)``, ``log Z`` per sequence, status and iterations.

    ``log Z`` is exact for ``"exact"`` and ``"joint"``, the Bethe estimate for
    ``"trp"``; 0 for empty sequences, ``-inf`` when no labelling is allowed.
    """
    if method == "joint":
        node, log_z = joint_marginals(graph, joint_states, seq_ptr, unary, pair, n_threads,
                                      state_trans=state_trans)
        _rescue_underflow(graph, joint_states, seq_ptr, unary, pair, log_z, n_threads, node,
                          state_trans)
        return (node, log_z, *_all_exact(seq_ptr))
    ptr, keep = _nonempty(seq_ptr)
    node, _, lz, converged, n_it = inference.marginals(
        graph, ptr, unary, pair, method=method, max_iter=max_iter, tol=tol,
        seeds=seeds[keep], n_threads=n_threads)
    status, n_iter = _per_sequence(method, len(seq_ptr) - 1, keep, converged, n_it)
    log_z = np.zeros(len(seq_ptr) - 1)
    log_z[keep] = lz
    return node, log_z, status, n_iter


def node_marginals(graph, seq_ptr, unary, pair, method, **options):
    """Per-token label marginals ``(N, Ltot)`` of every chain, with status and iterations.

    The status of marginals is ``"exact"`` or, for TRP sum-product,
    ``"converged"`` / ``"approximate"``.
    """
    node, _, status, n_iter = sum_product(graph, seq_ptr, unary, pair, method, **options)
    return node, status, n_iter


def log_partition(graph, seq_ptr, unary, pair, method, **options):
    """``log Z`` per sequence, as :func:`sum_product` gives it.

    Over joint label states by the forward pass alone
    (:func:`skfcrf._bp.nbest.state_log_partition`), half the work of
    forward-backward; otherwise from :func:`sum_product`.
    """
    if method == "joint":
        state_trans = options.get("state_trans")
        log_z = state_log_partition(graph, options["joint_states"], seq_ptr, unary, pair,
                                    options["n_threads"], state_trans=state_trans)
        _rescue_underflow(graph, options["joint_states"], seq_ptr, unary, pair, log_z,
                          options["n_threads"], state_trans=state_trans)
        return log_z
    return sum_product(graph, seq_ptr, unary, pair, method, **options)[1]


def _rescue_underflow(graph, states, seq_ptr, unary, pair, log_z, n_threads, node=None,
                      state_trans=None):
    """Redo in the log domain the sequences whose ``log Z`` fell below their best score.

    ``log Z`` is at least the score of every labelling.  The scaled forward pass
    over joint states can lose a state whose relative mass underflows (module
    docstring of :func:`skfcrf._bp.nbest.logdomain_state_marginals`); the best
    labelling's score (joint Viterbi, exact in the log domain) exposes it.  Those
    sequences get ``log Z`` (and their rows of ``node``, if given) from
    log-domain forward-backward, in place.
    """
    _, best = joint_map(graph, states, seq_ptr, unary, pair, n_threads, state_trans=state_trans)
    for s in underflowed(log_z, best):
        rows = np.arange(seq_ptr[s], seq_ptr[s + 1])
        log_z[s], rows_node = logdomain_state_marginals(graph, states, unary, pair, rows,
                                                        state_trans)
        if node is not None:
            node[rows] = rows_node


def _outside_states(labels, seq_ptr, states, n_labels):
    """Per sequence whether some token's label combination is not among ``states``."""
    radix = np.cumprod([1, *[int(x) for x in n_labels[::-1][:-1]]])[::-1].astype(np.int64)
    codes = np.asarray(labels, np.int64) @ radix
    bad = ~np.isin(codes, np.asarray(states, np.int64) @ radix)
    seq_of = np.repeat(np.arange(len(seq_ptr) - 1), np.diff(seq_ptr))
    return np.bincount(seq_of[bad], minlength=len(seq_ptr) - 1) > 0


def _log_probs(graph, seq_ptr, unary, pair, labels, method, log_z, joint_states=None,
               state_trans=None):
    """``score(labels) - log Z`` per sequence, per the rules of the module docstring."""
    scores = labelling_scores(graph, seq_ptr, unary, pair, labels)
    if method == "joint":
        scores += state_path_scores(joint_states, seq_ptr, labels, state_trans)
    with np.errstate(invalid="ignore"):
        out = scores - log_z
    if method == "joint" and len(labels):
        out[_outside_states(labels, seq_ptr, joint_states, graph.n_labels)] = -np.inf
    if method == "trp":
        out = np.minimum(out, 0.0)
    return out


def log_probs(graph, seq_ptr, unary, pair, labels, method, **options):
    """``log p(labels | x)`` per sequence for label indices ``labels`` ``(N, C)``.

    Exact for ``"exact"`` and ``"joint"``; the Bethe estimate (capped at 0)
    for ``"trp"``.
    """
    log_z = log_partition(graph, seq_ptr, unary, pair, method, **options)
    return _log_probs(graph, seq_ptr, unary, pair, labels, method, log_z,
                      options.get("joint_states"), options.get("state_trans"))


def _exact_states(graph, method, joint_states):
    """The states exact n-best runs over: one chain's labels, the product space or joint."""
    if method == "joint":
        return joint_states
    if graph.n_chains == 1:
        return np.arange(int(graph.n_labels[0]), dtype=np.int32)[:, None]
    inference._check_product_size(graph)
    return product_states(graph)


def _clamped(graph, unary, fixed):
    return unary if fixed is None or not fixed.any else fixed.clamp(graph, unary)


def marginals_given(graph, seq_ptr, unary, pair, method, fixed=None, **options):
    """:func:`node_marginals` of the model clamped to ``fixed`` (a FixedLabels or None).

    Raises ValueError (:func:`check_feasible`) when exact inference finds that
    no labelling of a sequence agrees with its fixed labels.
    """
    node, log_z, status, n_iter = sum_product(graph, seq_ptr, _clamped(graph, unary, fixed),
                                              pair, method, **options)
    check_feasible(graph, seq_ptr, unary, pair, method, fixed, log_z, **options)
    return node, status, n_iter


def decode_ranked(graph, seq_ptr, unary, pair, method, fixed=None, n_best=1, **options):
    """The ``n_best`` best labellings of every sequence with log-probabilities and status.

    ``fixed`` (a :class:`~skfcrf.estimators._fixed.FixedLabels` or None)
    clamps labels; ``unary`` is the unclamped model's.  ``n_best=1`` decodes
    as :func:`map_labels`.

    Returns
    -------
    list (per sequence) of list of (labels, log_prob, status, n_iter)
        Best first, at most ``n_best``, labels int32 ``(T, C)``; at least one
        entry per sequence (with exact inference and no allowed labelling, the
        Viterbi labelling with ``log_prob`` NaN).
    """
    raw, unary = unary, _clamped(graph, unary, fixed)
    log_z = log_partition(graph, seq_ptr, unary, pair, method, **options)
    check_feasible(graph, seq_ptr, raw, pair, method, fixed, log_z, **options)
    labels, status, n_iter = map_labels(graph, seq_ptr, unary, pair, method, **options)
    lp = _log_probs(graph, seq_ptr, unary, pair, labels, method, log_z,
                    options.get("joint_states"), options.get("state_trans"))
    n_seq = len(seq_ptr) - 1
    best = [(labels[seq_ptr[s]:seq_ptr[s + 1]], float(lp[s]), str(status[s]), int(n_iter[s]))
            for s in range(n_seq)]
    if n_best == 1:
        return [[b] for b in best]
    if method == "trp":
        found = chainwise_nbest(graph, seq_ptr, unary, pair, labels, n_best)
    else:
        found = state_nbest(graph, _exact_states(graph, method, options.get("joint_states")),
                            seq_ptr, unary, pair, n_best,
                            state_trans=options.get("state_trans") if method == "joint" else None)
    out = []
    for s in range(n_seq):
        if not found[s] or not np.isfinite(found[s][0][1]):
            out.append([best[s]])          # no allowed labelling (or only forbidden ones)
            continue
        ranked = []
        for y, score in found[s]:
            if not np.isfinite(score):
                continue
            value = score - log_z[s]
            same = np.array_equal(y, best[s][0])
            if same:
                value = best[s][1]        # the same figure as n_best=1 gives, to the bit
            if method == "trp":
                value = min(value, 0.0)
                st = best[s][2] if same else "approximate"
            else:
                st = "exact"
            ranked.append((y, float(value), st, best[s][3]))
        out.append(ranked)
    return out


def check_feasible(graph, seq_ptr, unary, pair, method, fixed, values, **options):
    """Raise ValueError for a sequence whose fixed labels admit no labelling.

    ``unary`` is the unclamped model's; ``values`` are per sequence the
    ``log Z`` of the clamped model (``-inf``: nothing allowed).  Only exact
    inference proves that no labelling exists, so TRP is not checked.  The
    error names the first fixed label, in token-major order, after which the
    sequence has no labelling left (:func:`locate_conflict`).
    """
    if fixed is None or method == "trp":
        return
    for s in fixed.sequences():
        if values[s] == -np.inf:
            where = locate_conflict(graph, seq_ptr, unary, pair, method, fixed, s, **options)
            if where is None:
                continue              # the model allows no labelling even without them
            raise ValueError(
                f"{fixed.where(s, *where)}: no labelling of the sequence agrees with it and the "
                f"{'given' if fixed.name == 'y' else 'fixed'} labels before it under the "
                "model's constraints (forbidden transitions or couplings, or its joint label "
                "states)")


def locate_conflict(graph, seq_ptr, unary, pair, method, fixed, s, **options):
    """``(token, chain)`` of the first fixed label of sequence ``s`` that leaves no labelling.

    ``unary`` is *not* clamped.  Binary search over the sequence's fixed
    labels in token-major order: applying the first ``m`` of them is
    feasible for small ``m`` and not for ``m`` = all (exact Viterbi decides).
    None when the sequence has no labelling even without fixed labels.
    """
    rows = np.arange(seq_ptr[s], seq_ptr[s + 1])
    ptr = np.array([0, len(rows)], np.int64)
    u1 = unary[rows]
    p1 = sequence_pair(graph, pair, pair_layout(graph, int(seq_ptr[-1])), rows)
    entries = fixed.in_sequence(s)
    one = dict(options, seeds=options["seeds"][s:s + 1])
    offset = graph.label_offset

    def feasible(m):
        clamped = u1.copy()
        for t, c in entries[:m]:
            label = offset[c] + fixed.index[rows[t], c]
            value = clamped[t, label]
            clamped[t, offset[c]:offset[c + 1]] = -np.inf
            clamped[t, label] = value
        labels, _, _ = map_labels(graph, ptr, clamped, p1, method, **one)
        # (joint-state transition weights are finite: they cannot make it -inf)
        score = labelling_scores(graph, ptr, clamped, p1, labels)[0]
        if method == "joint" and _outside_states(labels, ptr, one["joint_states"],
                                                 graph.n_labels)[0]:
            return False
        return score > -np.inf

    if not feasible(0):
        return None
    lo, hi = 0, len(entries)          # feasible(lo) holds, feasible(hi) does not
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if feasible(mid):
            lo = mid
        else:
            hi = mid
    return entries[hi - 1]
