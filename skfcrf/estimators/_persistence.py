"""Model files of a fitted FactorialCRF: numpy arrays plus a JSON header in one ``.npz``.

File layout (format version 2)
------------------------------
A zip archive as written by ``np.savez_compressed``; one ``.npy`` member per array.
``L_c`` is the number of labels of chain ``c``, ``C`` the number of chains,
``E = C + len(couplings)`` the number of edge templates (one in-chain edge per
chain, then one per coupled pair, as :func:`~skfcrf.model._layout.build_graph`).

``header``            uint8 ``(n,)``: UTF-8 JSON object, the keys below
``graph_n_labels``    int ``(C,)``: ``L_c``, equal to the number of ``classes`` of chain ``c``
``graph_edge_a``, ``graph_edge_b``, ``graph_edge_kind``, ``graph_edge_tied``
                      int ``(E,)``: the edge templates (:mod:`skfcrf._kernels.graph`)
``observation_names`` str ``(F,)``, distinct -- models fitted on observation names
``kept_columns``      int ``(F,)``, increasing, ``< n_input_columns`` -- models fitted on matrices
``feat_ptr``          int ``(F + 1,)``: the feature table, ``0 = feat_ptr[0] <= ... <= feat_ptr[F]``
``ent_col``           int ``(feat_ptr[F],)``: score columns, ``0 <= ent_col < score_width``
``coef``              float64 ``(n_params,)``, finite (layout in :mod:`skfcrf.model._layout`)
``forbidden_<e>``     bool ``(L_a, L_b)`` for every edge ``e`` in ``forbidden_edges``
``joint_states``      int ``(S >= 1, C)``: distinct label-index rows in increasing order,
                      ``0 <= joint_states[:, c] < L_c`` (absent in files of models without)
``state_from``, ``state_to``
                      int ``(P >= 1, C)`` each, label indices ``< L_c``: the state pairs of
                      the joint-state transition weights, the last ``P`` entries of
                      ``coef`` (absent in files of models without; both or neither)
``marginal_temperatures``
                      float64 ``(C,)``, finite and positive: the temperatures of the
                      token marginals (``calibration="temperature"``; absent when all
                      are 1, and in files of models fitted without)

Header keys: ``format`` (``"skfcrf-model"``), ``version`` (the format version),
``skfcrf_version`` (the writer's package version), ``params`` (the constructor
parameters except ``forbidden_*``, ``random_state``, ``callback``,
``validation_scoring``), ``forbidden_transitions`` / ``forbidden_couplings``
(see :func:`_encode_pairs_spec`), ``random_state`` (int in ``[0, 2**32)`` or
null), ``validation_scoring`` (a scorer name or null), ``classes`` (per chain its
labels, str/int/float/bool, strictly increasing), ``n_chains``, ``one_chain``,
``couplings`` (sorted ``[a, b]`` pairs, ``a < b``), ``encoder_kind``
(``"names"`` or ``"matrix"``), ``n_input_columns``, ``n_features_in`` (``F``),
``forbidden_edges``, ``loss_curve``, ``n_iter``, ``converged``,
``inference_stats``, and ``transitions`` (the fitted ``transitions_``: ``world``,
``decoding`` -- ``"seen"`` makes MAP decoding keep to the transitions seen in
training while the back-off ones are scored --, ``unseen``, ``open``, ``new_rate``
and ``reason``; absent in files written before 2026-12-04, whose models decode as
they did), and ``anchors`` (the fitted ``anchors_``: ``chains``, ``threshold``,
``heldout``, ``reason``; absent in older files, whose models anchor no chain).

Versions
--------
1
    skfcrf 0.1.0.  Files of later development snapshots of version 1 may add
    ``converged``, ``validation_scoring`` and ``joint_states``; those are
    optional in version 1 (a model without ``joint_states`` decodes several
    chains with TRP, as it did).
2
    Every header key above is required; adds ``skfcrf_version``.

A file of a newer version than :data:`VERSION` is refused with a message naming
both versions.  ``params`` may lack parameters added to the constructor after
the file's version (their defaults apply); a parameter whose default would
change what an older model predicts needs a new format version.

Guarantees of :func:`load`
--------------------------
Loading executes no code from the file: the header is parsed by ``json.loads``
and arrays by ``np.frombuffer`` from checked ``.npy`` headers (no pickle, no
object arrays; see :mod:`._npz_io`).  Any damaged or hostile file -- truncated,
flipped bytes, edited header, wrong dtypes or shapes, missing or extra keys or
members, a pickle or other file renamed to ``.npz``, a zip bomb -- raises
``ValueError`` naming what is wrong.  Memory: the file itself, plus arrays no
larger than their members declare, each declaration checked against the shape
the header implies and against its compressed size before anything is
decompressed (deflate expands at most 1032 times); the header is at most
:data:`MAX_HEADER_BYTES`.  Every array is checked against the header and the
others (dtype, shape, index ranges, finite weights, sorted label sets), so a
loaded model cannot make the kernels read out of bounds or predict from
inconsistent data.

:func:`save` is atomic for paths: the file is written under a temporary name in
the same directory and renamed over ``path``, so an interrupted or failed save
leaves the previous file intact and no temporary file behind.
"""
import io
import json
import math
import re

