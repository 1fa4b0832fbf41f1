"""One model-building pipeline: the model structure from mergeable statistics.

A fit builds its model from statistics gathered per *batch* of training
sequences (a sequence never split between batches) and merged.  A local fit
(:func:`~skfcrf.estimators._fcrf.training_problem`) has one batch, the whole
training set; a Dask fit (:mod:`skfcrf.dask`) one per partition.  Both run
these functions:

1. raw sequences: observation counts (:meth:`ObservationEncoder.count
   <skfcrf.estimators._observations.ObservationEncoder.count>`, merged by
   :meth:`~skfcrf.estimators._observations.ObservationCounts.merge`; the one
   batch of a local fit is counted and encoded in one pass,
   :meth:`~skfcrf.estimators._observations.ObservationEncoder.fit_transform`)
   and label sets (:func:`~skfcrf.model._labels.label_sets`, merged by
   :func:`~skfcrf.model._labels.merge_label_sets`) -> the observation
   encoder and ``classes_``; then the graph (:func:`model_graph`);
2. encoded sequences: :class:`StructureStatistics` -- feature-table keys of the
   ``"supported"`` templates, label combinations, in-chain transitions (the
   sequences each occurs in),
   consecutive label combinations, column counts, sizes -- merged by
   :meth:`StructureStatistics.merge`;
3. :func:`build_model` from the merged statistics: the memory guard
   (:func:`check_memory`), the parameter layout, the joint label states, the
   forbidden assignments (:func:`forbidden_assignments`, home of the
   ``forbidden_transitions="auto"`` rule) and the joint-state transition weights.

Every statistic merges by union, sum or ``|``, so the model built from the
merged statistics of any split of the sequences into batches is the model of
the whole set, bit for bit.  The memory guard is for the process that holds
the largest batch (a worker of a Dask fit; the only process of a local one).
"""
import dataclasses
from collections import namedtuple

import numpy as np

from skfcrf._kernels._chainwise import SPARSE_TRANSITIONS
from skfcrf._kernels.graph import IN_CHAIN
from skfcrf._kernels.joint import joint_states_from_labels, unique_rows
from skfcrf.inference import resolve_method
from skfcrf.model._labels import forbidden_masks, resolve_couplings, transition_sequence_counts
from skfcrf.model._layout import ParameterLayout, build_graph, seen_state_pairs, unique_int
from skfcrf.model._memory import check_fit_memory, column_counts, estimate_fit_memory
from skfcrf.model._partial import expand_given_states, given_combinations

__all__ = ["BACKOFF_FOLDS", "StructureStatistics", "Model", "model_graph", "collect_options",
           "build_model", "check_memory", "coupling_columns", "forbidden_assignments",
           "transitions_choice",
           "learns_backoff", "uses_state_transitions", "select_sequences"]

#: Folds of the deleted likelihood that learns the back-off weights
#: (:mod:`skfcrf.objectives._backoff`; sequence ``i`` in fold ``i % BACKOFF_FOLDS``), and
#: the training sequences ``forbidden_transitions="auto"`` needs to back off: with
#: fewer, some fold's complement would be a single sequence or none, and every
#: transition a back-off one.
BACKOFF_FOLDS = 5

#: ``forbidden_transitions="auto"`` leaves a chain's transitions open (as None does)
#: when more than this share of its ``L x L`` was seen in training (its products are
#: dense in any case: :data:`~skfcrf._kernels._chainwise.SPARSE_TRANSITIONS`) ...
LOOSE_SEEN = SPARSE_TRANSITIONS

#: ... and its training data meet a transition seen in no other sequence more often
#: than once in this many transitions (Good and Turing's estimate of how often new
#: data bring a transition never seen: the share of those seen once).
NEW_TRANSITION_RATE = 1e-4

