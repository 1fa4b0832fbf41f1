"""confidence_interval and sklearn scorers (make_chain_scorer) incl. GridSearchCV."""
from collections import Counter

import numpy as np
import pytest
from scipy import stats
from sklearn.base import BaseEstimator
from sklearn.exceptions import UndefinedMetricWarning
from sklearn.model_selection import GridSearchCV, KFold, cross_validate

import skfcrf
from skfcrf._validation import check_label_sequences
from skfcrf.metrics import (
    SCORER_METRICS,
    average_accuracy,
    chain_accuracy,
    confidence_interval,
    joint_accuracy,
    make_chain_scorer,
    pk,
    precision_recall_fscore,
    segment_f1,
    windowdiff,
)

from _helpers import short_fit

# ---------------------------------------------------------------------------
# confidence_interval
# ---------------------------------------------------------------------------


def test_confidence_interval_matches_scipy():
    scores = [0.9165, 0.9180, 0.9130]
    mean, hw = confidence_interval(scores)
    n = len(scores)
    s = np.std(scores, ddof=1)
    assert mean == pytest.approx(np.mean(scores), abs=1e-15)
    assert hw == pytest.approx(stats.t.ppf(0.975, n - 1) * s / np.sqrt(n), rel=1e-12)
    # equals the half width of scipy's own interval
    lo, hi = stats.t.interval(0.95, n - 1, loc=np.mean(scores), scale=stats.sem(scores))
    assert hw == pytest.approx((hi - lo) / 2, rel=1e-12)
    # t(0.025, 2) = 4.302652729...
    assert confidence_interval([1.0, 2.0, 3.0]) == pytest.approx((2.0, 4.302652729749464 / np.sqrt(3)))
    mean, hw90 = confidence_interval(np.arange(10.0), confidence=0.9)
    assert hw90 == pytest.approx(stats.t.ppf(0.95, 9) * np.std(np.arange(10.0), ddof=1) / np.sqrt(10))
    assert confidence_interval([0.5, 0.5]) == (0.5, 0.0)


def test_confidence_interval_bad_input():
    with pytest.raises(ValueError, match="at least 2"):
        confidence_interval([0.5])
    with pytest.raises(ValueError, match="finite"):
        confidence_interval([0.5, np.nan])
    with pytest.raises(ValueError, match="confidence"):
        confidence_interval([0.5, 0.6], confidence=95)
    with pytest.raises(ValueError, match="1-D"):
        confidence_interval([[0.5, 0.6]])


# ---------------------------------------------------------------------------
# A tiny sequence "estimator" and data
# ---------------------------------------------------------------------------

SEEN_Y_TYPES = []


class LookupTagger(BaseEstimator):
    """Predicts per token the labels most often seen with its first observation.

    With ``use_lookup=False`` it predicts the most frequent label tuple for every
    token. ``X``: list of sequences of per-token observation-name lists.
    """

    def __init__(self, use_lookup=True):
        self.use_lookup = use_lookup

    def fit(self, X, y):
        SEEN_Y_TYPES.append(type(y))
        seqs, self.one_chain_ = check_label_sequences(y)
        self.n_chains_ = seqs[0].shape[1]
        overall = Counter()
        per_obs = {}
        for xs, ys in zip(X, seqs):
            for obs, labs in zip(xs, ys):
                key = tuple(labs)
                overall[key] += 1
                per_obs.setdefault(obs[0], Counter())[key] += 1
        self.default_ = overall.most_common(1)[0][0]
        self.table_ = {k: c.most_common(1)[0][0] for k, c in per_obs.items()}
        return self

    def predict(self, X):
        out = []
        for xs in X:
            rows = [self.table_.get(obs[0], self.default_) if self.use_lookup else self.default_
                    for obs in xs]
            arr = np.empty((len(rows), self.n_chains_), dtype=object)
            for i, r in enumerate(rows):
                arr[i, :] = r
            out.append(arr[:, 0] if self.one_chain_ else arr)
        return out


# word -> (sentence level, section level) labels
LEXICON = {
    "hdr": ("BeginHeading", "BeginSection"),
    "cap": ("BeginSentence", "Section"),
    "w": ("Sentence", "Section"),
}


def make_docs(n_docs=12, seed=0):
    rng = np.random.default_rng(seed)
    X, y = [], []
    for _ in range(n_docs):
        words = ["hdr"]
        for _ in range(int(rng.integers(2, 5))):
            words += ["cap"] + ["w"] * int(rng.integers(1, 5))
            if rng.random() < 0.4:
                words.append("hdr")
        X.append([[f"word={w}"] for w in words])
        y.append([LEXICON[w] for w in words])
    return X, y


# ---------------------------------------------------------------------------
# make_chain_scorer
# ---------------------------------------------------------------------------


