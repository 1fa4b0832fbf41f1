"""skfcrf.crfsuite: the sklearn_crfsuite drop-in (CRF and metrics)."""
import inspect
import math
import pickle

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import NotFittedError

from skfcrf import FactorialCRF
from skfcrf.crfsuite import CRF, TrainingLog, metrics
from skfcrf.estimators import training_problem

try:
    import sklearn_crfsuite
except ImportError:  # not a dependency
    sklearn_crfsuite = None

needs_crfsuite = pytest.mark.skipif(sklearn_crfsuite is None, reason="sklearn_crfsuite not installed")

WORDS = {"the": "DT", "a": "DT", "cat": "NN", "dog": "NN", "runs": "VB", "sleeps": "VB",
         "big": "JJ", "small": "JJ"}


def toy(n=40, seed=0):
    """Sentences DT (JJ) NN VB with the tutorial's kind of features (str, bool, float)."""
    rng = np.random.RandomState(seed)
    by_tag = {}
    for w, t in WORDS.items():
        by_tag.setdefault(t, []).append(w)
    X, y = [], []
    for _ in range(n):
        tags = ["DT"] + (["JJ"] if rng.rand() < 0.5 else []) + ["NN", "VB"]
        words = [by_tag[t][rng.randint(len(by_tag[t]))] for t in tags]
        X.append([{"bias": 1.0, "word": w, "suffix": w[-2:], "title": w.istitle(),
                   "len": len(w) / 10, "prev": words[i - 1] if i else "BOS"}
                  for i, w in enumerate(words)])
        y.append(tags)
    return X, y


@pytest.fixture(scope="module")
def fitted():
    X, y = toy()
    return CRF(c2=0.1, max_iterations=50).fit(X, y), X, y


def test_fit_predict_api(fitted):
    crf, X, y = fitted
    pred = crf.predict(X)
    assert isinstance(pred, np.ndarray) and pred.dtype == object and pred.shape == (len(X),)
    assert all(isinstance(p, list) and all(isinstance(lab, str) for lab in p) for p in pred)
    assert [list(p) for p in pred] == y
    assert crf.predict_single(X[0]) == y[0]
    assert crf.score(X, y) == 1.0
    assert sorted(crf.classes_) == ["DT", "JJ", "NN", "VB"]
    assert crf.classes_[0] == "DT"      # order of first appearance, as CRFsuite
    marg = crf.predict_marginals(X)
    assert marg.shape == (len(X),)
    for seq, xseq in zip(marg, X):
        assert len(seq) == len(xseq)
        for token in seq:
            assert isinstance(token, dict) and sorted(token) == sorted(crf.classes_)
            assert math.isclose(sum(token.values()), 1.0, abs_tol=1e-9)
    single = crf.predict_marginals_single(X[0])
    assert single == marg[0]
    assert max(single[0], key=single[0].get) == "DT"


def test_fitted_attributes(fitted):
    crf, X, y = fitted
    sf, tf = crf.state_features_, crf.transition_features_
    assert sf and all(isinstance(k, tuple) and len(k) == 2 and k[1] in crf.classes_ for k in sf)
    assert all(w != 0 for w in sf.values()) and all(w != 0 for w in tf.values())
    assert sf[("word:cat", "NN")] > 0 and ("word:cat", "VB") not in sf   # never seen together
    assert set(tf) == {("DT", "JJ"), ("DT", "NN"), ("JJ", "NN"), ("NN", "VB")}  # the seen pairs
    assert tf[("NN", "VB")] > 0
    assert crf.num_attributes_ == len(crf.attributes_) == len({a for a, _ in sf})
    log = crf.training_log_
    assert isinstance(log, TrainingLog) and log.last_iteration is log.iterations[-1]
    assert [it["num"] for it in log.iterations] == list(range(1, len(log.iterations) + 1))
    losses = [it["loss"] for it in log.iterations]
    assert losses[-1] < losses[0] and log.featgen_num_features > 0 and log.message
    assert {"loss", "feature_norm", "error_norm", "active_features", "time"} <= set(log.iterations[0])


