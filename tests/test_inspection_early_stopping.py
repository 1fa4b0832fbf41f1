"""top_weights records and early stopping on held-out sequences."""
import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from skfcrf import FactorialCRF
from skfcrf.model._inspection import WeightRecord

from _helpers import sequences


def fitted(**params):
    X, y = sequences(n_seq=20)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return FactorialCRF(max_iter=40, random_state=0, **params).fit(X, y)


def test_top_weights_are_the_largest_and_named():
    est = fitted(unary_features="supported", transition_features="supported",
                 coupling_features="supported")
    records = est.top_weights(n=len(est.coef_) + 5)
    assert len(records) == len(est.coef_)
    mags = [abs(r.weight) for r in records]
    assert mags == sorted(mags, reverse=True)
    assert sorted(r.weight for r in records) == sorted(est.coef_.tolist())
    kinds = {r.kind for r in records}
    assert kinds == {"unary", "transition", "coupling"}
    for r in records:
        assert isinstance(r, WeightRecord)
        if r.kind == "unary":
            assert len(r.chains) == 1 and len(r.labels) == 1
            assert r.labels[0] in est.classes_[r.chains[0]]
        elif r.kind == "transition":
            assert len(r.chains) == 1 and all(v in est.classes_[r.chains[0]] for v in r.labels)
        else:
            a, b = r.chains
            assert r.labels[0] in est.classes_[a] and r.labels[1] in est.classes_[b]
        assert r.observation == "bias" or r.observation in set(est.observation_names_)


def test_top_weights_unary_observation_matches_effect():
    """A unary record's weight is what its observation adds to that label's score."""
    est = fitted()
    rec = est.top_weights(n=1, kind="unary", chain=0)[0]
    assert rec.observation != "bias"
    f = list(est.observation_names_).index(rec.observation)
    lo, hi = est.layout_.feat_ptr[f], est.layout_.feat_ptr[f + 1]
    col = est.graph_.label_offset[0] + list(est.classes_[0]).index(rec.labels[0])
    p = lo + list(est.layout_.ent_col[lo:hi]).index(col)
    assert est.coef_[p] == rec.weight


@pytest.mark.parametrize("kind,chain", [("unary", 1), ("transition", 0), ("coupling", 1),
                                        (None, -1)])
def test_top_weights_filters(kind, chain):
    est = fitted()
    records = est.top_weights(n=15, kind=kind, chain=chain)
    assert records
    for r in records:
        assert kind is None or r.kind == kind
        assert chain % 2 in r.chains


@pytest.mark.parametrize("bad", [{"kind": "pair"}, {"chain": 2}, {"n": -1}, {"chain": "0"}])
def test_top_weights_bad_arguments(bad):
    with pytest.raises(ValueError):
        fitted().top_weights(**bad)


def test_early_stopping_keeps_the_best_weights():
    """A scorer that peaks at a known iteration: those weights are kept, training stops
    n_iter_no_change scores later, and converged_ is True."""
    X, y = sequences(n_seq=30)
    calls = []

    def peaked(estimator, X_val, y_val):
        calls.append(estimator.coef_.copy())
        return -abs(len(calls) - 3)        # best at the 3rd score (iteration 6)

    est = FactorialCRF(max_iter=200, tol=1e-12, early_stopping=True, validation_interval=2,
                       n_iter_no_change=4, validation_scoring=peaked, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        est.fit(X, y)
    assert est.best_iteration_ == 6 and est.best_validation_score_ == 0
    assert np.array_equal(est.coef_, calls[2])
    assert est.n_iter_ == 14 and len(est.validation_scores_) == 7
    assert est.converged_ is True


def test_early_stopping_scores_final_weights_and_default_scoring():
    X, y = sequences(n_seq=30)
    est = FactorialCRF(max_iter=7, early_stopping=True, validation_interval=5,
                       validation_fraction=0.2, random_state=0, finetune_iter=0)
    with pytest.warns(ConvergenceWarning):
        est.fit(X, y)
    assert len(est.validation_scores_) == 2            # iteration 5 and the final 7
    assert all(0.0 <= v <= 1.0 for v in est.validation_scores_)
    assert est.best_validation_score_ == max(est.validation_scores_)


def test_early_stopping_named_scorer_and_bad_split():
    X, y = sequences(n_seq=30)
    est = FactorialCRF(max_iter=10, early_stopping=True, validation_scoring="windowdiff",
                       random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est.fit(X, y)
    assert all(v <= 0 for v in est.validation_scores_)     # a loss, negated
    with pytest.raises(ValueError, match="validation"):
        FactorialCRF(early_stopping=True).fit(X[:1], y[:1])
