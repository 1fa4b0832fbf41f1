"""Inference and pseudolikelihood results pinned bit for bit (see kernel_reference.py)."""
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
        np.testing.assert_array_equal(got[key.split("/")[1]], reference[key], err_msg=key,
                                      strict=True)


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
