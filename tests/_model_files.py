"""Building and damaging model files for tests/test_model_files.py (not a test module).

A model file is a zip of ``<key>.npy`` members (see ``skfcrf.estimators._persistence``);
these helpers take one apart into ``{key: ndarray}`` plus its JSON header, and put edited
parts back together, so tests can forge any kind of broken or hostile file.
:func:`mutate` is the seeded mutation fuzzer.
"""
import copy
import io
import json
import zipfile

import numpy as np


def npy_bytes(arr):
    """``arr`` in .npy format (object arrays are pickled, as numpy does)."""
    buf = io.BytesIO()
    np.lib.format.write_array(buf, np.asanyarray(arr), allow_pickle=True)
    return buf.getvalue()


def members(data):
    """``{key: .npy bytes}`` of the archive ``data``, in archive order."""
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        return {info.filename[:-4]: zf.read(info) for info in zf.infolist()}


def archive(parts, compression=zipfile.ZIP_DEFLATED):
    """The archive of ``{key: ndarray or .npy bytes}``."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=compression) as zf:
        for key, value in parts.items():
            zf.writestr(key + ".npy", value if isinstance(value, bytes) else npy_bytes(value))
    return buf.getvalue()


def array(parts, key):
    return np.lib.format.read_array(io.BytesIO(parts[key]), allow_pickle=False)


def header(parts):
    return json.loads(array(parts, "header").tobytes().decode("utf-8"))


def header_array(obj):
    return np.frombuffer(json.dumps(obj).encode("utf-8"), dtype=np.uint8)


def with_header(data, edit):
    """``data`` with its JSON header edited in place by ``edit(header)``."""
    parts = members(data)
    head = header(parts)
    edit(head)
    parts["header"] = header_array(head)
    return archive(parts)


def with_array(data, key, value):
    """``data`` with member ``key`` replaced by ``value`` (None removes it)."""
    parts = members(data)
    if value is None:
        del parts[key]
    else:
        parts[key] = value
    return archive(parts)


# ---------------------------------------------------------------------- fuzzing
ODD_VALUES = [None, True, False, 0, 1, -1, 2, 7, 2 ** 31, 2 ** 63, -2 ** 63, 10 ** 30, 0.5,
              -1e300, float("nan"), float("inf"), "", "x", "names", "matrix", "auto", "joint",
              [], [0], [0, 1], [[0, 1]], [[0, 0]], ["a", "b"], {}, {"pairs": []},
              {"list": [None, [["O", "I"]]]}, {"dict": [[0, [["a", "b"]]]]}]

DTYPES = [np.int8, np.int32, np.int64, np.uint8, np.uint64, np.float32, np.float64, np.bool_,
          "<U3", ">i8", ">f8"]


def _json_paths(obj, prefix=()):
    """Every (path, value) of a JSON value."""
    yield prefix, obj
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _json_paths(v, prefix + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _json_paths(v, prefix + (i,))


def _edit_header(rng, head):
    paths = [p for p, _ in _json_paths(head) if p]
    path = paths[rng.integers(len(paths))]
    parent = head
    for k in path[:-1]:
        parent = parent[k]
    last = path[-1]
    action = rng.integers(4)
    if action == 0 and isinstance(parent, dict):
        del parent[last]
        return f"header: delete {path}"
    if action == 1 and isinstance(parent, dict):
        parent["extra_" + str(rng.integers(100))] = 1
        return f"header: add a key beside {path}"
    if action == 2 and isinstance(parent[last], (int, float)) and not isinstance(parent[last], bool):
        value = parent[last] + int(rng.choice([-2, -1, 1, 2]))
    else:
        value = copy.deepcopy(ODD_VALUES[rng.integers(len(ODD_VALUES))])
    parent[last] = value
    return f"header: {path} = {value!r}"


def _edit_array(rng, arr):
    action = rng.integers(5)
    if action == 0:
        dtype = np.dtype(DTYPES[rng.integers(len(DTYPES))])
        if arr.dtype.kind == "U" and dtype.kind != "U":
            return np.arange(arr.size).astype(dtype), f"dtype {dtype} (numbers)"
        return arr.astype(dtype), f"dtype {dtype}"
    if action == 1:
        n = int(rng.integers(-2, 3)) or 1
        flat = arr.ravel()
        flat = flat[:max(flat.size + n, 0)] if n < 0 else np.concatenate([flat, flat[:n]])
        return flat, f"shape {flat.shape}"
    if action == 2:
        return arr.reshape(1, -1) if arr.ndim == 1 else arr.ravel(), "ndim"
    if action == 3 and arr.size:
        out = arr.copy()
        i = int(rng.integers(out.size))
        choices = {"f": [np.nan, np.inf, -1e308, 1e300], "b": [True, False],
                   "U": ["", "w=the"]}.get(out.dtype.kind, [-1, 0, 2 ** 31 - 1, 10 ** 6, 3])
        out.flat[i] = choices[rng.integers(len(choices))]
        return out, f"element {i} = {out.flat[i]!r}"
    return np.array([object()] * 2, dtype=object), "object array"


DESCRS = ["'<f8'", "'|O'", "'<i8'", "'<i4'", "'<U5'", "'>f4'", "'|b1'", "'<c16'", "'V8'",
          "[('a', '<f8')]", "('<f8', (2,))", "'<M8[s]'"]


def _edit_npy_header(rng, raw):
    """``raw`` .npy bytes whose header text claims another shape or dtype."""
    end = raw.index(b"\n") + 1
    text = raw[:end].decode("latin-1")
    if rng.integers(2):
        start = text.index("'shape': (") + len("'shape': (")
        stop = text.index(")", start)
        dims = [str(int(rng.choice([0, 1, 2, 5, 10 ** 6, 2 ** 40, -1])))
                for _ in range(int(rng.integers(0, 3)))]
        shape = ", ".join(dims) + ("," if len(dims) == 1 else "")
        text = text[:start] + shape + text[stop:]
        what = f"shape ({shape})"
    else:
        start = text.index("'descr': ") + len("'descr': ")
        stop = text.index(", 'fortran_order'", start)
        descr = DESCRS[rng.integers(len(DESCRS))]
        text = text[:start] + descr + text[stop:]
        what = f"descr {descr}"
    # numpy pads the header to a multiple of 64 bytes when writing; it reads any length
    text = text[10:].rstrip("\n").rstrip(" ") + "\n"
    head = raw[:8] + len(text).to_bytes(2, "little") + text.encode("latin-1")
    return head + raw[end:], what


def mutate(rng, data):
    """One damaged copy of the model file ``data`` and a description of the damage."""
    kind = int(rng.integers(7))
    if kind == 6:
        parts = members(data)
        key = list(parts)[rng.integers(len(parts))]
        if parts[key][6:8] != b"\x01\x00":
            return data, "unchanged"
        parts[key], what = _edit_npy_header(rng, parts[key])
        return archive(parts), f".npy header of {key}: {what}"
    if kind == 0:
        out = bytearray(data)
        for _ in range(int(rng.integers(1, 4))):
            i = int(rng.integers(len(out)))
            out[i] ^= 1 << int(rng.integers(8))
        return bytes(out), "flip bits"
    if kind == 1:
        n = int(rng.integers(len(data)))
        return data[:n], f"truncate to {n}"
    if kind == 2:
        i = int(rng.integers(len(data) + 1))
        extra = rng.integers(0, 256, size=int(rng.integers(1, 9)), dtype=np.uint8).tobytes()
        return data[:i] + extra + data[i:], f"insert {len(extra)} bytes at {i}"
    if kind in (3, 4):
        what = []

        def edit(head):
            what.append(_edit_header(rng, head))

        return with_header(data, edit), what[0]
    parts = members(data)
    keys = [k for k in parts if k != "header"]
    key = keys[rng.integers(len(keys))]
    value, what = _edit_array(rng, array(parts, key))
    parts[key] = value
    return archive(parts), f"array {key}: {what}"
