"""Exact inference over the model's joint label states (``inference="joint"``).

The states are the ``S`` label combinations ``joint_states`` ``(S, C)`` int32
seen in training; a labelling using another combination has probability 0
(:meth:`JointStateInference.outside`) -- unless given labels need it (see
*Extended state spaces* below).  Forward-backward and Viterbi run over
them with the sparse transition products of :mod:`skfcrf._kernels.joint`; the
forward pass alone gives ``log Z`` (:func:`skfcrf._kernels.joint.joint_log_partition`,
half the work of forward-backward).  Optional joint-state transition weights
``state_trans`` ``(S, S)`` add to the in-chain transitions
(:meth:`JointStateInference.extra_scores` is their share of a labelling's score).
A model with back-off transitions (``backoff``, chain -> mask of the in-chain
pairs scored by a back-off weight of their target label) runs on the grouped
transition form instead (:func:`skfcrf._kernels.joint.grouped_tables`): exact
too, every pair of states allowed unless the user forbids it.

The scaled forward pass can lose a state whose relative mass underflows; a
sequence whose ``log Z`` falls below the score of a labelling known to be
allowed -- the Viterbi labelling when decoding, the gold one when training --
is redone in the log domain (:func:`skfcrf._kernels.joint.underflowed`).  Decoding
runs one Viterbi per sequence for both the labelling and that check
(:meth:`JointStateInference.map_and_log_partition`).

Extended state spaces
---------------------
Labels the user gives -- fixed labels (``decode``, ``predict_marginals``,
max-marginals) and the labellings ``log_prob`` scores -- may need a label
combination never seen in training.  For such a sequence the call runs over
the seen states plus the combinations it needs (:func:`extra_states`):

* a token whose labels are all given, in a combination outside the states:
  that combination;
* a token with some labels given that agree with no seen state: its given
  labels combined with every label of each free chain -- the rule by which
  training with missing labels adds states
  (:func:`skfcrf.model._partial.joint_states_given`).  A token whose given
  labels agree with some seen state adds nothing.

A candidate whose coupling potentials are ``-inf`` where it is needed (a
forbidden coupling) is left out; if the sequence then needs more than
:data:`~skfcrf._kernels.joint.MAX_JOINT_STATES` states, the candidates of
partially given tokens are kept in order of their unary and coupling score at
the token, each token's best first, up to the limit (the fully given
combinations are always kept, and a ValueError says when they alone exceed
it).  The added states are scored by the same potentials: unary and coupling
scores, in-chain transitions from the pair potentials
(:func:`~skfcrf._kernels.joint.state_transition_scores`); joint-state
transition weights exist only between seen states, so the added states' rows
and columns of ``state_trans`` are 0.  Added states are in the sequence's state
space at *every* token, not only where they are needed.

The state space is per sequence: the seen states plus what the sequence's own
given labels need, so a sequence's result does not depend on the rest of the
batch.  ``log Z`` is then the normaliser over that space -- a lower bound on
the normaliser of the model over all label combinations, and at least the one
over the seen states -- so ``log_prob`` is the log-probability under the model
restricted to the call's state space.  As that space depends on the scored
labelling, the ``exp(log_prob)`` of different labellings with unseen
combinations are probabilities under different restrictions and need not sum
to 1.  Sequences that need nothing run as before, in one batch, bit for bit.
"""
import numpy as np

from skfcrf._blas import single_blas_thread
from skfcrf._kernels.graph import IN_CHAIN, pair_layout
from skfcrf._kernels.joint import (
    MAX_JOINT_STATES,
    joint_log_partition,
    joint_map,
    joint_map_and_log_partition,
    joint_marginals,
    nonfinite_sequences,
    state_index,
    supports_joint,
    underflowed,
)
from skfcrf._kernels.states import (
    _state_scores,
    logdomain_state_marginals,
    rescue_sequences,
    state_max_marginals,
    state_nbest,
    state_path_scores,
    sub_batch,
)
from skfcrf.inference._method import InferenceMethod, all_exact

__all__ = ["JointStateInference", "outside_states", "extra_states"]


