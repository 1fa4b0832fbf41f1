"""Safe persistence of a fitted FactorialCRF: numpy arrays plus a JSON header in one .npz.

Loading uses ``np.load(allow_pickle=False)`` and ``json.loads`` only, so a model
file cannot execute code.
"""
import json
import zipfile

import numpy as np

from skfcrf._bp.graph import Graph
from skfcrf.estimators._model import ParameterLayout
from skfcrf.estimators._observations import ObservationEncoder

FORMAT = "skfcrf-model"
VERSION = 1


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


def _encode_pairs_spec(spec):
    """JSON form of forbidden_transitions / forbidden_couplings (tuples -> lists)."""
    if spec is None or isinstance(spec, str):         # None, "auto", "unseen"
        return spec

    def pairs(items):
        return None if items is None else [[_json_label(a), _json_label(b)] for a, b in items]

    if isinstance(spec, dict):
        return {"dict": [[list(k) if isinstance(k, tuple) else k, pairs(v)] for k, v in spec.items()]}
    spec = list(spec)
    if spec and all(isinstance(p, (tuple, list)) and len(p) == 2
                    and not isinstance(p[0], (tuple, list, set)) for p in spec):
        return {"pairs": pairs(spec)}
    return {"list": [pairs(v) for v in spec]}


def _decode_pairs_spec(obj):
    if obj is None or isinstance(obj, str):            # None, "auto", "unseen"
        return obj

    def pairs(items):
        return None if items is None else [tuple(p) for p in items]

    if "dict" in obj:
        return {tuple(k) if isinstance(k, list) else k: pairs(v) for k, v in obj["dict"]}
    if "pairs" in obj:
        return pairs(obj["pairs"])
    return [pairs(v) for v in obj["list"]]


def save(est, path):
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
    header = {
        "format": FORMAT,
        "version": VERSION,
        "params": {k: v for k, v in est.get_params(deep=False).items()
                   if k not in ("forbidden_transitions", "forbidden_couplings", "random_state",
                                "callback", "validation_scoring")},
        "forbidden_transitions": _encode_pairs_spec(est.forbidden_transitions),
        "forbidden_couplings": _encode_pairs_spec(est.forbidden_couplings),
        "random_state": est.random_state if isinstance(est.random_state, (int, type(None))) else None,
        "classes": [[_json_label(v) for v in c] for c in est.classes_],
        "n_chains": est.n_chains_,
        "one_chain": bool(est._one_chain),
        "couplings": [list(map(int, p)) for p in est.couplings_],
        "encoder_kind": enc.kind,
        "n_input_columns": enc.n_input_columns,
        "n_features_in": int(est.n_features_in_),
        "forbidden_edges": sorted(int(e) for e in est.forbidden_),
        "loss_curve": [float(v) for v in est.loss_curve_],
        "n_iter": int(est.n_iter_),
        "converged": bool(est.converged_),
        "validation_scoring": (est.validation_scoring
                               if isinstance(est.validation_scoring, str) else None),
        "inference_stats": est.inference_stats_,
    }
    if isinstance(header["params"].get("coupling"), (list, tuple)):
        header["params"]["coupling"] = [list(map(int, p)) for p in header["params"]["coupling"]]
    blob = np.frombuffer(json.dumps(header).encode("utf-8"), dtype=np.uint8)
    with open(path, "wb") as fh:
        np.savez_compressed(fh, header=blob, **arrays)


def load(cls, path):
    if not zipfile.is_zipfile(path):
        raise ValueError(f"{path}: not an skfcrf model file (expected a .npz written by save)")
    with np.load(path, allow_pickle=False) as data:
        try:
            header = json.loads(bytes(data["header"]).decode("utf-8"))
        except (KeyError, ValueError) as exc:
            raise ValueError(f"{path}: not an skfcrf model file ({exc})") from None
        if header.get("format") != FORMAT:
            raise ValueError(f"{path}: not an skfcrf model file")
        if header.get("version") != VERSION:
            raise ValueError(f"{path}: unsupported model version {header.get('version')}")
        arrays = {k: data[k] for k in data.files if k != "header"}
    params = dict(header["params"])
    if isinstance(params.get("coupling"), list):
        params["coupling"] = [tuple(p) for p in params["coupling"]]
    est = cls(**params, random_state=header["random_state"],
              validation_scoring=header.get("validation_scoring"),
              forbidden_transitions=_decode_pairs_spec(header["forbidden_transitions"]),
              forbidden_couplings=_decode_pairs_spec(header["forbidden_couplings"]))
    est.classes_ = [np.array(c, dtype=object) for c in header["classes"]]
    est.n_chains_ = header["n_chains"]
    est._one_chain = header["one_chain"]
    est.couplings_ = [tuple(p) for p in header["couplings"]]
    graph = Graph.build(
        arrays["graph_n_labels"],
        zip(arrays["graph_edge_a"], arrays["graph_edge_b"], arrays["graph_edge_kind"],
            arrays["graph_edge_tied"]),
    )
    est.graph_ = graph
    enc = ObservationEncoder()
    enc.kind = header["encoder_kind"]
    enc.n_input_columns = header["n_input_columns"]
    if enc.kind == "names":
        enc.names = arrays["observation_names"].astype(object)
        enc.vocabulary = {name: k for k, name in enumerate(enc.names)}
        n_features = len(enc.names)
    else:
        enc.kept_columns = arrays["kept_columns"]
        n_features = len(enc.kept_columns)
    est.encoder_ = enc
    est.observation_names_ = enc.names
    est.n_features_in_ = header["n_features_in"]
    est.layout_ = ParameterLayout(graph, n_features, arrays["feat_ptr"], arrays["ent_col"])
    est.coef_ = arrays["coef"]
    # files written before joint decoding existed have none: "auto" then decodes with TRP
    est.joint_states_ = arrays.get("joint_states")
    est.forbidden_ = {e: arrays[f"forbidden_{e}"] for e in header["forbidden_edges"]}
    est.loss_curve_ = header["loss_curve"]
    est.n_iter_ = header["n_iter"]
    est.converged_ = bool(header.get("converged", True))   # files written before 0.2 lack it
    est.inference_stats_ = header["inference_stats"]
    return est