def test_named_scorers_equal_metrics_and_signs():
    X, y = make_docs()
    est = LookupTagger(use_lookup=False).fit(X, y)
    y_pred = est.predict(X)
    cases = [
        ("windowdiff", 1, -windowdiff(y, y_pred, chain=1)),
        ("pk", -1, -pk(y, y_pred, chain=1)),
        ("joint_accuracy", None, joint_accuracy(y, y_pred)),
        ("average_accuracy", None, average_accuracy(y, y_pred)),
        ("accuracy", 0, chain_accuracy(y, y_pred, chain=0)),
        ("accuracy", None, average_accuracy(y, y_pred)),
        ("segment_f1", 0, segment_f1(y, y_pred, chain=0)),
        ("recall_micro", 1, precision_recall_fscore(y, y_pred, 1, average="micro")[1]),
        ("windowdiff", None, -np.mean([windowdiff(y, y_pred, chain=c) for c in (0, 1)])),
    ]
    for name, chain, expected in cases:
        scorer = make_chain_scorer(name, chain=chain)
        assert scorer(est, X, y) == pytest.approx(expected), name
    assert -windowdiff(y, y_pred, chain=1) < 0
    # labels never predicted: their precision counts as 0 and warns, as scikit-learn's f1_macro
    with pytest.warns(UndefinedMetricWarning, match="Precision is ill-defined"):
        expected = precision_recall_fscore(y, y_pred, 0, average="macro")[2]
    with pytest.warns(UndefinedMetricWarning):
        assert make_chain_scorer("f1_macro", chain=0)(est, X, y) == pytest.approx(expected)
    scorer = make_chain_scorer("f1_macro", chain=0, zero_division=0.0)
    assert scorer(est, X, y) == pytest.approx(expected)
    # kwargs reach the metric
    scorer = make_chain_scorer("windowdiff", chain=1, k=1)
    assert scorer(est, X, y) == pytest.approx(-windowdiff(y, y_pred, chain=1, k=1))
    # scorers pickle (needed for GridSearchCV(n_jobs=...))
    import pickle

    again = pickle.loads(pickle.dumps(make_chain_scorer("windowdiff", chain=-1)))
    assert again(est, X, y) == pytest.approx(-windowdiff(y, y_pred, chain=1))
    again = pickle.loads(pickle.dumps(make_chain_scorer("f1_macro", zero_division=0.0)))
    assert again(est, X, y) <= 1.0
    assert set(SCORER_METRICS) >= {"windowdiff", "pk", "joint_accuracy", "segment_f1", "f1_macro"}


def test_callable_scorer_and_errors():
    X, y = make_docs()
    est = LookupTagger().fit(X, y)

    def n_tokens_wrong(y_true, y_pred, chain):
        return sum(int((np.asarray(t)[:, chain] != np.asarray(p)[:, chain]).sum())
                   for t, p in zip(y_true, y_pred))

    scorer = make_chain_scorer(n_tokens_wrong, chain=1, greater_is_better=False)
    assert scorer(est, X, y) == 0
    with pytest.raises(ValueError, match="unknown metric"):
        make_chain_scorer("nope")
    with pytest.raises(ValueError, match="uses all chains"):
        make_chain_scorer("joint_accuracy", chain=0)
    with pytest.raises(ValueError, match="greater_is_better"):
        make_chain_scorer("windowdiff", greater_is_better=True)


def test_scorer_receives_list_of_sequences():
    X, y = make_docs()
    received = []

    def spy(y_true, y_pred):
        received.append((type(y_true), len(y_true), type(y_pred)))
        return joint_accuracy(y_true, y_pred)

    SEEN_Y_TYPES.clear()
    res = cross_validate(LookupTagger(), X, y, cv=KFold(3), scoring=make_chain_scorer(spy))
    assert len(res["test_score"]) == 3
    assert received and all(t is list for t, _, _ in received)
    assert all(n == 4 for _, n, _ in received)
    assert SEEN_Y_TYPES and all(t is list for t in SEEN_Y_TYPES)


def test_grid_search_multimetric_with_dummy_estimator():
    X, y = make_docs(n_docs=15)
    scoring = {
        "wd_top": make_chain_scorer("windowdiff", chain=-1),
        "joint": make_chain_scorer("joint_accuracy"),
        "seg": make_chain_scorer("segment_f1", chain=0),
    }
    gs = GridSearchCV(LookupTagger(), {"use_lookup": [False, True]}, scoring=scoring,
                      refit="joint", cv=KFold(3))
    gs.fit(X, y)
    assert gs.best_params_ == {"use_lookup": True}
    res = gs.cv_results_
    i_good = list(res["param_use_lookup"]).index(True)
    i_bad = 1 - i_good
    assert res["mean_test_joint"][i_good] == pytest.approx(1.0)
    assert res["mean_test_wd_top"][i_good] == pytest.approx(0.0)
    # losses are negated: the worse model has a negative WindowDiff score
    assert res["mean_test_wd_top"][i_bad] < 0
    assert res["rank_test_wd_top"][i_good] == 1
    # refit by the loss works too
    gs = GridSearchCV(LookupTagger(), {"use_lookup": [False, True]}, scoring=scoring,
                      refit="wd_top", cv=KFold(3)).fit(X, y)
    assert gs.best_params_ == {"use_lookup": True}
    # single-metric scoring and single-chain y
    y0 = [[labs[0] for labs in seq] for seq in y]
    gs = GridSearchCV(LookupTagger(), {"use_lookup": [False, True]},
                      scoring=make_chain_scorer("windowdiff"), cv=KFold(3)).fit(X, y0)
    assert gs.best_params_ == {"use_lookup": True}
    assert gs.best_score_ == pytest.approx(0.0)


@pytest.mark.skipif(
    not hasattr(skfcrf.FactorialCRF, "fit"),
    reason="FactorialCRF.fit not implemented yet",
)
@short_fit
def test_grid_search_multimetric_with_factorial_crf():
    X, y = make_docs(n_docs=12)
    scoring = {
        "wd_top": make_chain_scorer("windowdiff", chain=-1),
        "joint": make_chain_scorer("joint_accuracy"),
    }
    gs = GridSearchCV(skfcrf.FactorialCRF(max_iter=50), {"sigma": [1.0, 10.0]},
                      scoring=scoring, refit="joint", cv=KFold(3))
    gs.fit(X, y)
    assert set(gs.best_params_) == {"sigma"}
    assert np.all(np.isfinite(gs.cv_results_["mean_test_wd_top"]))
    assert np.all(gs.cv_results_["mean_test_wd_top"] <= 0)
    assert gs.cv_results_["mean_test_joint"].max() > 0.5
    y_pred = gs.predict(X)
    assert len(y_pred) == len(X)