def test_sklearn_api_pickle_clone(fitted):
    crf, X, y = fitted
    copy = pickle.loads(pickle.dumps(crf))
    assert [list(p) for p in copy.predict(X)] == [list(p) for p in crf.predict(X)]
    assert copy.state_features_ == crf.state_features_
    params = crf.get_params()
    assert params["c2"] == 0.1 and params["algorithm"] == "lbfgs"
    fresh = clone(crf)
    assert fresh.get_params() == params and not hasattr(fresh, "crf_")
    with pytest.raises(NotFittedError):
        fresh.predict(X)
    assert fresh.classes_ is None and fresh.tagger_ is None   # None before fit
    fresh.set_params(c2=0.5)
    assert fresh.c2 == 0.5


def test_constructor_matches_sklearn_crfsuite():
    names = list(inspect.signature(CRF).parameters)
    assert names[:3] == ["algorithm", "min_freq", "all_possible_states"]
    assert {"calibration_eta", "pa_type", "variance", "gamma", "model_filename",
            "keep_tempfiles", "trainer_cls", "verbose"} <= set(names)
    if sklearn_crfsuite is not None:
        assert names == list(inspect.signature(sklearn_crfsuite.CRF).parameters)


def test_string_valued_observations():
    """{"word": "walk"} is the attribute word:walk; lists, nested dicts and bools too."""
    y = [["V", "N"], ["N", "V"]]
    as_dicts = [[{"word": "walk", "tags": ["a", "b"], "sub": {"x": 2.0}, "up": True},
                 {"word": "dog", "up": False}],
                [{"word": "cat"}, {"word": "runs"}]]
    as_names = [[{"word:walk": 1, "tags:a": 1, "tags:b": 1, "sub:x": 2.0, "up": 1},
                 {"word:dog": 1, "up": 0}],
                [["word:cat"], ["word:runs"]]]
    a = CRF(c2=0.05, max_iterations=30).fit(as_dicts, y)
    b = CRF(c2=0.05, max_iterations=30).fit(as_names, y)
    assert a.state_features_.keys() == b.state_features_.keys()
    for key, w in a.state_features_.items():
        assert w == pytest.approx(b.state_features_[key], abs=1e-12)
    assert {("word:walk", "V"), ("tags:a", "V"), ("sub:x", "V"), ("up", "V")} <= set(a.state_features_)
    # a zero value still creates the (attribute, label) feature, as in CRFsuite
    assert ("up", "N") in a.state_features_ and a.state_features_[("up", "N")] < 0
    assert a.predict_single([{"word": "walk"}, {"word": "dog"}]) == ["V", "N"]
    with pytest.raises(ValueError, match="values must be str"):
        CRF().fit([[{"word": object()}]], [["N"]])


def test_one_pass_reading_matches_the_token_dicts():
    """Fitting reads CRFsuite's format in one pass (``_read``); every token gives the
    attribute values of its ``{name: value}`` form (``_token``), whichever path reads it:
    repeated names summed (here to zero: the entry stays, for the state feature),
    nested and bytes names, name lists; new names dropped once the vocabulary is fixed."""
    from skfcrf.crfsuite import _read, _token
    X = [[{"w": "a", "w:a": 1.0, "up": False, "n": 2},
          {"w": "b", "w:b": -1.0, "tags": ["x", "y"]},
          {b"w": "c", "len": 3.5},
          ["w:a", "w:a", "p"]],
         [],
         [{"sub": {"k": "v"}, "flag": True}]]
    vocabulary = {}
    matrix, seq_ptr = _read(X, vocabulary, grow=True)
    assert seq_ptr.tolist() == [0, 4, 4, 5]
    names = list(vocabulary)
    rows = [tok for seq in X for tok in seq]
    for r, tok in enumerate(rows):
        row = matrix[r]
        got = {names[j]: v for j, v in zip(row.indices, row.data)}
        assert got == _token(tok)
    assert ("w:b", 0.0) in [(names[j], v) for j, v in zip(matrix[1].indices, matrix[1].data)]
    fixed, _ = _read([[{"w": "a", "new": 1.0}]], dict(vocabulary), grow=False)
    assert fixed.shape == (1, len(names))
    assert {names[j]: v for j, v in zip(fixed.indices, fixed.data)} == {"w:a": 1.0}
    with pytest.raises(ValueError, match="list of sequences"):
        _read("abc", {}, grow=True)
    with pytest.raises(ValueError, match="list of tokens"):
        _read([{"w": "a"}], {}, grow=True)
    with pytest.raises(ValueError, match="values must be str"):
        _read([[{"w": object()}]], {}, grow=True)


