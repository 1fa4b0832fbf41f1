"""The one model-building pipeline (model/_building.py): statistics of batches of
sequences, merged, build the model of the whole set; the forbidden-transitions rule and the
memory guard exist once.  These run without dask (tests/test_dask.py fits on a cluster)."""
import numpy as np
import pytest
import scipy.sparse as sp

from skfcrf import FactorialCRF
from skfcrf._kernels.graph import IN_CHAIN
from skfcrf._validation import check_label_sequences
from skfcrf.estimators import training_problem
from skfcrf.model import _building as _statistics
from skfcrf.model._building import StructureStatistics, build_model, collect_options
from skfcrf.model._labels import encode_labels, fit_classes, label_sets, merge_label_sets
from skfcrf.model._layout import ParameterLayout, build_graph
from skfcrf.model._partial import joint_states_given

from _helpers import synthetic

CUTS = [(0, 5), (5, 6), (6, 20)]


def _hide(y, fraction, seed):
    rng = np.random.default_rng(seed)
    out = []
    for seq in y:
        seq = np.array(seq, dtype=object)
        seq[rng.random(seq.shape) < fraction] = None
        out.append(seq)
    return out


def _chunked(y):
    """Labels with structure: chain 1 is B/I chunks, so some transitions never occur."""
    out = []
    for seq in y:
        seq = np.array(seq, dtype=object)
        seq[:, 1] = ["B" if t % 3 == 0 else "I" for t in range(len(seq))]
        out.append(seq)
    return out


def _rare(y, sequences):
    """``_chunked`` labels, with chain 0's labels ``c0 c9 c0`` at tokens 1-3 of each of
    ``sequences``: ``c0 -> c9`` and ``c9 -> c0`` occur in those sequences alone."""
    out = _chunked(y)
    for i in sequences:
        out[i][1:4, 0] = ["c0", "c9", "c0"]
    return out


def _model_of_parts(crf, X, y):
    """build_model over the merged statistics of the sequences in CUTS."""
    y_seqs, _ = check_label_sequences(y, allow_missing=True)
    Xm, seq_ptr = crf.encoder_.transform(X)
    gold = encode_labels(crf.classes_, y_seqs)
    wanted = collect_options(crf, crf.n_chains_)
    parts = []
    for a, b in CUTS:
        rows = slice(seq_ptr[a], seq_ptr[b])
        parts.append(StructureStatistics.collect(crf.graph_, Xm[rows],
                                                 seq_ptr[a:b + 1] - seq_ptr[a], gold[rows],
                                                 **wanted))
    return build_model(crf, crf.graph_, crf.n_features_in_, crf.classes_,
                       StructureStatistics.merge(parts), observation_names=crf.observation_names_)


@pytest.mark.parametrize("params, labels", [
    (dict(forbidden_transitions="backoff"), "chunked"),     # unseen transitions, state pairs
    (dict(), "chunked"),                                    # auto: no singleton, closed
    (dict(), "rare once"),                  # auto: chain 0 loose (c9 in one sequence), open
    (dict(), "rare twice"),                 # c9 in two sequences of two batches: closed
    (dict(unary_features="all", transition_features="supported", coupling_features="all",
          inference="trp", forbidden_transitions="unseen"), "chunked"),
    (dict(forbidden_couplings={(0, 1): [("c2", "hi")]}, state_transitions=True), "no c2/hi"),
    (dict(), "partial"),                                    # auto: none with missing labels
    (dict(coupling_features="supported", coupling_observations="odd=",
          forbidden_transitions="backoff"), "chunked"),
])
def test_merged_statistics_of_parts_build_the_whole_sets_model(params, labels):
    X, y = synthetic(n_seq=20, n_chains=2, seed=6)
    if labels == "chunked":
        y = _chunked(y)
    elif labels.startswith("rare"):
        y = _rare(y, [0] if labels == "rare once" else [0, 19])
    elif labels == "partial":
        y = _hide(y, 0.15, seed=2)
    elif labels == "no c2/hi":
        y = [np.where((np.asarray(s, dtype=object) == ["c2", "hi"]).all(axis=1)[:, None],
                      np.array(["c1", "hi"], dtype=object), np.asarray(s, dtype=object))
             for s in y]
    crf = FactorialCRF(max_iter=1, **params)
    training_problem(crf, X, y)
    model = _model_of_parts(crf, X, y)
    np.testing.assert_array_equal(model.layout.feat_ptr, crf.layout_.feat_ptr)
    np.testing.assert_array_equal(model.layout.ent_col, crf.layout_.ent_col)
    np.testing.assert_array_equal(model.layout.state_from, crf.layout_.state_from)
    np.testing.assert_array_equal(model.layout.state_to, crf.layout_.state_to)
    np.testing.assert_array_equal(model.joint_states, crf.joint_states_)
    assert list(model.forbidden) == list(crf.forbidden_)
    for e, mask in crf.forbidden_.items():
        np.testing.assert_array_equal(model.forbidden[e], mask)
    # the cases exercise what they are meant to: forbidden assignments (chunked: ("B", "B")
    # is never seen), joint-state transition weights, missing labels; a chain left open
    # by "auto" (a transition seen in one sequence alone) only where it is one, though the
    # batches' counts of c9's transitions are 1 each with "rare twice"
    assert bool(crf.forbidden_) == (labels != "partial")
    chain0 = [e for e in crf.forbidden_ if crf.graph_.edge_kind[e] == IN_CHAIN
              and crf.graph_.edge_a[e] == 0]
    if labels.startswith("rare"):
        assert bool(chain0) == (labels == "rare twice")
    assert bool(crf.layout_.n_state_pairs) == ("inference" not in params and labels != "partial")
    assert (crf.joint_states_ < 0).sum() == 0


