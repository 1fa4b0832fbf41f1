"""skfcrf.crfsuite: CRFsuite model files (read and write), tagger_, fitted attributes."""
import itertools
import math
import os
import pickle
import struct

import numpy as np
import pytest

from skfcrf.crfsuite import CRF, Tagger, UnknownLabelError
from skfcrf.crfsuite import _model_file as mf

X = [
    [{"word": "the", "bias": 1.0, "title": False}, {"word": "cat", "len": 0.3, "title": True},
     {"word": "sleeps", "prev": ["cat", "the"]}],
    [{"word": "a", "bias": 1.0}, {"word": "dog", "len": 0.3}, {}, {"word": "runs"}],
    [{"word": "dog", "bias": 1.0, "sub": {"x": 2.0, "y": "z"}}, {"word": "sleeps", "len": 0.6}],
    [{"word": "солнце", "bias": 1.0, "mood": "не светит".encode()}, {"word": "runs"}],
]
Y = [["DT", "NN", "VB"], ["DT", "NN", "NN", "VB"], ["NN", "VB"], ["NN", "VB"]]
PARAMS = dict(c2=0.1, max_iterations=30)


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("model") / "skfcrf.crfsuite")
    return CRF(**PARAMS, model_filename=path).fit(X, Y), path


def _pycrfsuite_model(tmp_path):
    pycrfsuite = pytest.importorskip("pycrfsuite")
    trainer = pycrfsuite.Trainer(verbose=False)
    for xseq, yseq in zip(X, Y):
        trainer.append(xseq, yseq)
    trainer.set_params({"c1": 0.05, "c2": 0.1, "max_iterations": 30})
    path = str(tmp_path / "crfsuite.crfsuite")
    trainer.train(path)
    tagger = pycrfsuite.Tagger()
    tagger.open(path)
    return path, tagger


# ---------------------------------------------------------------------- with pycrfsuite
def test_crfsuite_model_loads_and_predicts_as_pycrfsuite(tmp_path):
    path, tagger = _pycrfsuite_model(tmp_path)
    crf = CRF(model_filename=path)
    assert [list(p) for p in crf.predict(X)] == [tagger.tag(x) for x in X]
    assert crf.classes_ == tagger.labels()
    assert crf.training_log_ is None       # loaded, not trained
    for xseq, marginals in zip(X, crf.predict_marginals(X)):
        tagger.set(xseq)
        for t, token in enumerate(marginals):
            assert list(token) == tagger.labels()
            for label, p in token.items():
                assert p == pytest.approx(tagger.marginal(label, t), abs=1e-12)
        for yseq in itertools.product(tagger.labels(), repeat=len(xseq)):
            crf.tagger_.set(xseq)
            assert crf.tagger_.probability(yseq) == pytest.approx(tagger.probability(yseq),
                                                                  rel=1e-9, abs=1e-15)
    info, theirs = crf.tagger_.info(), tagger.info()
    for key in ("header", "labels", "attributes", "transitions", "state_features"):
        assert getattr(info, key) == getattr(theirs, key), key
    assert crf.size_ == os.path.getsize(path) == int(theirs.header["size"])
    assert crf.num_attributes_ == int(theirs.header["num_attrs"])
    assert crf.attributes_ == sorted(theirs.attributes, key=lambda a: int(theirs.attributes[a]))
    assert {k: round(w, 6) for k, w in crf.state_features_.items()} == theirs.state_features


def test_crfsuite_file_written_back_byte_for_byte(tmp_path):
    path, _ = _pycrfsuite_model(tmp_path)
    with open(path, "rb") as fh:
        data = fh.read()
    model = mf.read(data)
    assert model.header["size"] == len(data) and model.header["num_features"] == 0
    assert mf.to_bytes(model) == data
    mf.write(model, tmp_path / "copy.crfsuite")
    assert (tmp_path / "copy.crfsuite").read_bytes() == data


