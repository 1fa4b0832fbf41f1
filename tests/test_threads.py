"""Threads: concurrent prediction from one model, and no oversubscription when nested."""
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from sklearn.model_selection import GridSearchCV
from threadpoolctl import threadpool_limits

from skfcrf import FactorialCRF
from skfcrf.estimators._fcrf import kernel_threads

from _helpers import sequences, short_fit


@short_fit
@pytest.mark.parametrize("inference", ["trp", "exact"])
def test_concurrent_predict_equals_serial(inference):
    X, y = sequences(n_seq=30)
    est = FactorialCRF(max_iter=30, inference=inference, n_jobs=2, random_state=0).fit(X, y)
    serial = [est.predict(X), est.predict_marginals(X)]
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda _: (est.predict(X), est.predict_marginals(X)), range(8)))
    for labels, marginals in results:
        assert all(np.array_equal(a, b) for a, b in zip(labels, serial[0]))
        assert all(np.array_equal(a, b) for sa, sb in zip(marginals, serial[1])
                   for a, b in zip(sa, sb))


def test_kernel_threads_respects_openmp_limit():
    assert kernel_threads(None) == 1
    assert 1 <= kernel_threads(-1) <= (os.cpu_count() or 1)
    with threadpool_limits(limits=1, user_api="openmp"):
        assert kernel_threads(2) == 1 and kernel_threads(-1) == 1


def _threads_scorer(estimator, X, y):
    """A 'score' reporting how many kernel threads the worker would use."""
    return float(kernel_threads(estimator.n_jobs))


@short_fit
def test_nested_grid_search_does_not_oversubscribe():
    """GridSearchCV(n_jobs=2) over FactorialCRF(n_jobs=2): joblib's workers get an OpenMP
    limit of cpu_count // 2, which the kernels honour."""
    X, y = sequences(n_seq=20)
    search = GridSearchCV(FactorialCRF(n_jobs=2, max_iter=5), {"sigma": [1.0, 10.0]}, cv=2,
                          n_jobs=2, scoring=_threads_scorer)
    search.fit(X, y)
    per_worker = max(1, (os.cpu_count() or 1) // 2)
    assert np.all(search.cv_results_["mean_test_score"] <= per_worker)