#: What :func:`build_model` returns: the parameter layout, the joint label states,
#: the forbidden assignments (edge -> mask), the model's inference method, the
#: back-off transitions of ``forbidden_transitions="backoff"`` (chain -> mask of its
#: in-chain transitions never seen in training; empty without) and the unseen
#: transitions ``"auto"`` scores after training (chain -> mask; empty without) and
#: ``{"open": chains "auto" left open, "new_rate": per chain its
#: :func:`new_transition_rate` (None when not collected)}``.
#: The forbidden assignments include both: training runs over the seen transitions,
#: and the fit estimates the back-off weights last (:mod:`skfcrf.objectives._backoff`).
Model = namedtuple("Model", ["layout", "joint_states", "forbidden", "method", "backoff",
                             "scored", "grammar"])


def _modes(params):
    return params.unary_features, params.transition_features, params.coupling_features


@dataclasses.dataclass
class StructureStatistics:
    """What the model structure needs to know about a batch of encoded sequences.

    Attributes
    ----------
    keys : int64 ndarray or None
        Sorted distinct feature-table keys of the ``"supported"`` templates
        (:meth:`ParameterLayout.support_keys
        <skfcrf.model._layout.ParameterLayout.support_keys>`); None when not
        collected (a warm start keeps its layout).
    complete_states, partial_states : int32 ndarray of shape (n, n_chains)
        Distinct label combinations of the tokens without and with a missing
        label (:func:`~skfcrf.model._partial.given_combinations`).
    state_pairs : int32 ndarray of shape (P, 2 * n_chains) or None
        Distinct label combinations of consecutive tokens, ``from`` then ``to``
        (:func:`~skfcrf.model._layout.seen_state_pairs`); None when not collected.
    transition_sequences : dict or None
        In-chain edge -> ``(L, L)`` int64 counts of the sequences each transition
        occurs in (:func:`~skfcrf.model._labels.transition_sequence_counts`); None
        when not collected.  :attr:`seen` is its ``> 0``.
    column_counts : int ndarray of shape (n_features,)
        Stored observation entries per column.
    n_tokens, nnz, n_sequences : int
        Sizes of the largest batch (by tokens).
    n_pairs : int
        Consecutive token pairs of all the batches' sequences (summed).
    partial : bool
        Whether a sequence with a given label has a missing one.
    """

    keys: object
    complete_states: np.ndarray
    partial_states: np.ndarray
    state_pairs: object
    transition_sequences: object
    column_counts: np.ndarray
    n_tokens: int
    nnz: int
    n_sequences: int
    partial: bool
    n_pairs: int

    @classmethod
    def collect(cls, graph, X, seq_ptr, gold, *, modes=None, transitions=True,
                state_pairs=True):
        """The statistics of the encoded sequences ``X`` (sparse ``(N, n_features)``),
        ``seq_ptr`` and label indices ``gold`` (``-1``: missing).

        ``modes``: the feature support ``(unary, transition, coupling)`` whose
        keys to collect (None: none); ``transitions`` / ``state_pairs``: whether
        to collect the seen transitions / consecutive label combinations
        (:func:`collect_options` says what a model needs).
        """
        X = X.tocsr()
        gold = np.asarray(gold, dtype=np.int32)
        seq_ptr = np.asarray(seq_ptr, dtype=np.int64)
        n_seq = len(seq_ptr) - 1
        complete, partial = given_combinations(gold)
        known = gold >= 0
        seq_of = np.repeat(np.arange(n_seq), np.diff(seq_ptr))
        labelled = np.zeros(n_seq, dtype=bool)
        labelled[seq_of[known.any(axis=1)]] = True
        return cls(
            keys=(None if modes is None else
                  ParameterLayout.support_keys(graph, X, seq_ptr, gold, *modes,
                                               supported_only=True)),
            complete_states=complete, partial_states=partial,
            state_pairs=np.hstack(seen_state_pairs(gold, seq_ptr)) if state_pairs else None,
            transition_sequences=(transition_sequence_counts(graph, seq_ptr, gold)
                                  if transitions else None),
            column_counts=column_counts(X), n_tokens=X.shape[0], nnz=int(X.nnz),
            n_sequences=n_seq, partial=not known[labelled[seq_of]].all(),
            n_pairs=int(np.maximum(np.diff(seq_ptr) - 1, 0).sum()))

    @classmethod
    def merge(cls, parts):
        """The statistics of the concatenated batches ``parts``."""
        parts = list(parts)
        first = parts[0]
        largest = max(parts, key=lambda p: p.n_tokens)
        return cls(
            keys=None if first.keys is None else unique_int(np.concatenate(
                [p.keys for p in parts])),
            complete_states=joint_states_from_labels(
                np.vstack([p.complete_states for p in parts])),
            partial_states=joint_states_from_labels(
                np.vstack([p.partial_states for p in parts])),
            state_pairs=None if first.state_pairs is None else unique_rows(
                np.vstack([p.state_pairs for p in parts])),
            transition_sequences=None if first.transition_sequences is None else {
                e: np.sum([p.transition_sequences[e] for p in parts], axis=0)
                for e in first.transition_sequences},
            column_counts=np.sum([p.column_counts for p in parts], axis=0),
            n_tokens=largest.n_tokens, nnz=largest.nnz, n_sequences=largest.n_sequences,
            partial=any(p.partial for p in parts), n_pairs=sum(p.n_pairs for p in parts))

    @property
    def seen(self):
        """In-chain edge -> ``(L, L)`` mask of the transitions seen (None when not
        collected)."""
        counts = self.transition_sequences
        return None if counts is None else {e: n > 0 for e, n in counts.items()}

    def joint_states(self, n_labels):
        """The joint label states of the training labels
        (:func:`~skfcrf.model._partial.joint_states_given`)."""
        return expand_given_states(self.complete_states, self.partial_states, n_labels)