def test_skfcrf_model_loads_in_pycrfsuite(fitted):
    pycrfsuite = pytest.importorskip("pycrfsuite")
    crf, path = fitted
    tagger = pycrfsuite.Tagger()
    tagger.open(path)
    assert tagger.labels() == crf.classes_
    unseen = [{"word": "cat", "new": 1.0}, {"word": "unknown"}, {"len": 2.5}]
    for xseq in X + [unseen]:
        assert tagger.tag(xseq) == crf.predict_single(xseq) == crf.tagger_.tag(xseq)
        yseq = crf.predict_single(xseq)
        crf.tagger_.set(xseq)
        assert crf.tagger_.probability(yseq) == pytest.approx(tagger.probability(yseq), rel=1e-9)
        for t in range(len(xseq)):
            for label in crf.classes_:
                assert crf.tagger_.marginal(label, t) == pytest.approx(
                    tagger.marginal(label, t), abs=1e-12)
    info, theirs = crf.tagger_.info(), tagger.info()
    for key in ("header", "labels", "attributes", "transitions", "state_features"):
        assert getattr(info, key) == getattr(theirs, key), key
    assert len(theirs.state_features) == len(crf.state_features_)


def test_sklearn_crfsuite_attributes_match():
    sklearn_crfsuite = pytest.importorskip("sklearn_crfsuite")
    peer = sklearn_crfsuite.CRF(**PARAMS)
    ours = CRF(**PARAMS)
    names = ("tagger_", "training_log_", "classes_", "size_", "num_attributes_", "attributes_",
             "state_features_", "transition_features_")
    assert [getattr(peer, n) for n in names] == [getattr(ours, n) for n in names] == [None] * 8
    peer.fit(X + [[]], Y + [[]])
    ours.fit(X + [[]], Y + [[]])
    assert ours.classes_ == peer.classes_
    assert ours.num_attributes_ == peer.num_attributes_
    assert ours.attributes_ == peer.attributes_
    assert set(ours.state_features_) == set(peer.state_features_)
    assert set(ours.transition_features_) == set(peer.transition_features_)
    assert ours.size_ == peer.size_
    assert [list(p) for p in ours.predict(X + [[]])] == [list(p) for p in peer.predict(X + [[]])]


# ---------------------------------------------------------------------- skfcrf alone
def test_round_trip_through_a_model_file(fitted):
    crf, path = fitted
    loaded = CRF(model_filename=path)
    assert [list(p) for p in loaded.predict(X)] == [list(p) for p in crf.predict(X)]
    assert loaded.state_features_ == crf.state_features_            # exact weights
    assert loaded.transition_features_ == crf.transition_features_
    assert loaded.classes_ == crf.classes_ and loaded.attributes_ == crf.attributes_
    assert loaded.size_ == crf.size_ == os.path.getsize(path)
    for a, b in zip(loaded.predict_marginals(X), crf.predict_marginals(X)):
        for ta, tb in zip(a, b):
            assert list(ta) == list(tb) == crf.classes_
            assert np.allclose(list(ta.values()), list(tb.values()), rtol=0, atol=1e-12)
    with open(path, "rb") as fh:
        assert mf.to_bytes(mf.read(fh.read())) == crf._file_bytes()
    copy = pickle.loads(pickle.dumps(loaded))
    assert [list(p) for p in copy.predict(X)] == [list(p) for p in crf.predict(X)]
    assert copy.size_ == crf.size_


def test_file_holds_float_attribute_values(fitted):
    crf, path = fitted
    model = mf.read(path)
    weights = {(model.attributes[a], model.labels[y]): w for a, y, w in
               zip(model.state_attr, model.state_label, model.state_weight)}
    assert weights == crf.state_features_
    assert {"len", "bias", "sub:x", "sub:y:z", "prev:cat", "mood:не светит"} <= set(weights_attrs(
        weights))
    # a token scores sum(value * weight): doubling a real value moves the label scores
    x_small = [{"len": 0.3}]
    x_big = [{"len": 30.0}]
    crf.tagger_.set(x_small)
    small = [crf.tagger_.marginal(label, 0) for label in crf.classes_]
    crf.tagger_.set(x_big)
    big = [crf.tagger_.marginal(label, 0) for label in crf.classes_]
    assert small != big


def weights_attrs(weights):
    return {a for a, _ in weights}


def test_fit_with_empty_sequences():
    with_empty = CRF(**PARAMS).fit(X[:2] + [[]] + X[2:] + [[]], Y[:2] + [[]] + Y[2:] + [[]])
    without = CRF(**PARAMS).fit(X, Y)
    assert with_empty.state_features_ == without.state_features_
    assert with_empty.transition_features_ == without.transition_features_
    pred = with_empty.predict([[], X[0], []])
    assert [list(p) for p in pred] == [[], Y[0], []]
    assert with_empty.predict_single([]) == [] and with_empty.predict_marginals_single([]) == []
    with pytest.raises(ValueError, match="every training sequence is empty"):
        CRF().fit([[], []], [[], []])
    with pytest.raises(ValueError, match=r"sequence 1: the numbers of items and labels differ"):
        CRF().fit([X[0], []], [Y[0], ["DT"]])


