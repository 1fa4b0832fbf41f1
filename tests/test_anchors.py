"""Anchored decoding (``anchors``): a chain's own sure labels kept by the joint decoding.

References: enumeration of one chain's own factors on tiny random graphs; the greedy
held-out choice against a stub model whose accuracy each anchor set fixes; the
fitted estimator against ``decode(fixed=...)`` with the anchored labels.
"""
import itertools

import numpy as np
import pytest
from scipy.special import logsumexp

from skfcrf import FactorialCRF
from skfcrf._kernels.graph import IN_CHAIN
from skfcrf.estimators import _anchoring
from skfcrf.estimators._anchoring import choose_anchors, joint_hits
from skfcrf.inference._anchors import anchored_labels, chain_marginals

from brute import make_problem, pot

# the estimator tests train a few iterations on purpose
pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


def _own_marginals_brute(graph, seq_ptr, unary, pair, edge_offset, chain):
    lo = graph.label_offset[chain]
    L = int(graph.n_labels[chain])
    e = [e for e in range(graph.n_edges)
         if graph.edge_kind[e] == IN_CHAIN and graph.edge_a[e] == chain][0]
    out = np.zeros((unary.shape[0], L))
    for s in range(len(seq_ptr) - 1):
        start, T = int(seq_ptr[s]), int(seq_ptr[s + 1] - seq_ptr[s])
        ys = list(itertools.product(range(L), repeat=T))
        scores = []
        for y in ys:
            v = sum(unary[start + t, lo + y[t]] for t in range(T))
            v += sum(pot(graph, pair, edge_offset, e, start + t, y[t - 1], y[t])
                     for t in range(1, T))
            scores.append(v)
        p = np.exp(np.asarray(scores) - logsumexp(scores))
        for y, w in zip(ys, p):
            for t in range(T):
                out[start + t, y[t]] += w
    return out


@pytest.mark.parametrize("tied", [1, 0])
@pytest.mark.parametrize("forbid", [False, True])
def test_chain_marginals_match_enumeration_of_the_chains_own_factors(tied, forbid):
    rng = np.random.default_rng(3 + tied + 2 * forbid)
    graph, seq_ptr, unary, pair, offs, _ = make_problem(
        rng, [2, 3, 2], [3, 1, 4], [(0, 1), (1, 2)], tied, forbid)
    for c in range(3):
        got = chain_marginals(graph, seq_ptr, unary, pair, c)
        want = _own_marginals_brute(graph, seq_ptr, unary, pair, offs, c)
        np.testing.assert_allclose(got, want, atol=1e-10)


def test_anchored_labels_keep_only_sure_tokens_of_the_anchored_chains():
    rng = np.random.default_rng(0)
    graph, seq_ptr, unary, pair, _, _ = make_problem(rng, [2, 3], [4, 3], [(0, 1)], 1)
    unary[:, :2] *= 6.0                      # chain 0 sure at most tokens
    node = chain_marginals(graph, seq_ptr, unary, pair, 0)
    for threshold in (0.6, 0.99):
        kept = anchored_labels(graph, seq_ptr, unary, pair, [0], threshold)
        sure = node.max(axis=1) >= threshold
        assert np.array_equal(kept[sure, 0], node.argmax(axis=1)[sure])
        assert np.all(kept[~sure, 0] == -1)
        assert np.all(kept[:, 1] == -1)      # chain 1 not anchored
    assert np.all(anchored_labels(graph, seq_ptr, unary, pair, [], 0.5) == -1)


class _StubModel:
    """Held-out 'predictions' whose accuracy each anchor set fixes (``table``)."""

    def __init__(self, table, n_chains):
        self.table, self.n_chains, self.anchors_ = table, n_chains, None

    def predict(self, X):
        acc = self.table[tuple(self.anchors_["chains"])]
        out = []
        for k, x in enumerate(X):
            seq = np.array([list("abc"[:self.n_chains])] * len(x), dtype=object)
            a = acc[k] if isinstance(acc, list) else acc
            n_wrong = int(round((1 - a) * len(seq)))
            seq[:n_wrong, 0] = "wrong"
            out.append(seq)
        return out


def _choose(table, n_chains=3):
    y = [np.array([list("abc"[:n_chains])] * 100, dtype=object) for _ in range(9)]
    X = [[{}] * 100 for _ in range(9)]
    return choose_anchors(lambda Xf, yf: _StubModel(table, n_chains), X, y, n_chains)


