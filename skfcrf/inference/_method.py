"""The inference-method contract and the algorithms every method shares.

An :class:`InferenceMethod` answers the questions a fitted model asks of the
log-potentials of a batch of sequences -- laid out as in
:mod:`skfcrf._kernels.graph`: ``seq_ptr`` ``(n_seq + 1,)`` int64 (sequence ``s``
owns token rows ``seq_ptr[s]:seq_ptr[s + 1]``), ``unary`` ``(N, Ltot)``
float64 and the flat ``pair`` array of :func:`~skfcrf._kernels.graph.pair_layout`,
``-inf`` meaning forbidden:

=========================  =========================================================
primitive                  returns
=========================  =========================================================
``map``                    labels ``(N, C)`` int32, status and iterations per sequence
``sum_product``            node marginals ``(N, Ltot)``, ``log Z``, status, iterations
``log_partition``          ``log Z`` per sequence
``map_and_log_partition``  both, sharing what they share (one Viterbi per sequence)
``n_best``                 per sequence the ``k`` best ``(labels (T, C), score)``
``max_marginals``          per token and label the best score of a labelling through it
``training_marginals``     node and pair marginals, ``log Z`` and state-pair counts
``extra_scores``           per sequence the part of a labelling's score outside
                           ``unary`` and ``pair`` (joint-state transitions)
``outside``                per sequence whether a labelling lies outside the
                           method's state space (None: never)
``bound``                  the cap a log-probability estimate gets (TRP: 0)
=========================  =========================================================

Built on them, once for every method: :meth:`InferenceMethod.decode_ranked`
(``decode``), :meth:`~InferenceMethod.marginals_given` (``predict_marginals``),
:meth:`~InferenceMethod.log_probs` and
:meth:`~InferenceMethod.log_probs_given` (``log_prob``),
:meth:`~InferenceMethod.log_max_marginals` (active learning) and the
feasibility checks of fixed labels (:meth:`~InferenceMethod.check_feasible`,
:meth:`~InferenceMethod.locate_conflict`).

``status`` of a labelling
    ``"exact"``: exact inference was used (Viterbi on one chain, over the
    product label space, or over the model's joint label states);
    ``"converged"``: loopy max-product messages converged (the labelling is
    then locally optimal, not necessarily globally); ``"approximate"``: none of
    these.  Empty sequences are ``"exact"`` with ``n_iter == 0``.

``log_prob`` of a labelling
    ``score(labels) - log Z``, the score being the sum of the labelling's
    log-potentials (plus :meth:`~InferenceMethod.extra_scores`) and ``log Z``
    the log partition function of the same potentials.  Exact for exact
    methods (over the joint label states: over the seen states extended by
    the labelling's unseen combinations, :mod:`skfcrf.inference._joint`).  With
    TRP ``log Z`` is the Bethe estimate (minus the Bethe free energy of TRP's
    sum-product beliefs), so ``log_prob`` is an estimate too, capped at 0.
    With fixed labels both the score and ``log Z`` are those of the clamped
    model, so ``log_prob`` is ``log p(labels | x, fixed labels)``.

n-best (:meth:`~InferenceMethod.decode_ranked` with ``n_best > 1``)
    Exact methods: exact k-best (A* search, :mod:`skfcrf._kernels._nbest`) over
    their states, the ``n_best`` best labellings, distinct, best first, all
    ``"exact"``.  TRP: best-first search over chain-wise moves from the TRP
    labelling (:func:`skfcrf._kernels.states.chainwise_nbest`); the alternatives are
    ``"approximate"``.
"""
from dataclasses import dataclass, field

import numpy as np

from skfcrf._kernels.graph import pair_layout
from skfcrf._kernels.states import labelling_scores, sequence_pair
from skfcrf.model._fixed import FixedLabels

__all__ = ["InferenceMethod", "SequenceDecoding", "STATUSES"]

#: The statuses, from most to least trustworthy.
STATUSES = ("exact", "converged", "approximate")


@dataclass(frozen=True)
class SequenceDecoding:
    """The decoding of one sequence.

    Attributes
    ----------
    labels : ndarray of object
        ``(n_tokens, n_chains)``, or ``(n_tokens,)`` for a model fitted on one
        chain given as 1-D label sequences -- as :meth:`FactorialCRF.predict`.
    status : str
        One of :data:`STATUSES`: ``"exact"`` (exact inference: the optimum of
        the model, whose labellings with back-off transitions included), ``"converged"``
        (loopy max-product converged) or ``"approximate"``.
    n_iter : int
        Inference iterations spent on the sequence (TRP: spanning trees; 1 for
        exact inference, 0 for an empty sequence).
    log_prob : float
        ``log p(labels | x)`` (given the fixed labels, if any): exact when the
        status is ``"exact"``, else the TRP/Bethe estimate capped at 0.
    alternatives : tuple of SequenceDecoding
        With ``n_best > 1`` the next best distinct labellings, best first,
        each with its own ``labels``, ``status`` and ``log_prob``; empty for
        ``n_best=1``.
    """

    labels: np.ndarray
    status: str
    n_iter: int
    log_prob: float = field(default=float("nan"))
    alternatives: tuple = field(default=())

    @property
    def ranked(self):
        """This labelling followed by its alternatives: the n-best list, best first."""
        return (self, *self.alternatives)

    @property
    def converged(self):
        """True unless the status is ``"approximate"``."""
        return self.status != "approximate"