import numpy as np
from joblib import effective_n_jobs

from skfcrf._kernels.graph import COUPLING, IN_CHAIN, Graph
from skfcrf._version import __version__
from skfcrf.estimators._anchoring import anchors_record
from skfcrf.estimators._npz_io import NpzReader, atomic_write
from skfcrf.estimators._observations import ObservationEncoder
from skfcrf.inference import resolve_method
from skfcrf.model._labels import resolve_couplings
from skfcrf.model._layout import ParameterLayout

FORMAT = "skfcrf-model"
#: The format version :func:`save` writes.
VERSION = 2
#: The format versions :func:`load` reads.
KNOWN_VERSIONS = (1, 2)
#: Largest accepted JSON header (its Python objects take up to ~25 times more).
MAX_HEADER_BYTES = 8 * 2 ** 20

#: Constructor parameters kept out of ``params`` (saved separately, or not at all).
_NOT_PARAMS = ("forbidden_transitions", "forbidden_couplings", "random_state", "callback",
               "validation_scoring")
#: ``params`` every file of a version has (skfcrf 0.1.0's constructor for version 1).
_PARAMS = {
    1: ("sigma", "objective", "solver", "max_iter", "tol", "lbfgs_memory",
        "min_instance_freq", "unary_features", "transition_features", "coupling_features",
        "coupling", "inference", "bp_max_iter", "bp_tol", "batch_size", "eta0", "tau",
        "n_jobs", "verbose", "warm_start"),
}
_PARAMS[2] = _PARAMS[1] + ("early_stopping", "validation_fraction", "n_iter_no_change",
                           "validation_interval", "max_memory", "finetune_iter")
#: Header keys every file of a version has, and those it may have.
_KEYS_V1 = ("format", "version", "params", "forbidden_transitions", "forbidden_couplings",
            "random_state", "classes", "n_chains", "one_chain", "couplings", "encoder_kind",
            "n_input_columns", "n_features_in", "forbidden_edges", "loss_curve", "n_iter",
            "inference_stats")
_REQUIRED_KEYS = {1: _KEYS_V1,
                  2: _KEYS_V1 + ("skfcrf_version", "converged", "validation_scoring")}
_OPTIONAL_KEYS = {1: ("converged", "validation_scoring"),
                  2: ("segment_codec", "transitions", "anchors")}

_GRAPH_ARRAYS = ("graph_n_labels", "graph_edge_a", "graph_edge_b", "graph_edge_kind",
                 "graph_edge_tied")
_MEMBER = re.compile(r"(header|coef|feat_ptr|ent_col|graph_n_labels|graph_edge_a|graph_edge_b"
                     r"|graph_edge_kind|graph_edge_tied|observation_names|kept_columns"
                     r"|joint_states|state_from|state_to|marginal_temperatures"
                     r"|forbidden_(0|[1-9][0-9]{0,8})|backoff_(0|[1-9][0-9]{0,8}))")


# ---------------------------------------------------------------------- writing
def _json_label(label):
    if isinstance(label, (np.integer,)):
        return int(label)
    if isinstance(label, (np.floating,)):
        return float(label)
    if isinstance(label, np.str_):
        return str(label)
    if isinstance(label, (str, int, float, bool)):
        return label
    raise ValueError(f"cannot save label {label!r} of type {type(label).__name__}: "
                     "labels must be str, int, float or bool")


def _json_default(value):
    """numpy scalars in parameters (``max_iter=np.int64(5)``) as plain JSON numbers."""
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    raise TypeError(f"cannot save a value of type {type(value).__name__} in a model file")