def model_graph(params, classes):
    """``(couplings, graph)`` of a model with settings ``params`` and labels ``classes``."""
    couplings = resolve_couplings(params.coupling, len(classes))
    graph = build_graph([len(c) for c in classes], couplings, params.transition_features,
                        params.coupling_features)
    return couplings, graph


def collect_options(params, n_chains, warm=False):
    """Keyword arguments of :meth:`StructureStatistics.collect`: what a model with
    settings ``params`` needs (a warm start keeps its layout)."""
    st = params.state_transitions
    wanted = _trains_joint(params) if isinstance(st, str) else bool(st)    # "auto" or not
    wanted = wanted and params.transition_features != "none"
    return dict(modes=None if warm else _modes(params),
                transitions=isinstance(params.forbidden_transitions, str),
                state_pairs=not warm and n_chains > 1 and wanted)


def _trains_joint(params):
    """Whether the likelihood over the joint label states is trained (the objective or
    the fine-tuning stage)."""
    return params.objective == "likelihood" or params.finetune_iter > 0


def check_memory(params, graph, n_features, stats, coupling_columns=None):
    """The memory guard: ``MemoryError`` when the estimated peak memory of the fit
    (:func:`~skfcrf.model._memory.estimate_fit_memory`; the weights, and the
    largest batch's arrays) exceeds ``params.max_memory`` or the memory available."""
    u, t, c = _modes(params)
    return check_fit_memory(estimate_fit_memory(
        graph, stats.n_tokens, n_features, stats.nnz, unary_features=u,
        transition_features=t, coupling_features=c, objective=params.objective,
        lbfgs_memory=params.lbfgs_memory, column_counts=stats.column_counts,
        n_sequences=stats.n_sequences, coupling_columns=coupling_columns),
        params.max_memory, params.verbose)