def test_fitted_attributes_none_before_fit():
    crf = CRF()
    for name in ("tagger_", "training_log_", "classes_", "size_", "num_attributes_",
                 "attributes_", "state_features_", "transition_features_"):
        assert getattr(crf, name) is None, name
    crf.fit(X, Y)
    assert crf.size_ > 1000 and crf.num_attributes_ == len(crf.attributes_) > 0
    assert isinstance(crf.tagger_, Tagger) and crf.tagger_ is crf.tagger_


# ---------------------------------------------------------------------- tagger_
def test_tagger_behaves_as_pycrfsuites(fitted):
    crf, _ = fitted
    tagger = Tagger(crf)
    assert tagger.tag() == [] and tagger.probability(["DT"]) == 0.0  # nothing set yet
    assert tagger.marginal("DT", 0) == 0.0
    assert tagger.tag(X[1]) == crf.predict_single(X[1])
    assert tagger.tag() == crf.predict_single(X[1])                   # the stored sequence
    tagger.set(X[0])
    assert tagger.tag() == crf.predict_single(X[0])
    labels = tagger.labels()
    assert labels == crf.classes_ and labels is not tagger.labels()
    # probabilities of all labellings sum to 1 and give the marginals
    total, marginal = 0.0, 0.0
    for yseq in itertools.product(labels, repeat=3):
        p = tagger.probability(list(yseq))
        total += p
        marginal += p if yseq[1] == "NN" else 0.0
    assert total == pytest.approx(1.0, abs=1e-12)
    assert tagger.marginal("NN", 1) == pytest.approx(marginal, abs=1e-12)
    best = tagger.tag()
    assert max(itertools.product(labels, repeat=3),
               key=lambda yseq: tagger.probability(list(yseq))) == tuple(best)
    with pytest.raises(ValueError, match=r"\|x\| = 3, \|y\| = 2"):
        tagger.probability(["DT", "NN"])
    with pytest.raises(RuntimeError, match="label identifier: XX"):
        tagger.probability(["DT", "NN", "XX"])
    with pytest.raises(UnknownLabelError):
        tagger.marginal("XX", 0)
    for pos in (-1, 3):
        with pytest.raises(ValueError, match="out of range"):
            tagger.marginal("DT", pos)
    assert tagger.tag([]) == [] and tagger.probability([]) == 0.0
    tagger.close()
    for call in (tagger.labels, tagger.tag, lambda: tagger.set(X[0]), tagger.info):
        with pytest.raises(ValueError, match="not opened"):
            call()


def test_tagger_open_and_dump(fitted, tmp_path):
    crf, path = fitted
    tagger = Tagger()
    with tagger.open(path):
        assert tagger.tag(X[2]) == crf.predict_single(X[2])
        tagger.dump(str(tmp_path / "dump.txt"))
    text = (tmp_path / "dump.txt").read_text(encoding="utf-8")
    assert text.startswith("FILEHEADER = {\n  magic: lCRF\n")
    assert "STATE_FEATURES = {" in text and "(1) DT --> NN:" in text
    with pytest.raises(ValueError, match="not opened"):
        tagger.tag(X[0])
    with open(path, "rb") as fh:
        memory = Tagger()
        memory.open_inmemory(fh.read())
    assert memory.tag(X[3]) == crf.predict_single(X[3])
    with pytest.raises(FileNotFoundError):
        Tagger().open(str(tmp_path / "missing.crfsuite"))


# ---------------------------------------------------------------------- the format
def test_lookup3_reference_values():
    # published test vectors of Bob Jenkins' lookup3.c (hashlittle, initval 0)
    assert mf.lookup3([b"", b"Four score and seven years ago"]).tolist() == [
        0xDEADBEEF, 0x17770551]
    keys = [bytes(range(1, n + 1)) for n in range(40)]     # every tail length, 0-3 blocks
    assert mf.lookup3(keys).tolist() == [mf.lookup3([k])[0] for k in keys]


def _bytes(fitted):
    crf, path = fitted
    with open(path, "rb") as fh:
        return fh.read()


def _header(data):
    return dict(zip(mf.HEADER_FIELDS, struct.unpack_from("<4sI4s9I", data)))