def _encode_pairs_spec(spec):
    """JSON form of forbidden_transitions / forbidden_couplings (tuples -> lists).

    ``None`` or a string setting (``"auto"``, ``"unseen"``) as itself;
    ``{"pairs": [[a, b], ...]}`` (one-chain pairs); ``{"list": [pairs or null,
    ...]}`` (one entry per chain); ``{"dict": [[key, pairs or null], ...]}`` with
    ``key`` a chain index or an ``[i, j]`` chain pair.
    """
    if spec is None or isinstance(spec, str):
        return spec

    def pairs(items):
        return None if items is None else [[_json_label(a), _json_label(b)] for a, b in items]

    if isinstance(spec, dict):
        return {"dict": [[list(map(int, k)) if isinstance(k, tuple) else int(k), pairs(v)]
                         for k, v in spec.items()]}
    spec = list(spec)
    if spec and all(isinstance(p, (tuple, list)) and len(p) == 2
                    and not isinstance(p[0], (tuple, list, set)) for p in spec):
        return {"pairs": pairs(spec)}
    return {"list": [pairs(v) for v in spec]}


def _model_contents(est):
    """The header dict and the arrays of ``est``'s model file."""
    arrays = {
        "coef": est.coef_,
        "feat_ptr": est.layout_.feat_ptr,
        "ent_col": est.layout_.ent_col,
        "graph_n_labels": est.graph_.n_labels,
        "graph_edge_a": est.graph_.edge_a,
        "graph_edge_b": est.graph_.edge_b,
        "graph_edge_kind": est.graph_.edge_kind,
        "graph_edge_tied": est.graph_.edge_tied,
    }
    enc = est.encoder_
    if enc.kind == "names":
        arrays["observation_names"] = np.array(list(enc.names), dtype=str) if len(enc.names) \
            else np.zeros(0, dtype="<U1")
    else:
        arrays["kept_columns"] = enc.kept_columns
    for e, mask in est.forbidden_.items():
        arrays[f"forbidden_{e}"] = mask
    if getattr(est, "joint_states_", None) is not None:
        arrays["joint_states"] = np.asarray(est.joint_states_, dtype=np.int32)
    if est.layout_.n_state_pairs:
        arrays["state_from"] = est.layout_.state_from
        arrays["state_to"] = est.layout_.state_to
    for c, mask in est.layout_.backoff.items():
        arrays[f"backoff_{c}"] = mask
    temperatures = getattr(est, "marginal_temperatures_", None)
    if temperatures is not None and np.any(np.asarray(temperatures) != 1.0):
        arrays["marginal_temperatures"] = np.asarray(temperatures, dtype=np.float64)
    header = {
        "format": FORMAT,
        "version": VERSION,
        "skfcrf_version": __version__,
        "params": {k: v for k, v in est.get_params(deep=False).items() if k not in _NOT_PARAMS},
        "forbidden_transitions": _encode_pairs_spec(est.forbidden_transitions),
        "forbidden_couplings": _encode_pairs_spec(est.forbidden_couplings),
        "random_state": est.random_state if isinstance(est.random_state, (int, type(None))) else None,
        "classes": [[_json_label(v) for v in c] for c in est.classes_],
        "n_chains": int(est.n_chains_),
        "one_chain": bool(est._one_chain),
        "couplings": [list(map(int, p)) for p in est.couplings_],
        "encoder_kind": enc.kind,
        "n_input_columns": None if enc.n_input_columns is None else int(enc.n_input_columns),
        "n_features_in": int(est.n_features_in_),
        "forbidden_edges": sorted(int(e) for e in est.forbidden_),
        "loss_curve": [float(v) for v in est.loss_curve_],
        "n_iter": int(est.n_iter_),
        "converged": bool(est.converged_),
        "validation_scoring": (est.validation_scoring
                               if isinstance(est.validation_scoring, str) else None),
        "inference_stats": est.inference_stats_,
    }
    choice = getattr(est, "transitions_", None)
    if choice is not None:
        header["transitions"] = choice
    anchors = getattr(est, "anchors_", None)
    if anchors is not None:
        header["anchors"] = anchors
    if isinstance(header["params"].get("anchors"), tuple):
        header["params"]["anchors"] = list(header["params"]["anchors"])
    codec = getattr(est, "segment_codec_", None)
    if codec is not None:
        header["segment_codec"] = codec.to_dict()
    if isinstance(header["params"].get("coupling"), (list, tuple)):
        header["params"]["coupling"] = [list(map(int, p)) for p in header["params"]["coupling"]]
    return header, arrays


def _write_npz(fh, header, arrays):
    """Write the archive to the open binary file ``fh``."""
    blob = np.frombuffer(json.dumps(header, default=_json_default).encode("utf-8"),
                         dtype=np.uint8)
    np.savez_compressed(fh, header=blob, **arrays)