def coupling_columns(params, observation_names):
    """The ``coupling_observations`` parameter as a boolean mask over the model's
    observations (None: every observation), or ``ValueError``.

    A group is a name prefix: an observation belongs to the coupling templates'
    observations when its name starts with one of the given prefixes (e.g.
    ``"pos_window__"`` for every observation of one transformer of a
    :func:`~skfcrf.transformers.make_sequence_union`).
    """
    groups = params.coupling_observations
    if groups is None:
        return None
    groups = (groups,) if isinstance(groups, str) else tuple(groups)
    if not groups or not all(isinstance(g, str) and g for g in groups):
        raise ValueError("coupling_observations must be a non-empty name prefix or a "
                         f"non-empty list of them, got {params.coupling_observations!r}")
    if params.coupling_features == "default":
        raise ValueError(
            "coupling_observations chooses the observations of the coupling templates' "
            "weights, and coupling_features='default' gives them none: use "
            "coupling_features='supported' or 'all'")
    if observation_names is None:
        raise ValueError("coupling_observations needs named observations (dicts or lists "
                         "of names); this model was fitted on matrices")
    mask = np.fromiter((str(n).startswith(groups) for n in observation_names), dtype=bool,
                       count=len(observation_names))
    if not mask.any():
        prefixes = sorted({str(n).split("__", 1)[0] + "__" for n in observation_names
                           if "__" in str(n)})[:10]
        raise ValueError(
            f"coupling_observations={params.coupling_observations!r} matches no "
            "observation the model kept"
            + (f"; the observations' group prefixes include {prefixes}" if prefixes else ""))
    return mask


def forbidden_assignments(params, graph, classes, stats, method, previous=None):
    """``(forbidden, backoff, scored, loose)``: edge -> mask of the assignments
    training forbids; chain -> mask of the in-chain transitions the fine-tuning scores
    by back-off weights (``"backoff"``; empty without); chain -> mask of the unseen
    transitions that get back-off weights after training (``"auto"``; empty without);
    the chains ``"auto"`` leaves open (:func:`loose_grammar`).

    ``forbidden_transitions="auto"`` trains and decodes the closed world when the
    model has several chains, ``method`` is over the joint label states and every
    label of the labelled sequences is given: every in-chain transition never seen
    in training is forbidden, as with ``"unseen"``, but in a chain with a loose
    grammar (:func:`loose_grammar`), which stays open; when back-off weights can be
    learnt (:func:`learns_backoff`) those transitions are also ``scored``: after
    training each chain's deleted likelihood gives them back-off weights for
    ``log_prob``, the marginals and constrained decoding, while MAP decoding keeps
    to the seen transitions.  Otherwise ``"auto"`` is None.  ``"backoff"`` (the
    first three conditions and two sequences, else ``ValueError``): the in-chain
    transitions seen in at most one fold are back-off transitions -- forbidden while
    training, scored by back-off weights in the fitted model
    (:mod:`skfcrf.objectives._backoff`).  ``previous``: the forbidden assignments of
    the fit a warm start continues (a transition seen then stays allowed).
    """
    transitions = params.forbidden_transitions
    open_world = scoring = False
    if isinstance(transitions, str) and transitions in ("auto", "backoff"):
        several_joint = graph.n_chains > 1 and method.over_joint_states and not stats.partial
        if transitions == "backoff" and not several_joint:
            raise ValueError(
                "forbidden_transitions='backoff' needs several chains, inference over the "
                f"joint label states (this model's resolves to {method.name!r}) and every "
                "label given")
        if transitions == "backoff" and stats.n_sequences < 2:
            raise ValueError(
                "forbidden_transitions='backoff' learns the back-off weights on held-out "
                f"folds of the training sequences: it needs at least two, got "
                f"{stats.n_sequences}")
        open_world = several_joint and transitions == "backoff"
        scoring = (several_joint and transitions == "auto"
                   and learns_backoff(params, stats.n_sequences))
        transitions = "unseen" if several_joint else None
    forbidden = forbidden_masks(graph, classes, transitions, params.forbidden_couplings,
                                stats.seen)
    loose = []
    if params.forbidden_transitions == "auto" and transitions == "unseen":
        # a chain with a loose grammar stays open; the others are closed
        loose = sorted(int(graph.edge_a[e]) for e, m in forbidden.items()
                       if loose_grammar(graph, e, m, stats))
        forbidden = {e: m for e, m in forbidden.items()
                     if not (graph.edge_kind[e] == IN_CHAIN and int(graph.edge_a[e]) in loose)}
    if previous is not None and isinstance(transitions, str):
        forbidden = {e: m & previous[e] for e, m in forbidden.items()
                     if e in previous and (m & previous[e]).any()}
    in_chain = {int(graph.edge_a[e]): m for e, m in forbidden.items()
                if graph.edge_kind[e] == IN_CHAIN and graph.edge_tied[e] and m.any()}
    backoff = in_chain if open_world else {}
    scored = in_chain if scoring else {}
    return forbidden, backoff, scored, loose


