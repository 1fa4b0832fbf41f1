"""The model structure fixed by the first fit: chain labels, coupled pairs, constraints.

* ``classes``: per chain a sorted object array of its labels; a label is stored
  as its index in that array (the *gold* array ``(N, n_chains)`` of int32,
  ``-1`` where a training label is missing);
* couplings: sorted ``(a, b)`` chain pairs with ``a < b``
  (:func:`resolve_couplings`);
* forbidden assignments: a dict edge index -> boolean ``(L_a, L_b)`` mask
  (:func:`forbidden_masks`), edges as in :func:`~skfcrf.model._layout.build_graph`.
"""
import numbers

import numpy as np

from skfcrf._kernels.graph import IN_CHAIN, following_tokens

__all__ = ["resolve_couplings", "label_sets", "merge_label_sets", "fit_classes", "encode_labels",
           "seen_transitions", "transition_sequence_counts", "forbidden_masks", "edge_name"]


def resolve_couplings(spec, n_chains):
    """The coupled chain pairs that a ``coupling=`` setting means for ``n_chains`` chains."""
    if isinstance(spec, str):
        if spec == "adjacent":
            return [(c, c + 1) for c in range(n_chains - 1)]
        if spec == "all":
            return [(a, b) for a in range(n_chains) for b in range(a + 1, n_chains)]
        if spec == "none":
            return []
        raise ValueError(
            f"coupling must be 'adjacent', 'all', 'none' or a list of chain pairs, got {spec!r}"
        )
    pairs = set()
    try:
        items = list(spec)
    except TypeError:
        raise ValueError(f"coupling must be a string or a list of chain pairs, got {spec!r}") from None
    for item in items:
        try:
            a, b = (int(v) for v in item)
        except (TypeError, ValueError):
            raise ValueError(f"coupling pairs must be (int, int), got {item!r}") from None
        if a == b or not (0 <= a < n_chains and 0 <= b < n_chains):
            raise ValueError(
                f"coupling pair {item!r} is invalid for {n_chains} chains "
                "(two different chain indices needed)"
            )
        pairs.add((min(a, b), max(a, b)))
    return sorted(pairs)


def label_sets(y_seqs, n_chains):
    """Per chain the sorted distinct labels given in the label sequences ``y_seqs``
    (missing labels, ``None``, left out): the label statistic of one batch of
    sequences, merged by :func:`merge_label_sets`."""
    sets = []
    for c in range(n_chains):
        values = np.concatenate([s[:, c] for s in y_seqs]) if len(y_seqs) else np.zeros(0, object)
        sets.append(_distinct_labels(values[np.not_equal(values, None)], c))
    return sets


def merge_label_sets(parts):
    """``classes``: per chain the union of the batches' :func:`label_sets`, sorted.

    ``ValueError`` when a chain has no label at all or labels that cannot be
    ordered together (str and numbers).
    """
    parts = list(parts)
    classes = []
    for c in range(len(parts[0])):
        labels = _distinct_labels(np.concatenate([p[c] for p in parts]), c)
        if labels.size == 0:
            raise ValueError(f"chain {c} has no label in y: every label of it is missing")
        classes.append(labels)
    return classes


def _distinct_labels(values, c):
    try:
        return np.unique(_without_repeats(values))
    except TypeError:
        raise ValueError(
            f"labels of chain {c} must be mutually comparable (all str or all numbers)"
        ) from None


def _without_repeats(values):
    """``values`` (1-D) with each label once, in any order: hashing a few distinct
    labels among many tokens is much faster than sorting every token's (0.14 s of
    211,727 chunk labels); unhashable labels come back as they are."""
    try:
        distinct = set(values.tolist())
    except TypeError:
        return values
    return np.fromiter(distinct, dtype=values.dtype, count=len(distinct))


def fit_classes(y_seqs, n_chains):
    """Per chain the sorted distinct labels of the label sequences ``y_seqs``
    (missing labels, ``None``, left out): the classes of one batch."""
    return merge_label_sets([label_sets(y_seqs, n_chains)])


