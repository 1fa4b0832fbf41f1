"""scikit-learn conventions: the generic estimator checks that apply to sequence input.

scikit-learn's ``check_estimator`` feeds 2-D numeric arrays; ``FactorialCRF``
takes lists of token sequences (its tags say ``two_d_array=False``), so
``parametrize_with_checks`` skips it whole.  We run the data-free API checks
directly (:data:`API_CHECKS`) and sequence-input versions of the data-dependent
ones below.  Checks not run, and why:

* every check that fits on ``X`` of shape ``(n_samples, n_features)`` with
  class or regression targets (``check_fit2d_*``, ``check_classifiers_*``,
  ``check_estimators_dtypes``, ``check_n_features_in``, ``check_sample_weight*``,
  ``check_positive_only_tag_during_fit``, ``check_estimator_sparse_tag``,
  ``check_requires_y_none`` ...): a 2-D numeric array is not a valid ``X``
  here (each row would be one "sequence" of bare numbers) and ``y`` is a list
  of label sequences, not one label per sample;
* ``check_dict_unchanged``, ``check_dont_overwrite_parameters``,
  ``check_fit_idempotent``, ``check_estimators_unfitted``,
  ``check_fit_check_is_fitted``, ``check_estimators_pickle``: re-done below
  on sequence data.
"""
import copy
import pickle

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.utils import estimator_checks
from sklearn.utils.validation import check_is_fitted

from skfcrf import FactorialCRF

from _helpers import sequences, short_fit

API_CHECKS = [
    "check_parameters_default_constructible",
    "check_no_attributes_set_in_init",
    "check_get_params_invariance",
    "check_set_params",
    "check_estimator_cloneable",
    "check_estimator_repr",
    "check_estimator_tags_renamed",
    "check_valid_tag_types",
    "check_do_not_raise_errors_in_init_or_set_params",
    "check_mixin_order",
]


def state_snapshot(est):
    return {k: copy.deepcopy(v) for k, v in est.__dict__.items()}


def assert_same_state(before, after):
    assert before.keys() == after.keys()
    for k in before:
        a, b = before[k], after[k]
        if isinstance(a, np.ndarray):
            assert np.array_equal(a, b), k
        elif k in ("layout_", "graph_", "encoder_"):
            continue   # structure objects: compared through their pickles below
        else:
            assert repr(a) == repr(b), k


@pytest.mark.parametrize("check", API_CHECKS)
def test_sklearn_api_check(check):
    getattr(estimator_checks, check)("FactorialCRF", FactorialCRF(max_iter=5))


@pytest.mark.parametrize("params", [
    {}, {"objective": "likelihood", "inference": "trp", "bp_max_iter": 20},
    {"objective": "likelihood", "inference": "exact"},
])
def test_prediction_leaves_estimator_unchanged(params):
    """predict, predict_marginals, decode and score change nothing (check_dict_unchanged)."""
    X, y = sequences()
    est = FactorialCRF(max_iter=30, random_state=0, tol=1e-3, **params).fit(X, y)
    before = state_snapshot(est)
    pickled = pickle.dumps(est)
    est.predict(X)
    est.predict_marginals(X)
    est.decode(X)
    est.score(X, y)
    assert_same_state(before, state_snapshot(est))
    assert pickle.dumps(est) == pickled


@short_fit
def test_fit_does_not_change_parameters():
    """check_dont_overwrite_parameters on sequences: fit sets only trailing-underscore
    attributes (and private ones) and leaves the constructor's parameters alone."""
    X, y = sequences()
    est = FactorialCRF(max_iter=10, tol=1e-3, coupling=[(0, 1)])
    params = copy.deepcopy(est.get_params())
    est.fit(X, y)
    assert repr(est.get_params()) == repr(params)
    public_new = {k for k in est.__dict__ if not k.endswith("_") and not k.startswith("_")}
    assert public_new == set(params)


def test_fit_is_idempotent():
    X, y = sequences()
    est = FactorialCRF(max_iter=20, random_state=0, tol=1e-3)
    first = est.fit(X, y).coef_.copy()
    assert np.array_equal(first, est.fit(X, y).coef_)
    assert np.array_equal(first, clone(est).fit(X, y).coef_)


@short_fit
def test_unfitted_estimator_raises_not_fitted():
    X, _ = sequences()
    est = FactorialCRF()
    with pytest.raises(NotFittedError):
        check_is_fitted(est)
    for method in (est.predict, est.predict_marginals, est.decode):
        with pytest.raises(NotFittedError):
            method(X)
    X2, y2 = sequences()
    check_is_fitted(est.set_params(max_iter=5, tol=1e-2).fit(X2, y2))


def test_pickle_keeps_predictions():
    X, y = sequences()
    est = FactorialCRF(max_iter=20, random_state=0, tol=1e-3).fit(X, y)
    again = pickle.loads(pickle.dumps(est))
    assert all(np.array_equal(a, b) for a, b in zip(est.predict(X), again.predict(X)))