def transitions_choice(est, scored, grammar):
    """The fitted model's ``transitions_``: what its in-chain transitions are and why.

    A dict: ``"world"`` -- ``"seen+backoff"`` (``"auto"``'s closed world with back-off
    scores for the unseen transitions: ``scored``), ``"seen"``, ``"backoff"``,
    ``"open"`` or ``"explicit"``; ``"decoding"`` -- ``"seen"`` when MAP decoding
    keeps to the transitions seen in training while the unseen ones are scored,
    else ``"allowed"``; ``"unseen"`` -- per chain the transitions never seen in
    training that the model forbids or backs off; ``"open"`` -- the chains
    ``"auto"`` left open (a loose grammar); ``"new_rate"`` -- per chain
    :func:`new_transition_rate` (None where not collected); ``"reason"``, one
    sentence.  ``grammar``: :class:`Model`'s.
    """
    params = est.forbidden_transitions
    graph = est.graph_
    masks = {int(graph.edge_a[e]): m for e, m in est.forbidden_.items()
             if graph.edge_kind[e] == IN_CHAIN and graph.edge_tied[e]}
    masks.update(est.layout_.backoff)
    unseen = [int(masks[c].sum()) if c in masks else 0 for c in range(graph.n_chains)]
    loose = list((grammar or {}).get("open", []))
    rates = (grammar or {}).get("new_rate")
    if scored:
        world, reason = "seen+backoff", (
            "several chains decoded over their joint label states with every label given: "
            "trained and MAP-decoded over the transitions seen in training, the unseen ones "
            f"scored by back-off weights from {BACKOFF_FOLDS} held-out folds")
    elif isinstance(params, str) and params == "auto":
        if any(unseen):
            world, reason = "seen", (
                f"the unseen transitions' back-off weights need at least {BACKOFF_FOLDS} "
                "training sequences in one process: the closed world")
        else:
            world, reason = "open", (
                "one chain, inference not over the joint label states, missing labels or "
                "only loose grammars: every transition scored (as CRFsuite with "
                "all_possible_transitions)")
    elif isinstance(params, str):
        world = "seen" if params == "unseen" else params
        reason = f"forbidden_transitions={params!r}"
    elif params is None:
        world, reason = "open", "forbidden_transitions=None"
    else:
        world, reason = "explicit", "the forbidden transitions given"
    if loose and world != "open":
        reason += (f"; chains {loose} open: more than {LOOSE_SEEN:.0%} of their transitions "
                   f"seen and a new one at more than {NEW_TRANSITION_RATE:.2%} of the tokens")
    return {"world": world, "decoding": "seen" if scored else "allowed", "unseen": unseen,
            "open": loose, "new_rate": rates, "reason": reason}


def new_transition_rate(graph, edge, stats):
    """How often the training data of in-chain edge ``edge`` meet a transition seen in
    no other sequence: those transitions over all the consecutive token pairs
    (``stats``, :class:`StructureStatistics`) -- Good and Turing's estimate of the
    share of a new sequence's transitions never seen in training."""
    singles = int((stats.transition_sequences[edge] == 1).sum())
    return singles / max(stats.n_pairs, 1)


def loose_grammar(graph, edge, mask, stats):
    """Whether ``forbidden_transitions="auto"`` leaves the in-chain edge ``edge``
    open: a tied in-chain template with more than :data:`LOOSE_SEEN` of its
    transitions seen (``~mask``) whose :func:`new_transition_rate` exceeds
    :data:`NEW_TRANSITION_RATE`.

    Part of speech in a few thousand sentences is such a chain (CoNLL-2000: 45% of
    the transitions seen, a new one at 0.4% of the tokens): trained with the unseen
    transitions forbidden its weights generalise worse, and the open chain wins
    (``benchmarks/suite.py``).  Section and sentence chains see few of their
    transitions, or see each in many sequences, and are closed.
    """
    if graph.edge_kind[edge] != IN_CHAIN or not graph.edge_tied[edge]:
        return False
    return bool((~mask).mean() > LOOSE_SEEN
                and new_transition_rate(graph, edge, stats) > NEW_TRANSITION_RATE)


