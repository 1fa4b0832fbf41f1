"""TwoStage: cross-fitting on held-out first-stage outputs, the observations the second
stage gets, parameters and cloning, bad input, pickling, pipelines and an end-to-end fit."""
import itertools
import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import KFold, ShuffleSplit
from sklearn.pipeline import Pipeline
from sklearn.utils import estimator_checks

from skfcrf import FactorialCRF
from skfcrf.ensemble import MarginalAveraging, TwoStage
from skfcrf.transformers import NGramWindow, WordShape

from _helpers import raw_tokens, sequences, short_fit
from test_sklearn_compat import API_CHECKS

pytestmark = short_fit

LOG = []
_SPIES = itertools.count()


def ids(X):
    """The sequence ids the test data carries in its first token (``seq=<i>``)."""
    return [next(int(k[4:]) for k in x[0] if k.startswith("seq=")) for x in X]


class SpyCRF(FactorialCRF):
    """A FactorialCRF that logs which sequences it was fitted on, predicted and saw."""

    def fit(self, X, y):
        X = list(X)
        self.spy_id_ = next(_SPIES)       # not id(self): freed fold models' ids are reused
        LOG.append(("fit", self.spy_id_, ids(X), X))
        return super().fit(X, y)

    def predict(self, X):
        X = list(X)
        pred = super().predict(X)
        LOG.append(("predict", self.spy_id_, ids(X), pred))
        return pred

    def predict_marginals(self, X, **kwargs):
        X = list(X)
        marg = super().predict_marginals(X, **kwargs)
        LOG.append(("marginals", self.spy_id_, ids(X), marg))
        return marg


def data(n_seq=15):
    X, y = sequences(n_seq=n_seq)
    for i, x in enumerate(X):
        x[0] = {**x[0], f"seq={i}": 1.0}
    return X, y


def crf(cls=FactorialCRF, max_iter=15, **params):
    return cls(max_iter=max_iter, tol=1e-3, finetune_iter=3, **params)


@pytest.fixture(autouse=True)
def clear_log():
    LOG.clear()
    yield
    LOG.clear()


def stage1_observations(X_seen):
    """Per sequence, per token the ``stage1[...]`` observations the second stage saw."""
    return [[{k: v for k, v in tok.items() if k.startswith("stage1[")} for tok in x]
            for x in X_seen]


@pytest.mark.parametrize("first_output", ["labels", "marginals"])
def test_cross_fitting_uses_held_out_outputs(first_output):
    X, y = data()
    # (anchors=None: "auto" would fit a held-out copy of the second stage too)
    model = TwoStage(crf(SpyCRF), crf(SpyCRF, anchors=None), first_chains=[0], cv=3,
                     first_output=first_output).fit(X, y)
    fits = [e for e in LOG if e[0] == "fit"]
    outputs = [e for e in LOG if e[0] == ("predict" if first_output == "labels" else "marginals")]
    # the refit on everything, 3 fold models, then the second stage
    assert sorted(fits[0][2]) == list(range(15))
    fold_fits, second_fit = fits[1:4], fits[4]
    assert len(fits) == 5
    seen = {}
    for _, est, trained, _ in fold_fits:
        out = [e for e in outputs if e[1] == est]
        assert len(out) == 1
        held = out[0][2]
        assert not set(held) & set(trained)                     # never its own training data
        assert sorted(held + trained) == list(range(15))
        for i, o in zip(held, out[0][3]):
            seen[i] = o
    assert sorted(seen) == list(range(15))                      # every sequence held out once
    # the second stage was trained on exactly those held-out outputs
    classes = model.first_.classes_[0]
    for i, obs in zip(second_fit[2], stage1_observations(second_fit[3])):
        for t, tok in enumerate(obs):
            if first_output == "labels":
                assert tok == {f"stage1[chain0]={seen[i][t, 0]}": 1.0}
            else:
                want = {f"stage1[chain0]={lab}": p
                        for lab, p in zip(classes, seen[i][0][t]) if p >= 0.01}
                assert tok.keys() == want.keys()
                np.testing.assert_allclose([tok[k] for k in want], list(want.values()))
    # prediction asks the model refitted on all the data
    LOG.clear()
    model.predict(X[:2])
    assert LOG[0][1] == model.first_.spy_id_


