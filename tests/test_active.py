"""skfcrf.active: max-marginals, the query strategies of thesis 001 section 5.3, the loop."""
import itertools
import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from skfcrf import FactorialCRF
from skfcrf._kernels.states import (
    conditional_max_marginals,
    labelling_scores,
    product_states,
    state_max_marginals,
)
from skfcrf.active import (
    STRATEGIES,
    ActiveLearner,
    Strategy,
    get_strategy,
    informativeness,
    max_marginals,
    query,
    token_evidence,
)

from _helpers import short_fit, synthetic
from brute import all_labellings, full_score, make_problem

# -- max-marginals against enumeration -------------------------------------------------

def _brute_max_marginals(graph, seq_ptr, unary, pair, edge_offset, keep=None):
    """Best score with label j at (token, chain), by enumeration; ``keep(y, c, start, T)``
    restricts the labellings counted for chain c."""
    ref = np.full((int(seq_ptr[-1]), graph.total_labels), -np.inf)
    for s in range(len(seq_ptr) - 1):
        start, T = int(seq_ptr[s]), int(seq_ptr[s + 1] - seq_ptr[s])
        for y in all_labellings(graph, T):
            v = full_score(graph, unary, pair, edge_offset, start, y)
            for t, c in itertools.product(range(T), range(graph.n_chains)):
                if keep is None or keep(y, c, start, T):
                    k = (start + t, graph.label_offset[c] + y[t, c])
                    ref[k] = max(ref[k], v)
    return ref


@pytest.mark.parametrize("tied", [True, False])
@pytest.mark.parametrize("n_labels,couplings", [([3], []), ([2, 3], [(0, 1)]),
                                                ([2, 2, 2], [(0, 1), (1, 2)])])
def test_state_max_marginals_equal_enumeration(tied, n_labels, couplings):
    rng = np.random.default_rng(len(n_labels) + tied)
    graph, seq_ptr, unary, pair, eo, _ = make_problem(rng, n_labels, [3, 1, 2, 0], couplings,
                                                      tied, forbid=True)
    mm = state_max_marginals(graph, product_states(graph), seq_ptr, unary, pair)
    ref = _brute_max_marginals(graph, seq_ptr, unary, pair, eo)
    assert np.array_equal(np.isfinite(mm), np.isfinite(ref))
    assert np.allclose(mm[np.isfinite(ref)], ref[np.isfinite(ref)])
    # every chain's row maximum is the sequence's Viterbi score
    best = np.array([max(full_score(graph, unary, pair, eo, seq_ptr[s], y)
                         for y in all_labellings(graph, int(seq_ptr[s + 1] - seq_ptr[s])))
                     for s in range(3)])
    for c in range(graph.n_chains):
        block = mm[:, graph.label_offset[c]:graph.label_offset[c + 1]].max(axis=1)
        assert np.allclose(block, np.repeat(best, np.diff(seq_ptr)[:3]))


def test_conditional_max_marginals_equal_enumeration_given_other_chains():
    rng = np.random.default_rng(5)
    graph, seq_ptr, unary, pair, eo, gold = make_problem(rng, [2, 3], [3, 2], [(0, 1)], False)
    cond = conditional_max_marginals(graph, seq_ptr, unary, pair, gold)

    def agrees(y, c, start, T):
        return (y[:, 1 - c] == gold[start:start + T, 1 - c]).all()

    ref = _brute_max_marginals(graph, seq_ptr, unary, pair, eo, keep=agrees)
    assert np.allclose(cond, ref)
    # at the given labelling the conditional max-marginal is at least its score
    scores = labelling_scores(graph, seq_ptr, unary, pair, gold)
    for c in range(2):
        at_gold = cond[np.arange(5), graph.label_offset[c] + gold[:, c]]
        assert np.all(at_gold >= np.repeat(scores, [3, 2]) - 1e-9)


# -- strategies on hand-made marginals --------------------------------------------------

# four variables over three labels; the log max-marginals are those of a model in which
# the best labelling has probability P1 and the best one with label j at the token P_j
P = np.array([[0.5, 0.3, 0.2],
              [0.9, 0.05, 0.05],
              [0.4, 0.4, 0.2],
              [1 / 3, 1 / 3, 1 / 3]])
M = np.log(np.array([[0.2, 0.1, 0.05],
                     [0.3, 0.01, 0.01],
                     [0.1, 0.1, 0.02],
                     [0.05, 0.04, 0.03]]))