def save(est, target):
    """Write ``est`` to ``target``: a path (atomically) or a binary file object."""
    header, arrays = _model_contents(est)
    json.dumps(header, default=_json_default)   # fail before touching any file
    if hasattr(target, "write"):
        buffer = io.BytesIO()
        _write_npz(buffer, header, arrays)
        target.write(buffer.getvalue())
        return
    atomic_write(target, lambda fh: _write_npz(fh, header, arrays))


# ---------------------------------------------------------------------- reading
class _Invalid(ValueError):
    """A problem found in a model file (re-raised with the file's name)."""


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _require(condition, message):
    if not condition:
        raise _Invalid(message)


def _reject_duplicate_keys(pairs):
    obj = {}
    for key, value in pairs:
        _require(key not in obj, f"header: key {key!r} occurs twice in one object")
        obj[key] = value
    return obj


def _read_header(reader):
    _require("header" in reader, "not an skfcrf model file (no header)")
    size = reader.member_size("header")
    _require(size <= MAX_HEADER_BYTES + 128,
             f"header of {size} bytes exceeds the limit of {MAX_HEADER_BYTES}")
    blob = reader.read("header", "u", (None,), max_itemsize=1)
    try:
        header = json.loads(blob.tobytes().decode("utf-8"),
                            object_pairs_hook=_reject_duplicate_keys)
    except _Invalid:
        raise
    except (ValueError, RecursionError) as exc:
        raise _Invalid(f"not an skfcrf model file (header is not UTF-8 JSON: "
                       f"{type(exc).__name__}: {exc})") from None
    _require(isinstance(header, dict) and header.get("format") == FORMAT,
             "not an skfcrf model file (no skfcrf-model header)")
    version = header.get("version")
    _require(_is_int(version) and version >= 1, f"bad format version {version!r}")
    if version > VERSION:
        writer = header.get("skfcrf_version")
        by = f" (written by skfcrf {writer})" if isinstance(writer, str) else ""
        raise _Invalid(f"model file format version {version}{by} is newer than this skfcrf "
                       f"({__version__}) reads (format versions up to {VERSION}); "
                       "upgrade skfcrf to load it")
    _require(version in KNOWN_VERSIONS, f"unknown format version {version}")
    keys = set(header)
    missing = [k for k in _REQUIRED_KEYS[version] if k not in keys]
    _require(not missing, f"header (format version {version}) lacks {', '.join(missing)}")
    extra = sorted(keys - set(_REQUIRED_KEYS[version]) - set(_OPTIONAL_KEYS[version]))
    _require(not extra, f"header (format version {version}) has unknown keys {', '.join(extra)}")
    return header


def _check_label_list(labels, chain):
    _require(isinstance(labels, list) and labels, f"classes[{chain}] must be a non-empty list")
    for lab in labels:
        _require(isinstance(lab, (str, int, float)) and not (
            isinstance(lab, float) and not math.isfinite(lab)),
            f"classes[{chain}]: label {lab!r} is not a str, int, float or bool")
    try:
        ordered = all(a < b for a, b in zip(labels, labels[1:]))
    except TypeError:
        ordered = False
    _require(ordered, f"classes[{chain}] must be distinct labels of one kind in increasing order")


def _check_pairs(pairs, what):
    if pairs is None:
        return None
    _require(isinstance(pairs, list), f"{what} must be a list of label pairs")
    for p in pairs:
        _require(isinstance(p, list) and len(p) == 2
                 and all(isinstance(v, (str, int, float)) for v in p),
                 f"{what}: {p!r} is not a pair of labels")
    return [tuple(p) for p in pairs]


def _decode_pairs_spec(obj, what):
    """Inverse of :func:`_encode_pairs_spec`, checking the structure."""
    if obj is None:
        return None
    if isinstance(obj, str):
        _require(what == "forbidden_transitions" and obj in ("auto", "unseen", "backoff"),
                 f"{what} has an unknown setting {obj!r}")
        return obj
    _require(isinstance(obj, dict) and len(obj) == 1 and next(iter(obj)) in
             ("dict", "pairs", "list"), f"{what} has an unknown form")
    kind, body = next(iter(obj.items()))
    if kind == "pairs":
        return _check_pairs(body, what)
    _require(isinstance(body, list), f"{what} must hold a list")
    if kind == "list":
        return [_check_pairs(v, what) for v in body]
    out = {}
    for item in body:
        _require(isinstance(item, list) and len(item) == 2, f"{what}: bad entry {item!r}")
        key, pairs = item
        if isinstance(key, list):
            _require(len(key) == 2 and all(_is_int(v) for v in key),
                     f"{what}: bad chain pair {key!r}")
            key = tuple(key)
        else:
            _require(_is_int(key), f"{what}: bad chain {key!r}")
        out[key] = _check_pairs(pairs, what)
    return out