def test_greedy_choice_takes_the_anchor_sets_that_raise_the_heldout_accuracy():
    table = {(): .90, (0,): .95, (1,): .85, (2,): .93, (0, 1): .94, (0, 2): .97,
             (0, 1, 2): .96}
    got = _choose(table)
    assert got["chains"] == [0, 2]
    assert set(got["heldout"]) == {"none", "0", "1", "2", "0,1", "0,2", "0,1,2"}
    assert "raised" in got["reason"]


def test_greedy_choice_anchors_nothing_when_no_anchor_helps_and_prefers_fewer_on_ties():
    assert _choose({(): .90, (0,): .90, (1,): .80, (2,): .89})["chains"] == []
    table = {(): .90, (0,): .95, (1,): .80, (2,): .80, (0, 1): .95, (0, 2): .95}
    assert _choose(table)["chains"] == [0]


def test_a_gain_that_is_not_clear_on_the_heldout_sequences_adds_no_anchor():
    # three held-out sequences: +0.02 on average, but one of them loses
    noisy = {(): [.90, .90, .90], (0,): [.95, .97, .84], (1,): [.90, .90, .90]}
    got = _choose(noisy, n_chains=2)
    assert got["chains"] == [] and "p < 0.05" in got["reason"]
    assert got["heldout"]["0"] > got["heldout"]["none"]
    clear = {(): [.90, .90, .90], (0,): [.95, .96, .94], (1,): [.90, .90, .90],
             (0, 1): [.95, .96, .94]}
    assert _choose(clear, n_chains=2)["chains"] == [0]


def test_heldout_split_respects_the_token_budgets(monkeypatch):
    monkeypatch.setattr(_anchoring, "MAX_FIT_TOKENS", 250)
    monkeypatch.setattr(_anchoring, "MAX_HELDOUT_TOKENS", 100)
    seen = {}

    def fit_copy(X, y):
        seen["fit"] = sum(len(s) for s in y)
        return _StubModel({(): .9, (0,): .8, (1,): .8}, 2)

    y = [np.array([["a", "b"]] * 100, dtype=object) for _ in range(9)]
    choose_anchors(fit_copy, [[{}] * 100] * 9, y, 2)
    assert seen["fit"] == 200


def test_joint_hits_counts_tokens_with_every_chain_right():
    y = [np.array([["a", "x"], ["b", "y"]], dtype=object)]
    p = [np.array([["a", "x"], ["b", "z"]], dtype=object)]
    assert joint_hits(y, p) == (1, 2)


# ----------------------------------------------------------------- the estimator

def _data(n=12, seed=0):
    """Chain 0 marks a sentence start at every 'x' token (sure), chain 1 a
    section that switches at some sentence starts."""
    rng = np.random.default_rng(seed)
    X, y = [], []
    for _ in range(n):
        T = int(rng.integers(8, 14))
        toks, lab = [], []
        sec = "P"
        for t in range(T):
            start = t == 0 or rng.random() < 0.3
            if start and rng.random() < 0.4:
                sec = "Q" if sec == "P" else "P"
            toks.append({"x": 1.0} if start else {"w": 1.0, f"v{int(rng.integers(3))}": 1.0})
            lab.append(("B" if start else "I", sec))
        X.append(toks)
        y.append(lab)
    return X, y


def test_explicit_anchors_decode_as_decode_with_the_anchored_labels_fixed():
    X, y = _data()
    m = FactorialCRF(max_iter=15, anchors=[0]).fit(X, y)
    assert m.anchors_["chains"] == [0] and m.anchors_["reason"] == "given by anchors"
    plain = FactorialCRF(max_iter=15, anchors=None).fit(X, y)
    assert plain.anchors_["chains"] == []
    np.testing.assert_array_equal(m.coef_, plain.coef_)
    seq_ptr, unary, pair, _ = plain._inference_inputs(X, seen_only=True)
    kept = anchored_labels(plain.graph_, seq_ptr, unary, pair, [0])
    fixed = []
    for s in range(len(X)):
        block = kept[seq_ptr[s]:seq_ptr[s + 1]]
        f = np.full(block.shape, None, dtype=object)
        f[block[:, 0] >= 0, 0] = plain.classes_[0][block[block[:, 0] >= 0, 0]]
        fixed.append(f)
    want = [d.labels for d in plain.decode(X, fixed=fixed)]
    for got, w in zip(m.predict(X), want):
        np.testing.assert_array_equal(got, w)
    for got, w in zip(m.decode(X), want):
        np.testing.assert_array_equal(got.labels, w)


