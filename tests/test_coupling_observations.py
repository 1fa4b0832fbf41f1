"""Observation-dependent couplings restricted to named observation groups
(``coupling_observations``, issue 32 item 1).

The restricted model's feature table is the unrestricted one's without the
coupling entries of the other observations; the objectives need nothing else,
so their gradients are checked by central differences on a restricted model.
"""
import numpy as np
import pytest
import scipy.sparse as sp

from skfcrf import FactorialCRF
from skfcrf._kernels.graph import COUPLING
from skfcrf.estimators import training_problem
from skfcrf.model._memory import estimate_fit_memory

from _helpers import check_gradient, short_fit, synthetic


def _entries(est):
    """(observation name, score column) per feature-table entry, and the set of the
    coupling templates' columns."""
    layout = est.layout_
    names = est.observation_names_[np.repeat(np.arange(layout.n_features),
                                             np.diff(layout.feat_ptr))]
    coupling = set()
    for e in range(layout.graph.n_edges):
        if layout.graph.edge_kind[e] == COUPLING and layout.edge_col[e] >= 0:
            coupling.update(range(layout.edge_col[e],
                                  layout.edge_col[e] + layout.graph.edge_size(e)))
    return list(zip(names, layout.ent_col.tolist())), coupling


@pytest.mark.parametrize("mode", ["supported", "all"])
@pytest.mark.parametrize("groups", ["odd=", ["odd=", "w=1"]])
def test_restricted_table_is_the_full_table_without_other_coupling_entries(mode, groups):
    X, y = synthetic(n_seq=20, n_chains=3)
    full = FactorialCRF(coupling_features=mode)
    training_problem(full, X, y)
    restricted = FactorialCRF(coupling_features=mode, coupling_observations=groups)
    training_problem(restricted, X, y)
    prefixes = (groups,) if isinstance(groups, str) else tuple(groups)
    full_entries, coupling = _entries(full)
    kept = [(n, c) for n, c in full_entries if c not in coupling or n.startswith(prefixes)]
    got, _ = _entries(restricted)
    assert got == kept
    assert any(c in coupling for _, c in got)            # some coupling weights remain
    assert len(got) < len(full_entries)                  # and some were dropped
    if mode == "all":
        n_match = sum(str(n).startswith(prefixes) for n in restricted.observation_names_)
        n_coupling = sum(c in coupling for _, c in got)
        sizes = [restricted.graph_.edge_size(e) for e in range(restricted.graph_.n_edges)
                 if restricted.graph_.edge_kind[e] == COUPLING]
        assert n_coupling == n_match * sum(sizes)


@pytest.mark.parametrize("objective", ["likelihood", "chainwise", "pseudolikelihood"])
def test_gradient_of_a_restricted_model(objective):
    X, y = synthetic(n_seq=8, n_chains=2, length=(2, 5))
    check_gradient(FactorialCRF(objective=objective, coupling_features="supported",
                                coupling_observations="odd="), X, y)


def test_memory_estimate_counts_the_restricted_coupling_weights():
    X, y = synthetic(n_seq=20, n_chains=2)
    est = FactorialCRF(coupling_features="all", coupling_observations="odd=")
    training_problem(est, X, y)
    Xm, _ = est.encoder_.transform(X)
    mask = np.array([n.startswith("odd=") for n in est.observation_names_])
    kwargs = dict(unary_features="all", transition_features="default", coupling_features="all",
                  objective="likelihood", lbfgs_memory=3)
    whole = estimate_fit_memory(est.graph_, Xm.shape[0], Xm.shape[1], Xm.nnz, **kwargs)
    part = estimate_fit_memory(est.graph_, Xm.shape[0], Xm.shape[1], Xm.nnz, **kwargs,
                               coupling_columns=mask)
    size = est.graph_.edge_size(next(e for e in range(est.graph_.n_edges)
                                     if est.graph_.edge_kind[e] == COUPLING))
    assert whole["n_weights"] - part["n_weights"] == (len(mask) - mask.sum()) * size


@short_fit
def test_fit_predict_save_and_load(tmp_path):
    X, y = synthetic(n_seq=30, n_chains=2)
    est = FactorialCRF(coupling_features="supported", coupling_observations=["odd=", "w=0"],
                       max_iter=30).fit(X, y)
    assert est.score(X, y) > 0.9
    est.save(tmp_path / "model")
    loaded = FactorialCRF.load(tmp_path / "model")
    assert loaded.coupling_observations == ["odd=", "w=0"]
    np.testing.assert_array_equal(loaded.coef_, est.coef_)
    for a, b in zip(loaded.predict(X), est.predict(X)):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("params, match", [
    (dict(coupling_features="default"), "coupling_features='default' gives them none"),
    (dict(coupling_observations="nope="), r"matches no observation.*"),
    (dict(coupling_observations=[""]), "non-empty name prefix"),
    (dict(coupling_observations=[]), "non-empty name prefix"),
    (dict(coupling_observations=["odd=", 3]), "non-empty name prefix"),
    (dict(coupling_observations=3), "coupling_observations"),
])
def test_bad_coupling_observations(params, match):
    X, y = synthetic(n_seq=6, n_chains=2)
    params = {"coupling_features": "supported", "coupling_observations": "odd=", **params}
    with pytest.raises(ValueError, match=match):
        FactorialCRF(max_iter=2, **params).fit(X, y)


def test_matrix_input_has_no_names():
    X, y = synthetic(n_seq=6, n_chains=2)
    rng = np.random.default_rng(0)
    Xm = [sp.csr_matrix(rng.integers(0, 2, size=(len(s), 4)).astype(float)) for s in X]
    with pytest.raises(ValueError, match="needs named observations"):
        FactorialCRF(max_iter=2, coupling_features="supported",
                     coupling_observations="odd=").fit(Xm, y)