def test_second_stage_predicts_all_chains_and_marginals():
    X, y = data()
    model = TwoStage(crf(), crf(), first_chains=1, cv=3).fit(X, y)
    assert model.first_chains_ == [1]
    assert len(model.first_.classes_) == 1 and list(model.first_.classes_[0]) == ["hi", "lo"]
    assert model.n_chains_ == 2 and list(model.classes_[0]) == ["c0", "c1", "c2"]
    pred = model.predict(X)
    assert all(p.shape == (len(x), 2) for p, x in zip(pred, X))
    marg = model.predict_marginals(X)
    for m in marg:
        for c in range(2):
            np.testing.assert_allclose(m[c].sum(axis=1), 1.0)
    assert model.score(X, y) > 0.8
    # default: the first stage predicts every chain
    assert TwoStage(crf(), crf(), cv=3).fit(X, y).first_chains_ == [0, 1]


def test_offsets_observe_the_neighbours_outputs():
    X, y = data()
    model = TwoStage(crf(), crf(), first_chains=0, cv=3, offsets=(-1, 0, 2)).fit(X, y)
    x = max(X, key=len)
    pred = model.first_.predict([x])[0][:, 0]
    seen = stage1_observations(model._second_input([x]))[0]
    n = len(x)
    for t, tok in enumerate(seen):
        want = {f"stage1[chain0]={pred[t]}": 1.0}
        if t >= 1:
            want[f"stage1[chain0]@-1={pred[t - 1]}"] = 1.0
        if t + 2 < n:
            want[f"stage1[chain0]@2={pred[t + 2]}"] = 1.0
        assert tok == want


def test_ngram_range_observes_label_ngrams_of_the_window():
    X, y = data()
    model = TwoStage(crf(), crf(), first_chains=0, cv=3, offsets=(-1, 0, 1),
                     ngram_range=(1, 3)).fit(X, y)
    x = max(X, key=len)
    pred = ["__BOS__"] + list(model.first_.predict([x])[0][:, 0]) + ["__EOS__"]
    seen = stage1_observations(model._second_input([x]))[0]
    n = len(x)
    for t, tok in enumerate(seen):
        p = pred[t:t + 3]                       # labels at t-1, t, t+1, padded
        want = {f"stage1[chain0]={p[1]}": 1.0,
                f"stage1[chain0]@-1..0={p[0]}|{p[1]}": 1.0,
                f"stage1[chain0]@0..1={p[1]}|{p[2]}": 1.0,
                f"stage1[chain0]@-1..1={p[0]}|{p[1]}|{p[2]}": 1.0}
        if t >= 1:                              # unigrams past the ends are left out
            want[f"stage1[chain0]@-1={p[0]}"] = 1.0
        if t + 1 < n:
            want[f"stage1[chain0]@1={p[2]}"] = 1.0
        assert tok == want
    # min_n = 2: the n-grams alone
    model.set_params(ngram_range=(2, 2)).fit(X, y)
    pred = ["__BOS__"] + list(model.first_.predict([x])[0][:, 0]) + ["__EOS__"]
    for t, tok in enumerate(stage1_observations(model._second_input([x]))[0]):
        assert tok == {f"stage1[chain0]@-1..0={pred[t]}|{pred[t + 1]}": 1.0,
                       f"stage1[chain0]@0..1={pred[t + 1]}|{pred[t + 2]}": 1.0}


def test_ngram_range_trains_on_held_out_label_ngrams():
    X, y = data()
    TwoStage(crf(SpyCRF), crf(SpyCRF), first_chains=0, cv=3, offsets=(0, 1),
             ngram_range=(2, 2)).fit(X, y)
    fits = [e for e in LOG if e[0] == "fit"]
    held = {}
    for _, est, _, _ in fits[1:4]:
        out = next(e for e in LOG if e[0] == "predict" and e[1] == est)
        held.update(zip(out[2], out[3]))
    for i, obs in zip(fits[4][2], stage1_observations(fits[4][3])):
        labels = list(held[i][:, 0]) + ["__EOS__"]
        assert obs == [{f"stage1[chain0]@0..1={labels[t]}|{labels[t + 1]}": 1.0}
                       for t in range(len(obs))]


