"""The FCRF's parameter layout: clique templates, feature support, potentials.

Templates
---------
Per chain ``c`` a unary template (assignments: ``L_c`` labels) and an in-chain
pairwise template (``L_c x L_c`` transitions); per coupled chain pair ``(a, b)``
a between-chain template (``L_a x L_b``).  Parameters are tied across time.
A model with ``transition_features="none"`` has no in-chain templates (the
independent-labels models of Marcheggiani 2014, section 3.2): its edges are the
couplings alone, and its labellings' scores have no term joining two tokens.

Feature support per template (thesis section 5.1):

``"default"``
    One bias weight per assignment, no observation weights.
``"supported"``
    A bias per assignment plus one weight per (observation, assignment) pair seen
    in the training data (the observation active at a token where the gold
    assignment occurs).
``"all"``
    A bias per assignment plus a weight for every (observation, assignment).

Observations enter a pairwise factor at the token where it sits: a coupling
factor at ``t`` and an in-chain factor ``(t-1, t)`` see the observations of
token ``t``.

Parameter vector ``theta``: first the *feature table* entries (observation
weights of every template, grouped by observation; see
:mod:`skfcrf._kernels._features`), then the biases: ``Ltot`` unary biases followed by
each edge template's ``L_a x L_b`` biases; last, in a model with joint-state
transitions (``state_transitions``), one weight per *state pair*: a label
combination of all chains at token ``t - 1`` followed by one at ``t``, the pairs
seen in the training labels, held as ``state_from`` / ``state_to`` ``(P, C)``
label indices.  Their weights add to the in-chain transition scores of the
exact inference over joint label states (:mod:`skfcrf._kernels.joint`); no other
inference method can use them.  After them, in a model with back-off
transitions (``forbidden_transitions="backoff"``), one weight per label ``j`` of
every chain ``c`` in ``backoff`` (chains ascending): the score of every in-chain
transition ``(i, j)`` of ``c`` marked in ``backoff[c]`` (an ``(L, L)`` mask),
which replaces that pair's own bias (left at zero; :meth:`ParameterLayout.potentials`).

The fused objective kernels take the layout as one object,
:meth:`ParameterLayout.kernel_tables` (a :class:`skfcrf._kernels._contract.ParameterTables`:
the offsets above, the edge tables, the feature table and the forbidden
assignments in the kernels' one encoding).
"""
import numpy as np

from skfcrf._kernels._contract import ParameterTables
from skfcrf._kernels._pseudolikelihood import pseudolikelihood_objective
from skfcrf._kernels.graph import COUPLING, IN_CHAIN, Graph, following_tokens, pair_layout
from skfcrf._kernels.joint import state_index, unique_rows
from skfcrf.model._observation_rows import ObservationRows

SUPPORT_MODES = ("all", "supported", "default")
#: ``transition_features`` also takes ``"none"``: no in-chain template at all.
TRANSITION_MODES = SUPPORT_MODES + ("none",)


def unique_int(values):
    """Sorted distinct values of an integer array.

    Sort-based: numpy 2's hash-based ``np.unique`` is over 10x slower on the
    millions of keys a feature table is built from.  The sort is numpy's default
    (vectorised where the CPU allows): equal keys are dropped, so a stable sort's
    order buys nothing and took 5-9x as long.
    """
    values = np.sort(np.asarray(values, dtype=np.int64))
    if values.size == 0:
        return values
    keep = np.empty(values.size, dtype=bool)
    keep[0] = True
    np.not_equal(values[1:], values[:-1], out=keep[1:])
    return values[keep]


def _pair_keys(rows, columns, width):
    """Sorted keys ``row * width + column`` of every row with every column of the
    arrays ``columns`` (each column below ``width``)."""
    return (np.asarray(rows, dtype=np.int64)[:, None] * width
            + np.sort(np.concatenate(columns)).astype(np.int64)).ravel()