def _check_header_values(header, version):
    """Types and mutual consistency of the header's values."""
    classes = header["classes"]
    n_chains = header["n_chains"]
    _require(_is_int(n_chains) and n_chains >= 1, f"n_chains must be a positive int, got {n_chains!r}")
    _require(isinstance(classes, list) and len(classes) == n_chains,
             f"classes must be a list of {n_chains} label lists")
    for c, labels in enumerate(classes):
        _check_label_list(labels, c)
    _require(isinstance(header["one_chain"], bool), "one_chain must be a bool")
    _require(not header["one_chain"] or n_chains == 1, "one_chain is true but n_chains != 1")
    couplings = header["couplings"]
    _require(isinstance(couplings, list) and all(
        isinstance(p, list) and len(p) == 2 and all(_is_int(v) for v in p)
        and 0 <= p[0] < p[1] < n_chains for p in couplings),
        f"couplings must be [a, b] chain pairs with 0 <= a < b < {n_chains}")
    _require(couplings == sorted(couplings) and len({tuple(p) for p in couplings}) == len(couplings),
             "couplings must be sorted and distinct")
    _require(header["encoder_kind"] in ("names", "matrix"),
             f"encoder_kind must be 'names' or 'matrix', got {header['encoder_kind']!r}")
    n_features = header["n_features_in"]
    _require(_is_int(n_features) and n_features >= 0,
             f"n_features_in must be a non-negative int, got {n_features!r}")
    n_input = header["n_input_columns"]
    if header["encoder_kind"] == "names":
        _require(n_input is None, "n_input_columns must be null for a names model")
    else:
        _require(_is_int(n_input) and n_input >= n_features,
                 f"n_input_columns must be an int >= n_features_in, got {n_input!r}")
    edges = header["forbidden_edges"]
    n_edges = n_chains + len(couplings)
    _require(isinstance(edges, list) and all(_is_int(e) and 0 <= e < n_edges for e in edges)
             and edges == sorted(set(edges)),
             f"forbidden_edges must be distinct sorted edge indices below {n_edges}")
    rs = header["random_state"]
    _require(rs is None or (_is_int(rs) and 0 <= rs < 2 ** 32),
             f"random_state must be null or an int in [0, 2**32), got {rs!r}")
    _require(isinstance(header["loss_curve"], list)
             and all(_is_number(v) for v in header["loss_curve"]),
             "loss_curve must be a list of numbers")
    _require(_is_int(header["n_iter"]) and header["n_iter"] >= 0,
             f"n_iter must be a non-negative int, got {header['n_iter']!r}")
    _require(isinstance(header.get("converged", True), bool), "converged must be a bool")
    _require(header.get("validation_scoring") is None
             or isinstance(header["validation_scoring"], str),
             "validation_scoring must be a string or null")
    _require(isinstance(header.get("skfcrf_version", ""), str), "skfcrf_version must be a string")
    stats = header["inference_stats"]
    _require(isinstance(stats, dict) and all(
        v is None or isinstance(v, (str, int, float)) for v in stats.values()),
        "inference_stats must be an object of plain values")
    choice = header.get("transitions")      # files written before 2026-12-04 lack it
    n_chains = header["n_chains"]
    _require(choice is None or (
        isinstance(choice, dict)
        and set(choice) == {"world", "decoding", "unseen", "open", "new_rate", "reason"}
        and all(isinstance(choice[k], str) for k in ("world", "decoding", "reason"))
        and choice["decoding"] in ("seen", "allowed")
        and isinstance(choice["unseen"], list) and len(choice["unseen"]) == n_chains
        and all(_is_int(v) and v >= 0 for v in choice["unseen"])
        and isinstance(choice["open"], list)
        and all(_is_int(c) and 0 <= c < n_chains for c in choice["open"])
        and (choice["new_rate"] is None or (
            isinstance(choice["new_rate"], list) and len(choice["new_rate"]) == n_chains
            and all(_is_number(v) and 0 <= v <= 1 for v in choice["new_rate"])))),
        "transitions must be an object with world, decoding, unseen (a count per chain), "
        "open (chain indices), new_rate (a rate per chain or null) and reason")
    anchors = header.get("anchors")         # files written before 2026-12-04 lack it
    _require(anchors is None or (
        isinstance(anchors, dict) and set(anchors) == {"chains", "threshold", "heldout", "reason"}
        and _chain_list(anchors["chains"], n_chains)
        and _is_number(anchors["threshold"]) and 0 < anchors["threshold"] <= 1
        and isinstance(anchors["heldout"], dict)
        and all(isinstance(k, str) and _is_number(v) for k, v in anchors["heldout"].items())
        and isinstance(anchors["reason"], str)),
        "anchors must be an object with chains (distinct chain indices), threshold (in (0, 1]), "
        "heldout (an object of numbers) and reason")


