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

from which :func:`features_from_config` rebuilds the observation pipeline (``features``
lists the kinds ``train`` used: those ``--features auto`` chose, never ``auto``).  The chain
names describe the label columns, as the attributes describe the attribute columns;
files written before they were stored have none and read as ``chain 0``, ``chain 1``, ...
(:func:`config_chain_names`).  The two files are checked against each other when loaded
(:func:`check_features_make_model_groups`) and once the configuration has made the data's
observations (:func:`check_observations`): a features file edited or belonging to another
model is a one-line error, not a decoding on observations the model never learnt.  Text
files are read as ``utf-8-sig``: a byte-order mark is no part of their text.
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


# ----------------------------------------------------------------------------- output paths
def check_writable(path, what, *, replace=False, directory=False, create=False):
    """CLIError (status 2) unless ``path`` can be written: checked when a command starts,
    before its long work (training, decoding, aligning), so that an unwritable output
    fails at once and not after it.

    A file is writable when it exists and may be written, or when it does not exist and
    its directory exists and may be written (and searched).  A file written through a
    temporary file renamed over it (``replace``: the model, ``prepare``'s output) needs
    its directory writable even when the file exists (the directory of its target, for a
    symbolic link).  Permissions are checked with :func:`os.access` (the real user's; a
    read-only file system counts as not writable), then by trying: an existing regular
    file is opened for appending (nothing is written, nothing truncated) and in a
    directory a temporary file is created and removed, which catches what the permission
    bits do not say (access control lists, file systems such as ``/proc``).

    Parameters
    ----------
    path : str or path-like
        The output file or directory, as given on the command line.
    what : str
        How the message names it (``"the model"``, ``"--output"``).
    replace : bool, default=False
        The file is written to a temporary file in its directory, then renamed.
    directory : bool, default=False
        ``path`` is a directory the command writes files into; it must exist, unless
        ``create``.
    create : bool, default=False
        With ``directory``: a missing directory is created by the command, so its
        parent must be writable.

    Raises
    ------
    CLIError
        Status 2, naming the path and why it cannot be written: a directory where a
        file is expected (or the reverse), a missing directory, a path through a file,
        or no permission.
    """
    path = os.fspath(path)
    full = os.path.abspath(path)

    def fail(reason):
        return CLIError(f"cannot write {what} {path}: {reason}", 2)

    if directory:
        if os.path.isdir(full):
            if not os.access(full, os.W_OK | os.X_OK):
                raise fail("the directory is not writable (permission denied or a "
                           "read-only file system)")
            _try_directory(full, lambda why: fail(f"the directory is not writable ({why})"))
            return
        if os.path.exists(full):
            raise fail("it is a file, not a directory")
        if not create:
            _check_ancestors(full, fail)
            raise fail("the directory does not exist")
    else:
        if os.path.isdir(full):
            raise fail("it is a directory")
        if replace:
            full = os.path.realpath(full)   # the temporary file goes beside the target
        elif os.path.exists(full):
            if not os.access(full, os.W_OK):
                raise fail("the file is read-only (permission denied or a read-only file "
                           "system)")
            if os.path.isfile(full):   # not a pipe or a device, which may block or refuse
                try:
                    with open(full, "ab"):
                        pass
                except OSError as exc:
                    raise fail(f"the file cannot be written ({exc.strerror or exc})") from None
            return
    parent = os.path.dirname(full)
    _check_ancestors(parent, fail)
    if not os.path.isdir(parent):
        raise fail(f"the directory does not exist: {parent}")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise fail(f"the directory {parent} is not writable (permission denied or a "
                   "read-only file system)")
    _try_directory(parent, lambda why: fail(f"the directory {parent} is not writable ({why})"))


def _try_directory(directory, fail):
    """Create and remove a temporary file in ``directory``; ``fail(reason)`` if it cannot."""
    import tempfile

    try:
        fd, tmp = tempfile.mkstemp(prefix=".skfcrf-write-check-", dir=directory)
    except OSError as exc:
        raise fail(exc.strerror or str(exc)) from None
    os.close(fd)
    try:
        os.unlink(tmp)
    except OSError:
        pass


def _check_ancestors(path, fail):
    """``fail(...)`` when a parent of ``path`` (or ``path`` itself) is a file, not a
    directory: such a path can never be created."""
    probe = path
    while probe and not os.path.exists(probe):
        up = os.path.dirname(probe)
        if up == probe:
            return
        probe = up
    if probe and os.path.exists(probe) and not os.path.isdir(probe):
        raise fail(f"{probe} is a file, not a directory")


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
        with open(fpath, encoding="utf-8-sig") as fh:
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
    check_features_make_model_groups(crf, config, model_path)
    return crf, config


# ----------------------------------------------------------------------------- model vs features
#: feature kinds whose transformer names every token with each of its templates (n-gram
#: windows pad the sequence edges), so that a template of the model that the features file
#: does not make on the data cannot be one the data merely lacks
_EVERY_TOKEN_KINDS = ("ngram_", "position", "shape")


def _template(name):
    """``ngram_word__word@-1`` of ``ngram_word__word@-1=the``: an observation name without
    its value (the value, a word, may be new in any data; the template may not)."""
    return name.partition("=")[0]


def _group(template):
    """``ngram_word`` of ``ngram_word__word@-1``: the union member that makes the name."""
    return template.partition("__")[0]