def outside_states(labels, seq_ptr, states, n_labels):
    """Per sequence whether some token's label combination is not among ``states``."""
    radix = np.cumprod([1, *[int(x) for x in n_labels[::-1][:-1]]])[::-1].astype(np.int64)
    codes = np.asarray(labels, np.int64) @ radix
    bad = ~np.isin(codes, np.asarray(states, np.int64) @ radix)
    seq_of = np.repeat(np.arange(len(seq_ptr) - 1), np.diff(seq_ptr))
    return np.bincount(seq_of[bad], minlength=len(seq_ptr) - 1) > 0


def _agreeing(patterns, states):
    """Per row of ``patterns`` ``(P, C)`` (``-1``: free) whether some row of ``states``
    agrees with its given labels."""
    out = np.zeros(len(patterns), bool)
    if not len(states):
        return out
    step = max(1, (1 << 22) // max(1, states.size))
    for i in range(0, len(patterns), step):
        f = patterns[i:i + step]
        out[i:i + step] = ((f[:, None, :] < 0) | (f[:, None, :] == states[None, :, :])
                           ).all(axis=2).any(axis=1)
    return out


def _finite_at(graph, cands, unary, pair, edge_offset, rows):
    """Per candidate state ``cands`` ``(k, C)`` its best unary + coupling score over the
    token ``rows`` (``-inf``: forbidden at all of them)."""
    best = np.full(len(cands), -np.inf)
    step = max(1, (1 << 20) // max(1, len(cands)))
    for i in range(0, len(rows), step):
        phi = _state_scores(graph, cands, unary, pair, edge_offset, rows[i:i + step])
        best = np.maximum(best, phi.max(axis=0))
    return best


def extra_states(graph, states, seq_ptr, labels, unary, pair, limit=MAX_JOINT_STATES):
    """Per sequence the label combinations beyond ``states`` its given labels need.

    Parameters
    ----------
    graph : skfcrf._kernels.graph.Graph
    states : int32 ndarray of shape (S, C)
        The seen label combinations (the model's joint label states).
    seq_ptr : int64 ndarray of shape (n_seq + 1,)
    labels : int ndarray of shape (N, C)
        Given label indices, ``-1`` where a label is free.
    unary, pair : ndarray
        The (unclamped) log-potentials of the batch; a candidate whose score is
        ``-inf`` at every token that needs it (a forbidden coupling) is left out.
    limit : int
        Most states a sequence's space may have (seen plus added).

    Returns
    -------
    dict
        Sequence index -> int32 ``(k, C)`` combinations to add (sorted rows,
        none among ``states``); only sequences that need some.  The rule
        (fully given tokens: their combination; partially given ones agreeing
        with no state: their labels with every label of each free chain; the
        cap) is in the module docstring.

    Raises
    ------
    ValueError
        When a sequence's fully given combinations alone exceed ``limit``.
    """
    labels = np.asarray(labels, np.int32)
    states = np.asarray(states, np.int32)
    seq_ptr = np.asarray(seq_ptr, np.int64)
    if labels.shape[0] == 0:
        return {}
    given = labels >= 0
    complete = given.all(axis=1)
    rows_c = np.flatnonzero(complete)
    new_c = rows_c[state_index(states, labels[rows_c]) < 0] if rows_c.size else rows_c
    rows_p = np.flatnonzero(given.any(axis=1) & ~complete)
    new_p = rows_p
    if rows_p.size:
        # distinct partial rows by an integer code (np.unique over rows is slower)
        block = labels[rows_p].astype(np.int64) + 1
        radix = np.cumprod(np.concatenate([[1], np.asarray(graph.n_labels[::-1][:-1], np.int64)
                                           + 1]))[::-1]
        _, first, inverse = np.unique(block @ radix, return_index=True, return_inverse=True)
        new_p = rows_p[~_agreeing(labels[rows_p[first]], states)[inverse.ravel()]]
    if not new_c.size and not new_p.size:
        return {}
    edge_offset = pair_layout(graph, int(seq_ptr[-1]))
    seq_c = np.searchsorted(seq_ptr, new_c, side="right") - 1
    seq_p = np.searchsorted(seq_ptr, new_p, side="right") - 1
    out = {}
    for s in np.union1d(seq_c, seq_p):
        rows = new_c[seq_c == s]
        combos, inv = (np.unique(labels[rows], axis=0, return_inverse=True) if rows.size
                       else (np.zeros((0, graph.n_chains), np.int32), np.zeros(0, np.int64)))
        keep = np.array([np.isfinite(_finite_at(graph, combos[i:i + 1], unary, pair,
                                                edge_offset, rows[inv.ravel() == i])[0])
                         for i in range(len(combos))], bool)
        combos = combos[keep] if len(combos) else combos
        room = limit - len(states) - len(combos)
        if room < 0:
            raise ValueError(
                f"sequence {int(s)}: its given labels use {len(combos)} label combinations "
                f"never seen in training; with the {len(states)} seen ones that exceeds the "
                f"limit of {limit} joint states; use inference='trp'")
        # partially given tokens that agree with no seen state
        rows = new_p[seq_p == s]
        cands, scores, ranks = [], [], []
        if rows.size:
            patterns, inv = np.unique(labels[rows], axis=0, return_inverse=True)
            inv = inv.ravel()
            for i in range(len(patterns)):
                row = patterns[i]
                grids = np.meshgrid(*[[int(v)] if v >= 0 else np.arange(int(graph.n_labels[c]))
                                      for c, v in enumerate(row)], indexing="ij")
                cand = np.stack([g.ravel() for g in grids], axis=1).astype(np.int32)
                cand = cand[state_index(states, cand) < 0]
                best = _finite_at(graph, cand, unary, pair, edge_offset, rows[inv == i])
                ok = np.isfinite(best)
                cand, best = cand[ok], best[ok]
                order = np.argsort(-best, kind="stable")
                rank = np.empty(len(order), np.int64)
                rank[order] = np.arange(len(order))
                cands.append(cand), scores.append(best), ranks.append(rank)
        extra = combos
        if cands:
            cand, best, rank = np.vstack(cands), np.concatenate(scores), np.concatenate(ranks)
            # each token pattern's best first, then its second best, ... up to the room
            order = np.lexsort((-best, rank))[:max(room, 0)]
            extra = np.vstack([combos, cand[order]])
        if len(extra):
            extra = np.unique(extra, axis=0).astype(np.int32)
            extra = extra[state_index(states, extra) < 0]
        if len(extra):
            out[int(s)] = np.ascontiguousarray(extra, np.int32)
    return out


class JointStateInference(InferenceMethod):
    """Exact inference over the joint label states seen in training, extended per
    sequence by the combinations given labels need (module docstring)."""

    name = "joint"
    over_joint_states = True
    writes_out = True

    @staticmethod
    def applies(graph, joint_states):
        """Whether the model has joint states this method can run over
        (:func:`~skfcrf._kernels.joint.supports_joint`)."""
        return joint_states is not None and supports_joint(graph, len(joint_states))

    @classmethod
    def check_applies(cls, graph, joint_states=None):
        if not cls.applies(graph, joint_states):
            raise ValueError("inference='joint' needs tied in-chain templates "
                             "(transition_features='default') and at most 4096 "
                             "observed label combinations")

    def _tokenwise(self, seq_ptr):
        """``(token_ptr, starts)`` when no factor joins two tokens (a model without
        in-chain templates, ``transition_features="none"``, nor joint-state
        transitions): every token is then a sequence of its own, which the kernels
        run in O(S) instead of O(S^2) per token with the same results, and a
        sequence's ``log Z`` (or best score) is the sum of its tokens'
        (``np.add.reduceat`` at ``starts``).  None otherwise."""
        graph = self.graph
        if (self.state_trans is not None or self.backoff
                or any(graph.edge_kind[e] == IN_CHAIN for e in range(graph.n_edges))):
            return None
        seq_ptr = np.asarray(seq_ptr, np.int64)
        if len(seq_ptr) < 2 or not np.all(np.diff(seq_ptr) > 0):
            return None
        return np.arange(seq_ptr[-1] + 1, dtype=np.int64), seq_ptr[:-1]

    def _viterbi(self, seq_ptr, unary, pair):
        tokens = self._tokenwise(seq_ptr)
        labels, best = joint_map(self.graph, self.joint_states,
                                 seq_ptr if tokens is None else tokens[0], unary, pair,
                                 self.n_threads, state_trans=self.state_trans,
                                 backoff=self.backoff)
        return labels, best if tokens is None else np.add.reduceat(best, tokens[1])

    def _rescue(self, seq_ptr, unary, pair, log_z, best, node=None):
        """Redo in the log domain, in place, the sequences whose ``log Z`` fell below
        ``best`` or whose rows of ``node`` (if given) are not finite, and those rows."""
        redo = underflowed(log_z, best)
        if node is not None:
            redo = np.union1d(redo, nonfinite_sequences(node, seq_ptr))
        for s in redo:
            rows = np.arange(seq_ptr[s], seq_ptr[s + 1])
            log_z[s], rows_node = logdomain_state_marginals(
                self.graph, self.joint_states, unary, pair, rows, self.state_trans)
            if node is not None:
                node[rows] = rows_node

    def _forward(self, seq_ptr, unary, pair):
        tokens = self._tokenwise(seq_ptr)
        log_z = joint_log_partition(self.graph, self.joint_states,
                                    seq_ptr if tokens is None else tokens[0], unary, pair,
                                    self.n_threads, state_trans=self.state_trans,
                                    backoff=self.backoff)
        return log_z if tokens is None else np.add.reduceat(log_z, tokens[1])

    def map(self, seq_ptr, unary, pair):
        labels, _ = self._viterbi(seq_ptr, unary, pair)
        return (labels, *all_exact(seq_ptr))

    def sum_product(self, seq_ptr, unary, pair):
        tokens = self._tokenwise(seq_ptr)
        node, log_z = joint_marginals(self.graph, self.joint_states,
                                      seq_ptr if tokens is None else tokens[0], unary, pair,
                                      self.n_threads, state_trans=self.state_trans,
                                      backoff=self.backoff)
        if tokens is not None:
            log_z = np.add.reduceat(log_z, tokens[1])
        self._rescue(seq_ptr, unary, pair, log_z, self._viterbi(seq_ptr, unary, pair)[1], node)
        return (node, log_z, *all_exact(seq_ptr))

    def log_partition(self, seq_ptr, unary, pair):
        log_z = self._forward(seq_ptr, unary, pair)
        self._rescue(seq_ptr, unary, pair, log_z, self._viterbi(seq_ptr, unary, pair)[1])
        return log_z

    def map_and_log_partition(self, seq_ptr, unary, pair):
        tokens = self._tokenwise(seq_ptr)
        labels, best, log_z = joint_map_and_log_partition(
            self.graph, self.joint_states, seq_ptr if tokens is None else tokens[0], unary, pair,
            self.n_threads, state_trans=self.state_trans, backoff=self.backoff)
        if tokens is not None:
            best, log_z = np.add.reduceat(best, tokens[1]), np.add.reduceat(log_z, tokens[1])
        self._rescue(seq_ptr, unary, pair, log_z, best)
        return (labels, *all_exact(seq_ptr), log_z)

    def n_best(self, seq_ptr, unary, pair, labels, k):
        return state_nbest(self.graph, self.joint_states, seq_ptr, unary, pair, k,
                           state_trans=self.state_trans)

    def max_marginals(self, seq_ptr, unary, pair):
        return state_max_marginals(self.graph, self.joint_states, seq_ptr, unary, pair,
                                   self.state_trans)

    def training_marginals(self, seq_ptr, unary, pair, lower=None, out=None):
        tokens = self._tokenwise(seq_ptr)
        with single_blas_thread():
            node, pmarg, log_z, state_counts = joint_marginals(
                self.graph, self.joint_states, seq_ptr if tokens is None else tokens[0],
                unary, pair, self.n_threads, pair_marginals=True,
                state_trans=self.state_trans, state_pairs=True, out=out)
        if tokens is not None:
            log_z = np.add.reduceat(log_z, tokens[1])
        rescue_sequences(self.graph, self.joint_states, seq_ptr, unary, pair, node, pmarg,
                         log_z, None if lower is None else lower(), self.n_threads,
                         self.state_trans, state_counts)
        if self.state_trans is None:
            state_counts = None
        return node, pmarg, log_z, state_counts, None, None

    def state_pair_expectations(self, seq_ptr, unary, pair, lower=None):
        """``log Z`` per sequence and the expected state pair counts ``(S, S)``: the
        ``log_z`` and ``state_counts`` of :meth:`training_marginals` (same arguments),
        without summing the marginals -- what the joint-state transition stage asks
        (:class:`~skfcrf.objectives.StateTransitionStage`), about a fifth of the
        forward-backward's work less.  Sequences below ``lower`` are redone in the
        log domain; if the counts came out not finite, :meth:`training_marginals`
        (which can tell the sequences by their marginals) computes them instead."""
        if self.state_trans is not None:            # (never token by token, _tokenwise)
            with single_blas_thread():
                _, _, log_z, state_counts = joint_marginals(
                    self.graph, self.joint_states, seq_ptr, unary, pair, self.n_threads,
                    pair_marginals=True, state_trans=self.state_trans, state_pairs=True,
                    marginals=False)
            if np.isfinite(state_counts).all():
                rescue_sequences(self.graph, self.joint_states, seq_ptr, unary, pair, None,
                                 None, log_z, None if lower is None else lower(),
                                 self.n_threads, self.state_trans, state_counts,
                                 check_nodes=False)
                return log_z, state_counts
        _, _, log_z, state_counts, _, _ = self.training_marginals(seq_ptr, unary, pair, lower)
        return log_z, state_counts

    def extra_scores(self, seq_ptr, labels):
        return state_path_scores(self.joint_states, seq_ptr, labels, self.state_trans)

    def outside(self, seq_ptr, labels):
        if not len(labels):
            return None
        return outside_states(labels, seq_ptr, self.joint_states, self.graph.n_labels)

    # -- extended state spaces (module docstring) -----------------------------------

    #: Whether given labels may extend the states (False on the per-sequence
    #: copies :meth:`state_spaces` makes, whose states are extended already).
    extends = True

    def extended(self, extra):
        """A copy over the states plus ``extra`` ``(k, C)``, appended; the joint-state
        transition weights ``state_trans`` get zero rows and columns for them."""
        states = np.ascontiguousarray(np.vstack([self.joint_states, extra]), np.int32)
        trans = self.state_trans
        if trans is not None:
            trans = np.pad(np.asarray(trans, np.float64), ((0, len(extra)), (0, len(extra))))
        return self.bind(joint_states=states, state_trans=trans, extends=False)

    def state_spaces(self, seq_ptr, unary, pair, labels):
        """The sequences grouped by the state space the given ``labels`` ``(N, C)``
        (``-1``: free) need (:func:`extra_states`).

        Returns
        -------
        list of (seqs, method) or None
            None when no sequence needs more than the seen states (run the batch
            as it is); else ascending sequence indices and the method to run them
            with: first, if any, the sequences that need nothing, with a copy of
            this method that does not extend; then a copy over the extended
            states (:meth:`extended`) for each distinct extension.
        """
        if not self.extends or labels is None:
            return None
        extra = extra_states(self.graph, self.joint_states, seq_ptr, labels, unary, pair)
        if not extra:
            return None
        n_seq = len(seq_ptr) - 1
        groups = {}
        for s, states in extra.items():
            groups.setdefault(states.tobytes(), (states, []))[1].append(s)
        plain = np.setdiff1d(np.arange(n_seq), list(extra))
        out = [(plain, self.bind(extends=False))] if plain.size else []
        out += [(np.asarray(seqs, np.int64), self.extended(states))
                for states, seqs in groups.values()]
        return out

    def _groups(self, seq_ptr, unary, pair, labels):
        """Per group of :meth:`state_spaces`: ``seqs, method`` and the sub-batch
        ``(ptr, unary, pair, rows)``; None when the batch runs as it is."""
        spaces = self.state_spaces(seq_ptr, unary, pair, labels)
        if spaces is None:
            return None
        return [(seqs, method, sub_batch(self.graph, seq_ptr, unary, pair, seqs))
                for seqs, method in spaces]

    def log_probs(self, seq_ptr, unary, pair, labels, log_z=None):
        """As :meth:`InferenceMethod.log_probs`; a sequence whose labelling uses label
        combinations never seen in training is scored over the seen states plus
        those (module docstring: ``log Z`` is then over that space)."""
        groups = self._groups(seq_ptr, unary, pair, labels)
        if groups is None:
            return super().log_probs(seq_ptr, unary, pair, labels, log_z)
        out = np.empty(len(seq_ptr) - 1)
        for seqs, method, (ptr, u, p, rows) in groups:
            seen = np.array_equal(method.joint_states, self.joint_states)
            given = log_z[seqs] if log_z is not None and seen else None
            out[seqs] = InferenceMethod.log_probs(method, ptr, u, p, labels[rows], given)
        return out

    def log_probs_given(self, seq_ptr, unary, pair, labels):
        """As :meth:`InferenceMethod.log_probs_given`, over the state space the given
        labels need (module docstring)."""
        groups = self._groups(seq_ptr, unary, pair, labels)
        if groups is None:      # (its missing labels filled with 0 need no new states)
            return super().log_probs_given(seq_ptr, unary, pair, labels) if not self.extends \
                else self.bind(extends=False).log_probs_given(seq_ptr, unary, pair, labels)
        out = np.empty(len(seq_ptr) - 1)
        for seqs, method, (ptr, u, p, rows) in groups:
            out[seqs] = InferenceMethod.log_probs_given(method, ptr, u, p, labels[rows])
        return out

    def decode_ranked(self, seq_ptr, unary, pair, fixed=None, n_best=1):
        """As :meth:`InferenceMethod.decode_ranked`, over the state space the fixed
        labels need (module docstring)."""
        groups = self._groups(seq_ptr, unary, pair, None if fixed is None else fixed.index)
        if groups is None:
            return super().decode_ranked(seq_ptr, unary, pair, fixed, n_best)
        out = [None] * (len(seq_ptr) - 1)
        for seqs, method, (ptr, u, p, rows) in groups:
            found = InferenceMethod.decode_ranked(method, ptr, u, p,
                                                  fixed.subset(seqs, ptr, rows), n_best)
            for s, entry in zip(seqs, found):
                out[s] = entry
        return out

    def marginals_given(self, seq_ptr, unary, pair, fixed=None):
        """As :meth:`InferenceMethod.marginals_given`, over the state space the fixed
        labels need (module docstring)."""
        groups = self._groups(seq_ptr, unary, pair, None if fixed is None else fixed.index)
        if groups is None:
            return super().marginals_given(seq_ptr, unary, pair, fixed)
        node = np.zeros((unary.shape[0], self.graph.total_labels))
        status = np.empty(len(seq_ptr) - 1, dtype=object)
        n_iter = np.zeros(len(seq_ptr) - 1, np.int64)
        for seqs, method, (ptr, u, p, rows) in groups:
            node[rows], status[seqs], n_iter[seqs] = InferenceMethod.marginals_given(
                method, ptr, u, p, fixed.subset(seqs, ptr, rows))
        return node, status, n_iter

    def log_max_marginals(self, seq_ptr, unary, pair, fixed=None):
        """As :meth:`InferenceMethod.log_max_marginals`, over the state space the fixed
        labels need (module docstring)."""
        groups = self._groups(seq_ptr, unary, pair, None if fixed is None else fixed.index)
        if groups is None:
            return super().log_max_marginals(seq_ptr, unary, pair, fixed)
        out = np.full((unary.shape[0], self.graph.total_labels), -np.inf)
        for seqs, method, (ptr, u, p, rows) in groups:
            out[rows] = InferenceMethod.log_max_marginals(method, ptr, u, p,
                                                          fixed.subset(seqs, ptr, rows))
        return out