def _likelihood_objective(crf, X, y, sigma):
    """FactorialCRF's own likelihood objective over ``crf``'s weights (same layout)."""
    ref = FactorialCRF(objective="likelihood", sigma=sigma, unary_features="all",
                       transition_features="default", forbidden_transitions=None,
                       finetune_iter=0, inference="exact")
    objective, _, _ = training_problem(ref, [[{k: 1.0 for k in tok} for tok in seq] for seq in X], y)
    return ref, objective


def test_c2_is_sigma_of_factorial_crf():
    """c2 -> sigma = 1/sqrt(2 c2): the loss CRF reports is FactorialCRF's likelihood
    objective at its weights, which is stationary there on CRFsuite's features."""
    X = [[["w=the", "p=BOS"], ["w=cat", "p=the"], ["w=runs", "p=cat"]],
         [["w=a", "p=BOS"], ["w=dog", "p=a"], ["w=sleeps", "p=dog"]],
         [["w=the", "p=BOS"], ["w=dog", "p=the"]]]
    y = [["DT", "NN", "VB"], ["DT", "NN", "VB"], ["DT", "NN"]]
    c2 = 0.3
    crf = CRF(c2=c2, all_possible_states=True, all_possible_transitions=True,
              epsilon=1e-10, delta=1e-12, period=2).fit(X, y)
    assert crf.training_log_.message.startswith("converged")
    sigma = 1 / math.sqrt(2 * c2)
    assert crf.crf_.sigma == pytest.approx(sigma)
    ref, objective = _likelihood_objective(crf, X, y, sigma)
    assert ref.observation_names_.tolist() == crf.crf_.observation_names_.tolist()
    coef = crf.crf_.coef_
    # CRF's layout is FactorialCRF's "all" table; the label biases are held at 0
    assert len(coef) == ref.layout_.n_params
    loss, grad = objective.loss_gradient(coef)
    assert loss == pytest.approx(crf.training_log_.last_iteration["loss"], rel=1e-12)
    w = coef[:ref.layout_.n_table]
    assert loss == pytest.approx(-crf.crf_.log_prob(X, y).sum() + c2 * (coef @ coef), rel=1e-12)
    table, trans = slice(0, ref.layout_.n_table), slice(*ref.layout_.bias_edge[:2])
    assert np.abs(grad[table]).max() < 1e-6 and np.abs(grad[trans]).max() < 1e-6
    assert np.all(coef[ref.layout_.bias_unary:ref.layout_.bias_edge[0]] == 0)
    assert np.count_nonzero(w) == len(crf.state_features_)
    ref.coef_ = coef
    assert [p.tolist() for p in ref.predict(X)] == [list(p) for p in crf.predict(X)]


@pytest.mark.parametrize("params, named", [
    (dict(algorithm="ap", c2=1.0), "c2=1.0 is not a parameter of CRFsuite's 'ap'"),
    (dict(algorithm="l2sgd", c1=0.1), "c1"),
    (dict(algorithm="pa", pa_type=3), "pa_type"),
    (dict(algorithm="arow", num_memories=3), "num_memories"),
    (dict(algorithm="arow", pa_type=1), "pa_type"),
    (dict(algorithm="newton"), "algorithm='newton'"),
    (dict(c1=-1), "c1"),
    (dict(c2=-0.5), "c2"),
    (dict(trainer_cls=object), "trainer_cls"),
    (dict(keep_tempfiles=True), "keep_tempfiles"),
    (dict(linesearch="Backtracking"), "linesearch='Backtracking'"),
    (dict(linesearch="StrongBacktracking"), "linesearch"),
    (dict(max_linesearch=0), "max_linesearch"),
    (dict(num_memories=0), "num_memories"),
    (dict(period=0), "period"),
    (dict(delta=-1.0), "delta"),
    (dict(epsilon=float("nan")), "epsilon"),
    (dict(max_iterations=-1), "max_iterations"),
    (dict(max_iterations=2.5), "max_iterations"),
    (dict(min_freq="2"), "min_freq"),
    (dict(all_possible_states="yes"), "all_possible_states"),
    (dict(all_possible_transitions=2), "all_possible_transitions"),
    *[(dict([(name, 1)]), name) for name in (
        "calibration_eta", "calibration_rate", "calibration_samples", "calibration_candidates",
        "calibration_max_trials", "pa_type", "c", "error_sensitive", "averaging", "variance",
        "gamma")],
])
def test_unsupported_settings_raise_naming_them(params, named):
    X, y = toy(4)
    with pytest.raises(ValueError, match=named):
        CRF(**params).fit(X, y)