def test_truncated_files_raise_value_error(fitted):
    data = _bytes(fitted)
    for n in sorted({0, 3, 4, 47, 48, 49, 100, 2071, 2072, 2200, len(data) // 2,
                     len(data) - 4, len(data) - 1}):
        with pytest.raises(ValueError, match="not a valid CRFsuite model file"):
            mf.read(data[:n])
    with pytest.raises(ValueError, match="truncated or extended"):
        mf.read(data + b"\0")


@pytest.mark.parametrize("what, edit, message", [
    ("magic", lambda d, h: b"XCRF" + d[4:], "does not start with"),
    ("type", lambda d, h: d[:8] + b"SOMC" + d[12:], "model type"),
    ("version", lambda d, h: d[:12] + struct.pack("<I", 99) + d[16:], "format version"),
    ("labels", lambda d, h: d[:20] + struct.pack("<I", 7) + d[24:], "label database"),
    ("attrs", lambda d, h: d[:24] + struct.pack("<I", 1) + d[28:], "attribute"),
    ("features offset", lambda d, h: d[:28] + struct.pack("<I", len(d)) + d[32:], "features"),
    ("FEAT id", lambda d, h: d[:48] + b"FEAX" + d[52:], "no FEAT chunk"),
    ("feature type", lambda d, h: d[:60] + struct.pack("<I", 5) + d[64:], "type other than"),
    ("feature label", lambda d, h: d[:68] + struct.pack("<I", 99) + d[72:], "out of range"),
    ("weight", lambda d, h: d[:72] + struct.pack("<d", math.nan) + d[80:], "not finite"),
    ("CQDB id", lambda d, h: d[:h["off_labels"]] + b"QQDB" + d[h["off_labels"] + 4:],
     "no CQDB chunk"),
    ("label name", lambda d, h: d.replace(b"VB\0", b"VX\0"), "hash tables do not match"),
    ("AFRF id", lambda d, h: d[:h["off_attrrefs"]] + b"AFRX" + d[h["off_attrrefs"] + 4:],
     "no AFRF chunk"),
    ("attribute ref", lambda d, h: d[:h["off_attrrefs"] + 12] + struct.pack("<I", 4)
     + d[h["off_attrrefs"] + 16:], "attribute references"),
    ("feature index", lambda d, h: d[:-4] + struct.pack("<I", 10 ** 6), "refers to a missing"),
])
def test_corrupt_files_raise_value_error(fitted, what, edit, message):
    data = _bytes(fitted)
    bad = edit(data, _header(data))
    assert bad != data and len(bad) == len(data), what
    with pytest.raises(ValueError, match=message):
        mf.read(bad)


def test_corrupt_model_filename_raises_value_error(fitted, tmp_path):
    data = _bytes(fitted)
    path = tmp_path / "bad.crfsuite"
    path.write_bytes(data[:len(data) - 10])
    with pytest.raises(ValueError, match="bad.crfsuite.*not a valid CRFsuite model file"):
        CRF(model_filename=str(path)).predict(X)
    path.write_bytes(b"not a model at all")
    with pytest.raises(ValueError, match="does not start with"):
        Tagger().open(str(path))


def test_writer_refuses_what_crfsuite_cannot_store():
    model = mf.CRFsuiteModel(["A", "B"], ["a"], np.array([0]), np.array([1]), np.array([0.5]),
                             np.array([0]), np.array([1]), np.array([1.0]))
    assert mf.read(mf.to_bytes(model)).labels == ["A", "B"]
    for change, message in [
        (dict(labels=["A", "A"]), "distinct"),
        (dict(attributes=["a\0b"]), "NUL"),
        (dict(state_label=np.array([2])), "out of range"),
        (dict(trans_weight=np.array([math.inf])), "finite"),
        (dict(state_attr=np.array([0, 0]), state_label=np.array([1, 1]),
              state_weight=np.array([1.0, 2.0])), "twice"),
    ]:
        bad = mf.CRFsuiteModel(**{**model.__dict__, **change})
        with pytest.raises(ValueError, match=message):
            mf.to_bytes(bad)
    # zero weights and the attributes left without a feature are pruned, as CRFsuite does
    sparse = mf.CRFsuiteModel(["A", "B"], ["unused", "a"], np.array([0, 1]), np.array([0, 1]),
                              np.array([0.0, 0.5]), np.array([0]), np.array([1]),
                              np.array([1.0]))
    back = mf.read(mf.to_bytes(sparse))
    assert back.attributes == ["a"] and back.state_weight.tolist() == [0.5]
