"""Clamped decoding and marginals, log-probabilities and n-best (issue 16, items 2-4).

References are brute-force enumerations of every labelling of tiny fitted models (random
weights, so the distributions are not peaked) through ``tests/brute.py``.
"""
import copy
import itertools
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import logsumexp
from sklearn.exceptions import ConvergenceWarning

from skfcrf import FactorialCRF
from skfcrf._kernels.graph import pair_layout

from _helpers import token_sequences
from brute import all_labellings, full_score

LABELS = (("a", "b", "c"), ("x", "y"), ("p", "q"))
#: chain 0 may not go b -> a, b -> b or c -> a (so "b _ a" has no completion)
FORBIDDEN = [("b", "a"), ("b", "b"), ("c", "a")]


def _walk(rng, T):
    """Chain-0 labels following the allowed transitions only."""
    allowed = {"a": "abc", "b": "c", "c": "bc"}
    lab = [rng.choice(list("abc"))]
    for _ in range(T - 1):
        lab.append(rng.choice(list(allowed[lab[-1]])))
    return lab


def tiny_data(n_chains, seed=0, n_seq=14, lengths=(1, 4)):
    """Sequences with two observations per token; chain 2 is 'p' whenever chain 1 is 'x'
    (so the combinations (.., 'x', 'q') never occur: the joint states are a strict subset)."""
    rng = np.random.default_rng(seed)
    X, y = [], []
    for toks, obs in token_sequences(rng, n_seq, lengths, 4):
        X.append(obs)
        c0 = _walk(rng, len(toks))
        rows = []
        for t in range(len(toks)):
            row = [str(c0[t]), str(rng.choice(LABELS[1]))]
            row.append("p" if row[1] == "x" else str(rng.choice(LABELS[2])))
            rows.append(tuple(row[:n_chains]))
        y.append([r[0] for r in rows] if n_chains == 1 else rows)
    return X, y


def _fit(est, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)    # short fits on purpose
        return est.fit(X, y)


def tiny_model(n_chains, inference="auto", forbid=True, seed=0, **params):
    """A fitted model with random weights (scale 1)."""
    X, y = tiny_data(n_chains, seed)
    forbidden = None
    if forbid:
        forbidden = FORBIDDEN if n_chains == 1 else [FORBIDDEN] + [None] * (n_chains - 1)
    est = _fit(FactorialCRF(max_iter=3, finetune_iter=0, inference=inference,
                            forbidden_transitions=forbidden, **params), X, y)
    rng = np.random.default_rng(seed + 100)
    est.coef_ = rng.normal(size=est.coef_.shape)
    return est, X, y


def _indices(est, labels):
    lab = np.asarray(labels, dtype=object).reshape(len(labels), -1)
    return np.stack([np.searchsorted(est.classes_[c], lab[:, c])
                     for c in range(est.n_chains_)], axis=1)


def _names(est, idx, one_chain):
    out = np.empty(idx.shape, dtype=object)
    for c in range(est.n_chains_):
        out[:, c] = est.classes_[c][idx[:, c]]
    return out[:, 0] if one_chain else out


class Enumeration:
    """Every allowed labelling of one sequence under the fitted model, with its score."""

    def __init__(self, est, x, joint):
        seq_ptr, unary, pair, _ = est._inference_inputs([x])
        graph = est.graph_
        eo = pair_layout(graph, int(seq_ptr[-1]))
        states = {tuple(r) for r in est.joint_states_.tolist()}
        self.labellings, self.scores = [], []
        for lab in all_labellings(graph, len(x)):
            if joint and any(tuple(r) not in states for r in lab.tolist()):
                continue
            score = full_score(graph, unary, pair, eo, 0, lab)
            if score > -np.inf:
                self.labellings.append(lab)
                self.scores.append(score)
        self.scores = np.array(self.scores)

    def given(self, fixed_idx):
        """The enumeration restricted to labellings agreeing with ``fixed_idx`` (-1 free)."""
        sub = copy.copy(self)
        keep = [i for i, lab in enumerate(self.labellings)
                if np.all((fixed_idx < 0) | (lab == fixed_idx))]
        sub.labellings = [self.labellings[i] for i in keep]
        sub.scores = self.scores[keep]
        return sub

    @property
    def log_z(self):
        return logsumexp(self.scores)

    def ranked(self):
        order = np.argsort(-self.scores, kind="stable")
        return [self.labellings[i] for i in order], self.scores[order]

    def marginals(self, n_labels):
        p = np.exp(self.scores - self.log_z)
        T = len(self.labellings[0])
        out = [np.zeros((T, L)) for L in n_labels]
        for lab, w in zip(self.labellings, p):
            for c in range(len(n_labels)):
                out[c][np.arange(T), lab[:, c]] += w
        return out


