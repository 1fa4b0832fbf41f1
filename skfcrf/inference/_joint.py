"""Exact inference over the model's joint label states (``inference="joint"``).

The states are the ``S`` label combinations ``joint_states`` ``(S, C)`` int32
seen in training; a labelling using another combination has probability 0
(:meth:`JointStateInference.outside`).  Forward-backward and Viterbi run over
them with the sparse transition products of :mod:`skfcrf._kernels.joint`; the
forward pass alone gives ``log Z`` (:func:`skfcrf._kernels.states.state_log_partition`,
half the work of forward-backward).  Optional joint-state transition weights
``state_trans`` ``(S, S)`` add to the in-chain transitions
(:meth:`JointStateInference.extra_scores` is their share of a labelling's score).

The scaled forward pass can lose a state whose relative mass underflows; a
sequence whose ``log Z`` falls below the score of a labelling known to be
allowed -- the Viterbi labelling when decoding, the gold one when training --
is redone in the log domain (:func:`skfcrf._kernels.joint.underflowed`).  Decoding
runs one Viterbi per sequence for both the labelling and that check
(:meth:`JointStateInference.map_and_log_partition`).
"""
import numpy as np
from threadpoolctl import threadpool_limits

from skfcrf._kernels.joint import (
    joint_map,
    joint_marginals,
    supports_joint,
    underflowed,
)
from skfcrf._kernels.states import (
    logdomain_state_marginals,
    rescue_sequence,
    state_log_partition,
    state_max_marginals,
    state_nbest,
    state_path_scores,
)
from skfcrf.inference._method import InferenceMethod, all_exact

__all__ = ["JointStateInference", "outside_states"]


def outside_states(labels, seq_ptr, states, n_labels):
    """Per sequence whether some token's label combination is not among ``states``."""
    radix = np.cumprod([1, *[int(x) for x in n_labels[::-1][:-1]]])[::-1].astype(np.int64)
    codes = np.asarray(labels, np.int64) @ radix
    bad = ~np.isin(codes, np.asarray(states, np.int64) @ radix)
    seq_of = np.repeat(np.arange(len(seq_ptr) - 1), np.diff(seq_ptr))
    return np.bincount(seq_of[bad], minlength=len(seq_ptr) - 1) > 0


class JointStateInference(InferenceMethod):
    """Exact inference over the joint label states seen in training."""

    name = "joint"
    over_joint_states = True

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

    def _viterbi(self, seq_ptr, unary, pair):
        return joint_map(self.graph, self.joint_states, seq_ptr, unary, pair, self.n_threads,
                         state_trans=self.state_trans, backoff=self.backoff)

    def _rescue(self, seq_ptr, unary, pair, log_z, best, node=None):
        """Redo in the log domain, in place, the sequences whose ``log Z`` fell below
        ``best`` (and their rows of ``node``, if given)."""
        for s in underflowed(log_z, best):
            rows = np.arange(seq_ptr[s], seq_ptr[s + 1])
            log_z[s], rows_node = logdomain_state_marginals(
                self.graph, self.joint_states, unary, pair, rows, self.state_trans)
            if node is not None:
                node[rows] = rows_node

    def _forward(self, seq_ptr, unary, pair):
        return state_log_partition(self.graph, self.joint_states, seq_ptr, unary, pair,
                                   self.n_threads, state_trans=self.state_trans)

    def map(self, seq_ptr, unary, pair):
        labels, _ = self._viterbi(seq_ptr, unary, pair)
        return (labels, *all_exact(seq_ptr))

    def sum_product(self, seq_ptr, unary, pair):
        node, log_z = joint_marginals(self.graph, self.joint_states, seq_ptr, unary, pair,
                                      self.n_threads, state_trans=self.state_trans,
                                      backoff=self.backoff)
        self._rescue(seq_ptr, unary, pair, log_z, self._viterbi(seq_ptr, unary, pair)[1], node)
        return (node, log_z, *all_exact(seq_ptr))

    def log_partition(self, seq_ptr, unary, pair):
        log_z = self._forward(seq_ptr, unary, pair)
        self._rescue(seq_ptr, unary, pair, log_z, self._viterbi(seq_ptr, unary, pair)[1])
        return log_z

    def map_and_log_partition(self, seq_ptr, unary, pair):
        labels, best = self._viterbi(seq_ptr, unary, pair)
        log_z = self._forward(seq_ptr, unary, pair)
        self._rescue(seq_ptr, unary, pair, log_z, best)
        return (labels, *all_exact(seq_ptr), log_z)

    def n_best(self, seq_ptr, unary, pair, labels, k):
        return state_nbest(self.graph, self.joint_states, seq_ptr, unary, pair, k,
                           state_trans=self.state_trans)

    def max_marginals(self, seq_ptr, unary, pair):
        return state_max_marginals(self.graph, self.joint_states, seq_ptr, unary, pair,
                                   self.state_trans)

    def training_marginals(self, seq_ptr, unary, pair, lower=None):
        with threadpool_limits(limits=1, user_api="blas"):
            node, pmarg, log_z, state_counts = joint_marginals(
                self.graph, self.joint_states, seq_ptr, unary, pair, self.n_threads,
                pair_marginals=True, state_trans=self.state_trans, state_pairs=True)
        if lower is not None:
            for s in underflowed(log_z, lower()):
                rescue_sequence(self.graph, self.joint_states, seq_ptr, unary, pair, s, node,
                                pmarg, log_z, self.n_threads, self.state_trans, state_counts)
        if self.state_trans is None:
            state_counts = None
        return node, pmarg, log_z, state_counts, None, None

    def extra_scores(self, seq_ptr, labels):
        return state_path_scores(self.joint_states, seq_ptr, labels, self.state_trans)

    def outside(self, seq_ptr, labels):
        if not len(labels):
            return None
        return outside_states(labels, seq_ptr, self.joint_states, self.graph.n_labels)