def test_missing_model_file_raises_when_used(tmp_path):
    crf = CRF(model_filename=str(tmp_path / "missing.crfsuite"))
    with pytest.raises(FileNotFoundError):
        crf.predict([[{"w": "a"}]])
    with pytest.raises(FileNotFoundError):
        crf.classes_  # noqa: B018 -- the property reads the file


def test_crfsuite_defaults_accepted():
    X, y = toy(6)
    explicit = CRF(algorithm=None, c1=0, c2=1.0, min_freq=0, num_memories=6, epsilon=1e-5,
                   period=10, delta=1e-5, linesearch="MoreThuente", max_linesearch=20,
                   max_iterations=0, all_possible_states=False, all_possible_transitions=False,
                   keep_tempfiles=False).fit(X, y)
    default = CRF().fit(X, y)
    assert explicit.state_features_ == default.state_features_


def test_dev_data():
    X, y = toy(30)
    with pytest.raises(ValueError, match="Pass both X_dev and y_dev"):
        CRF().fit(X, y, X_dev=X)
    with pytest.raises(ValueError, match="Pass both X_dev and y_dev"):
        CRF().fit(X, y, y_dev=y)
    crf = CRF(c2=0.1, max_iterations=15).fit(X[:20], y[:20], X_dev=X[20:], y_dev=y[20:])
    last = crf.training_log_.last_iteration
    assert last["item_accuracy_float"] == crf.score(X[20:], y[20:]) == 1.0
    assert last["instance_accuracy"] == 1 and last["avg_f1"] == pytest.approx(1.0)
    score = last["scores"]["NN"]
    assert (score.match, score.model, score.ref, score.f1) == (10, 10, 10, 1.0)


def test_min_freq_prunes_rare_features():
    X, y = toy(30)
    full = CRF(c2=0.1, max_iterations=20).fit(X, y)
    pruned = CRF(c2=0.1, max_iterations=20, min_freq=5).fit(X, y)
    assert set(pruned.state_features_) < set(full.state_features_)


def test_metrics_by_hand():
    y_true = [["B", "I", "O"], ["B", "O"]]
    y_pred = np.array([["B", "B", "O"], ["B", "O"]], dtype=object)
    assert metrics.flat_accuracy_score(y_true, y_pred) == 0.8
    assert metrics.sequence_accuracy_score(y_true, y_pred) == 0.5
    assert metrics.sequence_accuracy_score([], []) == 0
    # B: 2 right of 3 predicted, 2 true; I: 0 of 0 predicted, 1 true
    assert metrics.flat_precision_score(y_true, y_pred, labels=["B"], average="micro") == 2 / 3
    assert metrics.flat_recall_score(y_true, y_pred, labels=["B", "I"], average="micro") == 2 / 3
    assert metrics.flat_f1_score(y_true, y_pred, labels=["B"], average="macro") == 0.8
    assert metrics.flat_fbeta_score(y_true, y_pred, beta=1, labels=["B"], average="macro") == 0.8
    report = metrics.flat_classification_report(y_true, y_pred, labels=["B", "O"], digits=3)
    assert "0.667" in report and "1.000" in report
    with pytest.raises(ValueError, match="different numbers of sequences"):
        metrics.sequence_accuracy_score(y_true, y_true[:1])
    same_length = [["A", "B"], ["A", "B"]]
    assert metrics.sequence_accuracy_score(same_length, [["A", "B"], ["A", "A"]]) == 0.5