def test_partial_combinations_are_expanded_after_the_merge():
    """A partially labelled token agreeing with a combination seen only in another batch
    adds nothing: the expansion waits for the merged statistics."""
    graph = build_graph([2, 3], [(0, 1)], "default", "default")
    first = np.array([[0, 1], [1, 2]], np.int32)
    second = np.array([[0, -1], [1, -1], [-1, 0]], np.int32)
    parts = [StructureStatistics.collect(graph, sp.csr_matrix((len(g), 1)),
                                         np.array([0, len(g)]), g)
             for g in (first, second)]
    merged = StructureStatistics.merge(parts).joint_states(graph.n_labels)
    whole = joint_states_given(np.vstack([first, second]), graph.n_labels)
    np.testing.assert_array_equal(merged, whole)
    assert merged.tolist() == [[0, 0], [0, 1], [1, 0], [1, 2]]
    assert len(parts[1].joint_states(graph.n_labels)) > 4     # alone, it would expand more


def test_label_sets_merge_to_the_whole_sets_classes():
    _, y = synthetic(n_seq=12, n_chains=3, seed=1)
    y_seqs, _ = check_label_sequences(_hide(y, 0.3, seed=4), allow_missing=True)
    merged = merge_label_sets(label_sets(y_seqs[a:b], 3) for a, b in [(0, 2), (2, 3), (3, 12)])
    for got, want in zip(merged, fit_classes(y_seqs, 3)):
        np.testing.assert_array_equal(got, want)
    with pytest.raises(ValueError, match="mutually comparable"):
        merge_label_sets([[np.array(["a"], object)], [np.array([1], object)]])
    with pytest.raises(ValueError, match="chain 0 has no label"):
        merge_label_sets([[np.zeros(0, object)]])


@pytest.mark.parametrize("modes", [("all", "all", "all"), ("all", "default", "supported"),
                                   ("supported", "all", "default"), ("default",) * 3])
def test_all_keys_are_the_keys_without_observations(modes):
    graph = build_graph([3, 2], [(0, 1)], modes[1], modes[2])
    keys = ParameterLayout.support_keys(graph, sp.csr_matrix((0, 7)), np.zeros(1, np.int64),
                                        np.zeros((0, 2), np.int32), *modes)
    np.testing.assert_array_equal(ParameterLayout.all_keys(graph, 7, *modes), keys)


def test_memory_guard_runs_once_per_fit(monkeypatch):
    calls = []
    real = _statistics.check_fit_memory
    monkeypatch.setattr(_statistics, "check_fit_memory",
                        lambda est, *a: calls.append(est) or real(est, *a))
    X, y = synthetic(n_seq=10, n_chains=2, seed=3)
    training_problem(FactorialCRF(max_iter=1), X, y)
    assert len(calls) == 1 and calls[0]["n_weights"] > 0
    with pytest.raises(MemoryError):
        training_problem(FactorialCRF(max_memory=1), X, y)


def test_partial_labels_prepare_the_observation_rows_once(monkeypatch):
    """Completing missing labels needs no observations (zero weights), and the sequences
    without a label are left out before the training batch is built."""
    from skfcrf.model import _layout as _model

    built = []
    real = _model.ObservationRows

    def counting(X, *args):
        built.append(sp.csr_matrix(X).nnz)
        return real(X, *args)

    monkeypatch.setattr(_model, "ObservationRows", counting)
    X, y = synthetic(n_seq=12, n_chains=2, seed=5)
    y = _hide(y, 0.2, seed=1)
    y[3] = np.full(np.shape(y[3]), None, dtype=object)      # a sequence without a label
    objective = training_problem(FactorialCRF(max_iter=1), X, y).objective
    assert len([n for n in built if n]) == 1
    assert objective.batch.n_sequences == 11
