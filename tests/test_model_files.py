"""Model files: exact round trips, old formats, atomic saves, and broken or hostile files.

Every damaged file must make ``FactorialCRF.load`` raise ``ValueError`` (or load a model
that predicts with the documented shapes); never another exception, a crash, a large
allocation or code execution.  Files are forged with the helpers of ``_model_files.py``.
"""
import io
import os
import pathlib
import pickle
import tracemalloc
import warnings
import zipfile

import numpy as np
import pytest
import scipy.sparse as sp
from _model_files import archive, array, header, members, mutate, npy_bytes, with_array, with_header
from sklearn.exceptions import ConvergenceWarning

from skfcrf import FactorialCRF
from skfcrf.estimators import _persistence

from _helpers import synthetic

DATA = pathlib.Path(__file__).parent / "data"


def _fit(*args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return FactorialCRF(**kwargs).fit(*args)


@pytest.fixture(scope="module")
def names_model():
    """Two chains, observation names, a forbidden transition and coupling, joint states."""
    X, y = synthetic(n_seq=12, n_chains=2, length=(2, 5))
    keep = [i for i, s in enumerate(y)
            if not any(a[0] == "c0" == b[0] for a, b in zip(s, s[1:]))
            and not any(lab == ("c1", "hi") for lab in s)]
    X, y = [X[i] for i in keep], [y[i] for i in keep]
    est = _fit(X, y, max_iter=15, finetune_iter=3, random_state=3,
               forbidden_transitions={0: [("c0", "c0")]},
               forbidden_couplings={(0, 1): [("c1", "hi")]})
    return est, X


@pytest.fixture(scope="module")
def matrix_model():
    """One chain given as 1-D labels, sparse-matrix observations."""
    X = [sp.random(4, 6, density=0.5, random_state=i, format="csr") for i in range(6)]
    y = [[(i + t) % 3 for t in range(4)] for i in range(6)]
    return _fit(X, y, max_iter=10, finetune_iter=0), X


def _bytes(est):
    buf = io.BytesIO()
    est.save(buf)
    return buf.getvalue()


@pytest.fixture(scope="module")
def model_bytes(names_model):
    return _bytes(names_model[0])


def _load(data):
    return FactorialCRF.load(io.BytesIO(data))


def _rejected(data, match=None):
    with pytest.raises(ValueError, match=match):
        _load(data)


def _n_tokens(seq):
    return seq.shape[0] if sp.issparse(seq) else len(seq)


def _check_predictions(est, X):
    """Predictions and marginals of ``est`` on ``X`` have the documented shapes.

    A matrix model's input width is only known from its header: an edited width is
    not an error of the file, and the model then takes (only) inputs of that width.
    """
    width = est.encoder_.n_input_columns
    if est.encoder_.kind == "matrix" and width != X[0].shape[1]:
        if width > 10 ** 6:
            with pytest.raises(ValueError, match="observation columns"):
                est.predict(X)
            return
        X = [sp.csr_matrix(x[:, :width].toarray() if width < x.shape[1]
                           else np.hstack([x.toarray(), np.zeros((x.shape[0], width - x.shape[1]))]))
             for x in X]
    pred = est.predict(X)
    assert len(pred) == len(X)
    for p, x in zip(pred, X):
        expected = (_n_tokens(x),) if est._one_chain else (_n_tokens(x), est.n_chains_)
        assert p.shape == expected
    for marg, x in zip(est.predict_marginals(X), X):
        assert len(marg) == est.n_chains_
        assert all(m.shape == (_n_tokens(x), len(c)) for m, c in zip(marg, est.classes_))


# ---------------------------------------------------------------------- round trips
@pytest.mark.parametrize("which", ["names_model", "matrix_model"])
def test_round_trip_is_exact(which, request, tmp_path):
    est, X = request.getfixturevalue(which)
    path = tmp_path / "model.npz"
    est.save(path)
    again = FactorialCRF.load(path)
    np.testing.assert_array_equal(again.coef_, est.coef_)
    assert again.coef_.dtype == np.float64
    assert again.get_params() == est.get_params()
    for attr in ("n_chains_", "n_features_in_", "couplings_", "loss_curve_", "n_iter_",
                 "converged_", "inference_stats_", "_one_chain"):
        assert getattr(again, attr) == getattr(est, attr), attr
    assert [list(c) for c in again.classes_] == [list(c) for c in est.classes_]
    np.testing.assert_array_equal(again.layout_.feat_ptr, est.layout_.feat_ptr)
    np.testing.assert_array_equal(again.layout_.ent_col, est.layout_.ent_col)
    np.testing.assert_array_equal(again.joint_states_, est.joint_states_)
    assert again.forbidden_.keys() == est.forbidden_.keys()
    for e in est.forbidden_:
        np.testing.assert_array_equal(again.forbidden_[e], est.forbidden_[e])
    for a, b in zip(again.predict(X), est.predict(X)):
        assert np.array_equal(a, b)
    for a, b in zip(again.predict_marginals(X), est.predict_marginals(X)):
        assert all(np.array_equal(u, v) for u, v in zip(a, b))
    # saving the loaded model again writes the same arrays and header
    first, second = members(path.read_bytes()), members(_bytes(again))
    assert first.keys() == second.keys()
    assert all(first[k] == second[k] for k in first)


def test_paths_strings_and_file_objects(names_model, tmp_path):
    est, X = names_model
    expected = est.predict(X)
    str_path = str(tmp_path / "a.npz")
    est.save(str_path)
    est.save(tmp_path / "b.npz")
    with open(tmp_path / "c.npz", "wb") as fh:
        est.save(fh)
    sources = [str_path, tmp_path / "b.npz", io.BytesIO((tmp_path / "c.npz").read_bytes())]
    with open(tmp_path / "c.npz", "rb") as fh:
        sources.append(fh)
        for source in sources:
            loaded = FactorialCRF.load(source)
            assert all(np.array_equal(a, b) for a, b in zip(loaded.predict(X), expected))


def test_file_object_in_text_mode_is_refused(names_model, tmp_path):
    names_model[0].save(tmp_path / "m.npz")
    with open(tmp_path / "m.npz", encoding="latin-1") as fh:
        with pytest.raises(ValueError, match="binary mode"):
            FactorialCRF.load(fh)


def test_missing_file_is_still_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError):
        FactorialCRF.load(tmp_path / "nothing.npz")


