"""The training batch: the sequences an objective is computed over.
"""
import numpy as np

from skfcrf._kernels.states import state_steps
from skfcrf.model._fixed import FixedLabels
from skfcrf.model._layout import GoldStatistics

__all__ = ["TrainingBatch", "state_pair_counts"]


def state_pair_counts(states, seq_ptr, labels):
    """``(S, S)``: how often each pair of ``states`` follows each other in the
    labelling ``labels`` ``(N, C)`` of the sequences ``seq_ptr``."""
    _, prev, cur = state_steps(states, seq_ptr, labels)
    return _step_counts(len(states), prev, cur)


def _step_counts(n_states, prev, cur):
    """``(S, S)`` counts of the steps ``prev -> cur`` (state indices)."""
    counts = np.zeros((n_states, n_states))
    np.add.at(counts, (prev, cur), 1.0)
    return counts


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
    obs : ObservationRows, optional
        ``X`` prepared for the products (:meth:`subset` passes its rows of the whole
        batch's); None: prepared here (``layout.observation_rows``).
    """

    def __init__(self, X, seq_ptr, gold, layout, seeds, known=None, obs=None):
        self.X = X
        self.seq_ptr = np.asarray(seq_ptr, dtype=np.int64)
        self.gold = np.ascontiguousarray(gold, dtype=np.int32)
        self.layout = layout
        self.seeds = seeds
        self.known = None if known is None or known.all() else np.asarray(known, dtype=bool)
        self.obs = layout.observation_rows(X, self.seq_ptr) if obs is None else obs
        self._gold_stats = None

    @property
    def n_sequences(self):
        return len(self.seq_ptr) - 1

    def given_labels(self):
        """The given labels as :class:`~skfcrf.model._fixed.FixedLabels`
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

    def _gold_steps(self, states):
        """``(seq, prev, cur, counts)`` of the gold labelling's joint-state steps: per
        step its sequence and the two state indices, and the ``(S, S)`` counts
        (:func:`state_pair_counts`); found once per ``states``."""
        cached = getattr(self, "_gold_state_steps", None)
        if cached is None or cached[0] is not states:
            rows, prev, cur = state_steps(states, self.seq_ptr, self.gold)
            seq_of = np.repeat(np.arange(self.n_sequences), np.diff(self.seq_ptr))
            cached = self._gold_state_steps = (states, seq_of[rows], prev, cur,
                                               _step_counts(len(states), prev, cur))
        return cached[1:]

    def gold_state_counts(self, states):
        """``(S, S)``: how often each pair of ``states`` follows each other in ``gold``
        (built once per ``states``)."""
        return self._gold_steps(states)[3]

    def gold_state_path_scores(self, states, state_trans):
        """Per sequence the joint-state transition weights ``state_trans`` ``(S, S)``
        along ``gold`` (:func:`~skfcrf._kernels.states.state_path_scores`)."""
        seq, prev, cur, _ = self._gold_steps(states)
        return np.bincount(seq, state_trans[prev, cur], self.n_sequences)

    def subset(self, seq_index):
        """The batch restricted to the given sequences (in that order)."""
        lengths = np.diff(self.seq_ptr)[seq_index]
        rows = np.concatenate([np.arange(self.seq_ptr[s], self.seq_ptr[s + 1])
                               for s in seq_index])
        seq_ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        known = None if self.known is None else self.known[rows]
        return TrainingBatch(self.X[rows], seq_ptr, self.gold[rows], self.layout,
                             self.seeds[seq_index], known, obs=self.obs.take(rows, seq_ptr))