def _chain_list(chains, n_chains):
    """Whether ``chains`` is a list of distinct chain indices below ``n_chains``."""
    return (isinstance(chains, list) and all(_is_int(c) and 0 <= c < n_chains for c in chains)
            and len(set(chains)) == len(chains))


def _estimator_from_header(cls, header, version):
    params = header["params"]
    _require(isinstance(params, dict), "params must be an object")
    allowed = set(cls._get_param_names()) - set(_NOT_PARAMS)
    missing = [k for k in _PARAMS[version] if k not in params]
    _require(not missing, f"params lack {', '.join(missing)}")
    unknown = sorted(set(params) - allowed)
    _require(not unknown, f"params has unknown parameters {', '.join(unknown)}")
    params = dict(params)
    _require(all(v is None or isinstance(v, (str, int, float)) for k, v in params.items()
                 if k not in ("coupling", "solver_options", "coupling_observations", "anchors")),
             "params must be plain values")
    anchors = params.get("anchors", "auto")
    _require(anchors is None or anchors == "auto" or (
        isinstance(anchors, list) and all(_is_int(c) for c in anchors)),
        "params anchors must be null, 'auto' or a list of chain indices")
    groups = params.get("coupling_observations")
    _require(groups is None or isinstance(groups, str) or (
        isinstance(groups, list) and all(isinstance(g, str) for g in groups)),
        "params coupling_observations must be null, a string or a list of strings")
    options = params.get("solver_options")
    _require(options is None or (isinstance(options, dict) and all(
        isinstance(v, (str, int, float)) for v in options.values())),
        "params solver_options must be null or an object of plain values")
    coupling = params.get("coupling")
    if isinstance(coupling, list):
        _require(all(isinstance(p, list) and len(p) == 2 and all(_is_int(v) for v in p)
                     for p in coupling), f"params coupling {coupling!r} is not a list of pairs")
        params["coupling"] = [tuple(p) for p in coupling]
    est = cls(**params, random_state=header["random_state"],
              validation_scoring=header.get("validation_scoring"),
              forbidden_transitions=_decode_pairs_spec(header["forbidden_transitions"],
                                                       "forbidden_transitions"),
              forbidden_couplings=_decode_pairs_spec(header["forbidden_couplings"],
                                                     "forbidden_couplings"))
    try:
        est._validate_params()
        resolve_couplings(est.coupling, header["n_chains"])
        effective_n_jobs(est.n_jobs)   # n_jobs=0 passes the constraint table, not joblib
    except ValueError as exc:  # sklearn's InvalidParameterError is a ValueError
        raise _Invalid(f"params: {exc}") from None
    return est


def _read_index(reader, key, shape, low, high):
    """Integer array ``key`` with values in ``[low, high)``, as int64."""
    arr = reader.read(key, "iu", shape)
    if arr.size:
        _require(int(arr.min()) >= low and int(arr.max()) < high,
                 f"array {key!r} has values outside [{low}, {high})")
    return arr.astype(np.int64)


