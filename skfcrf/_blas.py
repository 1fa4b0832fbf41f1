"""One BLAS thread inside code that runs its own threads, through one cached controller.

The kernels parallelise over sequences themselves and call BLAS on small matrices
from every thread; BLAS's own threads would only oversubscribe the cores, so those
calls run under :func:`single_blas_thread`.  ``threadpoolctl.threadpool_limits``
looks up the loaded native libraries on every call -- about 3 ms once the kernels'
OpenMP runtime is loaded, paid on every loss evaluation -- where a
``ThreadpoolController`` looks them up once: here, when first used (after numpy's
and scipy's BLAS are loaded, at import).
"""
from threadpoolctl import ThreadpoolController

__all__ = ["single_blas_thread"]

_controller = None


def single_blas_thread():
    """A context manager that limits BLAS to one thread while it is active."""
    global _controller
    if _controller is None:
        _controller = ThreadpoolController()
    return _controller.limit(limits=1, user_api="blas")