EXPECTED = {
    # (5.9) max_j p
    "MTP": [0.5, 0.9, 0.4, 1 / 3],
    # (5.10) sum_j p log p
    "MTE": [sum(v * np.log(v) for v in row) for row in P],
    # (5.11) max - second max of p
    "MTM": [0.2, 0.85, 0.0, 0.0],
    # (5.12) marginal of the Viterbi label (argmax of the max-marginals)
    "MVP": [0.5, 0.9, 0.4, 1 / 3],
    # (5.13) P1 - P2
    "MVM": [0.1, 0.29, 0.0, 0.01],
    # (5.14) sum_j P_j log P_j
    "MVPE": [sum(v * np.log(v) for v in np.exp(row)) for row in M],
    # (5.15) sum_j p_j P_j
    "ME": [0.5 * 0.2 + 0.3 * 0.1 + 0.2 * 0.05, 0.9 * 0.3 + 0.05 * 0.01 * 2,
           0.4 * 0.1 * 2 + 0.2 * 0.02, (0.05 + 0.04 + 0.03) / 3],
}
EXPECTED["MED"] = [me - p1 for me, p1 in zip(EXPECTED["ME"], [0.2, 0.3, 0.1, 0.05])]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_strategy_scores_are_the_thesis_formulas(name):
    strategy = STRATEGIES[name]
    assert np.allclose(strategy.score(P, M), EXPECTED[name])


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_keys_rank_as_the_scores(name):
    strategy = STRATEGIES[name]
    score, key = strategy.score(P, M), strategy.key(P, M)
    for i, j in itertools.permutations(range(4), 2):
        if score[i] < score[j] - 1e-12:
            assert key[i] < key[j], (i, j)
        if abs(score[i] - score[j]) <= 1e-12:
            assert np.isclose(key[i], key[j]) or key[i] == key[j], (i, j)


def test_known_rankings():
    """Hand-checked most-informative-first orders of the four variables."""
    def order(name):
        return list(np.argsort(STRATEGIES[name].key(P, M), kind="stable"))

    assert order("MTP") == [3, 2, 0, 1]        # least confident label first
    assert order("MTE") == [3, 2, 0, 1]        # highest entropy first
    assert order("MTM") == [2, 3, 0, 1]        # ties (margin 0) by position
    assert order("MVM") == [2, 3, 0, 1]
    assert order("MVPE") == [0, 2, 1, 3]
    assert order("ME") == [3, 2, 0, 1]
    assert order("MED") == [0, 1, 2, 3]


def test_viterbi_keys_do_not_underflow():
    """Sequence probabilities far below the smallest double still rank."""
    low = M - 2000.0                 # every probability times exp(-2000): 0.0 in doubles
    for name in ("MVM", "MVPE", "ME", "MED"):
        strategy = STRATEGIES[name]
        assert np.all(strategy.score(P, low) == 0.0) or name == "MVPE"
        key = strategy.key(P, low)
        assert np.isfinite(key[[0, 1, 3]]).all()
        assert len(np.unique(np.round(key, 9))) >= 3, name
    # ME scales with the sequence probability: the order is kept when all shrink alike
    assert list(np.argsort(STRATEGIES["ME"].key(P, low))) == \
        list(np.argsort(STRATEGIES["ME"].key(P, M)))


def test_certain_variables_are_least_informative():
    p = np.array([[1.0, 0.0], [0.5, 0.5]])
    m = np.array([[np.log(0.7), -np.inf], [np.log(0.7), np.log(0.7)]])
    for name in ("MTP", "MTE", "MTM", "MVM", "MVPE"):
        key = STRATEGIES[name].key(p, m)
        assert key[1] < key[0], name


def test_one_label_chain():
    p, m = np.ones((2, 1)), np.log(np.array([[0.5], [0.25]]))
    assert np.allclose(STRATEGIES["MTM"].score(p, m), 1.0)
    assert np.allclose(STRATEGIES["MVM"].score(p, m), [0.5, 0.25])


def test_random_strategy_is_reproducible():
    random = STRATEGIES["random"]
    a = random.key(P, random_state=3)
    assert np.array_equal(a, random.key(P, random_state=3))
    assert not np.array_equal(a, random.key(P, random_state=4))


def test_get_strategy_and_errors():
    assert get_strategy("mtm") is STRATEGIES["MTM"]
    custom = Strategy("mine", lambda p, m: -p.min(axis=1))
    assert get_strategy(custom) is custom
    with pytest.raises(ValueError, match="unknown strategy"):
        get_strategy("LC")
    with pytest.raises(ValueError, match="needs the log max-marginals"):
        STRATEGIES["MVM"].key(P)


