"""The objective objects reproduce the losses and gradients of the code before them.

``data/objective_reference.npz`` holds, for 16 small fixed problems (1-3 chains,
both objectives, exact and TRP likelihood, two feature-support settings),
random weights and the penalised loss and gradient computed at commit 348513f
(``FactorialCRF._penalized``, before the objectives became objects) with one
thread.  Every evaluation there was deterministic, so on the machine that wrote the
file equality is bit for bit; on another processor the kernels' runtime SIMD dispatch
(and BLAS) may round the last bit differently (seen on an AMD EPYC: case 1 differs by
one ulp), so the check allows a relative error of 1e-13, far below any change of the
model or the arithmetic.
"""
import os

import numpy as np
import pytest

from skfcrf import FactorialCRF
from skfcrf.estimators import training_problem

REFERENCE = os.path.join(os.path.dirname(__file__), "data", "objective_reference.npz")


def problem(n_chains, seed):
    rng = np.random.default_rng(seed)
    X, y = [], []
    for _ in range(6):
        n = int(rng.integers(1, 8))
        toks = rng.integers(0, 6, size=n)
        X.append([{f"w={t}": 1.0, f"odd={t % 2}": 1.0, "len": 0.5 + t / 4} for t in toks])
        y.append([tuple([f"c{t % 3}", "hi" if t >= 3 else "lo",
                         "even" if t % 2 == 0 else "odd"][:n_chains]) for t in toks])
    return X, y


CASES = [
    (n_chains, objective, inference, support)
    for n_chains in (1, 2, 3)
    for objective, inference in (("pseudolikelihood", "auto"), ("likelihood", "exact"),
                                 ("likelihood", "trp"))
    if not (inference == "trp" and n_chains == 1)
    for support in (("supported", "default", "default"), ("all", "supported", "supported"))
]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_objective_matches_reference_bit_for_bit(case):
    n_chains, objective, inference, support = CASES[case]
    X, y = problem(n_chains, case)
    est = FactorialCRF(objective=objective, inference=inference, unary_features=support[0],
                       transition_features=support[1], coupling_features=support[2],
                       sigma=2.0, coupling="all" if n_chains == 3 else "adjacent",
                       random_state=0, bp_max_iter=50, n_jobs=1, forbidden_transitions=None,
                       state_transitions=False)  # the model class of 348513f
    ref = np.load(REFERENCE)
    obj, theta0, _ = training_problem(est, X, y)
    theta = ref[f"case{case}_theta"]
    assert theta.shape == theta0.shape
    loss, grad = obj.loss_gradient(theta)
    ref_grad = ref[f"case{case}_grad"]
    np.testing.assert_allclose(loss, float(ref[f"case{case}_loss"]), rtol=1e-13, atol=0)
    np.testing.assert_allclose(grad, ref_grad, rtol=1e-13, atol=1e-13 * np.abs(ref_grad).max())