def nonempty(seq_ptr):
    """``seq_ptr`` of the non-empty sequences and their indices."""
    lengths = np.diff(seq_ptr)
    keep = np.flatnonzero(lengths > 0)
    return np.concatenate([[0], np.cumsum(lengths[keep])]).astype(np.int64), keep


def all_exact(seq_ptr):
    """Status ``"exact"`` and one iteration for every non-empty sequence."""
    n_seq = len(seq_ptr) - 1
    return np.full(n_seq, "exact", dtype=object), (np.diff(seq_ptr) > 0).astype(np.int64)


def clamped(graph, unary, fixed):
    """``unary`` clamped to ``fixed`` (a FixedLabels or None)."""
    return unary if fixed is None or not fixed.any else fixed.clamp(graph, unary)


class InferenceMethod:
    """One inference method over a model's graph (module docstring: the contract).

    Parameters
    ----------
    graph : skfcrf._kernels.graph.Graph
        The model's chains and edge templates.
    n_threads : int, default=1
        Kernel threads, parallel over sequences.
    max_iter, tol : int, float
        Iteration cap and tolerance of iterative methods (TRP).
    seeds : uint64 ndarray of shape (n_seq,), optional
        Per-sequence seeds of randomised methods (TRP's spanning trees);
        ``None``: fixed defaults.
    joint_states : int32 ndarray of shape (S, C), optional
        The model's label combinations (joint-state inference).
    state_trans : float64 ndarray of shape (S, S), optional
        Joint-state transition weights (joint-state inference).
    backoff : dict, optional
        Chain -> ``(L, L)`` mask of the in-chain transitions scored by a back-off
        weight per target label (the pair potentials hold it there).  The
        potentials alone define the model; a method may use the masks to compute
        faster (joint-state inference: :func:`skfcrf._kernels.joint.grouped_tables`).

    Class attributes say what a method is: ``name`` (the ``inference=``
    value), ``exact`` (results are exact; status ``"exact"``),
    ``over_joint_states`` (it runs over the label combinations seen in
    training -- extended per sequence by those given labels need -- and the
    model may weight transitions between them), ``writes_out``
    (:meth:`training_marginals` writes the node marginals into a given ``out``).
    A method is registered in :data:`skfcrf.inference.METHODS`.
    """

    name = None
    exact = True
    over_joint_states = False
    writes_out = False

    def __init__(self, graph, *, n_threads=1, max_iter=1000, tol=1e-6, seeds=None,
                 joint_states=None, state_trans=None, backoff=None):
        self.graph = graph
        self.backoff = backoff
        self.n_threads = n_threads
        self.max_iter = max_iter
        self.tol = tol
        self.seeds = seeds
        self.joint_states = joint_states
        self.state_trans = state_trans

    @classmethod
    def check_applies(cls, graph, joint_states=None):
        """Raise ValueError when the method cannot run on this model."""

    def bind(self, **inputs):
        """A copy with some inputs replaced (e.g. ``seeds`` of a batch, ``state_trans``)."""
        out = object.__new__(type(self))      # copy.copy, without its generic protocol
        out.__dict__.update(self.__dict__)
        for key, value in inputs.items():
            if not hasattr(self, key):
                raise TypeError(f"{type(self).__name__} has no input {key!r}")
            setattr(out, key, value)
        return out

    def __repr__(self):
        return f"{type(self).__name__}(name={self.name!r})"

    # -- primitives (each method implements those it can) ---------------------------

    def map(self, seq_ptr, unary, pair):
        """The most probable labelling of every sequence: ``labels, status, n_iter``."""
        raise NotImplementedError

    def sum_product(self, seq_ptr, unary, pair):
        """Node marginals ``(N, Ltot)``, ``log Z`` per sequence, status and iterations.

        ``log Z`` is 0 for empty sequences and ``-inf`` when no labelling is allowed.
        """
        raise NotImplementedError

    def log_partition(self, seq_ptr, unary, pair):
        """``log Z`` per sequence, as :meth:`sum_product` gives it."""
        return self.sum_product(seq_ptr, unary, pair)[1]

    def map_and_log_partition(self, seq_ptr, unary, pair):
        """``labels, status, n_iter, log_z``: :meth:`map` and :meth:`log_partition`."""
        return (*self.map(seq_ptr, unary, pair), self.log_partition(seq_ptr, unary, pair))

    def n_best(self, seq_ptr, unary, pair, labels, k):
        """Per sequence up to ``k`` labellings ``(labels (T, C), score)``, best first;
        ``labels`` is the :meth:`map` labelling."""
        raise NotImplementedError

    def max_marginals(self, seq_ptr, unary, pair):
        """``(N, Ltot)``: per token and label the best score of a labelling through it."""
        raise NotImplementedError

    def training_marginals(self, seq_ptr, unary, pair, lower=None, out=None):
        """What the likelihood's gradient needs.

        Returns ``node, pair_marginals, log_z, state_counts, converged, n_iter``:
        node marginals ``(N, Ltot)``, pair marginals laid out like ``pair``
        (tied edges summed over positions), ``log Z``, the expected joint-state
        transition counts ``(S, S)`` (None without ``state_trans``), and the
        per-sequence convergence and iterations of iterative methods.
        ``lower`` (optional) is a callable returning per sequence a known
        lower bound on ``log Z`` (the gold labelling's score), which methods
        that can underflow call to detect it.  ``out`` (optional): an ``(N,
        Ltot)`` float64 array a method may write ``node`` into and return
        instead of a new one (a caller that computes marginals at every
        iteration keeps one array; methods that cannot, ignore it).
        """
        raise NotImplementedError

    def extra_scores(self, seq_ptr, labels):
        """Per sequence the score of ``labels`` beyond ``unary`` and ``pair``."""
        return np.zeros(len(seq_ptr) - 1)

    def outside(self, seq_ptr, labels):
        """Per sequence whether ``labels`` is outside the state space (None: never)."""
        return None

    def bound(self, values):
        """Log-probabilities as reported (estimates are capped)."""
        return values

    # -- built on the primitives ------------------------------------------------

    def log_probs(self, seq_ptr, unary, pair, labels, log_z=None):
        """``log p(labels | x)`` per sequence for label indices ``labels`` ``(N, C)``:
        ``score(labels) - log Z`` (module docstring)."""
        if log_z is None:
            log_z = self.log_partition(seq_ptr, unary, pair)
        scores = labelling_scores(self.graph, seq_ptr, unary, pair, labels)
        scores += self.extra_scores(seq_ptr, labels)
        with np.errstate(invalid="ignore"):
            out = scores - log_z
        bad = self.outside(seq_ptr, labels)
        if bad is not None:
            out[bad] = -np.inf
        return self.bound(out)

    def log_probs_given(self, seq_ptr, unary, pair, labels):
        """``log p(given labels | x)`` per sequence for label indices ``labels`` ``(N, C)``
        with ``-1`` where a label is missing: :meth:`log_probs` for a complete
        labelling, ``log Z(given labels) - log Z`` for one with missing labels."""
        log_z = self.log_partition(seq_ptr, unary, pair)
        values = self.log_probs(seq_ptr, unary, pair, np.maximum(labels, 0), log_z)
        missing = (labels < 0).any(axis=1)
        if missing.any():
            seq_of = np.repeat(np.arange(len(seq_ptr) - 1), np.diff(seq_ptr))
            partial = np.unique(seq_of[missing])
            clamp = FixedLabels(np.asarray(labels, np.int32), np.asarray(seq_ptr, np.int64), None,
                                name="y")
            with np.errstate(invalid="ignore"):
                part = self.log_partition(seq_ptr, clamped(self.graph, unary, clamp), pair) - log_z
            values[partial] = self.bound(part[partial])
        return values

    def marginals_given(self, seq_ptr, unary, pair, fixed=None):
        """Node marginals, status and iterations of the model clamped to ``fixed``.

        Raises ValueError (:meth:`check_feasible`) when exact inference finds
        that no labelling of a sequence agrees with its fixed labels.
        """
        node, log_z, status, n_iter = self.sum_product(seq_ptr, clamped(self.graph, unary, fixed),
                                                       pair)
        self.check_feasible(seq_ptr, unary, pair, fixed, log_z)
        return node, status, n_iter

    def log_max_marginals(self, seq_ptr, unary, pair, fixed=None):
        """``(N, Ltot)``: per token and label ``log p`` of the best labelling through it,
        given ``fixed``."""
        unary = clamped(self.graph, unary, fixed)
        log_z = self.log_partition(seq_ptr, unary, pair)
        mm = self.max_marginals(seq_ptr, unary, pair)
        seq_of = np.repeat(np.arange(len(seq_ptr) - 1), np.diff(seq_ptr))
        with np.errstate(invalid="ignore"):
            logm = mm - log_z[seq_of][:, None]
        return self.bound(logm)

    def decode_ranked(self, seq_ptr, unary, pair, fixed=None, n_best=1):
        """The ``n_best`` best labellings of every sequence with log-probabilities and status.

        ``fixed`` (a :class:`~skfcrf.model._fixed.FixedLabels` or None)
        clamps labels; ``unary`` is the unclamped model's.

        Returns
        -------
        list (per sequence) of list of (labels, log_prob, status, n_iter)
            Best first, at most ``n_best``, labels int32 ``(T, C)``; at least one
            entry per sequence (with exact inference and no allowed labelling, the
            Viterbi labelling with ``log_prob`` NaN).
        """
        raw, unary = unary, clamped(self.graph, unary, fixed)
        labels, status, n_iter, log_z = self.map_and_log_partition(seq_ptr, unary, pair)
        self.check_feasible(seq_ptr, raw, pair, fixed, log_z)
        lp = self.log_probs(seq_ptr, unary, pair, labels, log_z)
        n_seq = len(seq_ptr) - 1
        best = [(labels[seq_ptr[s]:seq_ptr[s + 1]], float(lp[s]), str(status[s]),
                 int(n_iter[s])) for s in range(n_seq)]
        if n_best == 1:
            return [[b] for b in best]
        found = self.n_best(seq_ptr, unary, pair, labels, n_best)
        out = []
        for s in range(n_seq):
            if not found[s] or not np.isfinite(found[s][0][1]):
                out.append([best[s]])          # no allowed labelling (or only forbidden ones)
                continue
            ranked = []
            for y, score in found[s]:
                if not np.isfinite(score):
                    continue
                same = np.array_equal(y, best[s][0])
                # the same figure as n_best=1 gives, to the bit
                value = best[s][1] if same else self.bound(score - log_z[s])
                if self.exact:
                    st = "exact"
                else:
                    st = best[s][2] if same else "approximate"
                ranked.append((y, float(value), st, best[s][3]))
            out.append(ranked)
        return out

    def check_feasible(self, seq_ptr, unary, pair, fixed, values):
        """Raise ValueError for a sequence whose fixed labels admit no labelling.

        ``unary`` is the unclamped model's; ``values`` are per sequence the
        ``log Z`` of the clamped model (``-inf``: nothing allowed).  Only exact
        inference proves that no labelling exists, so inexact methods are not
        checked.  The error names the first fixed label, in token-major order,
        after which the sequence has no labelling left (:meth:`locate_conflict`).
        """
        if fixed is None or not self.exact:
            return
        for s in fixed.sequences():
            if values[s] == -np.inf:
                where = self.locate_conflict(seq_ptr, unary, pair, fixed, s)
                if where is None:
                    continue              # the model allows no labelling even without them
                raise ValueError(
                    f"{fixed.where(s, *where)}: no labelling of the sequence agrees with it and "
                    f"the {'given' if fixed.name == 'y' else 'fixed'} labels before it under the "
                    "model's constraints (forbidden transitions or couplings, or its joint label "
                    "states)")

    def locate_conflict(self, seq_ptr, unary, pair, fixed, s):
        """``(token, chain)`` of the first fixed label of sequence ``s`` that leaves no labelling.

        ``unary`` is *not* clamped.  Binary search over the sequence's fixed
        labels in token-major order: applying the first ``m`` of them is
        feasible for small ``m`` and not for ``m`` = all (exact Viterbi decides).
        None when the sequence has no labelling even without fixed labels.
        """
        graph = self.graph
        rows = np.arange(seq_ptr[s], seq_ptr[s + 1])
        ptr = np.array([0, len(rows)], np.int64)
        u1 = unary[rows]
        p1 = sequence_pair(graph, pair, pair_layout(graph, int(seq_ptr[-1])), rows)
        entries = fixed.in_sequence(s)
        one = self.bind(seeds=None if self.seeds is None else self.seeds[s:s + 1])
        offset = graph.label_offset

        def feasible(m):
            clamped_ = u1.copy()
            for t, c in entries[:m]:
                label = offset[c] + fixed.index[rows[t], c]
                value = clamped_[t, label]
                clamped_[t, offset[c]:offset[c + 1]] = -np.inf
                clamped_[t, label] = value
            labels, _, _ = one.map(ptr, clamped_, p1)
            # (joint-state transition weights are finite: they cannot make it -inf)
            score = labelling_scores(graph, ptr, clamped_, p1, labels)[0]
            bad = one.outside(ptr, labels)
            if bad is not None and bad[0]:
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
