"""Evaluation after post-processing: make_chain_scorer(repair=...), repair_sequences, Repaired."""
import pickle
import warnings

import numpy as np
import pytest
from sklearn.base import BaseEstimator, clone
from sklearn.exceptions import ConvergenceWarning, NotFittedError
from sklearn.model_selection import GridSearchCV, KFold, cross_validate
from sklearn.pipeline import Pipeline

from skfcrf import FactorialCRF
from skfcrf.datasets import make_dictations
from skfcrf.metrics import chain_accuracy, joint_accuracy, make_chain_scorer, windowdiff
from skfcrf.structure import (
    COR_RULES,
    RCG_RULES,
    REPAIR_PRESETS,
    RULE_8_1,
    Repaired,
    fix_long_headings,
    repair,
    repair_sequences,
    resolve_rules,
)
from skfcrf.transformers import make_dictation_features


def _pipeline(max_iter=12):
    crf = FactorialCRF(objective="chainwise", max_iter=max_iter, finetune_iter=0,
                       min_instance_freq=2, random_state=0)
    return Pipeline([("features", make_dictation_features()), ("crf", crf)])


@pytest.fixture(scope="module")
def data():
    X, y = make_dictations(n_reports=14, style="rcg", random_state=3)
    return X, y


@pytest.fixture(scope="module")
def fitted(data):
    X, y = data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return _pipeline().fit(X[:9], y[:9])


def _manual(pipe, X, rules):
    return [repair(p, rules, tokens=x) for p, x in zip(pipe.predict(X), X)]


# ----------------------------------------------------------------------------- presets
def test_resolve_rules_presets_and_errors():
    assert resolve_rules("cor") is COR_RULES and resolve_rules("rcg") is RCG_RULES
    assert resolve_rules("formal") == ()
    assert set(REPAIR_PRESETS) == {"formal", "cor", "rcg", "rcg+8.1"}
    # rule 8.1 is opt-in (it lowered section accuracy): the full algorithm 8 is "rcg+8.1"
    assert RULE_8_1 not in RCG_RULES and resolve_rules("rcg+8.1") == (RULE_8_1, *RCG_RULES)
    assert resolve_rules([len]) == (len,)
    with pytest.raises(ValueError, match="unknown repair preset 'nope'"):
        resolve_rules("nope")
    with pytest.raises(TypeError, match="callables"):
        resolve_rules([1])
    with pytest.raises(TypeError, match="preset name or a sequence"):
        resolve_rules(3)


# ----------------------------------------------------------------------------- scorer
@pytest.mark.parametrize("rules", ["rcg", "rcg+8.1", "cor", "formal", RCG_RULES[1:]])
def test_scorer_with_repair_equals_manual_repair_then_score(fitted, data, rules):
    X, y = data
    Xt, yt = X[9:], y[9:]
    fixed = _manual(fitted, Xt, resolve_rules(rules))
    raw = fitted.predict(Xt)
    if rules == "rcg":  # the undertrained model leaves something to repair
        assert any(not np.array_equal(a, b) for a, b in zip(raw, fixed))
    assert make_chain_scorer("joint_accuracy", repair=rules)(fitted, Xt, yt) == \
        pytest.approx(joint_accuracy(yt, fixed))
    assert make_chain_scorer("accuracy", chain=2, repair=rules)(fitted, Xt, yt) == \
        pytest.approx(chain_accuracy(yt, fixed, chain=2))
    # a loss stays negated
    assert make_chain_scorer("windowdiff", chain=1, repair=rules)(fitted, Xt, yt) == \
        pytest.approx(-windowdiff(yt, fixed, chain=1))
    assert make_chain_scorer(windowdiff, chain=1, repair=rules)(fitted, Xt, yt) == \
        pytest.approx(-windowdiff(yt, fixed, chain=1))


def test_scorer_repair_uses_the_tokens(data):
    """Rule 8.9 reads the words: the scorer gives the pipeline's token dicts to the rules."""
    seen = []

    def spy(root):
        seen.append(root.tokens)

    class Fixed:
        def predict(self, X):
            return [np.asarray(s, dtype=object) for s in data[1][:2]]

    make_chain_scorer("joint_accuracy", repair=[spy])(Fixed(), data[0][:2], data[1][:2])
    assert [list(t) for t in seen] == [list(x) for x in data[0][:2]]


