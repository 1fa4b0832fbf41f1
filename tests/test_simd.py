"""The vectorised array kernels of ``_simd.h`` against numpy."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from skfcrf._kernels import _simd

ULP = np.finfo(np.float64).eps
# every version of the matrix kernels this CPU runs (baseline, AVX2, AVX-512)
LEVELS = list(range(_simd.vector_level() + 1))


def test_vector_level_is_known():
    assert _simd.vector_level() in (0, 1, 2)


def test_exp_matches_libm_over_the_normal_range():
    x = np.linspace(-708.3, 0.0, 200_001)
    got = _simd.exp_shifted(x)
    rel = np.abs(got - np.exp(x)) / np.exp(x)
    assert rel.max() <= 4 * ULP


@pytest.mark.parametrize("shift", [0.0, 3.5, -20.0])
def test_exp_subtracts_the_shift(shift):
    x = np.random.default_rng(0).uniform(-60, 0, 1001) + shift
    np.testing.assert_allclose(_simd.exp_shifted(x, shift), np.exp(x - shift), rtol=4 * ULP)


def test_exp_special_values():
    x = np.array([-np.inf, np.nan, 0.0, -708.5, -1e4, -1e-300, 1.0, 709.0])
    got = _simd.exp_shifted(x)
    assert got[0] == 0.0
    assert np.isnan(got[1])
    assert got[2] == 1.0
    # below the normal range the result is flushed to zero
    assert got[3] == 0.0 and got[4] == 0.0
    assert got[5] == 1.0
    np.testing.assert_allclose(got[6:], np.exp(x[6:]), rtol=4 * ULP)


def test_exp_of_empty_array():
    assert _simd.exp_shifted(np.zeros(0)).shape == (0,)


@settings(max_examples=60, deadline=None)
@given(hnp.arrays(np.float64, st.integers(1, 200),
                  elements=st.floats(-700, 0, allow_nan=False)))
def test_exp_property(x):
    # every length exercises the vector body and its remainder
    np.testing.assert_allclose(_simd.exp_shifted(x), np.exp(x), rtol=4 * ULP, atol=0)


@settings(max_examples=80, deadline=None)
@given(nin=st.integers(1, 80), nout=st.integers(1, 80), seed=st.integers(0, 2**32 - 1),
       p_zero=st.sampled_from([0.0, 0.3]), level=st.sampled_from(LEVELS))
def test_matmax_product_is_exact(nin, nout, seed, p_zero, level):
    rng = np.random.default_rng(seed)
    x = rng.uniform(0, 1, nin)
    P = rng.uniform(0, 1, (nin, nout)) * (rng.uniform(size=(nin, nout)) >= p_zero)
    # the maximum of the same IEEE products: equal, not just close
    assert np.array_equal(_simd.matmax(x, P, level=level), (x[:, None] * P).max(axis=0))


@settings(max_examples=80, deadline=None)
@given(nin=st.integers(1, 80), nout=st.integers(1, 80), seed=st.integers(0, 2**32 - 1),
       p_inf=st.sampled_from([0.0, 0.3]), level=st.sampled_from(LEVELS))
def test_matmax_plus_is_exact(nin, nout, seed, p_inf, level):
    rng = np.random.default_rng(seed)
    x = rng.normal(0, 5, nin)
    P = rng.normal(0, 5, (nin, nout))
    P[rng.uniform(size=(nin, nout)) < p_inf] = -np.inf
    assert np.array_equal(_simd.matmax(x, P, plus=True, level=level),
                          (x[:, None] + P).max(axis=0))


def test_matrix_kernels_reject_mismatched_shapes():
    with pytest.raises(ValueError):
        _simd.matmax(np.ones(3), np.ones((2, 4)))
    with pytest.raises(ValueError):
        _simd.matmax(np.ones(2), np.ones((2, 4)), level=3)
    with pytest.raises(ValueError):
        _simd.matvec_sum(np.ones(3), np.ones((2, 4)))
    with pytest.raises(ValueError):
        _simd.matvec_sum(np.ones(2), np.ones(2))
    with pytest.raises(ValueError):
        _simd.gemm_tn_acc(np.ones((2, 3)), np.ones((2, 4)), np.zeros((4, 4)))


@pytest.mark.parametrize("nout", [1, 2, 5, 7, 8, 23, 24, 25, 44, 48, 53])
def test_matvec_sum_sums_in_ascending_order(nout):
    # every block size, the constant-size last blocks included, sums each output over
    # the inputs in ascending order from 0.0: the same bits as that loop
    rng = np.random.default_rng(nout)
    x, P = rng.normal(size=9), rng.normal(size=(9, nout))
    ref = np.zeros(nout)
    for i in range(9):
        ref = ref + x[i] * P[i]
    np.testing.assert_array_equal(_simd.matvec_sum(x, P), ref)


@pytest.mark.parametrize("n", [1, 3, 7, 23, 24, 30])
def test_gemm_tn_acc_sums_in_ascending_order(n):
    rng = np.random.default_rng(n)
    A, B, C = rng.normal(size=(6, 4)), rng.normal(size=(6, n)), rng.normal(size=(4, n))
    acc = np.zeros((4, n))
    for k in range(6):
        acc = acc + np.outer(A[k], B[k])
    expected = C + acc
    _simd.gemm_tn_acc(A, B, C)
    np.testing.assert_array_equal(C, expected)
