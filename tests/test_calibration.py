"""Calibrated token marginals: ``calibration="temperature"`` (issue 29, item 4)."""
import io
import warnings

import numpy as np
import pytest
from _model_files import archive, members, npy_bytes
from sklearn.exceptions import ConvergenceWarning

from skfcrf import FactorialCRF
from skfcrf.estimators._calibration import brier_score, fit_temperature, temper

from _helpers import synthetic


def _log_loss(marginals, gold):
    return float(-np.log(marginals[np.arange(len(gold)), gold]).mean())


def _overconfident(n, n_labels=4, sharpen=3.0, seed=0):
    """Calibrated probabilities, gold labels drawn from them, and the marginals of a
    model over-confident by ``sharpen`` (``p ** sharpen``, normalised)."""
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.full(n_labels, 0.7), size=n)
    gold = np.array([rng.choice(n_labels, p=row) for row in p])
    return p, gold, temper(p, 1.0 / sharpen)


def test_temper_keeps_order_zeros_and_sums():
    m = np.array([[0.7, 0.2, 0.1, 0.0], [0.0, 0.0, 1.0, 0.0], [0.25, 0.25, 0.25, 0.25]])
    for t in (0.3, 1.0, 2.5, 40.0):
        out = temper(m, t)
        np.testing.assert_allclose(out.sum(axis=1), 1.0)
        assert np.array_equal(out == 0, m == 0)            # forbidden labels stay impossible
        assert np.array_equal(np.argsort(out[0], kind="stable"), np.argsort(m[0], kind="stable"))
        np.testing.assert_array_equal(out[1], m[1])         # a sure (fixed) label stays sure
        np.testing.assert_allclose(out[2], m[2])
    np.testing.assert_array_equal(temper(m, 1.0), m)
    assert temper(m, 2.0)[0, 0] < 0.7 < temper(m, 0.5)[0, 0]
    np.testing.assert_allclose(temper(m, 2.0)[0, :3], np.sqrt(m[0, :3]) / np.sqrt(m[0, :3]).sum())


def test_fitted_temperature_undoes_overconfidence_and_lowers_held_out_loss():
    p, gold, q = _overconfident(4000, sharpen=3.0)
    t = fit_temperature(q[:2000], gold[:2000])
    assert 2.4 < t < 3.8                                   # the true temperature is 3
    calibrated = temper(q[2000:], t)
    assert _log_loss(calibrated, gold[2000:]) < _log_loss(q[2000:], gold[2000:]) - 0.05
    assert brier_score(calibrated, gold[2000:]) < brier_score(q[2000:], gold[2000:]) - 0.01


def test_fitted_temperature_sharpens_underconfident_and_keeps_calibrated():
    p, gold, _ = _overconfident(4000, seed=1)
    assert 0.85 < fit_temperature(p, gold) < 1.15
    assert fit_temperature(temper(p, 2.0), gold) < 0.65


def test_fit_temperature_degenerate_inputs():
    assert fit_temperature(np.zeros((0, 3)), np.zeros(0, int)) == 1.0
    one_hot = np.eye(3)[[0, 1, 2, 1]]
    assert fit_temperature(one_hot, np.array([0, 1, 0, 1])) == 1.0
    # a gold label the model does not know (-1) counts as a wrong token
    p, gold, q = _overconfident(2000, seed=2)
    unknown = gold.copy()
    unknown[::4] = -1
    assert fit_temperature(q, unknown) > fit_temperature(q, gold)
    # tokens without finite marginals (no allowed labelling) carry no evidence
    broken = q.copy()
    broken[:7] = np.nan
    assert fit_temperature(broken, gold) == pytest.approx(fit_temperature(q[7:], gold[7:]))
    # blocks with label sets of their own (folds) pool as one sample
    pooled = fit_temperature([q[:1000], q[1000:, :3] / q[1000:, :3].sum(1, keepdims=True)],
                             [gold[:1000], np.where(gold[1000:] < 3, gold[1000:], -1)])
    assert 1.5 < pooled < 5
    assert fit_temperature([q[:1000], q[1000:]], [gold[:1000], gold[1000:]]) == \
        pytest.approx(fit_temperature(q, gold), rel=1e-3)


def _noisy(n_seq, seed):
    """Chain 0 is the token's class, chain 1 its parity, each flipped with probability
    0.2, plus a random observation per token: with many rare tokens a weakly regularised
    model memorises the noise and is over-confident on new sequences."""
    rng = np.random.default_rng(seed)
    X, y = [], []
    for _ in range(n_seq):
        toks = rng.integers(0, 200, size=int(rng.integers(4, 10)))
        X.append([{f"w={t}": 1.0, f"r={rng.integers(50)}": 1.0} for t in toks])
        labels = []
        for t in toks:
            a = f"c{t % 3}" if rng.random() > 0.2 else f"c{rng.integers(3)}"
            b = ("odd" if t % 2 else "even") if rng.random() > 0.2 else \
                ("odd", "even")[rng.integers(2)]
            labels.append((a, b))
        y.append(labels)
    return X, y