def test_scorer_repair_errors_pickle_and_repr():
    with pytest.raises(ValueError, match="unknown repair preset"):
        make_chain_scorer("accuracy", repair="rgc")
    with pytest.raises(ValueError, match="unknown metric"):
        make_chain_scorer("acc", repair="rcg")
    with pytest.raises(TypeError, match="callables"):
        make_chain_scorer("accuracy", repair=["x"])
    s = make_chain_scorer("accuracy", chain=2, repair=RCG_RULES)  # the preset's own tuple
    assert repr(s) == "make_chain_scorer('accuracy', chain=2, repair='rcg')"
    assert repr(pickle.loads(pickle.dumps(s))) == repr(s)


def test_scorer_repair_in_cross_validate_equals_repaired_estimator(data):
    """scoring=make_chain_scorer(..., repair=R) on the pipeline == plain scorer on Repaired(pipeline, R)."""
    X, y = data
    folds = KFold(2, shuffle=True, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        a = cross_validate(_pipeline(8), X, y, cv=folds, error_score="raise", scoring={
            "j": make_chain_scorer("joint_accuracy", repair="rcg"),
            "wd": make_chain_scorer("windowdiff", chain=2, repair="rcg")})
        b = cross_validate(Repaired(_pipeline(8), "rcg"), X, y, cv=folds, error_score="raise",
                           scoring={"j": make_chain_scorer("joint_accuracy"),
                                    "wd": make_chain_scorer("windowdiff", chain=2)})
    np.testing.assert_allclose(a["test_j"], b["test_j"])
    np.testing.assert_allclose(a["test_wd"], b["test_wd"])
    assert np.all(a["test_wd"] <= 0)


# ----------------------------------------------------------------------------- repair_sequences
def test_repair_sequences_tokens_and_errors():
    seen = []

    def spy(root):
        seen.append(root.tokens)

    y = [["Plan", "Plan"], ["Dx"]]
    out = repair_sequences(y, [spy], X=[["a", "b"], ["c", "d"]])
    assert [o.tolist() for o in out] == [["BeginPlan", "Plan"], ["BeginDx"]]
    assert seen[0] == ["a", "b"] and seen[-1] is None  # a length mismatch gives no tokens
    assert repair_sequences([], "cor") == []
    with pytest.raises(ValueError, match="X has 1 sequences but y_pred 2"):
        repair_sequences(y, X=[["a"]])


# ----------------------------------------------------------------------------- Repaired
def test_repaired_predict_decode_score(fitted, data):
    X, y = data
    model = Repaired(_pipeline(), "rcg")
    model.estimator_ = fitted  # as fit would leave it (fit is tested below)
    Xt, yt = X[9:], y[9:]
    expected = _manual(fitted, Xt, RCG_RULES)
    got = model.predict(Xt)
    assert all(np.array_equal(a, b) for a, b in zip(got, expected))
    assert model.score(Xt, yt) == pytest.approx(joint_accuracy(yt, expected))
    raw = fitted.named_steps["crf"].decode(fitted.named_steps["features"].transform(Xt))
    dec = model.decode(Xt)
    for d, r, e in zip(dec, raw, expected):
        assert np.array_equal(d.labels, e) and d.status == r.status
        if np.array_equal(r.labels, e):
            assert d.log_prob == r.log_prob
        else:
            assert np.isnan(d.log_prob)
    two = model.decode(Xt[:1], n_best=2)[0]
    assert len(two.ranked) == 2
    assert np.array_equal(two.alternatives[0].labels,
                          repair(raw_alt := fitted.named_steps["crf"].decode(
                              fitted.named_steps["features"].transform(Xt[:1]), n_best=2)[0]
                              .alternatives[0].labels, RCG_RULES, tokens=Xt[0]))
    assert raw_alt.shape == two.alternatives[0].labels.shape


def test_repaired_params_clone_pickle_and_tags(fitted, data):
    model = Repaired(_pipeline(), "cor")
    params = model.get_params()
    assert params["rules"] == "cor" and "estimator__crf__sigma" in params
    c = clone(model)
    assert c.rules == "cor" and c.estimator is not model.estimator
    c.set_params(crf__sigma=2.5, estimator__crf__max_iter=7, rules="rcg")
    assert c.estimator.named_steps["crf"].sigma == 2.5
    assert c.estimator.named_steps["crf"].max_iter == 7 and c.rules == "rcg"
    with pytest.raises(ValueError):
        c.set_params(crf__no_such_param=1)
    with pytest.raises(NotFittedError):
        model.predict(data[0][:1])
    model.estimator_ = fitted
    back = pickle.loads(pickle.dumps(model))
    assert all(np.array_equal(a, b) for a, b in zip(back.predict(data[0][9:]),
                                                    model.predict(data[0][9:])))
    tags = Repaired(FactorialCRF()).__sklearn_tags__()
    assert tags.target_tags.required and not tags.input_tags.two_d_array
    assert not tags.non_deterministic


def test_repaired_bad_rules_fail_before_training(data):
    X, y = data
    with pytest.raises(ValueError, match="unknown repair preset"):
        Repaired(_pipeline(), "nope").fit(X, y)


def test_repaired_in_grid_search_with_pipeline_params(data):
    X, y = data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        gs = GridSearchCV(Repaired(_pipeline(8), "rcg"), {"crf__sigma": [1.0, 10.0]}, cv=KFold(2),
                          scoring={"joint": make_chain_scorer("joint_accuracy"),
                                   "sec": make_chain_scorer("accuracy", chain=2)},
                          refit="joint", error_score="raise").fit(X, y)
    assert gs.best_estimator_.estimator_.named_steps["crf"].sigma == gs.best_params_["crf__sigma"]
    assert np.all(gs.cv_results_["mean_test_joint"] > 0.3)
    pred = gs.predict(X[:2])
    assert all(np.array_equal(p, repair(p, RCG_RULES, tokens=x)) for p, x in zip(pred, X[:2]))


def test_fix_long_headings_sees_words_through_repaired():
    """With the token dicts, rule 8.9 shortens a heading at "colon" rather than dropping it."""
    words = "plan colon we will see him again in two weeks".split()
    tokens = [{"word": w} for w in words]
    labels = [("BeginHeading", "BeginNone", "BeginPlan")] + [("Heading", "None", "Plan")] * 9

    class Fixed(BaseEstimator):
        def predict(self, X):
            return [np.asarray(labels, dtype=object)]

    model = Repaired(Fixed(), [fix_long_headings()])
    model.estimator_ = Fixed()
    out = model.predict([tokens])[0]
    assert out[:2, 0].tolist() == ["BeginHeading", "Heading"] and out[2, 0] == "BeginSentence"


@pytest.mark.parametrize("check", [
    "check_parameters_default_constructible", "check_no_attributes_set_in_init",
    "check_get_params_invariance", "check_set_params", "check_estimator_cloneable",
    "check_estimator_repr", "check_estimator_tags_renamed", "check_valid_tag_types",
    "check_do_not_raise_errors_in_init_or_set_params", "check_mixin_order"])
def test_repaired_sklearn_api_checks(check):
    """The data-free scikit-learn API checks (as tests/test_sklearn_compat.py runs them)."""
    from sklearn.utils import estimator_checks

    getattr(estimator_checks, check)("Repaired", Repaired(FactorialCRF(max_iter=5), "rcg"))


def test_repaired_fit_leaves_parameters_and_is_idempotent(data):
    X, y = data
    model = Repaired(_pipeline(5), "cor")
    params = repr(model.get_params())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        first = model.fit(X[:6], y[:6]).predict(X[6:8])
        again = model.fit(X[:6], y[:6]).predict(X[6:8])
    assert repr(model.get_params()) == params
    assert model.estimator_ is not model.estimator  # fit works on a clone
    assert not hasattr(model.estimator.named_steps["crf"], "coef_")
    assert all(np.array_equal(a, b) for a, b in zip(first, again))
