"""DaskFactorialCRF on a LocalCluster: equivalence with a local fit, determinism, worker loss,
GridSearchCV under joblib's dask backend.

Skipped as a whole when ``distributed`` is absent; the test extra installs it, so CI runs them.

Tolerance of "equal to a local fit": the cluster sums the data term per partition and then
over partitions, the local fit per block of sequences, so the two differ by float summation
order; after the whole L-BFGS trajectory every weight agrees within ``1e-6 * max|coef|``
(measured: within about 3e-8 of it).  A model with joint-state transitions has weights that
are nearly redundant with its in-chain transitions (only the prior tells them apart): along
those flat directions L-BFGS amplifies the summation differences, so there the bound is
``1e-5 * max|coef|`` (measured: 1.6e-6 of it).  Fits on the same partitions agree bit for bit.
"""
import os
import pickle
import signal

import numpy as np
import pytest

distributed = pytest.importorskip("distributed")
db = pytest.importorskip("dask.bag")

import joblib  # noqa: E402
import scipy.sparse as sp  # noqa: E402
from sklearn.base import clone  # noqa: E402
from sklearn.model_selection import GridSearchCV  # noqa: E402

import skfcrf  # noqa: E402
from skfcrf import FactorialCRF  # noqa: E402
from skfcrf.dask import DaskFactorialCRF  # noqa: E402
from skfcrf.datasets import make_dictations  # noqa: E402
from skfcrf.transformers import make_dictation_features  # noqa: E402

from _helpers import short_fit, synthetic  # noqa: E402