def encode_labels(classes, y_seqs, unknown="the model knows only the labels it was trained on"):
    """Gold label indices ``(N, n_chains)`` int32 of the stacked label sequences;
    ``-1`` where a label is missing (``None``).  A label not in ``classes`` is a
    ``ValueError`` that names it and ends with ``unknown`` (why it is not known)."""
    n_chains = len(classes)
    gold = np.full((sum(len(s) for s in y_seqs), n_chains), -1, dtype=np.int32)
    if not len(gold):
        return gold
    stacked = np.concatenate([np.asarray(s).reshape(len(s), n_chains) for s in y_seqs])
    for c in range(n_chains):      # every chain's labels at once; one by one to name a bad one
        chain_classes = classes[c]
        given = np.flatnonzero(np.not_equal(stacked[:, c], None))
        values = stacked[given, c]
        try:
            idx = np.minimum(np.searchsorted(chain_classes, values), len(chain_classes) - 1)
        except TypeError:
            return _encode_labels_by_sequence(classes, y_seqs, unknown)
        if np.any(chain_classes[idx] != values):
            return _encode_labels_by_sequence(classes, y_seqs, unknown)
        gold[given, c] = idx
    return gold


def _encode_labels_by_sequence(classes, y_seqs, unknown):
    """:func:`encode_labels` sequence by sequence: raises naming the first bad label."""
    n_chains = len(classes)
    gold = np.full((sum(len(s) for s in y_seqs), n_chains), -1, dtype=np.int32)
    row = 0
    for i, seq in enumerate(y_seqs):
        for c in range(n_chains):
            chain_classes = classes[c]
            given = np.flatnonzero(np.not_equal(seq[:, c], None))
            values = seq[given, c]
            try:
                idx = np.searchsorted(chain_classes, values)
            except TypeError:
                raise ValueError(f"y[{i}] chain {c}: labels of mixed types") from None
            idx = np.minimum(idx, len(chain_classes) - 1)
            bad = chain_classes[idx] != values
            if np.any(bad):
                t = int(given[np.flatnonzero(bad)[0]])
                raise ValueError(
                    f"y[{i}] token {t} chain {c}: label {seq[t, c]!r} is not a label of the "
                    f"model ({unknown})"
                )
            gold[row + given, c] = idx
        row += len(seq)
    return gold


def label_index(classes, chain, label, what):
    """Index of ``label`` in chain ``chain``; ValueError naming ``what`` if unknown."""
    chain_classes = classes[chain]
    try:  # a label not comparable with the classes (an int among str) is not one of them
        idx = np.searchsorted(chain_classes, label) if len(chain_classes) else 0
        found = idx < len(chain_classes) and chain_classes[idx] == label
    except TypeError:
        found = False
    if not found:
        raise ValueError(f"{what}: label {label!r} is not a label of chain {chain}")
    return int(idx)


def edge_name(graph, e):
    """Human-readable name of edge template ``e`` ("chain 1", "chains (0, 1)")."""
    if graph.edge_kind[e] == IN_CHAIN:
        return f"chain {graph.edge_a[e]}"
    return f"chains ({graph.edge_a[e]}, {graph.edge_b[e]})"


def _transition_masks(graph, classes, spec):
    n_chains = len(classes)
    if isinstance(spec, dict):
        per_chain = spec
    else:
        spec = list(spec)
        if n_chains == 1 and spec and all(
                isinstance(p, (tuple, list)) and len(p) == 2
                and not isinstance(p[0], (tuple, list, set)) for p in spec):
            per_chain = {0: spec}
        else:
            if len(spec) != n_chains:
                raise ValueError(
                    "forbidden_transitions must have one entry per chain "
                    f"({n_chains}), got {len(spec)}"
                )
            per_chain = dict(enumerate(spec))
    masks = {}
    for chain, pairs in per_chain.items():
        if not isinstance(chain, numbers.Integral) or not 0 <= chain < n_chains:
            raise ValueError(f"forbidden_transitions: no chain {chain!r}")
        if pairs is None:
            continue
        L = len(classes[chain])
        mask = np.zeros((L, L), dtype=bool)
        for pair in pairs:
            if not isinstance(pair, (tuple, list)) or len(pair) != 2:
                raise ValueError(f"forbidden_transitions: expected (from, to) pairs, got {pair!r}")
            a = label_index(classes, chain, pair[0], "forbidden_transitions")
            b = label_index(classes, chain, pair[1], "forbidden_transitions")
            mask[a, b] = True
        e = next(e for e in range(graph.n_edges)
                 if graph.edge_kind[e] == IN_CHAIN and graph.edge_a[e] == chain)
        if mask.any():
            masks[e] = mask
    return masks