def build_graph(n_labels, couplings, transition_features, coupling_features):
    """The graph of an FCRF: one in-chain edge per chain (none with
    ``transition_features="none"``), one edge per coupled pair."""
    edges = [] if transition_features == "none" else [
        (c, c, IN_CHAIN, int(transition_features == "default")) for c in range(len(n_labels))]
    edges += [(a, b, COUPLING, int(coupling_features == "default")) for a, b in couplings]
    return Graph.build(n_labels, edges)


def _valid_edge_rows(graph, e, seq_ptr, n_tokens):
    """Global token rows at which edge ``e`` has a factor."""
    if graph.edge_kind[e] == IN_CHAIN:
        return following_tokens(seq_ptr, n_tokens)
    return np.arange(n_tokens)


def gold_assignment(graph, e, rows, gold):
    """Index ``l_a * L_b + l_b`` of the gold assignment of edge ``e`` at ``rows``;
    ``-1`` where one of the two labels is missing (``-1`` in ``gold``)."""
    a, b = graph.edge_a[e], graph.edge_b[e]
    nb = graph.n_labels[b]
    if graph.edge_kind[e] == IN_CHAIN:
        first, second = gold[rows - 1, a], gold[rows, a]
    else:
        first, second = gold[rows, a], gold[rows, b]
    assign = first.astype(np.int64) * nb + second
    assign[(first < 0) | (second < 0)] = -1
    return assign