CASES = [(1, "auto"), (2, "joint"), (2, "exact"), (3, "joint"), (3, "exact")]


# ------------------------------------------------------------------ log_prob
@pytest.mark.parametrize("n_chains,inference", CASES)
def test_log_prob_is_exact_and_normalised(n_chains, inference):
    est, X, _ = tiny_model(n_chains, inference)
    for x in X[:4]:
        ref = Enumeration(est, x, inference == "joint")
        ys = [_names(est, lab, n_chains == 1) for lab in ref.labellings]
        lp = est.log_prob([x] * len(ys), ys)
        np.testing.assert_allclose(lp, ref.scores - ref.log_z, atol=1e-9)
        assert np.isclose(logsumexp(lp), 0.0, atol=1e-9)


def test_log_prob_outside_the_model_is_minus_inf():
    est, X, _ = tiny_model(3, "joint")
    x = X[0]
    # a forbidden transition of chain 0: -inf; a combination outside the joint states is
    # scored over the states extended by it (tests/test_unseen_combinations.py)
    bad_transition = [("b", "y", "p"), ("a", "y", "p")] + [("a", "y", "p")] * (len(x) - 2)
    outside = [("a", "x", "q")] * len(x)
    xs = [X[i] for i in range(len(X)) if len(X[i]) >= 2][:1]
    assert np.all(np.isneginf(est.log_prob(xs, [bad_transition[:len(xs[0])]])))
    assert -np.inf < est.log_prob([x], [outside])[0] < 0
    with pytest.raises(ValueError, match=r"y\[0\] token 0 chain 1.*'zz'"):
        est.log_prob([x], [[("a", "zz", "p")] * len(x)])
    with pytest.raises(ValueError, match="tokens"):
        est.log_prob([x], [[("a", "y", "p")] * (len(x) + 1)])
    assert est.log_prob([x, []], [outside, []])[1] == 0.0        # an empty sequence


@pytest.mark.parametrize("n_chains,inference", CASES)
def test_decode_log_prob_is_log_prob_of_its_labels(n_chains, inference):
    est, X, _ = tiny_model(n_chains, inference)
    decoded = est.decode(X)
    np.testing.assert_allclose([d.log_prob for d in decoded],
                               est.log_prob(X, [d.labels for d in decoded]), atol=1e-10)
    assert all(d.status == "exact" and d.log_prob <= 0 for d in decoded)


def test_trp_log_prob_is_the_bethe_estimate_and_exact_on_one_chain():
    est, X, _ = tiny_model(1, "trp")
    exact = copy.deepcopy(est).set_params(inference="exact")
    np.testing.assert_allclose(est.log_prob(X, exact.predict(X)),
                               exact.log_prob(X, exact.predict(X)), atol=1e-8)
    est3, X3, _ = tiny_model(3, "trp", forbid=False)
    decoded = est3.decode(X3)
    assert all(d.status in ("converged", "approximate") for d in decoded)
    assert all(np.isfinite(d.log_prob) and d.log_prob <= 0 for d in decoded)