def test_cv_splitters_and_random_state():
    X, y = data()
    TwoStage(crf(SpyCRF, 3), crf(max_iter=3), first_chains=0, cv=KFold(4)).fit(X, y)
    assert len([e for e in LOG if e[0] == "fit"]) == 5
    with pytest.raises(ValueError, match="exactly once"):
        TwoStage(crf(max_iter=3), crf(max_iter=3), cv=ShuffleSplit(3, random_state=0)).fit(X, y)
    # an int cv: folds in order without random_state, shuffled (repeatably) with it
    LOG.clear()
    TwoStage(crf(SpyCRF, 3), crf(max_iter=3), first_chains=0, cv=3).fit(X, y)
    assert [e[2] for e in LOG if e[0] == "predict"][:3] == [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9],
                                                           [10, 11, 12, 13, 14]]
    held = []
    for _ in range(2):
        LOG.clear()
        TwoStage(crf(SpyCRF, 3), crf(max_iter=3), first_chains=0, cv=3, random_state=1).fit(X, y)
        held.append([e[2] for e in LOG if e[0] == "predict"][:3])
    assert held[0] == held[1] and held[0][0] != [0, 1, 2, 3, 4]


def test_params_clone_and_nested_params():
    model = TwoStage(crf(), crf(), first_chains=[0], cv=4, first_output="marginals",
                     random_state=3)
    params = model.get_params()
    assert params["first__max_iter"] == 15 and params["cv"] == 4
    assert params["first_chains"] == [0] and params["first_output"] == "marginals"
    copy = clone(model)
    assert copy.get_params(deep=False).keys() == model.get_params(deep=False).keys()
    assert copy.first is not model.first and copy.random_state == 3
    copy.set_params(second__sigma=2.0, first_chains=1)
    assert copy.second.sigma == 2.0 and model.second.sigma == 10.0
    X, y = data()
    before = repr(model.get_params())
    model.fit(X, y)
    assert repr(model.get_params()) == before                # fit leaves the parameters


@pytest.mark.parametrize("check", API_CHECKS)
@pytest.mark.parametrize("make", [lambda: TwoStage(crf(), crf()),
                                  lambda: MarginalAveraging([crf(), crf()])],
                         ids=["TwoStage", "MarginalAveraging"])
def test_sklearn_api_checks(check, make):
    est = make()
    getattr(estimator_checks, check)(type(est).__name__, est)


@pytest.mark.parametrize("params, match", [
    (dict(first_chains=[2]), "first_chains"),
    (dict(first_chains=[]), "first_chains"),
    (dict(first_chains=[0, 0]), "first_chains"),
    (dict(first_output="probabilities"), "first_output"),
    (dict(cv=1), "n_splits"),
    (dict(cv=20), "n_splits"),
    (dict(first="crf"), "first"),
    (dict(offsets=()), "offsets"),
    (dict(offsets=(0, 0)), "offsets"),
    (dict(offsets=(0.5,)), "offsets"),
    (dict(ngram_range=(0, 1)), "ngram_range"),
    (dict(ngram_range=(2, 1)), "ngram_range"),
    (dict(ngram_range=(1, 2, 3)), "ngram_range"),
    (dict(ngram_range=(1.0, 2)), "ngram_range"),
    (dict(ngram_range=[1, 2]), "ngram_range"),
    (dict(ngram_range=(1, 2), first_output="marginals"), "first_output='labels'"),
])
def test_bad_parameters_raise_value_error(params, match):
    X, y = data()
    kwargs = {"first": crf(), "second": crf(), **params}
    with pytest.raises(ValueError, match=match):
        TwoStage(**kwargs).fit(X, y)


