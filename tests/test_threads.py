"""Threads: concurrent prediction from one model, and no oversubscription when nested."""
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.model_selection import GridSearchCV
from threadpoolctl import threadpool_limits

from skfcrf import FactorialCRF
from skfcrf.estimators._fcrf import kernel_threads
from skfcrf.model._observation_rows import ObservationRows

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


@short_fit
@pytest.mark.parametrize("n_jobs", [1, 2])
def test_kernels_give_the_threads_back_their_subnormal_numbers(n_jobs):
    """The joint and chain-wise kernels take subnormal numbers as zero in their threads
    (``skfcrf_subnormals_off``) and restore each thread's state afterwards: after a fit
    and a decode, the calling thread and the kernels' worker threads (a kernel that does
    not flush, ``add_scores``, on both) still compute subnormal numbers."""
    X, y = sequences(n_seq=12)
    est = FactorialCRF(max_iter=5, finetune_iter=2, state_transition_iter=2, n_jobs=n_jobs,
                       random_state=0).fit(X, y)
    est.decode(X)
    tiny = 1e-300
    assert tiny * 1e-10 > 0.0                                   # this thread, Python floats
    assert np.float64(tiny) * np.float64(1e-10) > 0.0           # and numpy's
    # one token per sequence, so that every thread adds some rows: x = 1, w = 1e-310
    n = 64
    seq_ptr = np.arange(n + 1, dtype=np.int64)
    obs = ObservationRows(sp.csr_matrix(np.ones((n, 1))), seq_ptr, np.ones(1), width=1)
    out = np.zeros((n, 1))
    obs.add_scores(np.array([0, 1], np.int64), np.zeros(1, np.int32), np.array([1e-310]),
                   out, n_threads=2)
    assert (out > 0.0).all() and np.allclose(out, 1e-310, rtol=1e-6, atol=0.0)