def test_user_fixed_labels_take_priority_over_anchors():
    X, y = _data()
    m = FactorialCRF(max_iter=15, anchors=[0]).fit(X, y)
    fixed = [np.full((len(x), 2), None, dtype=object) for x in X]
    other = {"B": "I", "I": "B"}
    for f, x in zip(fixed, X):
        f[1, 0] = other[m.predict([x])[0][1, 0]]
    for d, f in zip(m.decode(X, fixed=fixed), fixed):
        assert d.labels[1, 0] == f[1, 0]


def test_auto_anchors_record_the_choice_and_round_trip_in_model_files(tmp_path):
    X, y = _data(n=15)
    m = FactorialCRF(max_iter=15, forbidden_transitions="unseen").fit(X, y)
    rec = m.anchors_
    assert set(rec) == {"chains", "threshold", "heldout", "reason"}
    assert "none" in rec["heldout"] and rec["threshold"] == 0.99
    path = tmp_path / "m.npz"
    m.save(path)
    back = FactorialCRF.load(path)
    assert back.anchors_ == rec
    for a, b in zip(back.predict(X), m.predict(X)):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("kwargs, why", [
    (dict(), "one chain"),
    (dict(inference="trp", forbidden_transitions="unseen"), "joint label states"),
    (dict(forbidden_transitions=None), "every in-chain transition is open"),
])
def test_auto_anchors_say_why_they_chose_none(kwargs, why):
    X, y = _data()
    if why == "one chain":
        y = [[lab[0] for lab in seq] for seq in y]
    m = FactorialCRF(max_iter=10, **kwargs).fit(X, y)
    assert m.anchors_["chains"] == [] and why in m.anchors_["reason"]


def test_auto_anchors_need_sequences_to_hold_out():
    X, y = _data(n=4)
    m = FactorialCRF(max_iter=10, forbidden_transitions="unseen").fit(X, y)
    assert m.anchors_["chains"] == [] and "fewer than 6" in m.anchors_["reason"]


@pytest.mark.parametrize("anchors", [[2], [0, 0], ["a"], [True], [-1]])
def test_bad_anchors_are_a_clear_value_error(anchors):
    X, y = _data()
    with pytest.raises(ValueError, match="anchors"):
        FactorialCRF(max_iter=5, anchors=anchors).fit(X, y)


def test_bad_anchors_type_is_refused_by_parameter_validation():
    X, y = _data()
    with pytest.raises(ValueError, match="anchors"):
        FactorialCRF(max_iter=5, anchors="all").fit(X, y)


@pytest.mark.parametrize("bad", [
    {"chains": [5], "threshold": 0.99, "heldout": {}, "reason": ""},
    {"chains": [0, 0], "threshold": 0.99, "heldout": {}, "reason": ""},
    {"chains": [0], "threshold": 1.5, "heldout": {}, "reason": ""},
    {"chains": [0], "threshold": 0.99, "heldout": {"none": "x"}, "reason": ""},
    {"chains": [0], "threshold": 0.99},
])
def test_model_files_with_a_malformed_anchors_record_are_refused(tmp_path, bad):
    from skfcrf.estimators import _persistence
    X, y = _data()
    m = FactorialCRF(max_iter=5, anchors=[0]).fit(X, y)
    header, arrays = _persistence._model_contents(m)
    header["anchors"] = bad
    path = tmp_path / "bad.npz"
    with open(path, "wb") as fh:
        _persistence._write_npz(fh, header, arrays)
    with pytest.raises(ValueError, match="anchors"):
        FactorialCRF.load(path)


def test_model_files_without_anchors_load_with_no_anchor(tmp_path):
    X, y = _data()
    m = FactorialCRF(max_iter=5, anchors=[0]).fit(X, y)
    del m.anchors_
    path = tmp_path / "old.npz"
    m.save(path)
    back = FactorialCRF.load(path)
    assert back.anchors_["chains"] == [] and "before anchors" in back.anchors_["reason"]