def learns_backoff(params, n_sequences):
    """Whether ``forbidden_transitions="auto"`` gives a model of settings ``params``
    trained on ``n_sequences`` sequences back-off weights for its unseen transitions:
    each chain's deleted likelihood over :data:`BACKOFF_FOLDS` folds learns them after
    training, in one process (``params._auto_backoff``: False for
    :class:`~skfcrf.dask.DaskFactorialCRF`), on at least :data:`BACKOFF_FOLDS`
    sequences."""
    return getattr(params, "_auto_backoff", True) and n_sequences >= BACKOFF_FOLDS


def uses_state_transitions(params, n_chains, method, partial):
    """Whether the model gets joint-state transition weights (``state_transitions``)."""
    usable = (n_chains > 1 and method.over_joint_states
              and params.transition_features != "none")
    if isinstance(params.state_transitions, str):     # "auto"
        return usable and _trains_joint(params) and not partial
    if params.state_transitions and not usable:
        raise ValueError(
            "state_transitions=True needs several chains and inference over the joint "
            "label states (inference='joint', or 'auto' resolving to it); this model has "
            f"{n_chains} chain(s) and inference {method.name!r}")
    return bool(params.state_transitions)


def build_model(params, graph, n_features, classes, stats, previous=None,
                observation_names=None):
    """The model of settings ``params`` over ``graph`` from merged statistics ``stats``.

    Checks the memory (before the feature table is allocated), then builds the
    parameter layout, the joint label states, the forbidden assignments and the
    joint-state transition weights.  ``previous``: the fitted estimator a warm
    start continues; its layout is kept, its joint states and forbidden
    assignments are merged with those of ``stats``.  ``observation_names``: the
    kept observations' names (None for matrix input), for
    ``params.coupling_observations`` (:func:`coupling_columns`).

    Returns
    -------
    Model
    """
    if previous is None:
        columns = coupling_columns(params, observation_names)
        check_memory(params, graph, n_features, stats, columns)
        keys = [ParameterLayout.all_keys(graph, n_features, *_modes(params), columns),
                ParameterLayout.restrict_coupling_keys(graph, n_features, stats.keys, columns)]
        layout = ParameterLayout.from_keys(graph, n_features, unique_int(np.concatenate(keys)))
        joint_states = stats.joint_states(graph.n_labels)
    else:
        layout = previous.layout_
        joint_states = joint_states_from_labels(
            np.vstack([previous.joint_states_, stats.joint_states(graph.n_labels)]))
    method = resolve_method(params.inference, graph, joint_states)
    forbidden, backoff, scored, loose = forbidden_assignments(
        params, graph, classes, stats, method,
        None if previous is None else previous.forbidden_)
    rates = None
    if stats.transition_sequences is not None:
        rates = [0.0] * graph.n_chains
        for e in stats.transition_sequences:
            rates[int(graph.edge_a[e])] = new_transition_rate(graph, e, stats)
    grammar = {"open": loose, "new_rate": rates}
    if previous is None and uses_state_transitions(params, graph.n_chains, method,
                                                   stats.partial):
        C = graph.n_chains
        layout = layout.with_state_pairs(stats.state_pairs[:, :C], stats.state_pairs[:, C:])
    return Model(layout, joint_states, forbidden, method, backoff, scored, grammar)


def select_sequences(seq_ptr, index):
    """``(rows, seq_ptr)`` of the sequences ``index`` (in that order) of ``seq_ptr``:
    their tokens' rows and their boundaries once stacked."""
    seq_ptr = np.asarray(seq_ptr, dtype=np.int64)
    lengths = np.diff(seq_ptr)[index]
    rows = np.concatenate([np.arange(seq_ptr[s], seq_ptr[s + 1]) for s in index])
    return rows, np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
