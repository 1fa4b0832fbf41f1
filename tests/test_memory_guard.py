"""The memory guard: fit estimates its peak memory and refuses what cannot fit."""
import numpy as np
import pytest

from skfcrf import FactorialCRF
from skfcrf._kernels.graph import IN_CHAIN
from skfcrf.model._memory import available_memory, estimate_fit_memory

from _helpers import short_fit, synthetic


def test_all_transitions_over_many_observations_are_refused_with_advice():
    X, y = synthetic(n_seq=20, n_chains=1)
    # every token gets 200 distinct observations
    X = [[dict(tok, **{f"noise{i}_{j}": 1.0 for j in range(200)}) for i, tok in enumerate(seq)]
         for seq in X]
    est = FactorialCRF(objective="likelihood", transition_features="all", max_memory=2 * 2 ** 20)
    with pytest.raises(MemoryError) as info:
        est.fit(X, y)
    msg = str(info.value)
    assert "weights" in msg and "transition_features='all'" in msg and "supported" in msg
    assert "min_instance_freq" in msg
    assert not hasattr(est, "coef_")


def test_estimate_counts_weights_like_the_layout():
    """For 'all' support the estimate's weight count is the layout's exactly."""
    X, y = synthetic(n_seq=10, n_chains=2)
    est = FactorialCRF(unary_features="all", transition_features="all", coupling_features="all",
                       max_iter=1, verbose=0)
    from skfcrf.estimators import training_problem
    training_problem(est, X, y)
    g = est.graph_
    Xm, _ = est.encoder_.transform(X)
    mem = estimate_fit_memory(g, Xm.shape[0], Xm.shape[1], Xm.nnz, unary_features="all",
                              transition_features="all", coupling_features="all",
                              objective="chainwise", lbfgs_memory=3)
    assert mem["n_weights"] == est.layout_.n_params
    assert any(g.edge_kind[e] == IN_CHAIN for e in range(g.n_edges))


@short_fit
def test_verbose_prints_the_estimate(capsys):
    X, y = synthetic(n_seq=10, n_chains=2)
    FactorialCRF(max_iter=2, verbose=1, tol=1e-1).fit(X, y)
    out = capsys.readouterr().out
    assert "memory estimate:" in out and "weights" in out


def test_available_memory_is_known_here():
    avail = available_memory()
    assert avail is None or avail > 0
    assert np.isfinite(float(avail or 1))