def _read_graph(reader, header):
    n_labels = [len(c) for c in header["classes"]]
    n_chains = len(n_labels)
    couplings = header["couplings"]
    in_chain = [] if header["params"].get("transition_features") == "none" else [
        (c, c, IN_CHAIN) for c in range(n_chains)]
    n_edges = len(in_chain) + len(couplings)
    arrays = {k: _read_index(reader, k, (n_chains if k == "graph_n_labels" else n_edges,),
                             0, 2 ** 31) for k in _GRAPH_ARRAYS}
    _require(arrays["graph_n_labels"].tolist() == n_labels,
             f"graph_n_labels {arrays['graph_n_labels'].tolist()} does not match the "
             f"classes ({n_labels} labels)")
    tied = arrays["graph_edge_tied"]
    _require(bool(np.all(tied <= 1)), "graph_edge_tied must be 0 or 1")
    expected = in_chain + [(a, b, COUPLING) for a, b in couplings]
    got = list(zip(arrays["graph_edge_a"].tolist(), arrays["graph_edge_b"].tolist(),
                   arrays["graph_edge_kind"].tolist()))
    _require(got == expected, "the graph's edges do not match n_chains and couplings")
    # the kernels (and Graph.edge_size) count labels and score columns in int32
    sizes = [n_labels[a] * n_labels[b] for a, b, _ in expected]
    width = sum(n_labels) + sum(k for k, t in zip(sizes, tied.tolist()) if not t)
    largest = max(sizes, default=0)
    _require(largest < 2 ** 31 and width < 2 ** 31,
             f"a model of {largest} label pairs in one template and {width} score "
             "columns exceeds the kernels' 2**31 limit")
    return Graph.build(n_labels, [(a, b, k, int(t)) for (a, b, k), t in
                                  zip(expected, tied.tolist())])


def _read_encoder(reader, header):
    n_features = header["n_features_in"]
    enc = ObservationEncoder()
    enc.kind = header["encoder_kind"]
    enc.n_input_columns = header["n_input_columns"]
    if enc.kind == "names":
        names = reader.read("observation_names", "U", (n_features,), max_itemsize=None)
        enc.names = names.astype(object)
        enc.vocabulary = {name: k for k, name in enumerate(enc.names)}
        _require(len(enc.vocabulary) == n_features, "observation_names are not distinct")
        _require("kept_columns" not in reader, "a names model has no kept_columns")
    else:
        kept = _read_index(reader, "kept_columns", (n_features,), 0, enc.n_input_columns)
        _require(bool(np.all(np.diff(kept) > 0)), "kept_columns must be increasing")
        _require("observation_names" not in reader, "a matrix model has no observation_names")
        enc.kept_columns = kept
    return enc


def _read_layout(reader, graph, n_features):
    feat_ptr = _read_index(reader, "feat_ptr", (n_features + 1,), 0, 2 ** 62)
    _require(feat_ptr[0] == 0 and bool(np.all(np.diff(feat_ptr) >= 0)),
             "feat_ptr must start at 0 and never decrease")
    n_table = int(feat_ptr[-1])
    _require(n_features < 2 ** 31, f"{n_features} observations exceed the kernels' "
             "2**31 limit")
    probe = ParameterLayout(graph, n_features, np.zeros(n_features + 1, dtype=np.int64),
                            np.zeros(0, dtype=np.int32))
    ent_col = _read_index(reader, "ent_col", (n_table,), 0, probe.score_width)
    state_from, state_to = _read_state_pairs(reader, graph)
    backoff = {}
    for key in reader.members:
        if key.startswith("backoff_"):
            c = int(key[len("backoff_"):])
            _require(c < graph.n_chains, f"{key}: chain {c} out of range")
            _require(graph.edge_tied[c], f"{key}: chain {c}'s transitions are not tied")
            L = int(graph.n_labels[c])
            backoff[c] = reader.read(key, "b", (L, L), max_itemsize=1)
    return ParameterLayout(graph, n_features, feat_ptr, ent_col, state_from, state_to,
                           backoff)


def _read_state_pairs(reader, graph):
    present = [k in reader for k in ("state_from", "state_to")]
    if not any(present):
        return None, None
    _require(all(present), "state_from and state_to go together")
    ends = []
    for key in ("state_from", "state_to"):
        pairs = reader.read(key, "iu", (None, graph.n_chains))
        _require(pairs.shape[0] >= 1, f"{key} is empty")
        for c in range(graph.n_chains):
            _require(int(pairs[:, c].min()) >= 0 and int(pairs[:, c].max()) < graph.n_labels[c],
                     f"{key}: label indices of chain {c} out of range")
        ends.append(pairs.astype(np.int32))
    _require(ends[0].shape == ends[1].shape, "state_from and state_to differ in shape")
    return ends


def _read_forbidden(reader, header, graph):
    forbidden = {}
    for e in header["forbidden_edges"]:
        shape = (int(graph.n_labels[graph.edge_a[e]]), int(graph.n_labels[graph.edge_b[e]]))
        forbidden[e] = reader.read(f"forbidden_{e}", "b", shape, max_itemsize=1)
    stray = [k for k in reader.members if k.startswith("forbidden_")
             and int(k[len("forbidden_"):]) not in forbidden]
    _require(not stray, f"arrays {', '.join(stray)} are not listed in forbidden_edges")
    return forbidden