# ------------------------------------------------------------------ n-best
@pytest.mark.parametrize("n_chains,inference", CASES)
def test_nbest_is_the_top_k_of_the_enumeration(n_chains, inference):
    est, X, _ = tiny_model(n_chains, inference)
    k = 6
    decoded = est.decode(X[:5], n_best=k)
    for x, d in zip(X[:5], decoded):
        ref = Enumeration(est, x, inference == "joint")
        labs, scores = ref.ranked()
        ranked = d.ranked
        assert len(ranked) == min(k, len(labs))
        lp = np.array([r.log_prob for r in ranked])
        np.testing.assert_allclose(lp, scores[:len(ranked)] - ref.log_z, atol=1e-9)
        assert np.all(np.diff(lp) <= 1e-12)
        keys = {np.asarray(r.labels, dtype=object).tobytes() for r in ranked}
        assert len({str(r.labels.tolist()) for r in ranked}) == len(ranked) == len(keys)
        for r in ranked:   # each labelling's own log_prob is its true one
            assert r.status == "exact"
            i = next(i for i, lab in enumerate(ref.labellings)
                     if np.array_equal(lab, _indices(est, r.labels)))
            assert np.isclose(r.log_prob, ref.scores[i] - ref.log_z, atol=1e-9)


def test_nbest_one_is_todays_decode_and_first_of_many():
    est, X, _ = tiny_model(2, "joint")
    one, default = est.decode(X, n_best=1), est.decode(X)
    many = est.decode(X, n_best=4)
    for a, b, m in zip(one, default, many):
        assert np.array_equal(a.labels, b.labels) and a.log_prob == b.log_prob
        assert a.alternatives == () and (a.status, a.n_iter) == (b.status, b.n_iter)
        assert np.array_equal(m.labels, a.labels) and m.log_prob == a.log_prob
    with pytest.raises(ValueError, match="n_best"):
        est.decode(X, n_best=0)


def test_nbest_returns_fewer_when_fewer_labellings_exist():
    est, X, _ = tiny_model(1)
    x = next(x for x in X if len(x) == 1)
    assert len(est.decode([x], n_best=10)[0].ranked) == 3     # three labels, one token


@pytest.mark.parametrize("n_chains", [1, 2, 3])
def test_trp_nbest_is_approximate_distinct_and_sorted(n_chains):
    est, X, _ = tiny_model(n_chains, "trp", forbid=False)
    exact = copy.deepcopy(est).set_params(inference="exact")
    k = 5
    for a, e in zip(est.decode(X[:6], n_best=k), exact.decode(X[:6], n_best=k)):
        ranked = a.ranked
        assert len(ranked) == len(e.ranked)
        assert len({str(r.labels.tolist()) for r in ranked}) == len(ranked)
        assert all(r.status == "approximate" for r in ranked[1:])
        lp = np.array([r.log_prob for r in ranked])
        assert np.all(np.diff(lp) <= 1e-12)
        if n_chains == 1:       # chain-wise moves are exact k-best on one chain
            np.testing.assert_allclose(lp, [r.log_prob for r in e.ranked], atol=1e-8)


def test_trp_nbest_scores_do_not_exceed_the_exact_ones():
    est, X, _ = tiny_model(3, "trp", forbid=False)
    exact = copy.deepcopy(est).set_params(inference="exact")
    for x, a, e in zip(X[:6], est.decode(X[:6], n_best=4), exact.decode(X[:6], n_best=4)):
        true = exact.log_prob([x] * len(a.ranked), [r.labels for r in a.ranked])
        best = np.array([r.log_prob for r in e.ranked])
        # the i-th labelling found is no better than the true i-th best
        assert np.all(np.sort(true)[::-1] <= best[:len(true)] + 1e-9)


# ------------------------------------------------------------------ clamping
def _random_fixed(rng, est, ref, one_chain):
    """Fix a random subset of the entries of a random allowed labelling."""
    lab = ref.labellings[int(rng.integers(len(ref.labellings)))]
    mask = rng.random(lab.shape) < 0.4
    idx = np.where(mask, lab, -1)
    names = _names(est, np.maximum(idx, 0), one_chain).astype(object)
    names = np.where(mask[:, 0] if one_chain else mask, names, None)
    return idx, names


