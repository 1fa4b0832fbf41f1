"""Helpers shared by the test modules (not a test module itself; tests/ is on pytest's path).

``token_sequences`` draws random token sequences with their observations; ``synthetic`` makes
a small separable FCRF task of them; ``check_gradient`` compares an estimator's analytic
gradient with central finite differences; ``short_fit`` marks a test whose fits stop early on
purpose; ``run_cli`` runs the command line of this checkout in a subprocess.
"""
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

# Warnings are errors in this suite (pyproject.toml). A test that fits with a deliberately
# small max_iter (to be quick, or to compare models fitted the same way) is not about
# convergence: it lets ConvergenceWarning pass.
short_fit = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


def token_sequences(rng, n_seq, lengths, n_values):
    """``n_seq`` random sequences of integer tokens below ``n_values`` (lengths drawn from
    ``[lengths[0], lengths[1])``), each with its observations: ``w=<token>`` and
    ``odd=<parity>``.  Lazy, so the caller may draw labels from ``rng`` between sequences."""
    for _ in range(n_seq):
        toks = rng.integers(0, n_values, size=int(rng.integers(*lengths)))
        yield toks, [{f"w={t}": 1.0, f"odd={t % 2}": 1.0} for t in toks]


def synthetic(n_seq=40, n_chains=2, seed=0, noise=0.0, length=(3, 9)):
    """A separable task: chain 0 is the token's class, chain k>0 groups chain 0."""
    rng = np.random.default_rng(seed)
    X, y = [], []
    for toks, obs in token_sequences(rng, n_seq, length, 6):
        X.append(obs)
        labels = []
        for t in toks:
            lab = [f"c{t % 3}"]
            if n_chains > 1:
                lab.append("hi" if t >= 3 else "lo")
            if n_chains > 2:
                lab.append("even" if t % 2 == 0 else "odd")
            labels.append(tuple(lab))
        y.append(labels)
    return X, y


def check_gradient(est, X, y, rel=1e-4):
    """Central finite differences against the objective object's analytic gradient."""
    from skfcrf.estimators import training_problem

    objective, theta0, _ = training_problem(est, X, y)
    rng = np.random.default_rng(3)
    theta = rng.normal(scale=0.5, size=theta0.shape)
    loss, grad = objective.loss_gradient(theta)
    assert np.isfinite(loss)
    idx = rng.choice(len(theta), size=min(len(theta), 40), replace=False)
    assert_central_differences(objective.loss_gradient, theta, grad, idx, rel=rel)


def assert_central_differences(loss_gradient, x, grad, indices, eps=1e-5, rel=1e-4):
    """``grad[i]`` equals the central difference of ``loss_gradient(x)[0]`` along every
    coordinate ``i`` of ``indices`` (relative to ``max(1, |difference|)``)."""
    for i in indices:
        xp, xm = x.copy(), x.copy()
        xp[i] += eps
        xm[i] -= eps
        num = (loss_gradient(xp)[0] - loss_gradient(xm)[0]) / (2 * eps)
        assert abs(num - grad[i]) <= rel * max(1.0, abs(num)), (i, num, grad[i])


def sequences(n_chains=2, n_seq=12, seed=0):
    """Random short sequences of two observations per token; labels of up to two chains."""
    rng = np.random.default_rng(seed)
    X, y = [], []
    for toks, obs in token_sequences(rng, n_seq, (1, 8), 6):
        X.append(obs)
        y.append([(f"c{t % 3}", "hi" if t >= 3 else "lo")[:n_chains] for t in toks])
    return X, y


def raw_tokens(n_seq, seed):
    """Sequences of raw word tokens (``Tok1``, ``tok2``, ...) for pipelines that build
    their own observations; two chains: the token's class and a coarse group."""
    rng = np.random.default_rng(seed)
    X, y = [], []
    for _ in range(n_seq):
        toks = rng.integers(0, 6, size=int(rng.integers(2, 8)))
        X.append([f"Tok{t}" if t % 2 else f"tok{t}" for t in toks])
        y.append([(f"c{t % 3}", "hi" if t >= 3 else "lo") for t in toks])
    return X, y


def run_cli(*args, cwd=None, timeout=300):
    """``python -m skfcrf ARGS`` with this checkout first on the path (warnings
    ignored); the completed process, its output captured as text."""
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[1])
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    env.setdefault("PYTHONWARNINGS", "ignore")
    return subprocess.run([sys.executable, "-m", "skfcrf", *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)