# ---------------------------------------------------------------------- versions
#: What skfcrf 0.1.0 predicted with the models of tests/data/model_v1_*.npz on their
#: training data (tests/data/make_legacy_models.py prints it).
V1_X = [[["w=the", "cap=0"], ["w=cat", "cap=0"], ["w=sat", "cap=0"]],
        [["w=A", "cap=1"], ["w=dog", "cap=0"]],
        [["w=the", "cap=0"], ["w=dog", "cap=0"], ["w=ran", "cap=0"]]]
V1_PRED = [[["DT", "B"], ["NN", "I"], ["VB", "O"]], [["DT", "B"], ["NN", "I"]],
           [["DT", "B"], ["NN", "I"], ["VB", "O"]]]
V1_XM = [sp.csr_matrix(np.array([[1.0, 0, 0, 2], [0, 1, 0, 0], [0, 0, 1, 0]])),
         sp.csr_matrix(np.array([[1.0, 0, 0, 0], [0, 0, 1, 1]]))]
V1_PREDM = [[1, 2, 3], [1, 3]]


def test_format_1_files_of_skfcrf_0_1_0_still_load():
    est = FactorialCRF.load(DATA / "model_v1_names.npz")
    assert header(members((DATA / "model_v1_names.npz").read_bytes()))["version"] == 1
    assert est.joint_states_ is None and est.converged_ is True
    assert est.objective == "pseudolikelihood" and est.finetune_iter == 10  # the default
    assert [p.tolist() for p in est.predict(V1_X)] == V1_PRED
    assert est.forbidden_[1][2, 1]   # "O" -> "I" forbidden in chain 1
    matrix = FactorialCRF.load(DATA / "model_v1_matrix.npz")
    assert [p.tolist() for p in matrix.predict(V1_XM)] == V1_PREDM
    # and they are written back in the current format
    assert header(members(_bytes(est)))["version"] == _persistence.VERSION


def test_newer_format_is_refused_naming_both_versions(model_bytes):
    def newer(head):
        head["version"] = _persistence.VERSION + 1
        head["skfcrf_version"] = "9.9.0"

    with pytest.raises(ValueError) as info:
        _load(with_header(model_bytes, newer))
    message = str(info.value)
    assert f"format version {_persistence.VERSION + 1}" in message
    assert f"up to {_persistence.VERSION}" in message and "9.9.0" in message


