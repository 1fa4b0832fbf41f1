"""Scorers built from the package's own metric functions point the right way."""
import numpy as np
import pytest
from sklearn.base import BaseEstimator
from sklearn.model_selection import GridSearchCV

from skfcrf import FactorialCRF, metrics
from skfcrf.metrics import make_chain_scorer

from _helpers import sequences, short_fit

# every public metric with a scorer name: (name, function, takes a chain)
PUBLIC = [("windowdiff", metrics.windowdiff, True), ("pk", metrics.pk, True),
          ("chain_accuracy", metrics.chain_accuracy, True),
          ("segment_f1", metrics.segment_f1, True),
          ("joint_accuracy", metrics.joint_accuracy, False),
          ("average_accuracy", metrics.average_accuracy, False)]


class _Fixed(BaseEstimator):
    """An 'estimator' whose predictions are given."""

    def __init__(self, pred):
        self.pred = pred

    def predict(self, X):
        return self.pred


def _data():
    y = [np.array([["BeginA", "B-x"], ["A", "I-x"], ["BeginB", "B-y"], ["B", "I-y"]],
                  dtype=object)] * 3
    bad = [np.array([["BeginA", "B-x"], ["BeginA", "B-x"], ["A", "I-x"], ["BeginB", "B-y"]],
                    dtype=object)] * 3
    return y, bad


@pytest.mark.parametrize("name,func,per_chain", PUBLIC)
def test_name_and_function_give_the_same_scorer(name, func, per_chain):
    y, bad = _data()
    kw = {"chain": 0} if per_chain else {}
    by_name, by_func = make_chain_scorer(name, **kw), make_chain_scorer(func, **kw)
    for pred in (y, bad):
        assert by_name(_Fixed(pred), None, y) == pytest.approx(by_func(_Fixed(pred), None, y))
    # the perfect prediction always scores at least as high as the bad one
    assert by_func(_Fixed(y), None, y) >= by_func(_Fixed(bad), None, y)


@pytest.mark.parametrize("func", [metrics.windowdiff, metrics.pk])
def test_a_loss_cannot_be_maximised_by_mistake(func):
    with pytest.raises(ValueError, match="greater_is_better=False"):
        make_chain_scorer(func, chain=0, greater_is_better=True)
    assert make_chain_scorer(func, chain=0, greater_is_better=False) is not None


@short_fit
def test_grid_search_minimises_windowdiff_passed_as_function():
    X, y = sequences(n_seq=16)
    y = [[("Begin" + a if i == 0 else a, b) for i, (a, b) in enumerate(seq)] for seq in y]
    search = GridSearchCV(FactorialCRF(max_iter=5), {"sigma": [0.01, 10.0]}, cv=2,
                          scoring=make_chain_scorer(metrics.windowdiff, chain=0))
    search.fit(X, y)
    assert np.all(search.cv_results_["mean_test_score"] <= 0)
