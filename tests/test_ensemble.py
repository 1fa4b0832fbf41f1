"""MarginalAveraging: averaged marginals, decoding, label-set alignment, Pipeline use."""
import numpy as np
import pytest
from sklearn.frozen import FrozenEstimator
from sklearn.model_selection import GridSearchCV

from skfcrf import FactorialCRF
from skfcrf.ensemble import MarginalAveraging

from _helpers import sequences


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