@pytest.mark.parametrize("version", [0, -1, "2", 1.5, None])
def test_bad_version_is_refused(model_bytes, version):
    _rejected(with_header(model_bytes, lambda h: h.update(version=version)), "version")


def test_format_2_requires_every_key(model_bytes):
    """Keys optional in version 1 files are required in version 2."""
    _rejected(with_header(model_bytes, lambda h: h.pop("converged")), "lacks converged")
    as_v1 = with_header(model_bytes, lambda h: [h.pop("converged"), h.pop("skfcrf_version"),
                                                h.pop("transitions", None), h.pop("anchors", None),
                                                h.update(version=1)])
    assert _load(as_v1).converged_ is True


# ---------------------------------------------------------------------- atomic save
def _listing(directory):
    return sorted(os.listdir(directory))


@pytest.mark.parametrize("error", [OSError("disk full"), KeyboardInterrupt()])
def test_failed_save_keeps_the_previous_file(names_model, tmp_path, monkeypatch, error):
    est, _ = names_model
    path = tmp_path / "model.npz"
    est.save(path)
    before = path.read_bytes()

    def broken_writer(fh, head, arrays):
        fh.write(b"PK\x03\x04 half an archive")
        raise error

    monkeypatch.setattr(_persistence, "_write_npz", broken_writer)
    with pytest.raises(type(error)):
        est.save(path)
    assert path.read_bytes() == before
    assert _listing(tmp_path) == ["model.npz"]
    with pytest.raises(type(error)):     # no previous file: none is left behind
        est.save(tmp_path / "new.npz")
    assert _listing(tmp_path) == ["model.npz"]


def test_failed_rename_leaves_no_temporary_file(names_model, tmp_path, monkeypatch):
    est, _ = names_model
    path = tmp_path / "model.npz"
    est.save(path)
    before = path.read_bytes()

    def refuse(src, dst):
        raise PermissionError("locked")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(PermissionError):
        est.save(path)
    assert path.read_bytes() == before and _listing(tmp_path) == ["model.npz"]


def test_save_keeps_permissions_and_symlinks(names_model, tmp_path):
    est, _ = names_model
    path = tmp_path / "model.npz"
    est.save(path)
    os.chmod(path, 0o640)
    link = tmp_path / "link.npz"
    link.symlink_to(path)
    est.save(link)
    assert link.is_symlink() and (path.stat().st_mode & 0o777) == 0o640
    assert _listing(tmp_path) == ["link.npz", "model.npz"]
    FactorialCRF.load(link)


def test_unsaveable_label_fails_before_touching_the_file(tmp_path):
    est = _fit([[["a"], ["b"]]], [[(1, 2), (1, 2)]], max_iter=5, finetune_iter=0)
    est.classes_ = [np.array([(1, 2)], dtype=object), est.classes_[1]]
    path = tmp_path / "m.npz"
    path.write_bytes(b"previous")
    with pytest.raises(ValueError, match="cannot save label"):
        est.save(path)
    assert path.read_bytes() == b"previous" and _listing(tmp_path) == ["m.npz"]