# -- with a fitted model ----------------------------------------------------------------

@pytest.fixture(scope="module")
def model():
    X, y = synthetic(n_seq=30, n_chains=2, seed=1, noise=0.0)
    crf = FactorialCRF(max_iter=30, objective="likelihood", forbidden_transitions=None,
                       random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)   # a short fit on purpose
        crf.fit(X, y)
    return crf


def _tiny_pool():
    X = [[{"w=1": 1.0}, {"w=4": 1.0}, {"w=2": 1.0}],
         [{"w=5": 1.0}, {"w=0": 1.0}]]
    return X


def test_max_marginals_of_a_model_equal_enumeration(model):
    X = _tiny_pool()
    fixed = [[(None, None), (None, "hi"), (None, None)], None]
    for given in (None, fixed):
        mm = max_marginals(model, X, fixed=given)
        for s, x in enumerate(X):
            T = len(x)
            labellings = [np.array(lab, dtype=object).reshape(T, 2) for lab in itertools.product(
                *[list(itertools.product(*model.classes_)) for _ in range(T)])]
            if given is not None and given[s] is not None:
                labellings = [y for y in labellings if all(
                    g is None or y[t, c] == g for t, row in enumerate(given[s])
                    for c, g in enumerate(row))]
            lp = model.log_prob([x] * len(labellings), labellings)
            if given is not None and given[s] is not None:
                lp = lp - np.log(np.exp(lp).sum())        # p(y | x, L)
            for t, c in itertools.product(range(T), range(2)):
                for j, label in enumerate(model.classes_[c]):
                    want = max([v for v, y in zip(lp, labellings) if y[t, c] == label],
                               default=-np.inf)
                    got = mm[s][c][t, j]
                    assert (got == want == -np.inf) or np.isclose(got, want), (s, t, c, j)


def test_informativeness_matches_the_strategy_on_the_marginals(model):
    X = _tiny_pool()
    marg, logm = token_evidence(model, X)
    keys = informativeness(model, X, "MVM")
    for s in range(2):
        for c in range(2):
            assert np.allclose(keys[s][:, c], STRATEGIES["MVM"].key(marg[s][c], logm[s][c]))
    mtm = informativeness(model, X, "MTM")
    direct = model.predict_marginals(X)
    assert np.allclose(mtm[1][:, 0], STRATEGIES["MTM"].score(direct[1][0]))


def test_query_skips_given_labels_and_uses_them(model):
    X = _tiny_pool()
    given = [[(None, None), ("c1", "hi"), (None, None)], [(None, "hi"), (None, None)]]
    for name in STRATEGIES:
        rows = query(model, X, name, n=100, y_partial=given, random_state=0)
        assert len(rows) == 10 - 3
        assert len({tuple(r) for r in rows}) == len(rows)
        for s, t, c in rows:
            assert given[s][t][c] is None
    # the keys are those of the marginals given the labels
    clamped = informativeness(model, X, "MTP", y_partial=given)
    assert np.isinf(clamped[0][1]).all() and np.isinf(clamped[1][0, 1])
    direct = model.predict_marginals(X, fixed=given)
    assert np.allclose(clamped[0][0, 0], direct[0][0][0].max())
    assert np.allclose(clamped[1][1], [direct[1][0][1].max(), direct[1][1][1].max()])


def test_query_ranks_and_breaks_ties_by_position(model):
    x = [{"w=1": 1.0}, {"w=4": 1.0}]
    X = [x, x, x]                           # identical sequences: identical keys
    rows = query(model, X, "MTM", n=12)
    keys = informativeness(model, X, "MTM")
    flat = sorted((keys[s][t, c], s, t, c) for s in range(3) for t in range(2)
                   for c in range(2))
    assert [tuple(r) for r in rows] == [f[1:] for f in flat]
    first = rows[0]
    assert first[0] == 0                    # the tie goes to the first sequence
    token_rows = query(model, X, "MTM", n=2, unit="token")
    assert token_rows.shape == (2, 2) and tuple(token_rows[0]) == (0, first[1])
    chain1 = query(model, X, "MTM", n=20, chains=1)
    assert set(chain1[:, 2]) == {1} and len(chain1) == 6


