"""SegmentEncoded: training on BME / BIOES segment chains, answers in the user's labels."""
import functools

import numpy as np
import pytest
from sklearn.base import clone

from skfcrf import FactorialCRF
from skfcrf.datasets import make_dictations
from skfcrf.structure import SegmentEncoded, to_bme


def _chunks():
    X = [[{"w=the": 1}, {"w=big": 1}, {"w=cat": 1}, {"w=sat": 1}],
         [{"w=a": 1}, {"w=dog": 1}, {"w=ran": 1}]]
    y = [[("DT", "B-NP"), ("JJ", "I-NP"), ("NN", "I-NP"), ("VB", "O")],
         [("DT", "B-NP"), ("NN", "I-NP"), ("VB", "B-VP")]]
    return X, y


def test_segment_chains_are_encoded_and_decoded_back():
    X, y = _chunks()
    model = SegmentEncoded(FactorialCRF(max_iter=60)).fit(X, y)
    assert model.notations_ == [None, ("B-", "I-")]
    inner = model.estimator_
    assert sorted(inner.classes_[0].tolist()) == ["DT", "JJ", "NN", "VB"]   # left alone
    assert sorted(inner.classes_[1].tolist()) == ["B-NP", "B-VP", "E-NP", "M-NP", "O"]
    assert [c.tolist() for c in model.classes_] == [["DT", "JJ", "NN", "VB"],
                                                     ["B-NP", "B-VP", "I-NP", "O"]]
    pred = model.predict(X)
    for p, t in zip(pred, y):                     # training data learnt exactly
        assert p.tolist() == [list(r) for r in t]
    assert model.score(X, y) == 1.0
    # the inner model's own output is the encoded one
    assert inner.predict(X)[0][:, 1].tolist() == to_bme(["B-NP", "I-NP", "I-NP", "O"])


def test_decode_and_marginals_in_the_users_labels():
    X, y = _chunks()
    model = SegmentEncoded(FactorialCRF(max_iter=60)).fit(X, y)
    d = model.decode(X, n_best=2)
    assert d[0].labels.tolist() == model.predict(X)[0].tolist()
    assert all(set(a.labels[:, 1]) <= set(model.classes_[1]) for a in d[0].alternatives)
    marg = model.predict_marginals(X)
    inner = model.estimator_.predict_marginals(X)
    for m, mi in zip(marg, inner):
        assert m[1].shape == (len(mi[1]), len(model.classes_[1]))
        np.testing.assert_allclose(m[1].sum(axis=1), 1.0)
        cls = model.classes_[1].tolist()
        enc = model.estimator_.classes_[1].tolist()
        # I-NP is M-NP plus E-NP; B-NP is B-NP
        np.testing.assert_allclose(m[1][:, cls.index("I-NP")],
                                   mi[1][:, enc.index("M-NP")] + mi[1][:, enc.index("E-NP")])
        np.testing.assert_allclose(m[1][:, cls.index("B-NP")], mi[1][:, enc.index("B-NP")])
        np.testing.assert_allclose(m[0], mi[0])          # the POS chain is unchanged


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_thesis_notation_round_trips_and_bioes():
    X, y = make_dictations(6, "rcg", random_state=2)
    X = [[{f"w={tok}": 1} for tok in seq] for seq in X]
    for scheme in ("bme", "bioes"):
        model = SegmentEncoded(FactorialCRF(max_iter=5), scheme=scheme).fit(X, y)
        assert model.notations_ == [("Begin", "")] * 3
        pred = model.predict(X)
        labels = {lab for seq in y for lab in np.asarray(seq, dtype=object).ravel()}
        assert {lab for p in pred for lab in p.ravel()} <= labels
    one = SegmentEncoded(FactorialCRF(max_iter=20)).fit(X[:2], [np.asarray(s, dtype=object)[:, 2]
                                                                for s in y[:2]])
    out = one.predict(X[:2])
    assert out[0].ndim == 1
    marg = one.predict_marginals(X[:1])
    assert len(marg[0]) == 1 and marg[0][0].shape[1] == len(one.classes_[0])