def _fit(X, y, **params):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return FactorialCRF(sigma=100.0, max_iter=60, random_state=0, **params).fit(X, y)


@pytest.fixture(scope="module")
def noisy_models():
    X, y = _noisy(120, seed=0)
    return _fit(X, y), _fit(X, y, calibration="temperature")


def test_calibration_lowers_held_out_loss_of_an_overconfident_model(noisy_models):
    plain, calibrated = noisy_models
    np.testing.assert_array_equal(plain.marginal_temperatures_, [1.0, 1.0])
    assert np.all(calibrated.marginal_temperatures_ > 1.2)
    X, y = _noisy(150, seed=1)

    def held_out_log_loss(model, c):
        marg = model.predict_marginals(X)
        idx = [np.searchsorted(model.classes_[c], [t[c] for t in seq]) for seq in y]
        return -np.mean(np.concatenate([np.log(m[c][np.arange(len(i)), i])
                                        for m, i in zip(marg, idx)]))

    for c in range(2):
        assert held_out_log_loss(calibrated, c) < held_out_log_loss(plain, c) - 0.05


def test_calibration_changes_the_marginals_only(noisy_models):
    plain, calibrated = noisy_models
    X, y = _noisy(20, seed=2)
    np.testing.assert_array_equal(plain.coef_, calibrated.coef_)
    assert all(np.array_equal(a, b) for a, b in zip(plain.predict(X), calibrated.predict(X)))
    np.testing.assert_array_equal(plain.log_prob(X, y), calibrated.log_prob(X, y))
    for m0, m1 in zip(plain.predict_marginals(X), calibrated.predict_marginals(X)):
        for c, t in enumerate(calibrated.marginal_temperatures_):
            np.testing.assert_allclose(m1[c], temper(m0[c], t), atol=1e-12)
            np.testing.assert_array_equal(m1[c].argmax(axis=1), m0[c].argmax(axis=1))
    fixed = [[(y[0][0][0], None)] + [(None, None)] * (len(y[0]) - 1)]
    given = calibrated.predict_marginals(X[:1], fixed=fixed)[0][0]
    assert given[0, list(calibrated.classes_[0]).index(y[0][0][0])] == 1.0


def test_calibration_survives_save_and_load(noisy_models):
    plain, calibrated = noisy_models
    for model in (plain, calibrated):
        buffer = io.BytesIO()
        model.save(buffer)
        buffer.seek(0)
        again = FactorialCRF.load(buffer)
        np.testing.assert_array_equal(again.marginal_temperatures_, model.marginal_temperatures_)
    buffer = io.BytesIO()
    plain.save(buffer)
    assert b"marginal_temperatures" not in buffer.getvalue()   # default files as before
    buffer = io.BytesIO()
    calibrated.save(buffer)
    parts = members(buffer.getvalue())
    for bad in (np.array([1.0, -2.0]), np.array([1.0, np.inf]), np.array([1.0, 2.0, 3.0]),
                np.array([1, 2])):
        parts["marginal_temperatures"] = npy_bytes(bad)
        with pytest.raises(ValueError, match="marginal_temperatures"):
            FactorialCRF.load(io.BytesIO(archive(parts)))


def test_calibration_folds_are_checked_and_repeatable():
    X, y = synthetic(n_seq=3)
    with pytest.raises(ValueError, match="calibration_cv=4 folds need at least 4"):
        FactorialCRF(calibration="temperature").fit(X, y)
    X, y = _noisy(40, seed=3)
    a = _fit(X, y, calibration="temperature", calibration_cv=2)
    b = _fit(X, y, calibration="temperature", calibration_cv=2)
    np.testing.assert_array_equal(a.marginal_temperatures_, b.marginal_temperatures_)


def _by_hand(model, X, y):
    """Per chain the temperature ``fit_temperature`` gives the untempered marginals of
    ``X`` against ``y``, missing labels left out."""
    saved = model.marginal_temperatures_
    model.marginal_temperatures_ = np.ones(model.n_chains_)
    try:
        marg = model.predict_marginals(X)
    finally:
        model.marginal_temperatures_ = saved
    out = []
    for c, labels in enumerate(model.classes_):
        m, g = [], []
        for seq_m, seq in zip(marg, y):
            keep = [i for i, t in enumerate(seq) if t[c] is not None]
            m.append(seq_m[c][keep])
            g.append([list(labels).index(seq[i][c]) if seq[i][c] in labels else -1
                      for i in keep])
        out.append(fit_temperature(np.concatenate(m), np.concatenate(g).astype(np.int64)))
    return np.array(out)