def _read_joint_states(reader, graph):
    if "joint_states" not in reader:
        return None
    states = reader.read("joint_states", "iu", (None, graph.n_chains))
    _require(states.shape[0] >= 1, "joint_states is empty")
    for c in range(graph.n_chains):
        _require(int(states[:, c].min()) >= 0 and int(states[:, c].max()) < graph.n_labels[c],
                 f"joint_states: label indices of chain {c} out of range")
    states = states.astype(np.int32)
    diff = np.diff(states.astype(np.int64), axis=0)
    first = np.argmax(diff != 0, axis=1)
    leading = diff[np.arange(len(diff)), first] if len(diff) else diff[:, 0]
    _require(bool(np.all(leading > 0)), "joint_states must be distinct rows in increasing order")
    return np.ascontiguousarray(states)


def _read_temperatures(reader, n_chains):
    if "marginal_temperatures" not in reader:
        return np.ones(n_chains)
    temperatures = reader.read("marginal_temperatures", "f", (n_chains,))
    _require(temperatures.dtype == np.float64,
             f"marginal_temperatures has dtype {temperatures.dtype}, expected float64")
    _require(bool(np.all(np.isfinite(temperatures)) and np.all(temperatures > 0)),
             "marginal_temperatures must be finite and positive")
    return temperatures.astype(np.float64)


def _allowed_member(key):
    return _MEMBER.fullmatch(key) is not None


def load(cls, source):
    """Read a model written by :func:`save` from a path or binary file object."""
    name = repr(getattr(source, "name", "<file object>")) if hasattr(source, "read") \
        else str(source)
    try:
        reader = NpzReader(source, name, _allowed_member)
        header = _read_header(reader)
        version = header["version"]
        _check_header_values(header, version)
        est = _estimator_from_header(cls, header, version)
        graph = _read_graph(reader, header)
        enc = _read_encoder(reader, header)
        layout = _read_layout(reader, graph, header["n_features_in"])
        coef = reader.read("coef", "f", (layout.n_params,))
        _require(coef.dtype == np.float64, f"coef has dtype {coef.dtype}, expected float64")
        _require(bool(np.all(np.isfinite(coef))), "coef has non-finite weights")
        forbidden = _read_forbidden(reader, header, graph)
        joint_states = _read_joint_states(reader, graph)
        temperatures = _read_temperatures(reader, header["n_chains"])
        try:
            resolve_method(est.inference, graph, joint_states)
        except ValueError as exc:
            raise _Invalid(f"params inference={est.inference!r}: {exc}") from None
    except _Invalid as exc:
        raise ValueError(f"{name}: {exc}") from None
    est.classes_ = [np.array(c, dtype=object) for c in header["classes"]]
    est.n_chains_ = header["n_chains"]
    est._one_chain = header["one_chain"]
    est.couplings_ = [tuple(p) for p in header["couplings"]]
    est.graph_ = graph
    est.encoder_ = enc
    est.observation_names_ = enc.names
    est.n_features_in_ = header["n_features_in"]
    est.layout_ = layout
    est.coef_ = coef
    # files written before joint decoding existed have none: "auto" then decodes with TRP
    est.joint_states_ = joint_states
    est.forbidden_ = forbidden
    est.loss_curve_ = [float(v) for v in header["loss_curve"]]
    est.n_iter_ = header["n_iter"]
    est.converged_ = header.get("converged", True)   # files of skfcrf 0.1.0 lack it
    est.inference_stats_ = header["inference_stats"]
    est.transitions_ = header.get("transitions")
    est.anchors_ = header.get("anchors") or anchors_record(
        [], "no anchor: the model file was written before anchors existed")
    est.marginal_temperatures_ = temperatures
    est.segment_codec_ = _read_segment_codec(header, est)
    return est


def _read_segment_codec(header, est):
    """The segment codec of a ``segment_encoding`` model, or None."""
    d = header.get("segment_codec")
    if est.segment_encoding == "bio":
        return None
    from skfcrf.structure._encoded import SegmentCodec

    try:
        codec = SegmentCodec.from_dict(d)
        if codec.scheme != est.segment_encoding or len(codec.notations) != est.n_chains_:
            raise ValueError("it does not match the model")
    except (TypeError, KeyError, ValueError) as exc:
        raise ValueError(f"model file: segment_encoding={est.segment_encoding!r} but its "
                         f"segment codec is missing or invalid ({exc})") from None
    return codec
