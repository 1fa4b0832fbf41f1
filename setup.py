"""Build the Cython kernels of skfcrf (the metadata lives in pyproject.toml)."""
import os
import sys

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup

_openmp = [] if sys.platform == "darwin" or os.environ.get("SKFCRF_NO_OPENMP") else ["-fopenmp"]
# _alloc (checked scratch memory) and _contract (the typed inputs of the kernels) are
# cimported by the others
_kernels = ["_alloc", "_contract", "_chain", "_trp", "_exact", "_features",
            "_pseudolikelihood", "_simd", "_chainwise", "_joint", "_nbest", "_align", "_online",
            "_dicts"]

# -fno-trapping-math: loops with selects (e.g. in _simd.h) may be vectorised; values
# are unchanged, only floating-point exception flags are not kept exact.
# -ffp-contract=off: the AVX2 / AVX-512 clones of _simd.h must not fuse a * b + c
# into one FMA (one rounding instead of two), so that every machine gets the
# baseline build's results bit for bit.  A literal list: benchmarks/ab_kernel.py reads
# it from this file to build an earlier revision's kernel the same way.
COMPILE_ARGS = ["-O3", "-fno-trapping-math", "-ffp-contract=off"]

extensions = [
    Extension(
        f"skfcrf._kernels.{name}",
        [os.path.join("skfcrf", "_kernels", f"{name}.pyx")],
        include_dirs=[np.get_include()],
        extra_compile_args=COMPILE_ARGS + _openmp,
        extra_link_args=_openmp,
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
    )
    for name in _kernels
    if os.path.exists(os.path.join("skfcrf", "_kernels", f"{name}.pyx"))
]

setup(
    ext_modules=cythonize(
        extensions,
        compiler_directives={
            "language_level": 3,
            "boundscheck": False,
            "wraparound": False,
            "cdivision": True,
            "initializedcheck": False,
        },
    ),
)
