"""single_blas_thread: BLAS limited to one thread inside, restored after."""
from threadpoolctl import threadpool_info

from skfcrf._blas import single_blas_thread


def _blas_threads():
    return [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]


def test_single_blas_thread_limits_and_restores():
    before = _blas_threads()
    with single_blas_thread():
        assert all(n == 1 for n in _blas_threads())
        with single_blas_thread():              # nested, as fit and the objectives nest it
            assert all(n == 1 for n in _blas_threads())
        assert all(n == 1 for n in _blas_threads())
    assert _blas_threads() == before