class ParameterLayout:
    """Feature table and bias offsets of a fitted FCRF structure.

    Parameters
    ----------
    graph : Graph
    n_features : int
        Number of observation columns.
    feat_ptr, ent_col : ndarray
        The feature table: observation ``f`` owns entries
        ``feat_ptr[f]:feat_ptr[f+1]``, entry ``p`` scoring column ``ent_col[p]``
        of the per-token score matrix (unary columns first, then each untied
        edge's ``L_a x L_b`` columns).
    state_from, state_to : int ndarray of shape (P, n_chains), optional
        The state pairs with a joint-state transition weight (module docstring);
        None: none.
    backoff : dict, optional
        Chain -> ``(L, L)`` boolean mask of its in-chain transitions scored by the
        chain's back-off weight of their target label (module docstring); the
        chain's in-chain template must be tied.  None: none.
    """

    def __init__(self, graph, n_features, feat_ptr, ent_col, state_from=None, state_to=None,
                 backoff=None):
        self.graph = graph
        self.n_features = int(n_features)
        self.feat_ptr = np.ascontiguousarray(feat_ptr, dtype=np.int64)
        self.ent_col = np.ascontiguousarray(ent_col, dtype=np.int32)
        ltot = graph.total_labels
        self.edge_col = np.full(graph.n_edges, -1, dtype=np.int64)
        width = ltot
        for e in range(graph.n_edges):
            if not graph.edge_tied[e]:
                self.edge_col[e] = width
                width += graph.edge_size(e)
        self.score_width = width
        self.n_table = int(self.feat_ptr[-1])
        self.bias_unary = self.n_table
        self.bias_edge = np.zeros(graph.n_edges + 1, dtype=np.int64)
        self.bias_edge[0] = self.n_table + ltot
        for e in range(graph.n_edges):
            self.bias_edge[e + 1] = self.bias_edge[e] + graph.edge_size(e)
        empty = np.zeros((0, graph.n_chains), dtype=np.int32)
        self.state_from = empty if state_from is None else np.ascontiguousarray(state_from, np.int32)
        self.state_to = empty if state_to is None else np.ascontiguousarray(state_to, np.int32)
        if self.state_from.shape != self.state_to.shape or self.state_from.shape[1:] != (graph.n_chains,):
            raise ValueError("state_from and state_to must both have shape (P, n_chains)")
        self.bias_state = int(self.bias_edge[-1])
        self.backoff = {} if backoff is None else {
            int(c): np.ascontiguousarray(m, dtype=bool) for c, m in sorted(backoff.items())}
        self.bias_backoff = {}
        at = self.bias_state + len(self.state_from)
        for c, mask in self.backoff.items():
            L = int(graph.n_labels[c])
            if mask.shape != (L, L):
                raise ValueError(f"backoff[{c}] must have shape ({L}, {L}), got {mask.shape}")
            self.bias_backoff[c] = at
            at += L
        self.n_params = at

    def __setstate__(self, state):
        # layouts pickled before joint-state transitions (back-off) existed have none
        self.__dict__.update(state)
        if "state_from" not in state:
            self.state_from = self.state_to = np.zeros((0, self.graph.n_chains), np.int32)
            self.bias_state = int(self.bias_edge[-1])
        if "backoff" not in state:
            self.backoff, self.bias_backoff = {}, {}

    @property
    def n_backoff(self):
        """Number of back-off weights (0: the model has none)."""
        return self.n_params - self.bias_state - self.n_state_pairs

    @property
    def backoff_edges(self):
        """In-chain edge -> the back-off mask of its chain (the inference methods' input)."""
        graph = self.graph
        return {e: self.backoff[int(graph.edge_a[e])] for e in range(graph.n_edges)
                if graph.edge_kind[e] == IN_CHAIN and int(graph.edge_a[e]) in self.backoff}

    def with_backoff(self, backoff):
        """This layout with back-off weights for the masks ``backoff`` (chain -> ``(L, L)``)
        instead of any it has; the weights are appended after the others."""
        return type(self)(self.graph, self.n_features, self.feat_ptr, self.ent_col,
                          self.state_from, self.state_to, backoff)

    def backoff_weights(self, theta):
        """Chain -> its back-off weights, one per label."""
        return {c: theta[at:at + int(self.graph.n_labels[c])]
                for c, at in self.bias_backoff.items()}

    @property
    def n_state_pairs(self):
        """Number of joint-state transition weights (0: the model has none)."""
        return len(self.state_from)

    def with_state_pairs(self, state_from, state_to):
        """This layout with joint-state transition weights for the given state pairs
        (and no back-off weights)."""
        return type(self)(self.graph, self.n_features, self.feat_ptr, self.ent_col,
                          state_from, state_to)

    def _state_pair_index(self, states):
        """Rows of ``states`` of every weighted pair's two ends; -1 where absent."""
        return state_index(states, self.state_from), state_index(states, self.state_to)

    def state_transitions(self, theta, states):
        """``(S, S)`` joint-state transition weights over ``states`` (None without any)."""
        if not self.n_state_pairs:
            return None
        i, j = self._state_pair_index(states)
        ok = (i >= 0) & (j >= 0)
        V = np.zeros((len(states), len(states)))
        V[i[ok], j[ok]] = theta[self.bias_state:self.bias_state + self.n_state_pairs][ok]
        return V

    def state_transition_gradient(self, counts, states):
        """The entries of an ``(S, S)`` matrix ``counts`` at the weighted state pairs."""
        i, j = self._state_pair_index(states)
        ok = (i >= 0) & (j >= 0)
        out = np.zeros(self.n_state_pairs)
        out[ok] = counts[i[ok], j[ok]]
        return out

    # -- construction ---------------------------------------------------------------
    @classmethod
    def from_training(cls, graph, X, seq_ptr, gold, unary_features,
                      transition_features, coupling_features):
        """Build the feature table from training observations and gold labels."""
        keys = cls.support_keys(graph, X, seq_ptr, gold, unary_features,
                                transition_features, coupling_features)
        return cls.from_keys(graph, X.shape[1], keys)

    @classmethod
    def support_keys(cls, graph, X, seq_ptr, gold, unary_features, transition_features,
                     coupling_features, supported_only=False):
        """Sorted distinct keys ``f * score_width + column`` of the feature-table entries.

        The ``"supported"`` templates' entries come from the observations ``X``
        and gold labels; the ``"all"`` templates' from ``X.shape[1]`` alone
        (:meth:`all_keys`; skipped with ``supported_only``).  Keys of several
        parts of a training set (sequences not split between parts) united are
        the keys of the whole set: :meth:`from_keys` builds the same layout from
        them.
        """
        modes = (unary_features, transition_features, coupling_features)
        n_tokens, n_features = X.shape
        X = X.tocsr()
        nnz_row = np.repeat(np.arange(n_tokens), np.diff(X.indptr))
        nnz_col = X.indices.astype(np.int64)
        layout0 = cls._empty(graph, n_features)
        width = np.int64(layout0.score_width)
        keys = [] if supported_only else [cls.all_keys(graph, n_features, *modes)]
        for c in range(graph.n_chains):
            off = graph.label_offset[c]
            if unary_features == "supported":
                given = gold[nnz_row, c] >= 0       # a missing label supports nothing
                keys.append(unique_int(nnz_col[given] * width + off + gold[nnz_row[given], c]))
        for e in range(graph.n_edges):
            if graph.edge_tied[e] or cls._edge_mode(graph, e, modes) == "all":
                continue
            rows = _valid_edge_rows(graph, e, seq_ptr, n_tokens)
            assign = np.full(n_tokens, -1, dtype=np.int64)
            assign[rows] = gold_assignment(graph, e, rows, gold)
            ok = assign[nnz_row] >= 0
            keys.append(unique_int(nnz_col[ok] * width + layout0.edge_col[e]
                                   + assign[nnz_row[ok]]))
        return unique_int(np.concatenate(keys)) if keys else np.zeros(0, dtype=np.int64)

    @classmethod
    def all_keys(cls, graph, n_features, unary_features, transition_features,
                 coupling_features, coupling_columns=None):
        """Sorted keys of the ``"all"`` templates' entries: every (observation,
        assignment) pair of ``n_features`` observations -- for the coupling
        templates only the observations ``coupling_columns`` (a boolean mask;
        None: all)."""
        modes = (unary_features, transition_features, coupling_features)
        layout0 = cls._empty(graph, n_features)
        width = np.int64(layout0.score_width)
        columns = [graph.label_offset[c] + np.arange(graph.n_labels[c])
                   for c in range(graph.n_chains) if unary_features == "all"]
        restricted = []        # the coupling templates' columns, with coupling_columns
        for e in range(graph.n_edges):
            if not graph.edge_tied[e] and cls._edge_mode(graph, e, modes) == "all":
                own = layout0.edge_col[e] + np.arange(graph.edge_size(e))
                use = coupling_columns is not None and graph.edge_kind[e] == COUPLING
                (restricted if use else columns).append(own)
        keys = []
        if columns:
            keys.append(_pair_keys(np.arange(n_features), columns, width))
        if restricted:
            keys.append(_pair_keys(np.flatnonzero(coupling_columns), restricted, width))
        if len(keys) > 1:
            return unique_int(np.concatenate(keys))
        return keys[0] if keys else np.zeros(0, dtype=np.int64)

    @classmethod
    def restrict_coupling_keys(cls, graph, n_features, keys, coupling_columns):
        """``keys`` (:meth:`support_keys`) without the coupling templates' entries of
        the observations outside ``coupling_columns`` (a boolean mask over the
        ``n_features`` observations; None: ``keys`` unchanged)."""
        if coupling_columns is None or keys is None:
            return keys
        layout0 = cls._empty(graph, n_features)
        width = np.int64(layout0.score_width)
        coupling = np.zeros(width, dtype=bool)
        for e in range(graph.n_edges):
            if graph.edge_kind[e] == COUPLING and not graph.edge_tied[e]:
                coupling[layout0.edge_col[e]:layout0.edge_col[e] + graph.edge_size(e)] = True
        keep = ~coupling[keys % width] | np.asarray(coupling_columns, dtype=bool)[keys // width]
        return keys[keep]

    @staticmethod
    def _edge_mode(graph, e, modes):
        """Feature support of edge ``e`` under ``modes`` (unary, transition, coupling)."""
        return modes[1] if graph.edge_kind[e] == IN_CHAIN else modes[2]

    @classmethod
    def _empty(cls, graph, n_features):
        """The layout with no feature-table entries (its score columns)."""
        return cls(graph, n_features, np.zeros(n_features + 1, dtype=np.int64),
                   np.zeros(0, dtype=np.int32))

    @classmethod
    def from_keys(cls, graph, n_features, keys):
        """The layout whose feature table has the entries ``keys`` (sorted, distinct;
        :meth:`support_keys`)."""
        width = cls._empty(graph, n_features).score_width
        feat = keys // width
        ent_col = (keys % width).astype(np.int32)
        feat_ptr = np.zeros(n_features + 1, dtype=np.int64)
        np.cumsum(np.bincount(feat, minlength=n_features), out=feat_ptr[1:])
        return cls(graph, n_features, feat_ptr, ent_col)

    def local(self, features):
        """The layout of the feature-table entries of the observations ``features``
        alone, and where its parameters sit in this layout's ``theta``.

        ``features`` are sorted distinct observation columns (those active in a
        sequence); the local layout's observation ``i`` is ``features[i]``.  It has
        the same biases, joint-state transitions and back-off weights.  Returns
        ``(layout, index)``: ``theta[index]`` is the local layout's ``theta``, so
        its potentials and gradients on observations restricted to ``features``
        equal this layout's (the other weights cannot touch them).
        """
        features = np.asarray(features, dtype=np.int64)
        counts = self.feat_ptr[features + 1] - self.feat_ptr[features]
        feat_ptr = np.zeros(len(features) + 1, dtype=np.int64)
        np.cumsum(counts, out=feat_ptr[1:])
        entries = np.repeat(self.feat_ptr[features] - feat_ptr[:-1], counts) + np.arange(
            feat_ptr[-1], dtype=np.int64)
        layout = type(self)(self.graph, len(features), feat_ptr, self.ent_col[entries],
                            self.state_from, self.state_to, self.backoff)
        return layout, np.concatenate([entries, np.arange(self.n_table, self.n_params)])

    # -- potentials -----------------------------------------------------------------
    def observation_rows(self, X, seq_ptr):
        """Observations ``X`` (N, n_features) of sequences ``seq_ptr``, ready for the products."""
        return ObservationRows(X, seq_ptr, np.diff(self.feat_ptr), self.score_width)

    def observation_rows_of(self, indptr, indices, data, seq_ptr):
        """:meth:`observation_rows` of the CSR matrix ``(N, n_features)`` given by its
        arrays: the same, without building the matrix for a few tokens
        (:meth:`ObservationRows.from_csr`)."""
        return ObservationRows.from_csr(indptr, indices, data, seq_ptr, self.n_features,
                                        self.feat_ptr, self.score_width)

    def potentials(self, theta, obs, n_threads=1, forbidden=None, out=None):
        """Unary ``(N, Ltot)`` and flat pairwise log-potentials for observations ``obs``.

        ``obs`` comes from :meth:`observation_rows`.  ``forbidden`` maps an edge
        index to a boolean ``(L_a, L_b)`` mask of assignments that get a ``-inf``
        potential.  ``out``: a float64 C-contiguous ``(N, score_width)`` array
        for the per-token scores, whatever it held (an objective's, reused
        between evaluations: a new array of that size is faulted in page by page
        every time); the unary potentials are then ``out`` itself when the
        scores are those alone (``score_width == Ltot``).
        """
        graph = self.graph
        n = obs.shape[0]
        ltot = graph.total_labels
        if out is None:
            scores = np.zeros((n, self.score_width), dtype=np.float64)
        elif (out.shape != (n, self.score_width) or out.dtype != np.float64
              or not out.flags.c_contiguous or not out.flags.writeable):
            raise ValueError(f"out must be a writeable C-contiguous float64 array of shape "
                             f"({n}, {self.score_width})")
        else:
            scores = out
            if not self.n_table:
                scores.fill(0.0)
        unary_bias = theta[self.bias_unary:self.bias_unary + ltot]
        if self.n_table:
            # the unary biases added in the table's pass (the untied edges' columns
            # get theirs below, as they are copied out)
            bias = np.zeros(self.score_width)
            bias[:ltot] = unary_bias
            obs.add_scores(self.feat_ptr, self.ent_col, theta, scores, n_threads,
                           clear=out is not None, bias=bias)
        else:
            scores[:, :ltot] += unary_bias
        if self.score_width == ltot:
            unary = scores
        else:
            unary = np.ascontiguousarray(scores[:, :ltot])
        edge_offset = pair_layout(graph, n)
        pair = np.empty(int(edge_offset[-1]), dtype=np.float64)
        for e in range(graph.n_edges):
            k = graph.edge_size(e)
            bias = theta[self.bias_edge[e]:self.bias_edge[e + 1]]
            block = pair[edge_offset[e]:edge_offset[e + 1]]
            if graph.edge_tied[e]:
                block[:] = bias
                a = int(graph.edge_a[e])
                if graph.edge_kind[e] == IN_CHAIN and a in self.backoff:
                    L = int(graph.n_labels[a])
                    b = theta[self.bias_backoff[a]:self.bias_backoff[a] + L]
                    np.copyto(block.reshape(L, L), np.broadcast_to(b, (L, L)),
                              where=self.backoff[a])
            else:
                col = self.edge_col[e]
                np.add(scores[:, col:col + k], bias, out=block.reshape(n, k))
            if forbidden is not None and e in forbidden:
                mask = forbidden[e].ravel()
                block.reshape(-1, k)[:, mask] = -np.inf
        return unary, pair, edge_offset

    def gradient(self, dunary, dpair, edge_offset, obs, n_threads=1):
        """Map gradients w.r.t. the potentials to gradients w.r.t. ``theta``.

        ``obs`` are the observations the potentials came from
        (:meth:`observation_rows`).  ``dunary`` may be overwritten.
        """
        graph = self.graph
        n, ltot = dunary.shape
        grad = np.empty(self.n_params, dtype=np.float64)
        if self.score_width == ltot:
            dscore = dunary
        else:
            dscore = np.empty((n, self.score_width), dtype=np.float64)
            dscore[:, :ltot] = dunary
        untied = []
        for e in range(graph.n_edges):
            k = graph.edge_size(e)
            block = dpair[edge_offset[e]:edge_offset[e + 1]]
            if graph.edge_tied[e]:
                grad[self.bias_edge[e]:self.bias_edge[e + 1]] = block
            else:
                col = self.edge_col[e]
                dscore[:, col:col + k] = block.reshape(n, k)
                untied.append((e, col, k))
        grad[self.bias_state:] = 0.0       # filled by the objectives that use them
        if self.n_table:
            # the biases' gradient (dscore's column sums) summed in the table's pass
            sums = np.zeros(self.score_width)
            grad[:self.n_table] = 0.0
            obs.add_gradient(self.feat_ptr, self.ent_col, dscore, grad[:self.n_table], n_threads,
                             col_sums=sums)
        else:
            sums = dscore.sum(axis=0)
        grad[self.bias_unary:self.bias_unary + ltot] = sums[:ltot]
        for e, col, k in untied:
            grad[self.bias_edge[e]:self.bias_edge[e + 1]] = sums[col:col + k]
        return grad

    def kernel_tables(self, forbidden=None, table=None):
        """What the objective kernels read of this layout: a
        :class:`skfcrf._kernels._contract.ParameterTables` (offsets, edge tables, the
        forbidden assignments ``forbidden`` -- edge index -> boolean ``(L_a, L_b)``
        mask -- in the kernels' one encoding, the feature table).  ``table``:
        ``(feat_ptr, ent_col)`` of a feature table reduced to some of the entries,
        for a ``theta`` of those entries followed by the biases."""
        return ParameterTables(self, forbidden, table)

    def pseudolikelihood(self, theta, obs, gold, n_threads=1, forbidden=None, tables=None):
        """Negative log-pseudolikelihood per sequence and its gradient w.r.t. ``theta``.

        The same as :func:`skfcrf._kernels._pseudolikelihood.pseudolikelihood` on
        :meth:`potentials`, mapped back by :meth:`gradient`, computed one
        sequence at a time without whole-batch score or potential arrays.
        ``gold`` is the ``(N, C)`` int32 array of gold label indices.
        ``tables``: :meth:`kernel_tables` of ``forbidden``, when the caller
        keeps them (built here otherwise).
        """
        if tables is None:
            tables = self.kernel_tables(forbidden)
        return pseudolikelihood_objective(
            tables, obs, np.ascontiguousarray(gold, dtype=np.int32),
            np.ascontiguousarray(theta, dtype=np.float64), n_threads)


class GoldStatistics:
    """Constant statistics of the gold labelling used by the likelihood objective."""

    def __init__(self, graph, seq_ptr, gold, edge_offset):
        n = gold.shape[0]
        ltot = graph.total_labels
        self.unary_index = (np.arange(n)[:, None] * ltot + graph.label_offset[:-1]
                            + gold).ravel()
        seq_of = np.repeat(np.arange(len(seq_ptr) - 1), np.diff(seq_ptr))
        self.n_sequences = len(seq_ptr) - 1
        self.unary_seq = np.repeat(seq_of, graph.n_chains)
        pair_index, pair_seq = [], []
        for e in range(graph.n_edges):
            rows = _valid_edge_rows(graph, e, seq_ptr, n)
            assign = gold_assignment(graph, e, rows, gold)
            if graph.edge_tied[e]:
                pair_index.append(edge_offset[e] + assign)
            else:
                pair_index.append(edge_offset[e] + rows * graph.edge_size(e) + assign)
            pair_seq.append(seq_of[rows])
        self.pair_index = np.concatenate(pair_index) if pair_index else np.zeros(0, np.int64)
        self.pair_seq = np.concatenate(pair_seq) if pair_seq else np.zeros(0, np.int64)
        self.pair_counts = np.bincount(self.pair_index, minlength=int(edge_offset[-1])).astype(np.float64)

    def score(self, unary, pair):
        return unary.ravel()[self.unary_index].sum() + pair[self.pair_index].sum()

    def sequence_scores(self, unary, pair):
        """The gold labelling's score per sequence, ``(n_seq,)``."""
        return self.scores(unary, pair)[1]

    def scores(self, unary, pair):
        """``(score, sequence_scores)``: the gold labelling's score (the bits of
        :meth:`score`) and per sequence, from one gather of its potentials."""
        u, p = unary.ravel()[self.unary_index], pair[self.pair_index]
        return (u.sum() + p.sum(), np.bincount(self.unary_seq, u, self.n_sequences)
                + np.bincount(self.pair_seq, p, self.n_sequences))


def labelled_pair_rows(gold, seq_ptr):
    """The rows ``t`` of the labellings ``gold`` ``(N, C)`` that follow a token of the
    same sequence, both with every label given (none ``-1``): the second tokens of
    the fully labelled consecutive pairs."""
    rows = following_tokens(seq_ptr, len(gold))
    return rows[(gold[rows] >= 0).all(axis=1) & (gold[rows - 1] >= 0).all(axis=1)]


def seen_state_pairs(gold, seq_ptr):
    """The distinct ``(from, to)`` label combinations of consecutive tokens of the
    labellings ``gold`` ``(N, C)`` (tokens with a missing label, ``-1``, left
    out): two int32 arrays ``(P, C)``, sorted."""
    gold = np.asarray(gold, np.int32)
    C = gold.shape[1]
    rows = labelled_pair_rows(gold, seq_ptr)
    pairs = unique_rows(np.hstack([gold[rows - 1], gold[rows]])).reshape(-1, 2 * C)
    return (np.ascontiguousarray(pairs[:, :C], np.int32),
            np.ascontiguousarray(pairs[:, C:], np.int32))


def check_gold_allowed(graph, seq_ptr, gold, forbidden, chain_names):
    """Raise ValueError if a training labelling uses a forbidden assignment."""
    if not forbidden:
        return
    n = gold.shape[0]
    for e, mask in forbidden.items():
        rows = _valid_edge_rows(graph, e, seq_ptr, n)
        assign = gold_assignment(graph, e, rows, gold)
        rows, assign = rows[assign >= 0], assign[assign >= 0]
        bad = mask.ravel()[assign]
        if bad.any():
            row = int(rows[np.flatnonzero(bad)[0]])
            s = int(np.searchsorted(seq_ptr, row, side="right") - 1)
            raise ValueError(
                f"y[{s}] token {row - seq_ptr[s]}: the training labels use a forbidden "
                f"{'transition' if graph.edge_kind[e] == IN_CHAIN else 'coupling'} in "
                f"{chain_names(e)}"
            )