def test_neighbourhood_queries_add_the_free_neighbours(model):
    x = [{"w=1": 1.0}, {"w=4": 1.0}, {"w=2": 1.0}, {"w=3": 1.0}]
    X = [x, x[:1]]
    centre = query(model, X, "MTM", n=2, unit="token")
    rows = query(model, X, "MTM", n=2, unit="neighbourhood")
    expected, seen = [], set()
    for s, t in centre:
        for u in (t, t - 1, t + 1):
            if 0 <= u < len(X[s]) and (s, u) not in seen:
                seen.add((s, u))
                expected.append((s, u))
    assert [tuple(r) for r in rows] == expected
    # a neighbour whose every chain is known is not asked again
    s, t = centre[0]
    known = [np.full((len(seq), 2), None, dtype=object) for seq in X]
    for u in (t - 1, t + 1):
        if 0 <= u < len(X[s]):
            known[s][u] = (model.classes_[0][0], model.classes_[1][0])
    rows = query(model, X, "MTM", n=1, y_partial=known, unit="neighbourhood")
    assert [tuple(r) for r in rows] == [(s, t)]


def test_random_query_is_reproducible(model):
    X = _tiny_pool() * 3
    a = query(model, X, "random", n=5, random_state=7)
    assert np.array_equal(a, query(model, X, "random", n=5, random_state=7))
    assert not np.array_equal(a, query(model, X, "random", n=5, random_state=8))


def test_query_argument_errors(model):
    X = _tiny_pool()
    with pytest.raises(ValueError, match="unit"):
        query(model, X, unit="sequence")
    with pytest.raises(ValueError, match="chains"):
        query(model, X, chains=2)
    with pytest.raises(ValueError, match="n must be"):
        query(model, X, n=-1)
    with pytest.raises(ValueError, match="sequences"):
        query(model, X, y_partial=[None])


def test_pipeline_model():
    from sklearn.pipeline import Pipeline

    from skfcrf.transformers import NGramWindow

    tokens = [["a", "b", "c"], ["b", "a"], ["c", "c", "a"]] * 4
    y = [[("x" if w == "a" else "z",) for w in seq] for seq in tokens]
    pipe = Pipeline([("f", NGramWindow(offsets=(0,))),
                     ("crf", FactorialCRF(max_iter=20, random_state=0))])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        pipe.fit(tokens, y)
    rows = query(pipe, tokens[:3], "MVM", n=3)
    assert rows.shape == (3, 3)


# -- the loop (Algorithm 2) -------------------------------------------------------------

def _learner(strategy="MTM", batch_size=5, **kw):
    crf = FactorialCRF(max_iter=15, random_state=0)
    return ActiveLearner(crf, strategy=strategy, batch_size=batch_size, random_state=0, **kw)


@pytest.fixture(scope="module")
def pool():
    X, y = synthetic(n_seq=8, n_chains=2, seed=2, length=(2, 5))
    Xt, yt = synthetic(n_seq=10, n_chains=2, seed=3)
    return X, y, Xt, yt


@short_fit
@pytest.mark.parametrize("strategy", ["MTM", "MVM", "random"])
def test_loop_grows_by_the_batch_and_never_asks_twice(pool, strategy):
    X, y, Xt, yt = pool
    learner = _learner(strategy).start(X, y, seed=[0])
    seed_labels = 2 * len(X[0])
    history = learner.run(3, Xt, yt)
    assert [h["n_labels"] for h in history] == [seed_labels + 5 * r for r in range(4)]
    assert all(0.0 <= h["score"] <= 1.0 for h in history)
    asked = np.vstack(learner.queried_)
    assert len(asked) == 15 and len({tuple(r) for r in asked}) == 15
    assert not np.any(asked[:, 0] == 0)                  # the seed is labelled already
    for s, t, c in asked:                                # the oracle's labels went in
        assert learner.y_partial_[s][t, c] == y[s][t][c]
    # the training set is the sequences with a label; the others stay unlabelled
    trained = learner.labelled_sequences()
    assert history[-1]["n_sequences"] == len(trained)
    for s in set(range(len(X))) - set(trained):
        assert np.all(np.equal(learner.y_partial_[s], None))


@short_fit
def test_loop_refits_on_partial_labels(pool):
    X, y, Xt, yt = pool
    learner = _learner("MTM", batch_size=3).start(X, y, seed=[0])
    learner.step(Xt, yt)
    first = learner.estimator_.coef_.copy()
    # the first round's labels are partial: some asked sequences keep missing labels
    assert any(np.equal(learner.y_partial_[s], None).any() for s in learner.labelled_sequences())
    learner.step(Xt, yt)
    assert learner.estimator_.warm_start                 # continued from the first fit
    assert not np.array_equal(first, learner.estimator_.coef_)
    assert learner.history_[1]["n_sequences"] > learner.history_[0]["n_sequences"]


