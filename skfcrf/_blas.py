"""One BLAS thread inside code that runs its own threads, through one cached controller.

The kernels parallelise over sequences themselves and call BLAS on small matrices
from every thread; BLAS's own threads would only oversubscribe the cores, so those
calls run under :func:`single_blas_thread`.  ``threadpoolctl.threadpool_limits``
looks up the loaded native libraries on every call -- about 3 ms once the kernels'
OpenMP runtime is loaded, paid on every loss evaluation -- where a
``ThreadpoolController`` looks them up once: here, when first used (after numpy's
and scipy's BLAS are loaded, at import).

:func:`axpy` is BLAS's in-place ``y += a x`` for the solvers' vectors (a million
weights: numpy's ``y += a * x`` makes a temporary and passes over the data twice).
"""
import numpy as np
from scipy.linalg.blas import daxpy
from threadpoolctl import ThreadpoolController

__all__ = ["axpy", "single_blas_thread"]

_controller = None


def single_blas_thread():
    """A context manager that limits BLAS to one thread while it is active."""
    global _controller
    if _controller is None:
        _controller = ThreadpoolController()
    return _controller.limit(limits=1, user_api="blas")


def axpy(x, y, a):
    """``y += a * x`` in place; ``y`` must be a C-contiguous float64 vector."""
    if not (y.dtype == np.float64 and y.ndim == 1 and y.flags.c_contiguous
            and y.flags.writeable):
        raise ValueError("axpy updates a writeable C-contiguous float64 vector")
    x = np.ascontiguousarray(x, dtype=np.float64)
    if x.shape != y.shape:
        raise ValueError(f"axpy: x has shape {x.shape}, y {y.shape}")
    if daxpy(x, y, a=a) is not y:           # pragma: no cover - BLAS copied y
        raise RuntimeError("daxpy did not update its vector in place")