def test_bad_inputs_raise():
    X, y = _chunks()
    with pytest.raises(ValueError, match="scheme"):
        SegmentEncoded(FactorialCRF(), scheme="bilou").fit(X, y)
    partial = [np.array(s, dtype=object) for s in y]
    partial[0][1, 1] = None
    with pytest.raises(ValueError, match="every label"):
        SegmentEncoded(FactorialCRF()).fit(X, partial)
    with pytest.raises(ValueError, match="no sequence"):
        SegmentEncoded(FactorialCRF()).fit([], [])
    model = SegmentEncoded(FactorialCRF())
    assert clone(model).get_params()["scheme"] == "bme"
    from sklearn.exceptions import NotFittedError
    with pytest.raises(NotFittedError):
        model.predict(X)


@pytest.mark.parametrize("scheme", ["bme", "bioes"])
def test_encoding_round_trips_on_the_dictations(scheme):
    """Every chain of the generator's gold labels (thesis notation, one-token labels
    included) comes back unchanged from its encoding."""
    from skfcrf.structure._encoded import _SCHEMES, _atomic, _notation, _retagged, to_bio

    _, y = make_dictations(40, "rcg", random_state=4)
    seqs = [np.asarray(s, dtype=object) for s in y]
    for c in range(3):
        labels = {lab for s in seqs for lab in s[:, c]}
        notation = _notation(labels)
        atomic = _atomic(labels, notation)
        begin, inside = notation
        for s in seqs:
            enc = _retagged(s[:, c], atomic, _SCHEMES[scheme])
            back = _retagged(enc, atomic, functools.partial(to_bio, scheme=scheme,
                                                            begin=begin, inside=inside))
            assert back == list(s[:, c])


def test_factorial_crf_segment_encoding_parameter(tmp_path):
    """FactorialCRF(segment_encoding="bme"): trains on the encoded labels, answers in
    the user's, takes them in log_prob, keeps its codec in model files."""
    X, y = _chunks()
    crf = FactorialCRF(max_iter=60, segment_encoding="bme").fit(X, y)
    assert sorted(crf.classes_[1].tolist()) == ["B-NP", "B-VP", "E-NP", "M-NP", "O"]
    pred = crf.predict(X)
    assert [p.tolist() for p in pred] == [[list(r) for r in t] for t in y]
    assert crf.score(X, y) == 1.0
    d = crf.decode(X, n_best=2)[0]
    assert d.labels.tolist() == pred[0].tolist()
    assert all(set(a.labels[:, 1]) <= {"B-NP", "I-NP", "B-VP", "O"} for a in d.alternatives)
    lp = crf.log_prob(X, y)
    assert np.all(np.isfinite(lp)) and np.all(lp <= 0)
    np.testing.assert_allclose(lp, [d.log_prob, crf.decode(X)[1].log_prob], rtol=1e-9)
    with pytest.raises(ValueError, match="fixed"):
        crf.decode(X, fixed=[[(None, "B-NP")] + [(None, None)] * 3, None])
    path = tmp_path / "m.npz"
    crf.save(path)
    loaded = FactorialCRF.load(path)
    assert [p.tolist() for p in loaded.predict(X)] == [p.tolist() for p in pred]
    assert loaded.segment_codec_.to_dict() == crf.segment_codec_.to_dict()
    # the default keeps the labels as they are
    plain = FactorialCRF(max_iter=60).fit(X, y)
    assert plain.segment_codec_ is None
    assert sorted(plain.classes_[1].tolist()) == ["B-NP", "B-VP", "I-NP", "O"]
    with pytest.raises(ValueError, match="segment_encoding"):
        FactorialCRF(segment_encoding="bilou").fit(X, y)