@pytest.mark.parametrize("n_chains,inference", CASES)
def test_clamped_decoding_and_marginals_match_the_enumeration(n_chains, inference):
    est, X, _ = tiny_model(n_chains, inference)
    rng = np.random.default_rng(7)
    for x in X[:6]:
        ref = Enumeration(est, x, inference == "joint")
        idx, fixed = _random_fixed(rng, est, ref, n_chains == 1)
        sub = ref.given(idx)
        d = est.decode([x], fixed=[fixed], n_best=3)[0]
        labs, scores = sub.ranked()
        assert np.array_equal(_indices(est, d.labels), labs[0])
        np.testing.assert_allclose([r.log_prob for r in d.ranked],
                                   scores[:len(d.ranked)] - sub.log_z, atol=1e-9)
        assert len(d.ranked) == min(3, len(labs))
        marg = est.predict_marginals([x], fixed=[fixed])[0]
        for got, want in zip(marg, sub.marginals([len(c) for c in est.classes_])):
            np.testing.assert_allclose(got, want, atol=1e-9)


def test_clamped_trp_keeps_the_fixed_labels():
    est, X, _ = tiny_model(3, "trp", forbid=False)
    rng = np.random.default_rng(3)
    for x in X[:6]:
        fixed = np.full((len(x), 3), None, dtype=object)
        t, c = int(rng.integers(len(x))), int(rng.integers(3))
        fixed[t, c] = est.classes_[c][1]
        d = est.decode([x], fixed=[fixed], n_best=3)[0]
        assert all(r.labels[t, c] == fixed[t, c] for r in d.ranked)
        m = est.predict_marginals([x], fixed=[fixed])[0][c]
        np.testing.assert_allclose(m[t], np.eye(len(est.classes_[c]))[1], atol=1e-12)


def test_fixed_one_chain_accepts_1d_and_a_free_sequence():
    est, X, _ = tiny_model(1)
    x = next(x for x in X if len(x) >= 2)
    fixed = [None] * len(x)
    fixed[1] = "c"
    d = est.decode([x, x], fixed=[fixed, None])
    assert d[0].labels[1] == "c"
    assert np.array_equal(d[1].labels, est.predict([x])[0])


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), case=st.sampled_from(CASES + [(3, "trp")]))
def test_all_free_fixed_is_exactly_todays_result(seed, case):
    n_chains, inference = case
    est, _, _ = _cached_model(n_chains, inference)
    X, _ = tiny_data(n_chains, seed, n_seq=5, lengths=(0, 5))
    shape = (lambda T: (T,)) if n_chains == 1 else (lambda T: (T, n_chains))
    free = [np.full(shape(len(x)), None, dtype=object) for x in X]
    a, b = est.decode(X), est.decode(X, fixed=free)
    for u, v, p in zip(a, b, est.predict(X)):
        assert np.array_equal(u.labels, v.labels) and np.array_equal(u.labels, p)
        assert (u.status, u.n_iter) == (v.status, v.n_iter)
        assert u.log_prob == v.log_prob or (np.isnan(u.log_prob) and np.isnan(v.log_prob))
    ma, sa = est.predict_marginals(X, return_status=True)
    mb, sb = est.predict_marginals(X, fixed=free, return_status=True)
    assert sa == sb
    for u, v in zip(ma, mb):
        for cu, cv in zip(u, v):
            assert np.array_equal(cu, cv)


_MODELS = {}


def _cached_model(n_chains, inference):
    key = (n_chains, inference)
    if key not in _MODELS:
        _MODELS[key] = tiny_model(n_chains, inference, forbid=inference != "trp")
    return _MODELS[key]


# ------------------------------------------------------------------ errors
def _two_token(X):
    return next(x for x in X if len(x) >= 3)