def test_bad_input_raises_value_error():
    X, y = data()
    model = TwoStage(crf(), crf(), cv=3)
    with pytest.raises(ValueError, match="different numbers of sequences"):
        model.fit(X[:-1], y)
    with pytest.raises(ValueError, match="y is required"):
        model.fit(X, None)
    with pytest.raises(ValueError, match="list of sequences"):
        model.fit(5, y)
    no_marginals = Pipeline([("words", NGramWindow()), ("last", KFold())])
    with pytest.raises(ValueError):
        TwoStage(no_marginals, crf(), first_output="marginals").fit(X, y)
    with pytest.raises(NotFittedError):
        model.predict(X)


def test_pickle_keeps_predictions():
    X, y = data()
    model = TwoStage(crf(), crf(), first_chains=0, cv=3, first_output="marginals").fit(X, y)
    again = pickle.loads(pickle.dumps(model))
    for a, b in zip(model.predict(X), again.predict(X)):
        assert a.tolist() == b.tolist()
    np.testing.assert_allclose(model.predict_marginals(X)[3][1], again.predict_marginals(X)[3][1])


def test_matrix_observations_get_columns():
    X, y = sequences(n_seq=12)
    names = sorted({k for x in X for tok in x for k in tok})
    M = [sp.csr_matrix([[tok.get(n, 0.0) for n in names] for tok in x]) for x in X]
    model = TwoStage(crf(), crf(), first_chains=0, cv=3).fit(M, y)
    assert model.second_.n_features_in_ == len(names) + 3        # one column per label
    one_hot = model._second_input(M[:1])[0][:, len(names):].toarray()
    first = model.first_.predict(M[:1])[0][:, 0]
    assert list(model.first_.classes_[0][one_hot.argmax(axis=1)]) == list(first)
    np.testing.assert_allclose(one_hot.sum(axis=1), 1.0)
    with pytest.raises(ValueError, match="matrices"):
        TwoStage(crf(), crf(), first_chains=0, cv=3, ngram_range=(1, 2)).fit(M, y)


def test_stages_as_pipelines_over_raw_tokens():
    X, y = raw_tokens(15, seed=1)
    first = Pipeline([("shape", WordShape()), ("crf", crf())])
    second = Pipeline([("words", NGramWindow(offsets=(0,))), ("crf", crf())])
    model = TwoStage(first, second, first_chains=1, cv=3).fit(X, y)
    seen = model._second_input(X[:1])[0]
    assert any(k.startswith("word@0=") for k in seen[0])
    assert sum(k.startswith("stage1[chain1]=") for k in seen[0]) == 1
    assert model.score(X, y) > 0.8
    # the thesis's ensemble: a single-stage model and the two-stage one
    ens = MarginalAveraging([second, model], weighting="confidence").fit(X, y)
    assert ens.score(X, y) > 0.8


def test_end_to_end_on_dictations():
    from skfcrf.datasets import make_dictations
    from skfcrf.transformers import make_dictation_features

    X, y = make_dictations(8, style="rcg", random_state=0)

    def pipe():
        return Pipeline([("feat", make_dictation_features()),
                         ("crf", FactorialCRF(sigma=31.6, max_iter=10, finetune_iter=2))])

    model = TwoStage(pipe(), pipe(), first_chains=0, cv=2, random_state=0).fit(X[:6], y[:6])
    pred = model.predict(X[6:])
    assert [p.shape for p in pred] == [yt.shape for yt in y[6:]]
    assert 0.2 < model.score(X[6:], y[6:]) <= 1.0
    assert len(model.first_.steps[-1][1].classes_) == 1


def test_one_chain_and_partial_labels():
    X, y = data(12)
    y1 = [[t[0] for t in seq] for seq in y]
    model = TwoStage(crf(), crf(), cv=3).fit(X, y1)
    assert model.predict(X)[0].ndim == 1 and model.first_chains_ == [0]
    y1[0][0] = None
    with pytest.raises(ValueError, match="missing label"):
        model.fit(X, y1)
