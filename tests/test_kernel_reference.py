"""Inference and pseudolikelihood results pinned (see kernel_reference.py): integers
bit for bit, floats to within 1e-14 (relative, and absolute near zero).

The floats were pinned bit for bit until numpy 2.4.6 / scipy 1.17.1 (2026-11-27) moved
some of them by 1-4 ulps (relative 8e-16 at most) with the same kernels: exactness across
dependency versions is not something the kernels control.  ``1e-14`` still catches any
change of algorithm or of the order of more than a handful of floating-point operations.
"""
import numpy as np
import pytest
from kernel_reference import (
    GRAPHS,
    PATH,
    PL_PROBLEMS,
    inference_problem,
    inference_results,
    pl_problem,
    pl_results,
)

#: How far a pinned float may move (relative, and absolute near zero).
FLOAT_RTOL = 1e-14


@pytest.fixture(scope="module")
def reference():
    with np.load(PATH) as data:
        return dict(data)


def assert_same(got, reference, prefix):
    keys = sorted(k for k in reference if k.startswith(prefix + "/")
                  and k.split("/")[1] not in ("unary", "pair"))
    assert keys, prefix
    assert sorted(f"{prefix}/{k}" for k in got) == keys
    for key in keys:
        value, pinned = np.asarray(got[key.split("/")[1]]), reference[key]
        if np.issubdtype(pinned.dtype, np.floating):
            np.testing.assert_allclose(value, pinned, rtol=FLOAT_RTOL, atol=FLOAT_RTOL,
                                       err_msg=key, strict=True)
        else:
            np.testing.assert_array_equal(value, pinned, err_msg=key, strict=True)


@pytest.mark.parametrize("index", range(len(GRAPHS)))
def test_inference_pinned(reference, index):
    name, n_labels, edges = GRAPHS[index]
    graph, seq_ptr, unary, pair = inference_problem(name, n_labels, edges, seed=100 + index)
    np.testing.assert_array_equal(unary, reference[f"{name}/unary"])
    np.testing.assert_array_equal(pair, reference[f"{name}/pair"])
    assert_same(inference_results(graph, seq_ptr, unary, pair), reference, name)


@pytest.mark.parametrize("index", range(len(PL_PROBLEMS)))
def test_pseudolikelihood_pinned(reference, index):
    spec = PL_PROBLEMS[index]
    assert_same(pl_results(pl_problem(spec, seed=200 + index)), reference, spec[0])
