"""MarginalAveraging: averaged marginals, decoding, label-set alignment, Pipeline use,
the confidence weighting against hand-computed marginals, members with their own features."""
import numpy as np
import pytest
from sklearn.base import BaseEstimator
from sklearn.frozen import FrozenEstimator
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline

from skfcrf import FactorialCRF
from skfcrf.ensemble import MarginalAveraging, average_marginals
from skfcrf.transformers import NGramWindow, SequenceFeatureUnion, WordShape

from _helpers import raw_tokens, sequences, short_fit


def members():
    return [FactorialCRF(max_iter=30, tol=1e-3, random_state=0),
            FactorialCRF(objective="likelihood", inference="exact", max_iter=30, tol=1e-3)]


def test_average_of_member_marginals():
    X, y = sequences(n_seq=20)
    ens = MarginalAveraging(members(), weights=[1, 3]).fit(X, y)
    got = ens.predict_marginals(X)
    a, b = (m.predict_marginals(X) for m in ens.estimators_)
    for s in range(len(X)):
        for c in range(2):
            np.testing.assert_allclose(got[s][c], 0.25 * a[s][c] + 0.75 * b[s][c])
            np.testing.assert_allclose(got[s][c].sum(axis=1), 1.0)
    pred = ens.predict(X)
    for s in range(len(X)):
        for c in range(2):
            assert list(pred[s][:, c]) == list(ens.classes_[c][got[s][c].argmax(axis=1)])
    assert 0.0 <= ens.score(X, y) <= 1.0


def test_members_with_different_label_sets_are_aligned():
    X, y = sequences(n_seq=20)
    # the second member never sees label "c2" of chain 0
    keep = [i for i, seq in enumerate(y) if all(t[0] != "c2" for t in seq)]
    first = FactorialCRF(max_iter=20, tol=1e-3).fit(X, y)
    second = FactorialCRF(max_iter=20, tol=1e-3).fit([X[i] for i in keep], [y[i] for i in keep])
    ens = MarginalAveraging([FrozenEstimator(first), FrozenEstimator(second)]).fit(X, y)
    assert list(ens.classes_[0]) == ["c0", "c1", "c2"]
    col = list(ens.classes_[0]).index("c2")
    m = ens.predict_marginals(X[:1])[0][0]
    np.testing.assert_allclose(m[:, col], 0.5 * first.predict_marginals(X[:1])[0][0][:, col])


def test_pipeline_and_grid_search():
    X, y = sequences(n_seq=24)
    search = GridSearchCV(MarginalAveraging(members()), {"weights": [None, [1, 0]]}, cv=2)
    search.fit(X, y)
    assert search.best_estimator_.predict(X[:2])[0].shape[1] == 2


@pytest.mark.parametrize("bad", [dict(estimators=[]), dict(weights=[1, -1]),
                                 dict(weights=[1]), dict(estimators=[object()])])
def test_bad_parameters(bad):
    X, y = sequences()
    params = dict(estimators=members(), **bad) if "estimators" not in bad else bad
    with pytest.raises(ValueError):
        MarginalAveraging(**params).fit(X, y)


# -- confidence weighting (eq. 2.4/2.5 and the per-token confidence option) ----------

class FixedMarginals(BaseEstimator):
    """A member whose marginals are given: one sequence, one chain of labels a/b."""

    def __init__(self, marginals=None):
        self.marginals = marginals

    def fit(self, X, y):
        self.classes_ = [np.array(["a", "b"], dtype=object)]
        self._one_chain = True
        return self

    def predict(self, X):
        return [np.array(["a"] * len(x), dtype=object) for x in X]

    def predict_marginals(self, X):
        return [[np.array(self.marginals, dtype=float)] for _ in X]


A = [[0.9, 0.1], [0.2, 0.8]]
B = [[0.4, 0.6], [0.3, 0.7]]
X1, Y1 = [[["w"], ["v"]]], [["a", "b"]]


