"""Label combinations never seen in training, scored and decoded when given labels need them
(issue 29): the state space of a call is extended per sequence (``skfcrf.inference._joint``).

References are brute-force enumerations over the labellings whose label combinations all lie
in the extended space: the seen combinations (``joint_states_``) plus those the sequence's
given labels need.
"""
import warnings

import numpy as np
import pytest
from scipy.special import logsumexp
from sklearn.exceptions import ConvergenceWarning

from skfcrf import FactorialCRF
from skfcrf._kernels.graph import pair_layout
from skfcrf.inference._joint import extra_states

from brute import all_labellings, full_score

#: chain 0 a/b; chain 1 x/y/z with (a, z) and (b, x) never seen
LABELS2 = (("a", "b"), ("x", "y", "z"))
#: three chains of two labels; seen: (a, x, p), (b, x, p), (b, y, q)
LABELS3 = (("a", "b"), ("x", "y"), ("p", "q"))


def _data(n_chains, n_seq=16, seed=0):
    rng = np.random.default_rng(seed)
    X, y = [], []
    for _ in range(n_seq):
        T = int(rng.integers(2, 6))
        X.append([{f"w={rng.integers(4)}": 1.0, f"v={rng.integers(3)}": 1.0} for _ in range(T)])
        rows = []
        for _ in range(T):
            c0 = str(rng.choice(["a", "b"]))
            if n_chains == 2:
                rows.append((c0, str(rng.choice(["x", "y"] if c0 == "a" else ["y", "z"]))))
            else:
                c1 = "x" if c0 == "a" else str(rng.choice(["x", "y"]))
                rows.append((c0, c1, "p" if c1 == "x" else "q"))
        y.append(rows)
    return X, y