def _transitions(graph, seq_ptr, gold):
    """``(edge, L, ends, codes)`` per in-chain edge: the tokens ``ends`` that end a
    transition of its chain between two given labels, and the transitions' codes
    ``from * L + to``."""
    gold = np.asarray(gold)
    nxt = following_tokens(seq_ptr, len(gold))
    for e in range(graph.n_edges):
        if graph.edge_kind[e] != IN_CHAIN:
            continue
        c = int(graph.edge_a[e])
        L = int(graph.n_labels[c])
        ends = nxt[(gold[nxt - 1, c] >= 0) & (gold[nxt, c] >= 0)]
        yield e, L, ends, gold[ends - 1, c].astype(np.int64) * L + gold[ends, c]


def transition_sequence_counts(graph, seq_ptr, gold):
    """Per in-chain edge the ``(L, L)`` int64 counts of the sequences in which each
    transition occurs in ``gold`` (a pair with a missing label, ``-1``, shows no
    transition): ``> 0`` are the transitions seen, ``== 1`` those seen in a single
    sequence.  The counts of several batches of sequences merge by ``+``."""
    seq_ptr = np.asarray(seq_ptr, dtype=np.int64)
    seq_of = np.repeat(np.arange(len(seq_ptr) - 1, dtype=np.int64), np.diff(seq_ptr))
    counts = {}
    for e, L, ends, codes in _transitions(graph, seq_ptr, gold):
        # each (sequence, transition) once, then the sequences per transition
        once = np.unique(seq_of[ends] * (L * L) + codes) % (L * L)
        counts[e] = np.bincount(once, minlength=L * L).reshape(L, L)
    return counts


def seen_transitions(graph, seq_ptr, gold):
    """Per in-chain edge the ``(L, L)`` mask of the transitions that occur in ``gold``
    (a pair with a missing label, ``-1``, shows no transition).  The masks of
    several batches of sequences merge by ``|``."""
    seen = {}
    for e, L, _, codes in _transitions(graph, seq_ptr, gold):
        mask = np.zeros(L * L, dtype=bool)
        mask[codes] = True
        seen[e] = mask.reshape(L, L)
    return seen


def _coupling_masks(graph, classes, spec, masks):
    if not isinstance(spec, dict):
        raise ValueError("forbidden_couplings must be a dict {(i, j): [(label_i, label_j), ...]}")
    for key, pairs in spec.items():
        try:
            i, j = (int(v) for v in key)
        except (TypeError, ValueError):
            raise ValueError(f"forbidden_couplings: keys must be chain pairs, got {key!r}") from None
        swap = i > j
        a, b = (j, i) if swap else (i, j)
        edges = [e for e in range(graph.n_edges) if graph.edge_kind[e] != IN_CHAIN
                 and graph.edge_a[e] == a and graph.edge_b[e] == b]
        if not edges:
            raise ValueError(f"forbidden_couplings: chains {key!r} are not coupled")
        mask = np.zeros((len(classes[a]), len(classes[b])), dtype=bool)
        for pair in pairs:
            if not isinstance(pair, (tuple, list)) or len(pair) != 2:
                raise ValueError(f"forbidden_couplings: expected label pairs, got {pair!r}")
            la, lb = (pair[1], pair[0]) if swap else (pair[0], pair[1])
            mask[label_index(classes, a, la, "forbidden_couplings"),
                 label_index(classes, b, lb, "forbidden_couplings")] = True
        if mask.any():
            masks[edges[0]] = masks.get(edges[0], False) | mask
    return masks


def forbidden_masks(graph, classes, forbidden_transitions, forbidden_couplings, seen=None):
    """Edge index -> boolean mask of forbidden assignments, from the user's settings.

    ``forbidden_transitions="unseen"`` forbids, per chain, every transition
    absent from ``seen`` (:func:`seen_transitions` of the training labels).
    """
    masks = {}
    if isinstance(forbidden_transitions, str):
        if forbidden_transitions != "unseen":
            raise ValueError("forbidden_transitions must be None, 'unseen', a list or a dict, "
                             f"got {forbidden_transitions!r}")
        masks.update({e: ~mask for e, mask in seen.items() if not mask.all()})
    elif forbidden_transitions is not None:
        masks.update(_transition_masks(graph, classes, forbidden_transitions))
    if forbidden_couplings is not None:
        _coupling_masks(graph, classes, forbidden_couplings, masks)
    return masks