@short_fit
@pytest.mark.parametrize("unit", ["label", "token", "neighbourhood"])
def test_the_oracle_eventually_labels_every_token(pool, unit):
    X, y, _, _ = pool
    X, y = X[:4], y[:4]
    total = 2 * sum(len(x) for x in X)
    asked = []

    def oracle(s, t, c):
        asked.append((s, t, c))
        return y[s][t][c]

    learner = _learner("MVM", batch_size=4, unit=unit).start(X, oracle, seed=[1], n_chains=2)
    for _ in range(40):
        if learner.n_labels_ == total:
            break
        learner.step()
    assert learner.n_labels_ == total
    assert len(asked) == len(set(asked)) == total         # every label asked exactly once
    for s in range(4):
        assert np.array_equal(learner.y_partial_[s].astype(str), np.array(y[s], dtype=str))
    if unit != "label":                                   # whole tokens: both chains at once
        assert all(len(b) == 0 or b.shape[1] == 2 for b in learner.queried_)
    if unit == "neighbourhood":
        # a batch of 4 neighbourhoods asks more than 4 tokens while the pool lasts
        assert len(learner.queried_[0]) > 4


@short_fit
def test_reestimation_follows_algorithm_2(pool):
    """Each pick is the argmin given all labels so far, under the round's model."""
    X, y, _, _ = pool
    learner = _learner("MTM", batch_size=4).start(X, y, seed=[0])
    learner.fit()
    model = learner.estimator_
    labels = [row.copy() for row in learner.y_partial_]
    expected = []
    for _ in range(4):
        row = query(model, X, "MTM", n=1, y_partial=labels)[0]
        s, t, c = row
        labels[s][t, c] = y[s][t][c]
        expected.append(tuple(row))
    picked = learner.ask()
    assert [tuple(r) for r in picked] == expected
    # without re-estimation the batch is the top of one ranking
    batch = _learner("MTM", batch_size=4, reestimate=False).start(X, y, seed=[0])
    batch.fit()
    top = query(batch.estimator_, X, "MTM", n=4, y_partial=batch.y_partial_)
    assert np.array_equal(batch.ask(), top)


@short_fit
def test_a_new_label_refits_from_scratch(pool):
    X, y, _, _ = pool
    # seed without the label "c2" on chain 0
    y0 = [[("c0" if lab[0] == "c2" else lab[0], lab[1]) for lab in seq] for seq in y]
    gold = [list(seq) for seq in y0]
    gold[2] = list(y[2])                                # the oracle reveals "c2" there
    assert any(lab[0] == "c2" for lab in y[2])
    learner = _learner("MTM", batch_size=200).start(X, gold, seed=[0])
    learner.step()
    assert "c2" not in learner.estimator_.classes_[0]
    first = learner.estimator_
    learner.step()
    assert learner.estimator_ is not first              # a clone, fitted cold
    assert "c2" in learner.estimator_.classes_[0]


def test_learner_errors(pool):
    X, y, _, _ = pool
    with pytest.raises(RuntimeError, match="start"):
        _learner().step()
    with pytest.raises(ValueError, match="n_chains"):
        _learner().start(X, lambda s, t, c: "x", seed=[0])
    with pytest.raises(ValueError, match="label sequences"):
        _learner().start(X, y[:3], seed=[0])
    with pytest.raises(ValueError, match="batch_size"):
        _learner(batch_size=0).start(X, y, seed=[0])


@short_fit
def test_trp_models_use_chainwise_max_marginals():
    X, y = synthetic(n_seq=20, n_chains=3, seed=4)
    crf = FactorialCRF(max_iter=20, inference="trp", objective="likelihood",
                       coupling="all", random_state=0).fit(X, y)
    pool = _tiny_pool()
    mm = max_marginals(crf, pool)
    best = crf.decode(pool)
    for s, d in enumerate(best):
        for c in range(3):
            at = mm[s][c][np.arange(len(pool[s])), np.searchsorted(crf.classes_[c],
                                                                   d.labels[:, c])]
            # each chain's best labelling around the TRP one scores at least as well
            assert np.all(at >= d.log_prob - 1e-9)
            assert np.all(mm[s][c] <= 0.0)
    rows = query(crf, pool, "MVPE", n=4)
    assert len({tuple(r) for r in rows}) == 4
