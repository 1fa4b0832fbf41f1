"""Files of the ``skfcrf`` commands: CoNLL-style data files, and a model with its
feature configuration.

A model written by ``skfcrf train`` is two files: ``PATH`` (the CRF as written by
:meth:`skfcrf.FactorialCRF.save`, a ``.npz`` archive of arrays and JSON) and
``PATH.features.json``, the feature configuration::

    {"format": "skfcrf-cli-features", "version": 1,
     "attributes": [...], "label_columns": N, "sep": "whitespace" | "tab" | "space",
     "features": [...], "lowercase": bool,
     "ngram_window": W, "concept_window": W, "position_bins": N, "affix_length": N,
     "lexicon": [[phrase, class], ...],          # the last two optional
     "chain_names": [name, ...]}                 # optional: one per label column

from which :func:`features_from_config` rebuilds the observation pipeline.  The chain
names describe the label columns, as the attributes describe the attribute columns;
files written before they were stored have none and read as ``chain 0``, ``chain 1``, ...
(:func:`config_chain_names`).
"""
import json
import os
import zipfile

from skfcrf.cli._common import FEATURE_KINDS, SEPARATORS, CLIError

FEATURES_SUFFIX = ".features.json"
FEATURES_FORMAT = "skfcrf-cli-features"
FEATURES_VERSION = 1


def features_from_config(config):
    """The feature union of a feature configuration (see the module docstring)."""
    from skfcrf.transformers import make_dictation_features

    lexicon = None
    if config.get("lexicon") is not None:
        lexicon = {}
        for phrase, label in config["lexicon"]:
            lexicon.setdefault(phrase, []).append(label)
    return make_dictation_features(
        config["attributes"], config["features"], lowercase=bool(config.get("lowercase")),
        ngram_window=int(config.get("ngram_window", 2)),
        concept_window=int(config.get("concept_window", 10)),
        position_bins=int(config.get("position_bins", 8)),
        affix_length=int(config.get("affix_length", 4)), lexicon=lexicon)


def features_path(model_path):
    return os.fspath(model_path) + FEATURES_SUFFIX


def load_crf(model_path):
    """The FactorialCRF saved at ``model_path``; CLIError for a missing or foreign file."""
    from skfcrf import FactorialCRF

    if not os.path.isfile(model_path):
        raise CLIError(f"model file not found: {model_path}")
    if not zipfile.is_zipfile(model_path):
        raise CLIError(f"invalid model file {model_path}: not an skfcrf model (expected the .npz "
                       "archive written by 'skfcrf train')")
    try:
        crf = FactorialCRF.load(model_path)
    except Exception as exc:  # np.load/zip/json/key errors of a foreign or damaged file
        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        if detail.startswith(model_path):
            raise CLIError(f"invalid model file {detail}") from None
        raise CLIError(f"invalid model file {model_path}: {detail}") from None
    return crf


def load_model(model_path):
    """(FactorialCRF, feature config) of a model written by ``skfcrf train``."""
    if not os.path.isfile(model_path):
        raise CLIError(f"model file not found: {model_path}")
    fpath = features_path(model_path)
    if not os.path.isfile(fpath):
        raise CLIError(f"feature configuration not found: {fpath} (written by 'skfcrf train' "
                       "next to the model)")
    crf = load_crf(model_path)
    try:
        with open(fpath, encoding="utf-8") as fh:
            config = json.load(fh)
    except (OSError, ValueError) as exc:
        raise CLIError(f"invalid feature configuration {fpath}: {exc}") from None
    if not isinstance(config, dict) or config.get("format") != FEATURES_FORMAT:
        raise CLIError(f"invalid feature configuration {fpath}: not written by 'skfcrf train'")
    if config.get("version") != FEATURES_VERSION:
        raise CLIError(f"invalid feature configuration {fpath}: unsupported version "
                       f"{config.get('version')!r}")
    try:
        attrs = config["attributes"]
        feats = config["features"]
        n_labels = config["label_columns"]
        if not (isinstance(attrs, list) and attrs and all(isinstance(a, str) for a in attrs)):
            raise ValueError("attributes")
        if not (isinstance(feats, list) and all(f in FEATURE_KINDS for f in feats)):
            raise ValueError("features")
        if not isinstance(n_labels, int) or n_labels < 1:
            raise ValueError("label_columns")
        if config.get("sep") not in SEPARATORS:
            raise ValueError("sep")
        lexicon = config.get("lexicon")
        if ("lexicon" in feats) != (lexicon is not None) or lexicon is not None and not (
                isinstance(lexicon, list) and all(
                    isinstance(e, list) and len(e) == 2 and all(isinstance(v, str) for v in e)
                    for e in lexicon)):
            raise ValueError("lexicon")
        if "chain_names" in config and check_chain_names(config["chain_names"], n_labels):
            raise ValueError("chain_names")
    except (KeyError, ValueError) as exc:
        raise CLIError(f"invalid feature configuration {fpath}: bad or missing "
                       f"{exc.args[0]!r}") from None
    if n_labels != crf.n_chains_:
        raise CLIError(f"feature configuration {fpath} describes {n_labels} label columns but "
                       f"the model has {crf.n_chains_} chains")
    return crf, config


def generic_chain_names(n_chains):
    """``["chain 0", "chain 1", ...]``: the names of chains nobody named."""
    return [f"chain {c}" for c in range(n_chains)]