def test_fixed_errors_name_sequence_token_and_chain():
    est, X, _ = tiny_model(3, "joint")
    x = _two_token(X)
    T = len(x)
    free = np.full((T, 3), None, dtype=object)

    def fixed_with(**cells):
        f = free.copy()
        for key, lab in cells.items():
            t, c = int(key[1]), int(key[2])
            f[t, c] = lab
        return [None, f]

    two = [X[0], x]
    with pytest.raises(ValueError, match=r"fixed\[1\] token 1 chain 2: label 'zz' is not a label"):
        est.decode(two, fixed=fixed_with(t12="zz"))
    with pytest.raises(ValueError, match=r"fixed\[1\] token 1 chain 0 \(label 'a'\).*transition"):
        est.decode(two, fixed=fixed_with(t00="b", t10="a"))
    # 'x' on chain 1 with 'q' on chain 2 was never seen: no error, the states are extended
    # for the call (tests/test_unseen_combinations.py)
    marg = est.predict_marginals(two, fixed=fixed_with(t21="x", t22="q"))[1]
    assert marg[1][2, 0] == 1.0 and marg[2][2, 1] == 1.0
    # b _ a: no chain-0 label can sit between (b -> c only, c -> a forbidden)
    with pytest.raises(ValueError, match=r"fixed\[1\] token 2 chain 0 \(label 'a'\).*no labelling"):
        est.decode(two, fixed=fixed_with(t00="b", t20="a"))
    with pytest.raises(ValueError, match=r"fixed\[1\] token 2 chain 0 \(label 'a'\).*no labelling"):
        est.predict_marginals(two, fixed=fixed_with(t00="b", t20="a"))
    with pytest.raises(ValueError, match=r"fixed\[1\] has shape"):
        est.decode(two, fixed=[None, free[:, :2]])
    with pytest.raises(ValueError, match=r"fixed\[1\] has shape"):
        est.decode(two, fixed=[None, free[:-1]])
    with pytest.raises(ValueError, match="2 sequences"):
        est.decode(two, fixed=[None])
    with pytest.raises(ValueError, match=r"fixed\[1\] must be an array-like"):
        est.decode(two, fixed=[None, [("a", None, None), "a"] + [None] * (T - 2)])
    rows = [None] * T        # per-token rows, None for a free token
    rows[1] = ("c", None, None)
    assert est.decode(two, fixed=[None, rows])[1].labels[1, 0] == "c"


def test_forbidden_coupling_of_fixed_labels_is_named():
    X, y = tiny_data(2)
    est = FactorialCRF(max_iter=3, finetune_iter=0, inference="exact",
                       forbidden_couplings={(0, 1): [("b", "x")]})
    y = [[(a, "y" if (a == "b") else b) for a, b in seq] for seq in y]
    _fit(est, X, y)
    fixed = np.full((len(X[0]), 2), None, dtype=object)
    fixed[0] = ("b", "x")
    with pytest.raises(ValueError, match=r"fixed\[0\] token 0 chain 1 \(label 'x'\).*coupling"):
        est.decode(X[:1], fixed=[fixed])


def test_trp_does_not_prove_infeasibility_but_checks_pairs():
    est, X, _ = tiny_model(2, "trp")
    x = _two_token(X)
    f = np.full((len(x), 2), None, dtype=object)
    f[0, 0], f[1, 0] = "b", "a"
    with pytest.raises(ValueError, match="transition"):
        est.decode([x], fixed=[f])


# ------------------------------------------------------------------ purity
def _snapshot(est):
    return {k: copy.deepcopy(v) for k, v in est.__dict__.items()}


def _same(a, b):
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.dtype == b.dtype and np.array_equal(a, b)
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(u, v) for u, v in zip(a, b))
    if hasattr(a, "__dict__") and type(a).__eq__ is object.__eq__:
        return type(a) is type(b) and _same(vars(a), vars(b))   # compare their state
    try:
        return bool(a == b)
    except ValueError:       # dataclasses of arrays
        return _same(vars(a), vars(b))


@pytest.mark.parametrize("inference", ["joint", "trp"])
def test_decode_marginals_log_prob_leave_the_estimator_unchanged(inference):
    est, X, y = tiny_model(3, inference, forbid=False)
    before = _snapshot(est)
    fixed = [np.full((len(x), 3), None, dtype=object) for x in X]
    fixed[0][0, 0] = "a"
    est.decode(X, fixed=fixed, n_best=3)
    est.predict_marginals(X, fixed=fixed, return_status=True)
    est.log_prob(X, y)
    after = est.__dict__
    assert before.keys() == after.keys()
    assert all(_same(before[k], after[k]) for k in before)