@needs_crfsuite
@pytest.mark.parametrize("params", [
    dict(c2=1.0),
    dict(c2=0.1, max_iterations=25, all_possible_transitions=True, min_freq=2),
    dict(c2=0.5, all_possible_states=True),
])
def test_agrees_with_sklearn_crfsuite(params):
    X, y = toy(60, seed=1)
    X_test, _ = toy(20, seed=2)
    X[0][1]["word"] = "cat"          # a few ambiguous tokens, so the weights are finite
    y[0][1] = "JJ"
    ours = CRF(**params).fit(X, y)
    ref = sklearn_crfsuite.CRF(**params).fit(X, y)
    assert [list(p) for p in ours.predict(X_test)] == [list(p) for p in ref.predict(X_test)]
    assert ours.classes_ == ref.classes_
    assert ours.state_features_.keys() == ref.state_features_.keys()
    assert ours.transition_features_.keys() == ref.transition_features_.keys()
    for mine, theirs in ((ours.state_features_, ref.state_features_),
                         (ours.transition_features_, ref.transition_features_)):
        for key, w in theirs.items():
            assert mine[key] == pytest.approx(w, abs=1e-5)   # CRFsuite stores 6 decimals
    assert len(ours.training_log_.iterations) == len(ref.training_log_.iterations)
    assert ours.training_log_.last_iteration["loss"] == pytest.approx(
        ref.training_log_.last_iteration["loss"], rel=1e-6)
    for mine, theirs in zip(ours.predict_marginals(X_test[:3]), ref.predict_marginals(X_test[:3])):
        for a, b in zip(mine, theirs):
            assert a.keys() == b.keys()
            assert all(a[k] == pytest.approx(b[k], abs=1e-5) for k in a)
    assert sorted(ours.attributes_) == sorted(a for a in ref.attributes_ if a is not None)


@needs_crfsuite
@pytest.mark.parametrize("params", [
    dict(c1=0.1, c2=0.01),
    dict(c1=1.0, c2=0.0, all_possible_transitions=True),
])
def test_l1_agrees_with_sklearn_crfsuite(params):
    X, y = toy(60, seed=1)
    X_test, _ = toy(20, seed=2)
    X[0][1]["word"] = "cat"
    y[0][1] = "JJ"
    ours = CRF(**params).fit(X, y)
    ref = sklearn_crfsuite.CRF(**params).fit(X, y)
    assert [list(p) for p in ours.predict(X_test)] == [list(p) for p in ref.predict(X_test)]
    n_ours = len(ours.state_features_) + len(ours.transition_features_)
    n_ref = len(ref.state_features_) + len(ref.transition_features_)
    assert abs(n_ours - n_ref) <= 0.1 * n_ref
    dense = CRF(c2=params["c2"] or 1e-3).fit(X, y)
    assert n_ours < len(dense.state_features_) + len(dense.transition_features_)
    # the same penalised loss (L1 included) at the end
    assert ours.training_log_.last_iteration["loss"] == pytest.approx(
        ref.training_log_.last_iteration["loss"], rel=1e-4)
    assert ours.crf_.l1 == params["c1"] and ours.crf_.n_nonzero_ == n_ours


def test_c1_is_l1_of_factorial_crf():
    """c1 -> l1 = c1: the loss CRF reports is FactorialCRF's likelihood objective plus
    ``c1 * ||w||_1`` at its weights, which satisfy the L1 optimality conditions there."""
    X = [[["w=the", "p=BOS"], ["w=cat", "p=the"], ["w=runs", "p=cat"]],
         [["w=a", "p=BOS"], ["w=dog", "p=a"], ["w=sleeps", "p=dog"]],
         [["w=the", "p=BOS"], ["w=dog", "p=the"]], [["w=a", "p=BOS"], ["w=cat", "p=a"]]]
    y = [["DT", "NN", "VB"], ["DT", "NN", "VB"], ["DT", "NN"], ["DT", "VB"]]
    c1, c2 = 0.2, 0.05
    crf = CRF(c1=c1, c2=c2, all_possible_states=True, all_possible_transitions=True,
              epsilon=1e-10, delta=1e-14, period=2, max_iterations=2000).fit(X, y)
    assert crf.crf_.l1 == c1
    ref, objective = _likelihood_objective(crf, X, y, 1 / math.sqrt(2 * c2))
    coef = crf.crf_.coef_
    loss, grad = objective.loss_gradient(coef)
    assert loss + c1 * np.abs(coef).sum() == pytest.approx(
        crf.training_log_.last_iteration["loss"], rel=1e-12)
    free = np.zeros(len(coef), bool)
    free[:ref.layout_.n_table] = True
    free[slice(*ref.layout_.bias_edge[:2])] = True
    w, g = coef[free], grad[free]
    zero = w == 0
    assert zero.any() and not zero.all()
    assert np.all(np.abs(g[zero]) <= c1 + 1e-6)
    np.testing.assert_allclose(g[~zero] + c1 * np.sign(w[~zero]), 0.0, atol=1e-5)