def test_calibrate_fits_temperatures_on_held_out_sequences(noisy_models):
    """``calibrate(X_dev, y_dev)``: the temperatures of the dev set's untempered
    marginals, replacing any; the weights, predictions and log_prob untouched; the
    marginals of new sequences better calibrated."""
    import copy

    plain, calibrated = (copy.deepcopy(m) for m in noisy_models)
    X_dev, y_dev = _noisy(150, seed=1)
    X_new, y_new = _noisy(150, seed=4)
    before = plain.predict_marginals(X_new)
    coef = plain.coef_.copy()
    assert plain.calibrate(X_dev, y_dev) is plain
    np.testing.assert_allclose(plain.marginal_temperatures_, _by_hand(plain, X_dev, y_dev))
    assert np.all(plain.marginal_temperatures_ > 1.2)
    np.testing.assert_array_equal(plain.coef_, coef)
    assert all(np.array_equal(a, b) for a, b in
               zip(plain.predict(X_new), noisy_models[0].predict(X_new)))
    np.testing.assert_array_equal(plain.log_prob(X_new, y_new),
                                  noisy_models[0].log_prob(X_new, y_new))
    after = plain.predict_marginals(X_new)
    for c, t in enumerate(plain.marginal_temperatures_):
        gold = [np.searchsorted(plain.classes_[c], [tok[c] for tok in seq]) for seq in y_new]
        loss = [-np.mean(np.concatenate([np.log(m[c][np.arange(len(i)), i])
                                         for m, i in zip(marg, gold)])) for marg in (before, after)]
        assert loss[1] < loss[0] - 0.05
        np.testing.assert_allclose(after[0][c], temper(before[0][c], t), atol=1e-12)
    buffer = io.BytesIO()
    plain.save(buffer)
    buffer.seek(0)
    np.testing.assert_array_equal(FactorialCRF.load(buffer).marginal_temperatures_,
                                  plain.marginal_temperatures_)
    # the cross-fitted temperatures are replaced by the dev set's, computed from the
    # same weights' untempered marginals
    calibrated.calibrate(X_dev, y_dev)
    np.testing.assert_allclose(calibrated.marginal_temperatures_, plain.marginal_temperatures_)
    # on its own training sequences the model looks sure and right: no flattening
    X_train, y_train = _noisy(120, seed=0)
    assert np.all(plain.calibrate(X_train, y_train).marginal_temperatures_ < 1.0)


def test_calibrate_leaves_missing_labels_out_and_counts_unknown_ones_wrong(noisy_models):
    import copy

    model = copy.deepcopy(noisy_models[0])
    X, y = _noisy(60, seed=5)
    partial = [[(a if i % 3 else None, b) for i, (a, b) in enumerate(seq)] for seq in y]
    model.calibrate(X, partial)
    np.testing.assert_allclose(model.marginal_temperatures_, _by_hand(model, X, partial))
    assert model.marginal_temperatures_[0] != _by_hand(model, X, y)[0]
    unknown = [[("new" if i == 0 else a, b) for i, (a, b) in enumerate(seq)] for seq in y]
    model.calibrate(X, unknown)
    np.testing.assert_allclose(model.marginal_temperatures_, _by_hand(model, X, unknown))
    assert model.marginal_temperatures_[0] > _by_hand(model, X, y)[0]


def test_calibrate_refuses_bad_input(noisy_models):
    import copy

    from sklearn.exceptions import NotFittedError

    model = copy.deepcopy(noisy_models[0])
    X, y = _noisy(5, seed=6)
    with pytest.raises(NotFittedError):
        FactorialCRF().calibrate(X, y)
    with pytest.raises(ValueError, match="different numbers of sequences: 5 != 4"):
        model.calibrate(X, y[:4])
    with pytest.raises(ValueError, match="sequence 2: X has"):
        model.calibrate(X, y[:2] + [y[2][:-1]] + y[3:])
    with pytest.raises(ValueError, match="chains"):
        model.calibrate(X, [[(a,) for a, _ in seq] for seq in y])
    np.testing.assert_array_equal(model.marginal_temperatures_, [1.0, 1.0])
    X, y = [[{"w": 1}] * 3, [{"v": 1}] * 2], [[("B-NP",), ("I-NP",), ("O",)],
                                              [("B-VP",), ("I-VP",)]]
    bme = FactorialCRF(max_iter=20, segment_encoding="bme").fit(X, y)
    with pytest.raises(ValueError, match="segment_encoding='bme' needs every label"):
        bme.calibrate(X, [[("B-NP",), (None,), ("O",)], y[1]])
    assert bme.calibrate(X, y).marginal_temperatures_.shape == (1,)