@pytest.mark.parametrize("weighting, weights, expected", [
    # eq. 2.4: (p_ss + p_ts) / 2
    ("mean", None, [[0.65, 0.35], [0.25, 0.75]]),
    # token 0: confidences .9 and .6 -> (.9*.9 + .6*.4) / 1.5 = .7
    # token 1: confidences .8 and .7 -> (.8*.2 + .7*.3) / 1.5 = .37 / 1.5
    ("confidence", None, [[0.7, 0.3], [0.37 / 1.5, 1.13 / 1.5]]),
    # weights 1:3 -> .25*.9 = .225 and .75*.6 = .45: (.225*.9 + .45*.4) / .675
    ("confidence", [1, 3], [[0.3825 / 0.675, 0.2925 / 0.675],
                            [(0.2 * 0.2 + 0.525 * 0.3) / 0.725,
                             (0.2 * 0.8 + 0.525 * 0.7) / 0.725]]),
])
def test_weighting_against_hand_computed_marginals(weighting, weights, expected):
    ens = MarginalAveraging([FixedMarginals(A), FixedMarginals(B)], weights=weights,
                            weighting=weighting).fit(X1, Y1)
    got = ens.predict_marginals(X1)[0][0]
    np.testing.assert_allclose(got, expected)
    np.testing.assert_allclose(got.sum(axis=1), 1.0)
    assert list(ens.predict(X1)[0]) == ["a", "b"]         # eq. 2.5: per-token argmax


def test_confidence_weighting_can_change_the_decision():
    # three members lean to "a" a little, one leans to "b" more: the mean keeps "a"
    # (.50625), weighting each by its confidence (.6, .6, .6, .775) gives "b"
    x = [[["w"]]]
    parts = [[[0.6, 0.4]]] * 3 + [[[0.225, 0.775]]]
    mean = MarginalAveraging([FixedMarginals(p) for p in parts]).fit(x, [["a"]])
    conf = MarginalAveraging([FixedMarginals(p) for p in parts],
                             weighting="confidence").fit(x, [["a"]])
    np.testing.assert_allclose(mean.predict_marginals(x)[0][0][0, 0], 0.50625)
    np.testing.assert_allclose(conf.predict_marginals(x)[0][0][0, 0],
                               (3 * 0.6 * 0.6 + 0.775 * 0.225) / (3 * 0.6 + 0.775))
    assert mean.predict(x)[0][0] == "a" and conf.predict(x)[0][0] == "b"


# -- members with their own feature pipelines over the same raw tokens --------------

def pipelines():
    return [Pipeline([("words", NGramWindow(offsets=(0,))),
                      ("crf", FactorialCRF(max_iter=20, tol=1e-3))]),
            Pipeline([("shape", SequenceFeatureUnion([("w", NGramWindow(offsets=(-1, 0))),
                                                      ("s", WordShape())])),
                      ("crf", FactorialCRF(objective="likelihood", inference="exact",
                                           max_iter=20, tol=1e-3))])]


@short_fit
@pytest.mark.parametrize("weighting", ["mean", "confidence"])
def test_pipeline_members_with_their_own_features(weighting):
    X, y = raw_tokens(16, seed=0)
    ens = MarginalAveraging(pipelines(), weighting=weighting).fit(X, y)
    parts = [p[-1].predict_marginals(p[:-1].transform(X)) for p in ens.estimators_]
    got = ens.predict_marginals(X)
    for s in range(len(X)):
        for c in range(2):
            want = average_marginals([p[s][c] for p in parts], [0.5, 0.5], weighting)
            np.testing.assert_allclose(got[s][c], want)
    assert 0.0 <= ens.score(X, y) <= 1.0
    # fitted pipelines combined as they are
    frozen = MarginalAveraging([FrozenEstimator(p) for p in ens.estimators_],
                               weighting=weighting).fit(X, y)
    np.testing.assert_allclose(frozen.predict_marginals(X)[0][1], got[0][1])


def test_bad_weighting_and_member_without_marginals():
    X, y = sequences()
    with pytest.raises(ValueError):
        MarginalAveraging(members(), weighting="vote").fit(X, y)
    no_marginals = Pipeline([("words", NGramWindow()), ("clf", FixedMarginals.__base__())])
    with pytest.raises(ValueError, match="predict_marginals"):
        MarginalAveraging([no_marginals]).fit(X, y)
    with pytest.raises(ValueError, match="weights"):
        MarginalAveraging(members(), weights=["x", "y"]).fit(X, y)
