"""Long and odd inputs (issue 19, item 6): finite numbers everywhere, or a clear ValueError.

Every case is run with one and three chains, the three objectives and inference
``"auto"``/``"trp"``: the objective's loss and gradient (at zero and at random
weights), the fitted weights and loss curve, the marginals of
``predict_marginals`` (which also sum to one) and ``decode``'s ``log_prob`` must
be finite (``log_prob`` may be NaN, "not given", but never inf or positive).
The single 100,000-token sequence lives in ``benchmarks/bench_long_sequence.py``.
"""
import itertools

import numpy as np
import pytest
import scipy.sparse as sp

from skfcrf import FactorialCRF
from skfcrf.estimators import training_problem
from skfcrf.estimators._observations import MAX_OBSERVATION_VALUE

from _helpers import short_fit

GRID = list(itertools.product([1, 3], ["chainwise", "pseudolikelihood", "likelihood"],
                              ["auto", "trp"]))


def odd_data(case, n_chains, seed=0):
    """Six short sequences (or, for ``"many_labels"``, one 200-token one) of the odd kind."""
    rng = np.random.default_rng(seed)
    value = {"huge": MAX_OBSERVATION_VALUE, "negative_huge": -MAX_OBSERVATION_VALUE,
             "tiny": 1e-300, "subnormal": 5e-324}.get(case, 1.0)
    if case == "many_labels":
        T = 200
        X = [[{f"w={t % 7}": 1.0, f"odd={t % 2}": 1.0} for t in range(T)]]
        y = [[tuple([f"l{t}"] + [f"c{(t + c) % 3}" for c in range(1, n_chains)])
              for t in range(T)]]
        return X, y
    X, y = [], []
    for _ in range(6):
        T = 1 if case == "length_one" else int(rng.integers(2, 6))
        toks = rng.integers(0, 6, size=T)
        X.append([{f"w={t}": value, f"odd={t % 2}": value} for t in toks])
        if case == "one_label":
            y.append([("only",) * n_chains for _ in toks])
        else:
            y.append([tuple(f"c{(t + c) % 3}" for c in range(n_chains)) for t in toks])
    return X, y


def assert_all_finite(est, X, y, n_chains):
    objective, theta0, _ = training_problem(
        FactorialCRF(**est.get_params()), X, y)
    theta = np.random.default_rng(1).normal(size=theta0.shape)
    for point in (theta0, theta):
        loss, grad = objective.loss_gradient(point)
        assert np.isfinite(loss) and np.all(np.isfinite(grad))
    est.fit(X, y)
    assert np.all(np.isfinite(est.coef_)) and np.all(np.isfinite(est.loss_curve_))
    marginals = est.predict_marginals(X)
    for seq, m in zip(X, marginals):
        assert len(m) == n_chains
        for c, block in enumerate(m):
            assert block.shape == (len(seq), len(est.classes_[c]))
            assert np.all(np.isfinite(block))
            np.testing.assert_allclose(block.sum(axis=1), 1.0, atol=1e-6)
    for seq, result in zip(X, est.decode(X)):
        assert len(result.labels) == len(seq)
        assert not np.isinf(result.log_prob) and not result.log_prob > 1e-9
    assert 0.0 <= est.score(X, y) <= 1.0


CASES = ["length_one", "one_label", "tiny", "subnormal", "huge", "negative_huge"]


@short_fit
@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("n_chains, objective, inference", GRID)
def test_odd_inputs_give_finite_numbers(case, n_chains, objective, inference):
    X, y = odd_data(case, n_chains)
    est = FactorialCRF(objective=objective, inference=inference, max_iter=15, finetune_iter=3)
    assert_all_finite(est, X, y, n_chains)
    if case == "one_label":
        assert all(np.all(p == "only") for p in est.predict(X))


@short_fit
@pytest.mark.parametrize("sigma", [1e6, 1e-6])
@pytest.mark.parametrize("n_chains, objective, inference", GRID)
def test_extreme_sigma_gives_finite_numbers(sigma, n_chains, objective, inference):
    X, y = odd_data("plain", n_chains)
    est = FactorialCRF(sigma=sigma, objective=objective, inference=inference, max_iter=15,
                       finetune_iter=3)
    assert_all_finite(est, X, y, n_chains)
    if sigma == 1e-6:  # the prior pins every weight near zero
        assert np.abs(est.coef_).max() < 1e-3


@short_fit
@pytest.mark.parametrize("n_chains, objective, inference", GRID)
def test_two_hundred_labels_in_a_chain(n_chains, objective, inference):
    X, y = odd_data("many_labels", n_chains)
    est = FactorialCRF(objective=objective, inference=inference, max_iter=4, finetune_iter=1,
                       bp_max_iter=20)
    assert_all_finite(est, X, y, n_chains)
    assert len(est.classes_[0]) == 200


@pytest.mark.parametrize("value", [1e300, -1e300, 1.01 * MAX_OBSERVATION_VALUE, np.inf,
                                   -np.inf, np.nan])
@pytest.mark.parametrize("matrix", [False, True])
def test_too_large_observation_values_are_refused_clearly(value, matrix):
    X, y = odd_data("plain", 1)
    X[2][1] = {"w=1": value}
    if matrix:
        X = [sp.csr_matrix(np.array([[v for v in tok.values()][:1] + [0.0] for tok in seq]))
             for seq in X]
    with pytest.raises(ValueError, match=r"X\[2\] token 1: observation values must be finite"):
        FactorialCRF(max_iter=2).fit(X, y)


@short_fit
def test_too_large_values_at_prediction_are_refused_clearly():
    X, y = odd_data("plain", 1)
    est = FactorialCRF(max_iter=5, finetune_iter=0).fit(X, y)
    bad = [[{"w=1": 1e300}]]
    for method in (est.predict, est.decode, est.predict_marginals):
        with pytest.raises(ValueError, match="at most 1e\\+100 in magnitude"):
            method(bad)