@pytest.mark.parametrize("n_chains,inference", CASES)
def test_conflict_through_a_free_token_is_located(n_chains, inference):
    est, X, _ = tiny_model(n_chains, inference)
    x = _two_token(X)
    f = np.full((len(x), n_chains), None, dtype=object)
    f[0, 0], f[2, 0] = "b", "a"
    fixed = [f[:, 0] if n_chains == 1 else f]
    for call in (est.decode, est.predict_marginals):
        with pytest.raises(ValueError, match=r"fixed\[0\] token 2 chain 0 \(label 'a'\)"):
            call([x], fixed=fixed)
    f[2, 0] = "c"           # b c c is allowed
    assert est.decode([x], fixed=[f[:, 0] if n_chains == 1 else f])[0].log_prob <= 0


@pytest.mark.parametrize("sparse", [None, False, True])
def test_forward_log_z_over_joint_states_equals_forward_backward(sparse):
    from skfcrf._kernels.joint import joint_log_partition, joint_marginals
    from skfcrf._kernels.states import product_states

    from brute import make_problem

    rng = np.random.default_rng(5)
    for forbid in (False, True):
        graph, seq_ptr, unary, pair, _, _ = make_problem(rng, [2, 3, 2], [3, 0, 1, 5],
                                                         [(0, 1), (1, 2)], 1, forbid)
        states = product_states(graph)[::2]
        got = joint_log_partition(graph, states, seq_ptr, unary, pair, n_threads=2,
                                  sparse=sparse)
        np.testing.assert_allclose(got, joint_marginals(graph, states, seq_ptr, unary, pair)[1],
                                   rtol=1e-12)


@pytest.mark.parametrize("n_chains", [1, 2])
def test_untied_templates_nbest_log_prob_and_clamping(n_chains):
    """Per-token transition and coupling weights ('supported' features)."""
    est, X, _ = tiny_model(n_chains, "auto" if n_chains == 1 else "exact",
                           transition_features="supported", coupling_features="supported")
    assert not any(est.graph_.edge_tied)
    rng = np.random.default_rng(11)
    for x, d in zip(X[:5], est.decode(X[:5], n_best=4)):
        ref = Enumeration(est, x, False)
        labs, scores = ref.ranked()
        np.testing.assert_allclose([r.log_prob for r in d.ranked],
                                   scores[:len(d.ranked)] - ref.log_z, atol=1e-9)
        idx, fixed = _random_fixed(rng, est, ref, n_chains == 1)
        sub = ref.given(idx)
        got = est.decode([x], fixed=[fixed], n_best=2)[0]
        np.testing.assert_allclose([r.log_prob for r in got.ranked],
                                   sub.ranked()[1][:len(got.ranked)] - sub.log_z, atol=1e-9)


def test_astar_and_list_viterbi_agree_with_enumeration():
    from skfcrf._kernels._nbest import kbest_astar, kbest_viterbi

    rng = np.random.default_rng(2)
    for _ in range(150):
        T, S, k = int(rng.integers(1, 5)), int(rng.integers(1, 5)), int(rng.integers(1, 9))
        untied = bool(rng.random() < 0.5)
        phi = rng.normal(size=(T, S))
        trans = rng.normal(size=(T if untied else 1, S, S))
        phi[rng.random(phi.shape) < 0.2] = -np.inf
        trans[rng.random(trans.shape) < 0.2] = -np.inf
        tindex = np.arange(T) if untied else np.zeros(T, np.int64)

        def score(p, phi=phi, trans=trans, tindex=tindex, T=T):
            return phi[np.arange(T), p].sum() + sum(trans[tindex[t], p[t - 1], p[t]]
                                                    for t in range(1, T))

        ref = sorted((v for v in (score(p) for p in itertools.product(range(S), repeat=T))
                      if v > -np.inf), reverse=True)[:k]
        for kernel in (kbest_astar, kbest_viterbi):
            paths, scores = kernel(phi, trans, tindex, k)
            np.testing.assert_allclose(scores, ref, atol=1e-12)
            assert len({tuple(p) for p in paths}) == len(paths)
            np.testing.assert_allclose([score(p) for p in paths], scores, atol=1e-12)