# distributed's own sockets, closed late by its event loop (not skfcrf's)
pytestmark = [pytest.mark.filterwarnings("ignore::ResourceWarning"),
              pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")]

TOL = 1e-6   # on |coef_dask - coef_local| / max|coef_local|, see the module docstring
TOL_STATE_TRANSITIONS = 1e-5


def _cluster(n_workers, processes=True):
    cluster = distributed.LocalCluster(n_workers=n_workers, threads_per_worker=1,
                                       processes=processes, dashboard_address=":0")
    client = distributed.Client(cluster, set_as_default=False)
    # the workers must run this checkout's skfcrf, not another install
    assert set(client.run(lambda: __import__("skfcrf").__file__).values()) == {skfcrf.__file__}
    return cluster, client


@pytest.fixture(scope="module")
def client():
    cluster, client = _cluster(2)
    yield client
    client.close()
    cluster.close()


@pytest.fixture(scope="module")
def dictations():
    X, y = make_dictations(n_reports=4, random_state=0)
    return make_dictation_features().fit_transform(X), y


def assert_same_model(dask_model, local, tol=TOL):
    np.testing.assert_array_equal(dask_model.observation_names_, local.observation_names_)
    for a, b in zip(dask_model.classes_, local.classes_):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(dask_model.joint_states_, local.joint_states_)
    assert dask_model.forbidden_.keys() == local.forbidden_.keys()
    for e, mask in local.forbidden_.items():
        np.testing.assert_array_equal(dask_model.forbidden_[e], mask)
    np.testing.assert_array_equal(dask_model.layout_.feat_ptr, local.layout_.feat_ptr)
    np.testing.assert_array_equal(dask_model.layout_.ent_col, local.layout_.ent_col)
    np.testing.assert_array_equal(dask_model.layout_.state_from, local.layout_.state_from)
    np.testing.assert_array_equal(dask_model.layout_.state_to, local.layout_.state_to)
    if local.layout_.n_state_pairs:
        tol = max(tol, TOL_STATE_TRANSITIONS)
    assert dask_model.n_iter_ == local.n_iter_
    scale = np.abs(local.coef_).max()
    np.testing.assert_allclose(dask_model.coef_, local.coef_, rtol=0, atol=tol * scale)
    np.testing.assert_allclose(dask_model.loss_curve_, local.loss_curve_, rtol=1e-7)


@short_fit
def test_equals_local_fit_on_dictations(client, dictations):
    X, y = dictations
    params = dict(max_iter=15, finetune_iter=8, min_instance_freq=2, random_state=0)
    local = FactorialCRF(**params).fit(X, y)
    model = DaskFactorialCRF(client=client, npartitions=4, **params).fit(X, y)
    assert model.n_partitions_ == 4   # a report each and model.n_evaluations_ >= model.n_iter_
    assert_same_model(model, local)
    # the cheap sentence chain ran on alone (equal work per chain), on the cluster too
    assert model.n_iter_ == local.n_iter_ > 15 + 8
    pred, expected = model.predict(X), local.predict(X)
    assert all(np.array_equal(a, b) for a, b in zip(pred, expected))
    # to_local is a plain FactorialCRF with the same weights and predictions
    plain = model.to_local()
    assert type(plain) is FactorialCRF
    np.testing.assert_array_equal(plain.coef_, model.coef_)
    assert plain.get_params() == {k: v for k, v in model.get_params().items()
                                  if k not in ("client", "npartitions")}
    assert all(np.array_equal(a, b) for a, b in zip(plain.predict(X), pred))


@short_fit
@pytest.mark.parametrize("params, form", [
    (dict(objective="chainwise", forbidden_transitions="unseen"), "dicts"),
    (dict(objective="pseudolikelihood", min_instance_freq=0.2, unary_features="all",
          transition_features="supported"), "names"),
    (dict(objective="likelihood", inference="trp", random_state=3), "dicts"),
    (dict(min_instance_freq=3), "matrix"),
    (dict(), "one chain"),
])
def test_equals_local_fit(client, params, form):
    X, y = synthetic(n_seq=40, n_chains=2, seed=2)
    if form == "names":
        X = [[sorted(tok) for tok in seq] for seq in X]
    elif form == "matrix":
        rng = np.random.default_rng(0)
        X = [sp.csr_matrix(rng.integers(0, 2, size=(len(seq), 6)) * 1.0) for seq in X]
    elif form == "one chain":
        y = [[lab[0] for lab in seq] for seq in y]
    params = dict(params, max_iter=40, finetune_iter=20, tol=1e-8)
    local = FactorialCRF(**params).fit(X, y)
    model = DaskFactorialCRF(client=client, npartitions=4, **params).fit(X, y)
    assert_same_model(model, local)
    if params.get("inference") == "trp":
        assert model.inference_stats_["method"] == "trp"
        assert model.inference_stats_ == pytest.approx(local.inference_stats_)
    if form == "one chain":
        assert model.predict(X[:2])[0].ndim == 1


@short_fit
def test_weights_independent_of_worker_assignment(client):
    """The same partitions on one worker (a thread of this process) and on two worker
    processes: identical weights, bit for bit; other partitionings agree up to summation
    order."""
    X, y = synthetic(n_seq=40, n_chains=2, seed=5)
    params = dict(max_iter=12, finetune_iter=6, tol=1e-8, npartitions=5)
    two = DaskFactorialCRF(client=client, **params).fit(X, y)
    cluster, one_client = _cluster(1, processes=False)
    try:
        one = DaskFactorialCRF(client=one_client, **params).fit(X, y)
    finally:
        one_client.close()
        cluster.close()
    np.testing.assert_array_equal(one.coef_, two.coef_)
    assert one.loss_curve_ == two.loss_curve_
    # a bag of the same partitions (fit(bag) takes (x, y) pairs) gives the same weights too
    bag = db.from_sequence(list(zip(X, y)), npartitions=5)
    np.testing.assert_array_equal(DaskFactorialCRF(client=client, **params).fit(bag).coef_,
                                  two.coef_)
    other = DaskFactorialCRF(client=client, **dict(params, npartitions=2)).fit(X, y)
    np.testing.assert_allclose(other.coef_, two.coef_, rtol=0,
                               atol=TOL * np.abs(two.coef_).max())


@short_fit
def test_worker_killed_during_fit(client):
    """A worker process killed (SIGKILL) after iteration 3: its partitions are recomputed
    from the collection (its nanny restarts it) and the fit ends with the weights of an
    undisturbed fit."""
    X, y = synthetic(n_seq=40, n_chains=2, seed=7)
    params = dict(max_iter=12, finetune_iter=6, tol=1e-8, npartitions=4, random_state=0)
    undisturbed = DaskFactorialCRF(client=client, **params).fit(X, y)
    pids = client.run(os.getpid)
    killed = []

    def kill_after_third(iteration, loss, coef):
        if iteration == 3 and not killed:
            os.kill(pids[min(pids)], signal.SIGKILL)
            killed.append(iteration)

    model = DaskFactorialCRF(client=client, callback=kill_after_third, **params).fit(X, y)
    assert killed and pids[min(pids)] not in client.run(os.getpid).values()
    np.testing.assert_array_equal(model.coef_, undisturbed.coef_)
    assert model.n_iter_ == undisturbed.n_iter_


def test_grid_search_with_joblib_dask_backend(client):
    """GridSearchCV(n_jobs=-1) of the local FactorialCRF on the cluster, as documented."""
    X, y = synthetic(n_seq=30, n_chains=2, seed=1, noise=0.2)
    grid = {"sigma": [0.1, 10.0], "objective": ["chainwise", "independent"]}
    serial = GridSearchCV(FactorialCRF(max_iter=50), grid, cv=3).fit(X, y)
    with client.as_current(), joblib.parallel_backend("dask"):
        search = GridSearchCV(FactorialCRF(max_iter=50), grid, cv=3, n_jobs=-1).fit(X, y)
    assert search.best_params_ == serial.best_params_
    np.testing.assert_allclose(search.cv_results_["mean_test_score"],
                               serial.cv_results_["mean_test_score"])


def test_parameters_clone_pickle_and_default_client(client):
    local_params = FactorialCRF().get_params()
    model = DaskFactorialCRF(client=client, sigma=2.0)
    params = model.get_params()
    assert {k: v for k, v in params.items() if k not in ("client", "npartitions")} == \
        dict(local_params, sigma=2.0)
    copy = clone(model)
    assert copy.client is client and copy.sigma == 2.0
    X, y = synthetic(n_seq=12, n_chains=2, seed=3)
    with client.as_current():   # client=None: the default client
        fitted = DaskFactorialCRF(max_iter=30, npartitions=2).fit(X, y)
        bag_pred = fitted.predict(db.from_sequence(X, npartitions=3))
        assert isinstance(bag_pred, db.Bag)
        assert all(np.array_equal(a, b) for a, b in zip(bag_pred.compute(), fitted.predict(X)))
    restored = pickle.loads(pickle.dumps(DaskFactorialCRF(client=client).set_params(
        max_iter=3)))
    assert restored.client is None and restored.max_iter == 3


@short_fit
def test_auto_keeps_the_closed_world_on_a_cluster(client):
    """The back-off weights' deleted likelihood runs on one process's batch, so on a
    cluster ``forbidden_transitions="auto"`` is ``"unseen"`` where a local fit adds
    back-off weights for the unseen transitions after training: the model of a local
    ``"unseen"`` fit, whose trained weights and predictions the local ``"auto"`` fit
    has too."""
    from test_backoff import _sections

    X, y = _sections(6, strict_classes=True)
    params = dict(max_iter=5, finetune_iter=2, state_transition_iter=2, random_state=0)
    local = FactorialCRF(**params).fit(X, y)
    assert local.layout_.n_backoff > 0
    model = DaskFactorialCRF(client=client, npartitions=3, **params).fit(X, y)
    assert model.layout_.n_backoff == 0 and model.transitions_["world"] == "seen"
    assert_same_model(model, FactorialCRF(forbidden_transitions="unseen", **params).fit(X, y))
    for a, b in zip(model.predict(X), local.predict(X)):
        np.testing.assert_array_equal(a, b)


def test_errors(client):
    X, y = synthetic(n_seq=12, n_chains=2, seed=3)
    with pytest.raises(ValueError, match="does not support solver='olbfgs'"):
        DaskFactorialCRF(client=client, solver="olbfgs").fit(X, y)
    with pytest.raises(ValueError, match="does not support solver='perceptron'"):
        DaskFactorialCRF(client=client, solver="perceptron", objective="likelihood").fit(X, y)
    with pytest.raises(ValueError, match="does not support forbidden_transitions='backoff'"):
        DaskFactorialCRF(client=client, forbidden_transitions="backoff").fit(X, y)
    with pytest.raises(ValueError, match="y is required"):
        DaskFactorialCRF(client=client).fit(X)
    bad = list(y)
    bad[7] = bad[7][:-1]   # one label short: sequence 1 of partition 1 (partitions of 6)
    with pytest.raises(ValueError, match=r"partition 1 .*sequence 1: X has"):
        DaskFactorialCRF(client=client, npartitions=2).fit(X, bad)
    with pytest.raises(ValueError, match="needs a Dask client"):
        DaskFactorialCRF().fit(X, y)
    with pytest.raises(MemoryError, match="max_memory"):   # the local fit's guard
        DaskFactorialCRF(client=client, max_memory=1).fit(X, y)