def _model_templates(crf):
    """``{group: {template, ...}}`` of the model's observation names (None without names)."""
    names = getattr(crf, "observation_names_", None)
    if names is None or len(names) == 0:
        return None
    templates = {}
    for t in {_template(str(n)) for n in names}:
        templates.setdefault(_group(t), set()).add(t)
    return templates


def _quoted(items, limit=4):
    items = sorted(items)
    more = f" and {len(items) - limit} more" if len(items) > limit else ""
    return ", ".join(repr(i) for i in items[:limit]) + more


def _mismatch(model_path, what):
    """The one-line error for a features file that does not belong to its model."""
    fpath = features_path(model_path)
    return CLIError(f"feature configuration {fpath} does not match the model {model_path}: {what}; "
                    "use the features file 'skfcrf train' wrote with this model (or retrain the "
                    "model with these features)")


def check_features_make_model_groups(crf, config, model_path):
    """CLIError unless the feature configuration can make the model's observations.

    From the configuration alone (no data): every group of the model's observation names
    (the union member before ``__``: ``ngram_word``, ``concepts``, ``position``, ...) must
    be a member of the configuration's union, and a configuration that lowercases its
    n-grams cannot belong to a model whose n-gram values have capitals.  Extra members of
    the configuration are harmless (their observations are unknown to the model, so
    ignored) and pass.  Models without observation names (fitted on matrices) pass.

    Parameters
    ----------
    crf : FactorialCRF
        The loaded model (its ``observation_names_``).
    config : dict
        The checked feature configuration (:func:`load_model`).
    model_path : str
        Names the model and its features file in the error.

    Raises
    ------
    CLIError
        Naming the groups the configuration cannot make, or the capitalised n-gram.
    """
    model = _model_templates(crf)
    if model is None:
        return
    made = [name for name, _ in features_from_config(config).transformer_list]
    missing = set(model) - set(made)
    if missing:
        raise _mismatch(model_path, f"the model has observations of {_quoted(missing)}, which "
                        f"the features file cannot make (its features {','.join(config['features'])} "
                        f"on attributes {','.join(config['attributes'])} make {_quoted(made)})")
    if config.get("lowercase"):
        from skfcrf.transformers import BOS, EOS

        for name in getattr(crf, "observation_names_", ()):
            name = str(name)
            if name.startswith("ngram_"):
                value = name.partition("=")[2]
                if value not in (BOS, EOS) and value != value.lower():
                    raise _mismatch(model_path, "the features file lowercases the n-grams "
                                    f"(\"lowercase\": true) but the model's have capitals ({name!r})")


def check_observations(crf, Xf, model_path):
    """CLIError if the observations a feature configuration made on the data (``Xf``, the
    transformed sequences) do not fit the model.

    Judged on the observation *templates* (the names without their values,
    ``ngram_word__word@-1``; see :func:`_template`), never on the values, so data whose
    words are all new passes: for each group of the model's names that the data has
    observations of, at least one of its templates must be the model's (``position__relpos4``
    against ``position__relpos8`` is a mismatch); and for the kinds that name every token
    with each of their templates (n-gram windows, position, shape) every template of the
    model must be made (an n-gram window narrower than the model's is a mismatch).

    Parameters
    ----------
    crf : FactorialCRF
        The loaded model (its ``observation_names_``).
    Xf : list of list of dict
        The data's observations, from :func:`features_from_config` ``.transform``.
    model_path : str
        Names the model and its features file in the error.

    Raises
    ------
    CLIError
        Naming the group and the templates that differ.
    """
    model = _model_templates(crf)
    if model is None:
        return
    made = {}
    for seq in Xf:
        for token in seq:
            for name in token:
                t = _template(name)
                made.setdefault(_group(t), set()).add(t)
    if not made:
        return
    for group in sorted(model):
        produced = made.get(group)
        if not produced:
            continue
        if not produced & model[group]:
            raise _mismatch(model_path, f"the features file's {group!r} observations "
                            f"({_quoted(produced)}) are none of the model's ({_quoted(model[group])})")
        if group.startswith(_EVERY_TOKEN_KINDS):
            lacking = model[group] - produced
            if lacking:
                raise _mismatch(model_path, f"the features file does not make the model's {group!r} "
                                f"observations {_quoted(lacking)} (it makes {_quoted(produced)})")


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
        with open(features_path(model_path), encoding="utf-8-sig") as fh:
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
    from skfcrf.datasets._conll import split_columns

    if not os.path.isfile(path):
        return 1
    counts = {}
    try:
        with open(path, encoding="utf-8-sig") as fh:
            for number, line in enumerate(fh, 1):
                line = line.rstrip("\r\n")
                if line.strip():
                    counts.setdefault(len(split_columns(line, SEPARATORS[sep])), number)
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
    """Number of columns on the first non-blank line of a column file (split as
    :func:`skfcrf.datasets.read_conll` splits them)."""
    from skfcrf.datasets._conll import split_columns

    try:
        with open(path, encoding="utf-8-sig") as fh:
            for line in fh:
                line = line.rstrip("\r\n")
                if line.strip():
                    return len(split_columns(line, SEPARATORS[sep]))
    except UnicodeDecodeError as exc:
        raise CLIError(f"{path}: not a UTF-8 text file ({exc.reason} at byte "
                       f"{exc.start})") from None
    except OSError as exc:
        raise CLIError(f"cannot read {path}: {exc.strerror}") from None
    return 0