def _model(n_chains, seed=0, **params):
    """A fitted joint-state model with random weights (scale 1), unseen transitions allowed."""
    X, y = _data(n_chains, seed=seed)
    kw = dict(max_iter=3, finetune_iter=0, inference="joint", forbidden_transitions=None)
    kw.update(params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est = FactorialCRF(**kw).fit(X, y)
    est.coef_ = np.random.default_rng(seed + 100).normal(size=est.coef_.shape)
    return est, X, y


def _index(est, rows):
    """Label indices ``(T, C)`` of label rows (None -> -1)."""
    return np.array([[-1 if v is None else list(est.classes_[c]).index(v)
                      for c, v in enumerate(row)] for row in rows], np.int64)


def _names(est, labels):
    return [tuple(est.classes_[c][v] for c, v in enumerate(row)) for row in labels]


class Enumeration:
    """Every labelling of ``x`` over the label combinations ``space`` agreeing with
    ``fixed`` (label indices, -1 free), with its score under ``est``."""

    def __init__(self, est, x, space, fixed=None):
        seq_ptr, unary, pair, method = est._inference_inputs([x])
        graph = est.graph_
        edge_offset = pair_layout(graph, len(x))
        seen = {tuple(s): i for i, s in enumerate(est.joint_states_.tolist())}
        V = method.state_trans        # joint-state weights between seen states only
        space = {tuple(s) for s in np.asarray(space).tolist()}
        self.labellings, scores = [], []
        for y in all_labellings(graph, len(x)):
            rows = [tuple(r) for r in y.tolist()]
            if any(r not in space for r in rows):
                continue
            if fixed is not None and np.any((fixed >= 0) & (fixed != y)):
                continue
            score = full_score(graph, unary, pair, edge_offset, 0, y)
            if V is not None:
                score += sum(V[seen[a], seen[b]] for a, b in zip(rows, rows[1:])
                             if a in seen and b in seen)
            self.labellings.append(y)
            scores.append(score)
        self.scores = np.array(scores)
        self.log_z = logsumexp(self.scores)

    def log_prob(self, y):
        for lab, score in zip(self.labellings, self.scores):
            if np.array_equal(lab, y):
                return score - self.log_z
        raise AssertionError("labelling outside the enumeration")

    def marginals(self, graph):
        p = np.exp(self.scores - self.log_z)
        return [sum(pi * np.eye(graph.n_labels[c])[y[:, c]] for pi, y in zip(p, self.labellings))
                for c in range(graph.n_chains)]


def _space(est, *extra):
    rows = [est.joint_states_] + [np.asarray(e, np.int64).reshape(-1, est.n_chains_)
                                  for e in extra]
    return np.unique(np.vstack(rows), axis=0)


def _unseen(est, labels):
    seen = {tuple(s) for s in est.joint_states_.tolist()}
    return [r for r in {tuple(r) for r in labels.tolist()} if r not in seen]


@pytest.mark.parametrize("state_transitions", [False, True])
def test_log_prob_of_unseen_combinations_equals_enumeration(state_transitions):
    params = dict(objective="likelihood", state_transitions=True) if state_transitions else {}
    est, X, _ = _model(2, **params)
    assert bool(est.layout_.n_state_pairs) == state_transitions
    assert len(est.joint_states_) == 4
    rng = np.random.default_rng(1)
    x = next(x for x in X if len(x) == 4)
    graph = est.graph_
    seen_ref = Enumeration(est, x, est.joint_states_)
    n_unseen = 0
    for _ in range(12):
        y = np.stack([rng.integers(0, L, size=len(x)) for L in graph.n_labels], axis=1)
        unseen = _unseen(est, y)
        n_unseen += bool(unseen)
        ref = Enumeration(est, x, _space(est, *unseen)) if unseen else seen_ref
        got = est.log_prob([x], [_names(est, y)])[0]
        assert np.isfinite(got)
        np.testing.assert_allclose(got, ref.log_prob(y), atol=1e-9)
    assert n_unseen >= 6
    # a labelling over the seen combinations is scored as before, against the seen states only
    y = _index(est, [("a", "x"), ("b", "y"), ("b", "z"), ("a", "y")])
    np.testing.assert_allclose(est.log_prob([x], [_names(est, y)])[0], seen_ref.log_prob(y),
                               atol=1e-9)


def test_log_prob_is_per_sequence():
    est, X, _ = _model(2)
    ys = [[("a", "z")] + [("b", "x")] * (len(x) - 1) if i % 2 else
          [("a", "x")] * len(x) for i, x in enumerate(X[:6])]
    together = est.log_prob(X[:6], ys)
    alone = [est.log_prob([x], [y])[0] for x, y in zip(X[:6], ys)]
    np.testing.assert_allclose(together, alone, atol=1e-10)
    assert np.all(np.isfinite(together))


def test_log_prob_of_given_labels_with_unseen_combinations():
    """Missing labels: ``log Z(given) - log Z`` over the extended space of the given labels."""
    est, X, _ = _model(2)
    x = next(x for x in X if len(x) == 4)
    rows = [("a", "z"), (None, "x"), ("b", None), (None, None)]
    given = _index(est, rows)
    space = _space(est, _index(est, [("a", "z")]))
    ref = Enumeration(est, x, space)
    part = Enumeration(est, x, space, given)
    np.testing.assert_allclose(est.log_prob([x], [rows])[0], part.log_z - ref.log_z, atol=1e-9)


@pytest.mark.parametrize("state_transitions", [False, True])
def test_fixed_unseen_combination_equals_enumeration(state_transitions):
    params = dict(objective="likelihood", state_transitions=True) if state_transitions else {}
    est, X, _ = _model(2, **params)
    x = next(x for x in X if len(x) == 4)
    rows = [(None, None), ("a", "z"), (None, None), ("b", None)]
    fixed = _index(est, rows)
    ref = Enumeration(est, x, _space(est, fixed[1]), fixed)
    best = int(np.argmax(ref.scores))
    decoded = est.decode([x], fixed=[rows], n_best=3)[0]
    assert decoded.status == "exact"
    assert decoded.labels[1].tolist() == ["a", "z"] and decoded.labels[3, 0] == "b"
    np.testing.assert_array_equal(_index(est, decoded.labels), ref.labellings[best])
    np.testing.assert_allclose(decoded.log_prob, ref.scores[best] - ref.log_z, atol=1e-9)
    top = np.sort(ref.scores)[::-1][:3] - ref.log_z
    np.testing.assert_allclose([d.log_prob for d in decoded.ranked], top, atol=1e-9)
    marg = est.predict_marginals([x], fixed=[rows])[0]
    for got, want in zip(marg, ref.marginals(est.graph_)):
        np.testing.assert_allclose(got, want, atol=1e-9)


def test_partially_fixed_unseen_combination_equals_enumeration():
    """Three chains, two fixed at a token in a pair seen in no combination: the fixed labels
    with every label of the free chain are added."""
    est, X, _ = _model(3)
    assert {tuple(s) for s in est.joint_states_.tolist()} == {(0, 0, 0), (1, 0, 0), (1, 1, 1)}
    x = next(x for x in X if len(x) == 3)
    rows = [("a", "y", None), (None, None, None), ("b", "x", "q")]
    fixed = _index(est, rows)
    extra = [(0, 1, 0), (0, 1, 1), (1, 0, 1)]
    ref = Enumeration(est, x, _space(est, extra), fixed)
    best = int(np.argmax(ref.scores))
    decoded = est.decode([x], fixed=[rows])[0]
    np.testing.assert_array_equal(_index(est, decoded.labels), ref.labellings[best])
    np.testing.assert_allclose(decoded.log_prob, ref.scores[best] - ref.log_z, atol=1e-9)
    marg = est.predict_marginals([x], fixed=[rows])[0]
    for got, want in zip(marg, ref.marginals(est.graph_)):
        np.testing.assert_allclose(got, want, atol=1e-9)
    # the middle token may use the added combinations too
    assert marg[1][1, 1] > 0
    # a batch gives each sequence its own space: the free sequence is decoded as before
    other = X[0]
    both = est.decode([other, x], fixed=[None, rows])
    np.testing.assert_array_equal(both[0].labels, est.decode([other])[0].labels)
    assert both[0].log_prob == est.decode([other])[0].log_prob
    np.testing.assert_array_equal(both[1].labels, decoded.labels)


def test_decode_fixed_unseen_combination_returns_the_fixed_labels():
    est, X, y = _model(2)
    for x in X[:6]:
        rows = [("a", "z") if t % 2 else ("b", "x") for t in range(len(x))]
        decoded = est.decode([x], fixed=[rows])[0]
        assert [tuple(r) for r in decoded.labels.tolist()] == rows
        assert decoded.log_prob == pytest.approx(0.0, abs=1e-9)
        assert decoded.status == "exact"
    # gold labellings of new sequences fixed, in one batch
    Xn, yn = _data(2, n_seq=8, seed=5)
    yn = [[("b", "x") if t == 0 else r for t, r in enumerate(rows)] for rows in yn]
    decoded = est.decode(Xn, fixed=yn)
    assert all([tuple(r) for r in d.labels.tolist()] == rows for d, rows in zip(decoded, yn))


def test_explicit_forbidden_couplings_still_raise():
    est, X, _ = _model(2, forbidden_couplings={(0, 1): [("a", "z")]})
    x = X[0]
    rows = [("a", "z")] + [(None, None)] * (len(x) - 1)
    with pytest.raises(ValueError, match=r"fixed\[0\] token 0 chain 1 \(label 'z'\).*"
                                         r"forbidden_couplings"):
        est.decode([x], fixed=[rows])
    with pytest.raises(ValueError, match="forbidden_couplings"):
        est.predict_marginals([x], fixed=[rows])
    assert np.isneginf(est.log_prob([x], [[("a", "z")] * len(x)])[0])
    # the other unseen combination is allowed
    assert np.isfinite(est.log_prob([x], [[("b", "x")] * len(x)])[0])
    assert est.decode([x], fixed=[[("b", "x")] * len(x)])[0].labels[0].tolist() == ["b", "x"]


def test_partially_fixed_labels_whose_completions_are_all_forbidden_raise():
    """Chains 0 and 2 fixed to (a, q), never seen together; both chain-1 labels are forbidden
    with one of them (explicit couplings): no labelling, a clear error."""
    est, X, _ = _model(3, forbidden_couplings={(0, 1): [("a", "y")], (1, 2): [("x", "q")]})
    x = X[1]
    rows = [(None, None, None)] * len(x)
    rows[1] = ("a", None, "q")
    with pytest.raises(ValueError, match=r"fixed\[1\] token 1 chain 2 \(label 'q'\).*"
                                         "no labelling"):
        est.decode([X[0], x], fixed=[None, rows])
    # without the forbidden couplings the same fixed labels decode
    free, _, _ = _model(3)
    assert free.decode([x], fixed=[rows])[0].labels[1].tolist() in (["a", "x", "q"],
                                                                    ["a", "y", "q"])


def test_explicit_forbidden_transitions_still_raise():
    X, y = _data(2, n_seq=40)
    keep = [i for i, rows in enumerate(y)
            if not any(p[1] == "z" and q[1] == "x" for p, q in zip(rows, rows[1:]))]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est = FactorialCRF(max_iter=3, finetune_iter=0, inference="joint",
                           forbidden_transitions=[None, [("z", "x")]]).fit(
            [X[i] for i in keep], [y[i] for i in keep])
    x = next(x for x in X if len(x) >= 2)
    rows = [("a", "z"), ("b", "x")] + [(None, None)] * (len(x) - 2)
    with pytest.raises(ValueError, match=r"fixed\[0\] token 1 chain 1.*forbidden_transitions"):
        est.decode([x], fixed=[rows])
    assert np.isneginf(est.log_prob([x], [[("a", "z"), ("b", "x")] + [("b", "x")] * (len(x) - 2)]))
    rows[1] = ("b", None)
    assert est.decode([x], fixed=[rows])[0].labels[1, 1] != "x"


def test_extra_states_rule_and_cap():
    est, X, _ = _model(3)
    seq_ptr, unary, pair, _ = est._inference_inputs(X[:2])
    n = int(seq_ptr[-1])
    labels = np.full((n, 3), -1, np.int32)
    assert extra_states(est.graph_, est.joint_states_, seq_ptr, labels, unary, pair) == {}
    labels[0] = (0, 1, 1)                    # complete, unseen
    labels[1] = (1, -1, -1)                  # agrees with a seen state: nothing
    labels[seq_ptr[1]] = (-1, 1, 0)          # second sequence: (., y, p) agrees with none
    extra = extra_states(est.graph_, est.joint_states_, seq_ptr, labels, unary, pair)
    assert {s: v.tolist() for s, v in extra.items()} == {0: [[0, 1, 1]],
                                                          1: [[0, 1, 0], [1, 1, 0]]}
    # at the limit, the best-scoring candidate of the partial token is kept
    capped = extra_states(est.graph_, est.joint_states_, seq_ptr, labels, unary, pair, limit=4)
    assert len(capped[1]) == 1 and capped[0].tolist() == [[0, 1, 1]]
    with pytest.raises(ValueError, match="exceeds the limit"):
        extra_states(est.graph_, est.joint_states_, seq_ptr, labels, unary, pair, limit=3)