def check_chain_names(names, n_chains):
    """Why ``names`` cannot name ``n_chains`` chains (a phrase), or None when they can."""
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        return "expected a list of names"
    if len(names) != n_chains:
        return f"{len(names)} names for {n_chains} label column{'s' if n_chains != 1 else ''}"
    if any(not n.strip() or n != n.strip() for n in names):
        return "a name is empty or starts or ends with a space"
    if any("," in n for n in names):
        return "a name contains a comma"
    if len(set(names)) != len(names):
        return "the names are not distinct"
    return None


def config_chain_names(config, n_chains):
    """The chain names of a (checked) feature configuration; ``chain k`` without any."""
    names = config.get("chain_names")
    return list(names) if names is not None else generic_chain_names(n_chains)


def stored_chain_names(model_path, n_chains):
    """The chain names stored beside ``model_path`` (its ``PATH.features.json``), or
    ``chain k`` when there is no such file or it names no chains: for commands that
    need the model only (``inspect``)."""
    try:
        with open(features_path(model_path), encoding="utf-8") as fh:
            config = json.load(fh)
    except (OSError, ValueError):
        return generic_chain_names(n_chains)
    names = config.get("chain_names") if isinstance(config, dict) else None
    if names is None or check_chain_names(names, n_chains):
        return generic_chain_names(n_chains)
    return list(names)


def chain_title(chain, name):
    """``chain 0 (sentence)``, or ``chain 0`` for a chain named ``chain 0``."""
    return f"chain {chain}" if name == f"chain {chain}" else f"chain {chain} ({name})"


def looks_like_dictations(y):
    """Whether label sequences ``y`` follow the dictation scheme of
    :func:`skfcrf.datasets.make_dictations`: three chains, ``BeginSentence``/``Sentence``
    labels on chain 0 and ``Begin<Type>`` segments on chains 1 and 2 (paragraphs,
    sections)."""
    import numpy as np

    labels = [set(), set(), set()]
    for seq in y:
        a = np.asarray(seq, dtype=object)
        if a.ndim != 2 or a.shape[1] != 3:
            return False
        for c in range(3):
            labels[c].update(str(v) for v in a[:, c])
    return (bool(labels[0] & {"BeginSentence", "Sentence"})
            and all(any(lab.startswith("Begin") for lab in labels[c]) for c in (1, 2)))


def default_chain_names(y, n_chains):
    """Chain names for training data without ``--chain-names``: those of
    :data:`skfcrf.datasets.DICTATION_CHAINS` for dictation-like labels
    (:func:`looks_like_dictations`), ``chain 0``, ``chain 1``, ... otherwise."""
    from skfcrf.datasets import DICTATION_CHAINS

    if n_chains == len(DICTATION_CHAINS) and looks_like_dictations(y):
        return list(DICTATION_CHAINS)
    return generic_chain_names(n_chains)


def read_data(path, attributes, n_label_columns, sep):
    from skfcrf.datasets import read_conll

    if not os.path.exists(path):
        raise CLIError(f"data file not found: {path}")
    if os.path.isdir(path):
        raise CLIError(f"data path is a directory, not a file: {path}")
    try:
        X, y = read_conll(path, n_label_columns=n_label_columns, attributes=tuple(attributes),
                          sep=SEPARATORS[sep])
    except UnicodeDecodeError as exc:
        raise CLIError(f"{path}: not a UTF-8 text file ({exc.reason} at byte "
                       f"{exc.start})") from None
    except ValueError as exc:
        raise CLIError(f"malformed data file {exc}") from None
    if not X:
        raise CLIError(f"{path}: no sequences found (empty file?)")
    if len(attributes) == 1 and attributes[0] != "word":
        # transformers read plain str tokens as the "word" attribute
        X = [[{attributes[0]: t} for t in seq] for seq in X]
    return X, y


def infer_label_columns(path, n_attributes, sep):
    """The label columns of a training file when ``--label-columns`` is not given: every
    column after the ``n_attributes`` attribute columns, when every line has as many
    columns; a one-line error otherwise.  1 when the file cannot be read (``read_data``
    then says why)."""
    if not os.path.isfile(path):
        return 1
    counts = {}
    try:
        with open(path, encoding="utf-8") as fh:
            for number, line in enumerate(fh, 1):
                line = line.rstrip("\r\n")
                if line.strip():
                    s = SEPARATORS[sep]
                    counts.setdefault(len(line.split() if s is None else line.split(s)), number)
                    if len(counts) > 1:
                        break
    except (UnicodeDecodeError, OSError):
        return 1
    if not counts:
        return 1
    if len(counts) > 1:
        (a, line_a), (b, line_b) = counts.items()
        raise CLIError(f"{path}: line {line_a} has {a} columns and line {line_b} {b}; give "
                       "--label-columns (the number of label columns at the end of every line)",
                       2)
    n_cols = next(iter(counts))
    if n_cols <= n_attributes:
        raise CLIError(f"{path} has {n_cols} column{'s' if n_cols != 1 else ''}, no label "
                       f"column after the {n_attributes} attribute column"
                       f"{'s' if n_attributes != 1 else ''} (--attributes)", 2)
    return n_cols - n_attributes


def count_columns(path, sep):
    """Number of columns on the first non-blank line of a column file."""
    try:
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                line = line.rstrip("\r\n")
                if line.strip():
                    s = SEPARATORS[sep]
                    return len(line.split() if s is None else line.split(s))
    except UnicodeDecodeError as exc:
        raise CLIError(f"{path}: not a UTF-8 text file ({exc.reason} at byte "
                       f"{exc.start})") from None
    except OSError as exc:
        raise CLIError(f"cannot read {path}: {exc.strerror}") from None
    return 0