# ---------------------------------------------------------------------- hostile files
def test_truncated_files(model_bytes):
    for n in (0, 1, 4, 30, len(model_bytes) // 3, len(model_bytes) // 2, len(model_bytes) - 1):
        _rejected(model_bytes[:n])


def _data_offset(data, info):
    """Where member ``info``'s (compressed) data starts: after its local header."""
    local = info.header_offset
    name_len = int.from_bytes(data[local + 26:local + 28], "little")
    extra_len = int.from_bytes(data[local + 28:local + 30], "little")
    return local + 30 + name_len + extra_len


def test_flipped_bytes_in_compressed_data(model_bytes):
    parts = members(model_bytes)
    with zipfile.ZipFile(io.BytesIO(model_bytes)) as zf:
        info = zf.getinfo("coef.npy")
    start = _data_offset(model_bytes, info)
    # (not the last byte: it may hold only padding bits after the end of the stream)
    for offset in (0, info.compress_size // 3, info.compress_size // 2):
        data = bytearray(model_bytes)
        data[start + offset] ^= 0x10
        _rejected(bytes(data), "coef")
    assert "coef" in parts


def test_flipped_byte_in_stored_data_fails_the_crc(model_bytes):
    stored = archive(members(model_bytes), compression=zipfile.ZIP_STORED)
    assert _load(stored) is not None
    with zipfile.ZipFile(io.BytesIO(stored)) as zf:
        info = zf.getinfo("coef.npy")
    data = bytearray(stored)
    data[_data_offset(stored, info) + 200] ^= 0x01
    _rejected(bytes(data), "Bad CRC")


@pytest.mark.parametrize("edit,match", [
    (lambda h: h.update(n_features_in=h["n_features_in"] + 1), "shape"),
    (lambda h: h.update(n_features_in=-1), "n_features_in"),
    (lambda h: h.update(n_features_in=10 ** 12), "shape"),
    (lambda h: h.update(n_features_in=10 ** 40), "shape"),
    (lambda h: h.update(n_chains=10 ** 9), "classes"),
    (lambda h: h["classes"][0].append("zz"), "graph_n_labels"),
    (lambda h: h["classes"][0].reverse(), "increasing order"),
    (lambda h: h["classes"][1].insert(0, 3), "increasing order"),
    (lambda h: h.update(classes=[[], ["hi", "lo"]]), "non-empty"),
    (lambda h: h.update(couplings=[]), "edges"),
    (lambda h: h.update(couplings=[[1, 0]]), "couplings"),
    (lambda h: h.update(forbidden_edges=[]), "not listed"),
    (lambda h: h.update(forbidden_edges=[7]), "forbidden_edges"),
    (lambda h: h.update(encoder_kind="matrix"), "n_input_columns"),
    (lambda h: h.update(one_chain=True), "one_chain"),
    (lambda h: h.update(random_state=-1), "random_state"),
    (lambda h: h.update(random_state=2 ** 40), "random_state"),
    (lambda h: h["params"].update(sigma=-1.0), "sigma"),
    (lambda h: h["params"].update(inference="magic"), "inference"),
    (lambda h: h["params"].update(coupling=[[0, 5]]), "coupling"),
    (lambda h: h.update(loss_curve="long"), "loss_curve"),
    (lambda h: h.update(n_iter=-3), "n_iter"),
    (lambda h: h.update(inference_stats=[1]), "inference_stats"),
    (lambda h: h.update(forbidden_transitions={"pairs": [["c0"]]}), "pair"),
    (lambda h: h.update(forbidden_couplings={"eval": "os.system('x')"}), "form"),
], ids=lambda v: "" if callable(v) else str(v))
def test_edited_header_values(model_bytes, edit, match):
    _rejected(with_header(model_bytes, edit), match)


def test_inference_joint_without_joint_states_is_refused(model_bytes):
    data = with_header(model_bytes, lambda h: h["params"].update(inference="joint"))
    assert _load(data).inference == "joint"
    _rejected(with_array(data, "joint_states", None), "inference='joint'")


def test_missing_and_extra_header_keys(model_bytes):
    for key in ("classes", "params", "n_features_in", "format", "coef"):
        data = with_header(model_bytes, lambda h, key=key: h.pop(key, None))
        if key == "coef":
            assert _load(data) is not None      # not a header key: nothing to miss
            continue
        _rejected(data, "lacks" if key != "format" else "not an skfcrf model")
    _rejected(with_header(model_bytes, lambda h: h.update(payload="x")), "unknown keys payload")
    _rejected(with_header(model_bytes, lambda h: h["params"].update(evil=1)),
              "unknown parameters evil")
    _rejected(with_header(model_bytes, lambda h: h["params"].pop("sigma")), "params lack sigma")


def test_header_that_is_not_json(model_bytes):
    for blob in (b"\xff\xfe", b"[1, 2]", b'{"format": "skfcrf-model"', b"[" * 100000,
                 b'{"format": "skfcrf-model", "format": "x"}'):
        _rejected(with_array(model_bytes, "header", np.frombuffer(blob, dtype=np.uint8)))
    _rejected(with_array(model_bytes, "header", np.zeros(3, dtype=np.int64)), "header")


def test_missing_and_extra_arrays(model_bytes):
    for key in ("coef", "feat_ptr", "ent_col", "graph_edge_tied", "observation_names",
                "forbidden_0", "header"):
        _rejected(with_array(model_bytes, key, None))
    _rejected(with_array(model_bytes, "extra", np.zeros(3)), "unexpected member 'extra.npy'")
    _rejected(with_array(model_bytes, "kept_columns", np.arange(3)), "kept_columns")
    parts = members(model_bytes)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for key, value in parts.items():
            zf.writestr(key + ".npy", value)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)    # zipfile: duplicate name
            zf.writestr("coef.npy", parts["coef"])
    _rejected(buf.getvalue(), "occurs twice")


@pytest.mark.parametrize("key,value,match", [
    ("coef", lambda a: a.astype(np.float32), "float64"),
    ("coef", lambda a: a.astype(np.int64), "dtype"),
    ("coef", lambda a: a[:-1], "shape"),
    ("coef", lambda a: a.reshape(1, -1), "shape"),
    ("coef", lambda a: np.where(np.arange(a.size) == 2, np.nan, a), "non-finite"),
    ("coef", lambda a: np.where(np.arange(a.size) == 2, np.inf, a), "non-finite"),
    ("feat_ptr", lambda a: a.astype(np.float64), "dtype"),
    ("feat_ptr", lambda a: a[::-1].copy(), "feat_ptr"),
    ("feat_ptr", lambda a: a - 1, "outside"),
    ("feat_ptr", lambda a: a + 1, "feat_ptr must start at 0"),
    ("ent_col", lambda a: a + 10 ** 6, "outside"),
    ("ent_col", lambda a: -a - 1, "outside"),
    ("ent_col", lambda a: a.astype(np.complex128), "dtype"),
    ("graph_edge_tied", lambda a: a + 2, "0 or 1"),
    ("graph_edge_kind", lambda a: a[::-1].copy(), "edges"),
    ("graph_n_labels", lambda a: a + 1, "graph_n_labels"),
    ("observation_names", lambda a: np.array(["w=1"] * a.size), "distinct"),
    ("observation_names", lambda a: a.astype("S"), "dtype"),
    ("forbidden_0", lambda a: a.astype(np.int8), "dtype"),
    ("forbidden_0", lambda a: a[:, :1], "shape"),
    ("joint_states", lambda a: a + 5, "out of range"),
    ("joint_states", lambda a: a[::-1].copy(), "increasing"),
    ("joint_states", lambda a: np.vstack([a, a[:1]]), "increasing"),
    ("joint_states", lambda a: a[:0], "empty"),
    ("joint_states", lambda a: a[:, :1], "shape"),
], ids=lambda v: v if isinstance(v, str) else "")
def test_arrays_that_disagree_with_the_header(model_bytes, key, value, match):
    _rejected(with_array(model_bytes, key, value(array(members(model_bytes), key))), match)


def test_big_endian_arrays_load(model_bytes, names_model):
    parts = members(model_bytes)
    parts["coef"] = array(parts, "coef").astype(">f8")
    parts["feat_ptr"] = array(parts, "feat_ptr").astype(">i8")
    est = _load(archive(parts))
    assert est.coef_.dtype == np.float64 and est.coef_.dtype.isnative
    np.testing.assert_array_equal(est.coef_, names_model[0].coef_)


def test_object_arrays_never_unpickle(model_bytes, tmp_path):
    marker = tmp_path / "ran"

    class Payload:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    hostile = np.array([Payload(), Payload()], dtype=object)
    for key in ("coef", "observation_names", "header", "joint_states"):
        _rejected(with_array(model_bytes, key, hostile), "dtype")
    assert not marker.exists()


def test_pickle_renamed_to_npz(names_model, tmp_path):
    marker = tmp_path / "ran"

    class Payload:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    path = tmp_path / "model.npz"
    path.write_bytes(pickle.dumps([names_model[0], Payload()]))
    with pytest.raises(ValueError, match="not an skfcrf model"):
        FactorialCRF.load(path)
    np.save(tmp_path / "plain.npy", np.arange(3))      # an .npy, not an archive
    with pytest.raises(ValueError, match="not an skfcrf model"):
        FactorialCRF.load(tmp_path / "plain.npy")
    assert not marker.exists()


def test_npy_header_that_lies_about_the_shape(model_bytes):
    parts = members(model_bytes)
    coef = array(parts, "coef")
    raw = npy_bytes(coef)
    lie = raw.replace(f"'shape': ({coef.size},)".encode(), b"'shape': (99999999999,)")
    assert lie != raw
    _rejected(with_array(model_bytes, "coef", lie), "shape")


def _forge_declared_size(data, key, size):
    """``data`` with member ``key``'s uncompressed size in the zip directory set to ``size``."""
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        info = zf.getinfo(key + ".npy")
    out = bytearray(data)
    name = (key + ".npy").encode()
    central = out.rfind(b"PK\x01\x02", 0, out.rfind(name))  # its central directory entry
    out[central + 24:central + 28] = size.to_bytes(4, "little")
    local = info.header_offset
    out[local + 22:local + 26] = size.to_bytes(4, "little")
    return bytes(out)


def test_zip_bomb_declarations_are_refused_before_decompressing(model_bytes):
    _rejected(_forge_declared_size(model_bytes, "coef", 0xFFFFFFF0), "zip bomb")
    _rejected(_forge_declared_size(model_bytes, "header", 0xFFFFFFF0), "zip bomb")


def test_real_bomb_member_allocates_nothing_big(model_bytes):
    """80 MB of zeros compress to 80 kB; the shape check refuses them before reading."""
    bomb = np.lib.format.header_data_from_array_1_0(np.zeros(10 ** 7))
    raw = io.BytesIO()
    np.lib.format.write_array_header_1_0(raw, bomb)
    data = with_array(model_bytes, "coef", raw.getvalue() + bytes(8 * 10 ** 7))
    assert len(data) < 200_000
    tracemalloc.start()
    try:
        _rejected(data, "shape")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 5 * 10 ** 6, peak


def test_consistent_but_huge_declarations(model_bytes):
    """A header and .npy headers that agree on a huge model, with tiny data."""
    n = 10 ** 11

    def huge(head):
        head["n_features_in"] = n

    parts = members(with_header(model_bytes, huge))
    names = npy_bytes(array(parts, "observation_names"))
    parts["observation_names"] = names.replace(b"'shape': (", f"'shape': ({n}".encode(), 1)
    _rejected(archive(parts), "observation_names")


def test_model_beyond_the_kernels_int32_indices_is_refused(model_bytes):
    """50,000 labels with an untied in-chain template: 2.5e9 score columns."""
    labels = [f"l{i:05d}" for i in range(50000)]
    parts = members(with_header(model_bytes, lambda h: h["classes"].__setitem__(0, labels)))
    parts["graph_n_labels"] = np.array([50000, 2], dtype=np.int32)
    parts["graph_edge_tied"] = np.array([0, 1, 1], dtype=np.int32)
    _rejected(archive(parts), "2[*][*]31")


def test_encrypted_or_exotic_members(model_bytes):
    data = bytearray(model_bytes)
    with zipfile.ZipFile(io.BytesIO(model_bytes)) as zf:
        info = zf.getinfo("coef.npy")
    central = data.rfind(b"PK\x01\x02", 0, data.rfind(b"coef.npy"))
    encrypted = bytearray(data)
    encrypted[central + 8] |= 0x01
    _rejected(bytes(encrypted), "encrypted")
    method = bytearray(data)
    method[central + 10:central + 12] = (14).to_bytes(2, "little")   # LZMA
    _rejected(bytes(method), "compression")
    assert info.compress_type == zipfile.ZIP_DEFLATED


# ---------------------------------------------------------------------- fuzzing
@pytest.mark.parametrize("which,n_cases", [("names_model", 600), ("matrix_model", 200)])
def test_mutation_fuzz(which, n_cases, request):
    """Random bit flips, truncations, insertions, header and array edits (seeded)."""
    est, X = request.getfixturevalue(which)
    data = _bytes(est)
    rng = np.random.default_rng(20261123)
    outcomes = {"loaded": 0, "refused": 0}
    for case in range(n_cases):
        damaged, what = mutate(rng, data)
        try:
            loaded = _load(damaged)
        except ValueError as exc:
            assert str(exc), what
            outcomes["refused"] += 1
            continue
        except Exception as exc:     # pragma: no cover - the failure the test is for
            raise AssertionError(f"case {case} ({what}): {type(exc).__name__}: {exc}") from exc
        try:
            _check_predictions(loaded, X)
        except Exception as exc:     # pragma: no cover
            raise AssertionError(f"case {case} ({what}) loaded but fails: {exc!r}") from exc
        outcomes["loaded"] += 1
    # both outcomes occur: edits of harmless fields load, damage is refused
    assert outcomes["refused"] > n_cases // 2 and outcomes["loaded"] > 0, outcomes
