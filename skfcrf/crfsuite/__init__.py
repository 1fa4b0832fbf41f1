"""A drop-in for ``sklearn_crfsuite``: its :class:`CRF` and :mod:`~skfcrf.crfsuite.metrics`.

Change ``import sklearn_crfsuite`` to ``from skfcrf import crfsuite as sklearn_crfsuite``
(or ``from sklearn_crfsuite import CRF, metrics`` to ``from skfcrf.crfsuite import CRF,
metrics``); the rest of the code stays.  The model is CRFsuite's first-order
linear-chain CRF (state features per (attribute, label), transition features per
label pair, no bias unless the user gives an attribute for it) trained by L-BFGS
on the penalised likelihood, computed by the kernels of
:class:`~skfcrf.FactorialCRF` with one chain.  See the user guide page "Coming
from sklearn-crfsuite" for the parameter mapping and what is not supported yet.
"""
import math
import numbers
import os
import sys
import time
from collections import namedtuple
from fractions import Fraction

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.exceptions import NotFittedError
from sklearn.utils import metadata_routing

from skfcrf._blas import single_blas_thread
from skfcrf._kernels._dicts import read_crfsuite_sequence
from skfcrf.crfsuite import _model_file, metrics
from skfcrf.crfsuite._model_file import CRFsuiteModel
from skfcrf.crfsuite._tagger import ParsedDump, Tagger, UnknownLabelError
from skfcrf.estimators._fcrf import FactorialCRF, kernel_threads, training_problem
from skfcrf.estimators._observations import NAMES, EncodedRows, ObservationEncoder
from skfcrf.inference import ExactInference
from skfcrf.model._layout import ParameterLayout, _valid_edge_rows, gold_assignment, unique_int
from skfcrf.objectives import Restricted, SequenceTerms, TrainingBatch
from skfcrf.solvers import AROW, LBFGS, OWLQN, SGD, AveragedPerceptron, PassiveAggressive

__all__ = ["CRF", "LabelScore", "ParsedDump", "Tagger", "TrainingLog", "UnknownLabelError", "metrics"]

#: Per-label scores of the held-out evaluation, as ``pycrfsuite``'s log parser has them.
LabelScore = namedtuple("LabelScore", "match model ref precision recall f1")

#: CRFsuite's default number of L-BFGS corrections, stopping tests and line-search trials.
_LBFGS_DEFAULTS = dict(num_memories=6, epsilon=1e-5, period=10, delta=1e-5, max_linesearch=20)

#: Per algorithm its trainer's parameters and CRFsuite's defaults (``c1`` and the
#: L-BFGS settings are handled apart); a trainer refuses the others' parameters.
_TRAINER_PARAMS = {
    "lbfgs": dict(c1=0.0, c2=1.0, max_iterations=0, **_LBFGS_DEFAULTS),
    "l2sgd": dict(c2=1.0, max_iterations=1000, period=10, delta=1e-6, calibration_eta=0.1,
                  calibration_rate=2.0, calibration_samples=1000, calibration_candidates=10,
                  calibration_max_trials=20),
    "ap": dict(max_iterations=100, epsilon=0.0),
    "pa": dict(pa_type=1, c=1.0, error_sensitive=True, averaging=True, max_iterations=100,
               epsilon=0.0),
    "arow": dict(variance=1.0, gamma=1.0, max_iterations=100, epsilon=0.0),
}
_ALL_TRAINER_PARAMS = sorted({name for params in _TRAINER_PARAMS.values() for name in params}
                             | {"linesearch"})


class TrainingLog:
    """What training reported, laid out as ``pycrfsuite``'s ``TrainLogParser``.

    Attributes
    ----------
    iterations : list of dict
        One dict per L-BFGS iteration: ``num`` (1, 2, ...), ``loss`` (the
        penalised negative log-likelihood), ``feature_norm`` (``||w||``),
        ``error_norm`` (``||gradient||``), ``active_features`` (non-zero
        weights), ``linesearch_trials`` (loss evaluations of the iteration),
        ``time`` (seconds) and ``scores`` (``{label: LabelScore}``, empty
        without held-out data).  With held-out data (``fit(X_dev=, y_dev=)``)
        also ``avg_precision``, ``avg_recall``, ``avg_f1`` (macro averages as
        CRFsuite computes them: summed over the labels present in the held-out
        labels, divided by the number of labels), ``item_accuracy`` and
        ``instance_accuracy`` (:class:`~fractions.Fraction`) and their
        ``*_float`` values.
    last_iteration : dict or None
        ``iterations[-1]``.
    featgen_num_features : int
        Number of features (weights) trained.
    featgen_seconds, training_seconds : float
        Time spent building the features and in the solver.
    message : str
        Why training stopped.
    """

    def __init__(self):
        self.iterations = []
        self.featgen_num_features = None
        self.featgen_seconds = None
        self.training_seconds = None
        self.message = None

    @property
    def last_iteration(self):
        return self.iterations[-1] if self.iterations else None

    def __repr__(self):
        return (f"<TrainingLog: {len(self.iterations)} iterations, "
                f"{self.featgen_num_features} features, {self.message!r}>")


# ---------------------------------------------------------------------- input format
def _name(key):
    if isinstance(key, str):
        return key
    if isinstance(key, bytes):
        return key.decode("utf-8")
    raise ValueError(f"attribute names must be str, got {type(key).__name__} {key!r}")


def _add_items(x, prefix, out):
    """Add the attributes of ``x`` (a dict, or an iterable of names) to ``out``,
    names prefixed by ``prefix``, summing repeated names (CRFsuite sums them)."""
    if not isinstance(x, dict):
        for key in x:
            name = prefix + _name(key)
            out[name] = out.get(name, 0.0) + 1.0
        return
    for key, value in x.items():
        name = prefix + _name(key)
        if isinstance(value, str):
            name = name + ":" + value
            out[name] = out.get(name, 0.0) + 1.0
        elif isinstance(value, bytes):
            name = name + ":" + value.decode("utf-8")
            out[name] = out.get(name, 0.0) + 1.0
        elif isinstance(value, (dict, list, tuple, set, frozenset)):
            _add_items(value, name + ":", out)
        elif isinstance(value, numbers.Real):
            out[name] = out.get(name, 0.0) + float(value)
        else:
            raise ValueError(f"attribute {name!r}: values must be str, bool, numbers, dicts "
                             f"or lists of str, got {type(value).__name__} {value!r}")


def _token(token):
    """One token in CRFsuite's format as ``{name: value}``."""
    if isinstance(token, dict):
        out = {}
        get = out.get
        for k, v in token.items():   # the common case: str keys, str / bool / float values
            kind = type(v)
            if type(k) is not str:
                break
            if kind is str:
                name = k + ":" + v
                out[name] = get(name, 0.0) + 1.0
            elif kind is float or kind is bool or kind is int:
                out[k] = get(k, 0.0) + v
            else:
                break
        else:
            return out
        out = {}
        _add_items(token, "", out)
    elif isinstance(token, (list, tuple, set, frozenset)):
        out = {}
        _add_items(token, "", out)
    else:
        raise ValueError("each token must be a dict of attributes or a list of attribute "
                         f"names, got {type(token).__name__} {token!r}")
    return out


def _add_items_to(items, vocabulary, grow, indices, data):
    """Append a token's ``(name, value)`` items to the CSR lists ``indices`` and ``data``,
    columns by ``vocabulary`` (:func:`_read`).  Returns False, having added nothing, at
    the first item outside the common case: str names with str (``name:value``), bool,
    int or float values."""
    start = len(indices)
    add_index, add_value, lookup = indices.append, data.append, vocabulary.get
    for key, value in items:
        kind = type(value)
        if type(key) is not str:
            break
        if kind is str:
            key = key + ":" + value
            value = 1.0
        elif not (kind is float or kind is bool or kind is int):
            break
        j = lookup(key)
        if j is None:
            if not grow:
                continue
            j = vocabulary[key] = len(vocabulary)
        add_index(j)
        add_value(value)
    else:
        return True
    del indices[start:], data[start:]
    return False


def _read(X, vocabulary, grow, name="X"):
    """Sequences in CRFsuite's format, in one pass, as ``(matrix, seq_ptr)``.

    ``matrix`` is a CSR matrix ``(n_tokens, len(vocabulary))`` of attribute values,
    columns by ``vocabulary`` (attribute name -> column; with ``grow`` a new name
    gets the next column, else it is dropped), repeated names of a token summed and
    zero values kept as explicit entries (CRFsuite gives an attribute seen with
    value 0 a state feature: :func:`_crfsuite_layout`); ``seq_ptr`` ``(n_seq + 1,)``:
    sequence ``s`` owns rows ``seq_ptr[s]:seq_ptr[s + 1]``.
    """
    if X is None or isinstance(X, (str, bytes, dict)):
        raise ValueError(f"{name} must be a list of sequences, got {type(X).__name__}")
    indices, data, indptr, seq_ptr = [], [], [0], [0]
    for xseq in X:
        if isinstance(xseq, (str, bytes, dict)):
            raise ValueError(f"a sequence must be a list of tokens, got {type(xseq).__name__}")
        for token in xseq:
            # the common case straight from the dict; else its {name: value} form
            if not (type(token) is dict and _add_items_to(token.items(), vocabulary, grow,
                                                          indices, data)):
                _add_items_to(_token(token).items(), vocabulary, grow, indices, data)
            indptr.append(len(indices))
        seq_ptr.append(len(indptr) - 1)
    matrix = sp.csr_matrix((np.asarray(data, dtype=np.float64),
                            np.asarray(indices, dtype=np.int64),
                            np.asarray(indptr, dtype=np.int64)),
                           shape=(len(indptr) - 1, len(vocabulary)))
    matrix.sum_duplicates()         # keeps the entries that sum to zero
    return matrix, np.asarray(seq_ptr, dtype=np.int64)


def _split(matrix, seq_ptr):
    """The rows of ``matrix`` per sequence: ``FactorialCRF``'s matrix input."""
    return [matrix[a:b] for a, b in zip(seq_ptr[:-1].tolist(), seq_ptr[1:].tolist())]


def _sequences(X, name="X"):
    """Sequences in CRFsuite's format as ``FactorialCRF``'s input: per token
    ``{name: value}`` (:func:`_token`)."""
    if X is None or isinstance(X, (str, bytes, dict)):
        raise ValueError(f"{name} must be a list of sequences, got {type(X).__name__}")
    out = []
    for xseq in X:
        if isinstance(xseq, (str, bytes, dict)):
            raise ValueError(f"a sequence must be a list of tokens, got {type(xseq).__name__}")
        out.append([_token(token) for token in xseq])
    return out


def _rows(crf, X):
    """Sequences in CRFsuite's format as the input of the fitted ``crf``'s prediction
    methods: read straight into its observation columns (:class:`EncodedRows`, by
    :func:`read_crfsuite_sequence`) when they are lists of plain dicts with str
    names and str / bool / int / float values, else :func:`_sequences` (the same
    rows, and every error)."""
    vocabulary = getattr(crf.encoder_, "vocabulary", None)
    if type(X) is list and X and vocabulary is not None:
        parts = []
        for xseq in X:
            part = read_crfsuite_sequence(xseq, vocabulary) if type(xseq) is list else None
            if part is None:
                break
            parts.append(part)
        else:
            return EncodedRows(*crf.encoder_.arrays_of(X, parts))
    return _sequences(X)


def _labels(y, name="y"):
    if y is None or isinstance(y, (str, bytes)):
        raise ValueError(f"{name} must be a list of label sequences, got {type(y).__name__}")
    out = []
    for i, seq in enumerate(y):
        seq = list(seq)
        if any(lab is None for lab in seq):
            raise ValueError(f"{name}[{i}] has a label None: every label must be given")
        out.append(seq)
    return out


def _object_array(items):
    """A 1-D object array of the lists ``items`` (sklearn-crfsuite's ``np.array(...,
    dtype=object)`` makes it 2-D when all the sequences have the same length)."""
    out = np.empty(len(items), dtype=object)
    for i, item in enumerate(items):
        out[i] = item
    return out


# ---------------------------------------------------------------------- the estimator
class CRF(BaseEstimator):
    """sklearn-crfsuite's ``CRF``: a linear-chain CRF trained by L-BFGS, on skfcrf's kernels.

    Same constructor parameters, methods, fitted attributes and input format as
    ``sklearn_crfsuite.CRF``.  ``None`` means CRFsuite's default.  Settings that
    cannot be honoured raise ``ValueError`` naming them (at ``fit``); none is
    silently ignored.  The fitted attributes below are None before ``fit``
    (unless ``model_filename`` names a model file to load), as in
    sklearn-crfsuite.

    Parameters
    ----------
    algorithm : {"lbfgs", "l2sgd", "ap", "pa", "arow"}, default="lbfgs"
        L-BFGS (``None`` also means it), or CRFsuite's online trainers:
        ``"l2sgd"`` (SGD with a calibrated step size,
        :class:`~skfcrf.solvers.SGD`), ``"ap"`` (averaged perceptron,
        :class:`~skfcrf.solvers.AveragedPerceptron`), ``"pa"``
        (passive-aggressive, :class:`~skfcrf.solvers.PassiveAggressive`),
        ``"arow"`` (:class:`~skfcrf.solvers.AROW`).  Each trainer takes its
        own parameters below (CRFsuite's defaults for ``None``) and refuses the
        others' (``ValueError``), as CRFsuite does.
    min_freq : float, default=0
        A feature (an (attribute, label) pair, or a label pair) whose
        frequency in the training data -- the sum of the attribute's values
        at the tokens with the label, or the number of label pairs -- is less
        than ``min_freq`` is not used, as in CRFsuite.
    all_possible_states : bool, default=False
        Features for every (attribute, label) pair, not only those seen in
        training (``FactorialCRF(unary_features="all")``).
    all_possible_transitions : bool, default=False
        Transition features for every label pair, not only those seen in
        training.
    c1 : float, default=0
        L1 coefficient: the penalty is ``c1 * ||w||_1``, i.e.
        ``FactorialCRF(l1=c1)``; with ``c1 > 0`` training is OWL-QN, as in
        CRFsuite (elastic net with ``c2 > 0``), and many weights are exactly
        zero (left out of ``state_features_`` and ``transition_features_``).
    c2 : float, default=1.0
        L2 coefficient: the penalty is ``c2 * ||w||**2``, i.e.
        ``FactorialCRF(sigma=1 / sqrt(2 * c2))`` (``c2=0``: no penalty).
    max_iterations : int, default=None
        Maximum L-BFGS iterations; ``None`` or 0: unlimited, as in CRFsuite.
    num_memories : int, default=6
        L-BFGS correction pairs (``FactorialCRF(lbfgs_memory=...)``).
    epsilon : float, default=1e-5
        Stop when ``||g|| / max(1, ||w||) <= epsilon`` (CRFsuite's test).
    period : int, default=10
        Iterations over which ``delta`` measures the improvement.
    delta : float, default=1e-5
        Stop when ``(f(k - period) - f(k)) / f(k) < delta`` (CRFsuite's test).
    linesearch : {"MoreThuente"}, default="MoreThuente"
        The line search: More and Thuente's, as scipy's L-BFGS-B runs it
        (:class:`skfcrf.solvers.LBFGS`).
        ``"Backtracking"`` and ``"StrongBacktracking"`` are not supported.
        With ``c1 > 0`` OWL-QN's backtracking line search is used, as CRFsuite
        does whatever ``linesearch`` says.
    max_linesearch : int, default=20
        Maximum loss evaluations per line search.
    calibration_eta, calibration_rate, calibration_samples, \
calibration_candidates, calibration_max_trials : float or int, default=None
        ``"l2sgd"``: the calibration's first step size (0.1), its factor
        (2.0), the sequences it runs on (1000), the candidates that must lower
        the loss (10) and the most trials (20).  ``"l2sgd"`` also takes
        ``c2``, ``max_iterations`` (epochs, 1000), ``period`` and ``delta``
        (1e-6).
    pa_type, c, error_sensitive, averaging : int, float, bool, bool, default=None
        ``"pa"``: PA (0), PA-I (1) or PA-II (2); the aggressiveness (1.0); the
        cost counts the wrong labels (True); averaged weights (True).
    variance, gamma : float, default=None
        ``"arow"``: initial variance (1.0) and trade-off (1.0).
        ``"ap"``, ``"pa"`` and ``"arow"`` also take ``max_iterations`` (epochs,
        100) and ``epsilon`` (stop when the mean loss per sequence falls below
        it; 0).
    verbose : bool, default=False
        Print one line per iteration (loss, norms, held-out scores).
    model_filename : str or path-like, default=None
        A CRFsuite model file, as in sklearn-crfsuite: ``fit`` writes the
        trained model there (a file ``pycrfsuite.Tagger`` and ``crfsuite
        tag`` read), and an estimator that is not fitted loads it when first
        used -- ``CRF(model_filename=path).predict(X)`` predicts with a model
        trained by CRFsuite, python-crfsuite or sklearn-crfsuite.  None: no
        file is written (sklearn-crfsuite writes a temporary one); pickle the
        fitted estimator, or pass a file name, to keep the model.
    keep_tempfiles : None or False
        No temporary files are written; ``True`` is refused (pass
        ``model_filename`` to keep a CRFsuite model file).
    trainer_cls : None
        ``pycrfsuite.Trainer`` subclasses are not supported.

    Attributes
    ----------
    tagger_ : Tagger
        python-crfsuite's ``Tagger`` on this model: ``labels()``,
        ``tag(xseq)``, ``set(xseq)``, ``probability(yseq)``,
        ``marginal(label, position)``, ``info()``, ``dump()``.
    classes_ : list of str
        The labels, in order of first appearance in the training labels
        (CRFsuite's label ids).
    state_features_ : dict
        ``{(attribute, label): weight}`` of the non-zero state weights.
    transition_features_ : dict
        ``{(label_from, label_to): weight}`` of the non-zero transition weights.
    attributes_ : list of str
        The attributes with a non-zero state weight (CRFsuite's attribute ids).
    num_attributes_ : int
        Their number.
    size_ : int
        Size in bytes of the model's CRFsuite model file.
    training_log_ : TrainingLog
        Per-iteration loss, norms and, with held-out data, its scores (None
        for a model loaded from ``model_filename``).
    crf_ : FactorialCRF
        The fitted one-chain model (its ``coef_`` holds every weight); set by
        ``fit`` or when the model file is loaded.

    Examples
    --------
    >>> from skfcrf.crfsuite import CRF, metrics
    >>> X = [[{"word": "the"}, {"word": "cat", "title": False}],
    ...      [{"word": "a"}, {"word": "dog", "len": 3.0}]]
    >>> y = [["DT", "NN"], ["DT", "NN"]]
    >>> crf = CRF(c2=0.1, max_iterations=50).fit(X, y)
    >>> crf.predict(X)[0]
    ['DT', 'NN']
    >>> crf.classes_
    ['DT', 'NN']
    >>> marginals = crf.predict_marginals_single(X[0])
    >>> sorted(marginals[0]), round(sum(marginals[0].values()), 6)
    (['DT', 'NN'], 1.0)
    >>> crf.state_features_[("word:cat", "NN")] > 0
    True
    >>> metrics.flat_accuracy_score(y, crf.predict(X))
    1.0
    """

    # held-out data are an argument of fit, not metadata to route (no set_fit_request)
    __metadata_request__fit = {"X_dev": metadata_routing.UNUSED,
                               "y_dev": metadata_routing.UNUSED}

    def __init__(self, algorithm="lbfgs", min_freq=None, all_possible_states=None,
                 all_possible_transitions=None, c1=None, c2=None, max_iterations=None,
                 num_memories=None, epsilon=None, period=None, delta=None, linesearch=None,
                 max_linesearch=None, calibration_eta=None, calibration_rate=None,
                 calibration_samples=None, calibration_candidates=None,
                 calibration_max_trials=None, pa_type=None, c=None, error_sensitive=None,
                 averaging=None, variance=None, gamma=None, verbose=False, model_filename=None,
                 keep_tempfiles=None, trainer_cls=None):
        self.algorithm = algorithm
        self.min_freq = min_freq
        self.all_possible_states = all_possible_states
        self.all_possible_transitions = all_possible_transitions
        self.c1 = c1
        self.c2 = c2
        self.max_iterations = max_iterations
        self.num_memories = num_memories
        self.epsilon = epsilon
        self.period = period
        self.delta = delta
        self.linesearch = linesearch
        self.max_linesearch = max_linesearch
        self.calibration_eta = calibration_eta
        self.calibration_rate = calibration_rate
        self.calibration_samples = calibration_samples
        self.calibration_candidates = calibration_candidates
        self.calibration_max_trials = calibration_max_trials
        self.pa_type = pa_type
        self.c = c
        self.error_sensitive = error_sensitive
        self.averaging = averaging
        self.variance = variance
        self.gamma = gamma
        self.verbose = verbose
        self.model_filename = model_filename
        self.keep_tempfiles = keep_tempfiles
        self.trainer_cls = trainer_cls

    # ------------------------------------------------------------------ parameters
    def _settings(self):
        """The validated settings with CRFsuite's defaults filled in; ValueError naming
        every setting that cannot be honoured."""
        if self.trainer_cls is not None:
            raise ValueError(
                "trainer_cls is not supported: it customises a pycrfsuite.Trainer, which "
                "skfcrf.crfsuite does not use; training_log_ holds what training reported "
                "and verbose=True prints it")
        if self.keep_tempfiles not in (None, False):
            raise ValueError(
                f"keep_tempfiles={self.keep_tempfiles!r} is not supported: skfcrf.crfsuite "
                "writes no temporary model files; pass model_filename=path to keep a "
                "CRFsuite model file, or pickle the fitted estimator")
        algorithm = "lbfgs" if self.algorithm is None else self.algorithm
        if algorithm not in _TRAINER_PARAMS:
            raise ValueError(f"algorithm={algorithm!r} is unknown: CRFsuite's algorithms are "
                             "'lbfgs', 'l2sgd', 'ap', 'pa' and 'arow'")
        own = _TRAINER_PARAMS[algorithm]
        for name in _ALL_TRAINER_PARAMS:
            if name not in own and not (name == "linesearch" and algorithm == "lbfgs") \
                    and getattr(self, name) is not None:
                owners = [a for a, params in _TRAINER_PARAMS.items() if name in params]
                raise ValueError(
                    f"{name}={getattr(self, name)!r} is not a parameter of CRFsuite's "
                    f"{algorithm!r} trainer (it belongs to {', '.join(map(repr, owners))}; "
                    "CRFsuite refuses it too); leave it None")
        if algorithm != "lbfgs":
            return self._online_settings(algorithm, own)
        c1 = _real(self.c1, "c1", 0.0, minimum=0.0)
        c2 = _real(self.c2, "c2", 1.0, minimum=0.0)
        linesearch = "MoreThuente" if self.linesearch is None else self.linesearch
        if linesearch != "MoreThuente":
            raise ValueError(
                f"linesearch={self.linesearch!r} is not supported: skfcrf.crfsuite's L-BFGS "
                "has More and Thuente's line search only ('MoreThuente', CRFsuite's default)")
        max_iterations = self.max_iterations
        if max_iterations is not None and (not isinstance(max_iterations, numbers.Integral)
                                           or isinstance(max_iterations, bool)
                                           or max_iterations < 0):
            raise ValueError(f"max_iterations must be None or an integer >= 0 (0: unlimited), "
                             f"got {max_iterations!r}")
        out = dict(c1=c1, c2=c2, min_freq=_real(self.min_freq, "min_freq", 0.0),
                   max_iterations=int(max_iterations or 0),
                   epsilon=_real(self.epsilon, "epsilon", _LBFGS_DEFAULTS["epsilon"], 0.0),
                   delta=_real(self.delta, "delta", _LBFGS_DEFAULTS["delta"], 0.0),
                   all_possible_states=_flag(self.all_possible_states, "all_possible_states"),
                   all_possible_transitions=_flag(self.all_possible_transitions,
                                                  "all_possible_transitions"))
        for name in ("num_memories", "period", "max_linesearch"):
            out[name] = _positive_int(getattr(self, name), name, _LBFGS_DEFAULTS[name])
        return out

    def _online_settings(self, algorithm, defaults):
        """The settings of an online trainer, CRFsuite's defaults filled in."""
        out = dict(algorithm=algorithm, c1=0.0, c2=0.0,
                   min_freq=_real(self.min_freq, "min_freq", 0.0),
                   all_possible_states=_flag(self.all_possible_states, "all_possible_states"),
                   all_possible_transitions=_flag(self.all_possible_transitions,
                                                  "all_possible_transitions"))
        for name, default in defaults.items():
            if name == "pa_type":
                value = default if self.pa_type is None else self.pa_type
                if isinstance(value, bool) or value not in (0, 1, 2):
                    raise ValueError(f"pa_type must be 0 (PA), 1 (PA-I) or 2 (PA-II), "
                                     f"got {self.pa_type!r}")
                out[name] = int(value)
            elif isinstance(default, bool):
                out[name] = _flag(getattr(self, name), name) if getattr(
                    self, name) is not None else default
            elif isinstance(default, int):
                out[name] = _positive_int(getattr(self, name), name, default)
            else:
                out[name] = _real(getattr(self, name), name, default, minimum=0.0)
        return out

    def _online_solver(self, settings):
        """The skfcrf solver of CRFsuite's online trainer ``settings["algorithm"]``."""
        algorithm, rng = settings["algorithm"], np.random.RandomState(0)
        common = dict(max_iter=settings["max_iterations"], random_state=rng)
        if algorithm == "l2sgd":
            return SGD(2.0 * settings["c2"], period=settings["period"], delta=settings["delta"],
                       eta0=settings["calibration_eta"],
                       calibration_rate=settings["calibration_rate"],
                       calibration_samples=settings["calibration_samples"],
                       calibration_candidates=settings["calibration_candidates"],
                       calibration_max_trials=settings["calibration_max_trials"], **common)
        if algorithm == "ap":
            return AveragedPerceptron(tol=settings["epsilon"], **common)
        if algorithm == "pa":
            return PassiveAggressive(settings["pa_type"], settings["c"],
                                     settings["error_sensitive"], settings["averaging"],
                                     tol=settings["epsilon"], **common)
        return AROW(settings["variance"], settings["gamma"], tol=settings["epsilon"], **common)

    def _online(self, crf, batch, free, settings, dev, log):
        """Train by CRFsuite's online trainer ``settings["algorithm"]``; returns
        ``(x, n_iter, message)`` with ``x`` all the weights."""
        solver = self._online_solver(settings)
        terms = SequenceTerms(batch, ExactInference(crf.graph_), forbidden=crf.forbidden_,
                              free=free)
        state = dict(last=time.perf_counter())
        verbose = self.verbose

        class Monitor:
            """Logs every epoch as CRFsuite's trainers do."""

            @staticmethod
            def report(x, loss):
                now = time.perf_counter()
                entry = dict(num=len(log.iterations) + 1, loss=float(loss),
                             feature_norm=float(np.linalg.norm(x)),
                             active_features=int(np.count_nonzero(x)), time=now - state["last"],
                             scores={})
                state["last"] = now
                if dev is not None:
                    entry.update(dev.scores(x))
                log.iterations.append(entry)
                if verbose:
                    _print_iteration(entry)
                return False

        with single_blas_thread():
            result = solver.solve(terms, np.zeros(crf.layout_.n_params), Monitor())
        if result.converged:
            message = f"converged: {result.message}"
        elif result.at_max_iter:
            message = f"reached max_iterations={settings['max_iterations']}"
        else:
            message = f"{settings['algorithm']} stopped: {result.message}"
        return result.coef, result.n_iter, message

    # ------------------------------------------------------------------ training
    def fit(self, X, y, X_dev=None, y_dev=None):
        """Train the model.

        Parameters
        ----------
        X : list of lists of dicts
            Per sequence, per token a dict of attributes in CRFsuite's format:
            ``{"word": "walk"}`` is the attribute ``word:walk`` with value 1;
            a bool or number value is the attribute's value (``{"upper":
            True}``: ``upper`` with value 1); a list of str ``{"w": ["a",
            "b"]}`` gives ``w:a`` and ``w:b``; a dict nests names the same
            way.  A token may also be a list of attribute names (value 1).
        y : list of lists of str
            The labels.
        X_dev, y_dev : optional
            Held-out data: scored after every iteration (``training_log_``,
            ``verbose``), not trained on.

        Returns
        -------
        self
        """
        if (X_dev is None) != (y_dev is None):
            raise ValueError("Pass both X_dev and y_dev to use the holdout data")
        settings = self._settings()
        start = time.perf_counter()
        vocabulary = {}
        matrix, seq_ptr = _read(X, vocabulary, grow=True)
        y_lab = _labels(y)
        if len(seq_ptr) - 1 != len(y_lab):
            raise ValueError(f"X and y have different numbers of sequences: "
                             f"{len(seq_ptr) - 1} != {len(y_lab)}")
        lengths = np.diff(seq_ptr)
        for i, (n, seq) in enumerate(zip(lengths.tolist(), y_lab)):
            if n != len(seq):
                raise ValueError(f"sequence {i}: the numbers of items and labels differ: "
                                 f"|x| = {n}, |y| = {len(seq)}")
        # empty sequences contribute nothing to CRFsuite's training: left out
        nonempty = lengths > 0
        if not nonempty.any():
            raise ValueError("every training sequence is empty: nothing to train on")
        if not nonempty.all():
            seq_ptr = np.concatenate([[0], np.cumsum(lengths[nonempty])]).astype(np.int64)
            y_lab = [seq for seq in y_lab if seq]
        crf = _new_crf(settings)
        # encoding, labels and graph by FactorialCRF; the state features as CRFsuite's
        # read in one pass as a matrix; the fitted model then reads the attributes by name
        base = training_problem(crf, _split(matrix, seq_ptr), y_lab).objective.batch
        crf.encoder_ = crf.encoder_.named(list(vocabulary))
        crf.observation_names_ = crf.encoder_.names
        crf.unary_features = "all" if settings["all_possible_states"] else "supported"
        crf.layout_ = _crfsuite_layout(crf, base, matrix, settings["all_possible_states"])
        batch = TrainingBatch(base.X, base.seq_ptr, base.gold, crf.layout_, base.seeds)
        free = _crfsuite_features(crf.layout_, batch, settings)
        problem = _Evaluations(Restricted(crf._objective(batch), free,
                                          np.zeros(crf.layout_.n_params)))
        dev = None if X_dev is None else _HeldOut(crf, _sequences(X_dev, "X_dev"),
                                                  _labels(y_dev, "y_dev"))
        log = TrainingLog()
        log.featgen_num_features = int(free.sum())
        log.featgen_seconds = time.perf_counter() - start
        if self.verbose:
            print(f"{len(y_lab)} sequences, {log.featgen_num_features} features "
                  f"({log.featgen_seconds:.2f} s)", flush=True)

        if settings.get("algorithm", "lbfgs") == "lbfgs":
            x, n_iter, message = self._lbfgs(problem, settings, dev, log)
            x = problem.restricted.full(x)
        else:
            x, n_iter, message = self._online(crf, batch, free, settings, dev, log)
        crf.coef_ = x
        crf.n_iter_ = n_iter
        crf.converged_ = message.startswith("converged")
        crf.loss_curve_ = [it["loss"] for it in log.iterations]
        crf.inference_stats_ = {"method": "exact", "converged_fraction": 1.0,
                                "mean_iterations": 0.0, "phase": "fit"}
        log.training_seconds = time.perf_counter() - start - log.featgen_seconds
        log.message = message
        self.crf_ = crf
        self.training_log_ = log
        order = {}
        for seq in y_lab:
            for lab in seq:
                order.setdefault(lab, len(order))
        self._set_classes(sorted(crf.classes_[0].tolist(), key=order.__getitem__))
        if self.model_filename is not None:
            _model_file.write(self._file_bytes(), self.model_filename)
        if self.verbose:
            print(f"{message}; {log.training_seconds:.2f} s", flush=True)
        return self

    def _lbfgs(self, problem, settings, dev, log):
        """L-BFGS (OWL-QN when ``c1 > 0``) with CRFsuite's stopping tests; returns
        ``(x, n_iter, message)``."""
        max_iterations = settings["max_iterations"] or 2 ** 31 - 1
        period, delta, epsilon = settings["period"], settings["delta"], settings["epsilon"]
        state = dict(past=[], last=time.perf_counter(), evals=0, message=None)

        def iteration(x, f, gnorm):
            """Log one iteration; True when CRFsuite's tests stop training."""
            k = len(log.iterations) + 1
            xnorm = float(np.linalg.norm(x))
            now = time.perf_counter()
            entry = dict(num=k, loss=f, feature_norm=xnorm, error_norm=gnorm,
                         active_features=int(np.count_nonzero(x)),
                         linesearch_trials=problem.n_evaluations - state["evals"],
                         time=now - state["last"], scores={})
            state["last"], state["evals"] = now, problem.n_evaluations
            if dev is not None:
                entry.update(dev.scores(problem.restricted.full(x)))
            log.iterations.append(entry)
            if self.verbose:
                _print_iteration(entry)
            # libLBFGS: the gradient test, then the improvement over `period` iterations
            if gnorm / max(1.0, xnorm) <= epsilon:
                state["message"] = "converged: ||g|| / max(1, ||w||) <= epsilon"
                return True
            history = state["past"]
            if k == 1:
                history.append(problem.first_loss)   # f at the starting point (w = 0)
            if k >= period:
                if (history[k - period] - f) / f < delta:
                    state["message"] = (f"converged: relative improvement over {period} "
                                        "iterations < delta")
                    return True
            history.append(f)
            return False

        class Tests:
            """The solver's monitor: CRFsuite's tests after every iteration."""

            def report(self, x, f):
                return iteration(x, float(f), problem.gradient_norm(x))

        x0 = problem.restricted.start
        if settings["c1"] > 0:
            return self._owlqn(problem, settings, iteration, state, x0, max_iterations)
        solver = LBFGS(memory=settings["num_memories"], max_iter=max_iterations, tol=0.0,
                       max_linesearch=settings["max_linesearch"], max_fun=2 ** 31 - 1)
        with single_blas_thread():
            res = solver.solve(problem, x0, Tests())
        message = state["message"]
        if message is None:
            if len(log.iterations) >= max_iterations:
                message = f"reached max_iterations={max_iterations}"
            else:
                message = f"L-BFGS stopped: {res.message}"
        return res.coef, len(log.iterations), message

    @staticmethod
    def _owlqn(problem, settings, iteration, state, x0, max_iterations):
        """OWL-QN as CRFsuite runs it for ``c1 > 0`` (libLBFGS's orthant-wise mode with
        its backtracking line search): the stopping tests of :meth:`_lbfgs` on the
        penalised loss, the gradient test on the pseudo-gradient's norm."""
        solver = OWLQN(settings["c1"], memory=settings["num_memories"], max_iter=max_iterations,
                       tol=0.0, max_backtracks=settings["max_linesearch"] - 1)

        class Monitor:
            @staticmethod
            def report(x, f):
                return iteration(x, float(f), solver.last_pg_norm)

        with single_blas_thread():
            result = solver.solve(problem, x0, Monitor())
        message = state["message"]
        if message is None:
            if result.at_max_iter:
                message = f"reached max_iterations={max_iterations}"
            else:
                message = f"OWL-QN stopped: {result.message}"
        return result.coef, result.n_iter, message

    # ------------------------------------------------------------------ prediction
    def _fitted(self):
        """The fitted ``crf_``; loads ``model_filename`` into it the first time when
        not fitted (``OSError`` if it cannot be read, ``ValueError`` if it is not a
        valid CRFsuite model file)."""
        if not hasattr(self, "crf_"):
            if self.model_filename is None:
                raise NotFittedError("This CRF instance is not fitted yet. Call 'fit' with "
                                     "appropriate arguments before using this estimator.")
            with open(self.model_filename, "rb") as fh:
                data = fh.read()
            self._load(_model_file.read(data, name=os.fspath(self.model_filename)), data)
        return self.crf_

    def _is_fitted(self):
        """Whether a model is there: fitted, or a model file to load."""
        return hasattr(self, "crf_") or self.model_filename is not None

    def predict(self, X):
        """The most probable labelling of every sequence (Viterbi).

        Returns
        -------
        ndarray of object, shape (n_sequences,)
            Per sequence a list of str labels.
        """
        crf = self._fitted()
        return _object_array([seq.tolist() for seq in crf.predict(_rows(crf, X))])

    def predict_single(self, xseq):
        """The most probable labelling of one sequence: a list of str labels."""
        crf = self._fitted()
        return crf.predict(_rows(crf, [xseq]))[0].tolist()

    def predict_marginals(self, X):
        """Per sequence, per token ``{label: marginal probability}``.

        Returns
        -------
        ndarray of object, shape (n_sequences,)
            Per sequence a list of dicts over ``classes_``.
        """
        crf = self._fitted()
        labels, columns = self._classes, self._sorted_index     # CRFsuite's label order
        out = []
        for chains in crf.predict_marginals(_rows(crf, X)):
            out.append([dict(zip(labels, row.tolist())) for row in chains[0][:, columns]])
        return _object_array(out)

    def predict_marginals_single(self, xseq):
        """Per token of one sequence ``{label: marginal probability}``."""
        return self.predict_marginals([xseq])[0]

    def score(self, X, y):
        """Accuracy over the tokens (:func:`~skfcrf.crfsuite.metrics.flat_accuracy_score`)."""
        return metrics.flat_accuracy_score(y, self.predict(X))

    # ------------------------------------------------------------------ fitted model
    #: What ``fit`` reported; None before ``fit`` and for a model loaded from a file.
    training_log_ = None

    def _set_classes(self, labels):
        """The labels in CRFsuite's id order; clears what was derived from the model."""
        self._classes = list(labels)
        self._label_ids = {label: i for i, label in enumerate(self._classes)}
        position = {label: k for k, label in enumerate(self.crf_.classes_[0].tolist())}
        self._sorted_index = np.array([position[label] for label in self._classes],
                                      dtype=np.int64)
        self._info = self._file = self._parsed = self._tagger = None

    @property
    def tagger_(self):
        """python-crfsuite's ``Tagger`` on this model (:class:`Tagger`); None before fit."""
        if not self._is_fitted():
            return None
        self._fitted()
        if self._tagger is None:
            self._tagger = Tagger(self)
        return self._tagger

    @property
    def classes_(self):
        """The labels, in order of first appearance in the training labels (CRFsuite's
        label ids); None before fit."""
        if not self._is_fitted():
            return None
        self._fitted()
        return list(self._classes)

    @property
    def size_(self):
        """Size in bytes of the model's CRFsuite model file; None before fit."""
        if not self._is_fitted():
            return None
        return len(self._file_bytes())

    def _model_info(self):
        crf = self._fitted()
        if self._info is None:
            layout, w = crf.layout_, crf.coef_
            labels = crf.classes_[0].tolist()
            names = crf.observation_names_
            obs = np.repeat(np.arange(layout.n_features), np.diff(layout.feat_ptr))
            table = w[:layout.n_table]
            nz = np.flatnonzero(table)
            state = {(names[obs[p]], labels[layout.ent_col[p]]): float(table[p]) for p in nz}
            L = len(labels)
            trans = w[layout.bias_edge[0]:layout.bias_edge[1]]
            transitions = {(labels[k // L], labels[k % L]): float(trans[k])
                           for k in np.flatnonzero(trans)}
            active = np.unique(obs[nz])
            self._info = (state, transitions, [names[i] for i in active])
        return self._info

    @property
    def state_features_(self):
        """``{(attribute, label): weight}`` of the non-zero state weights; None before
        fit."""
        return dict(self._model_info()[0]) if self._is_fitted() else None

    @property
    def transition_features_(self):
        """``{(label_from, label_to): weight}`` of the non-zero transition weights; None
        before fit."""
        return dict(self._model_info()[1]) if self._is_fitted() else None

    @property
    def attributes_(self):
        """The attributes with a non-zero state weight, by CRFsuite attribute id; None
        before fit."""
        return list(self._model_info()[2]) if self._is_fitted() else None

    @property
    def num_attributes_(self):
        """Number of attributes with a non-zero state weight; None before fit."""
        return len(self._model_info()[2]) if self._is_fitted() else None

    # ------------------------------------------------------------------ model files
    def _crfsuite_model(self):
        """The fitted model as a :class:`CRFsuiteModel` (CRFsuite's ids: labels by
        first appearance, attributes in column order)."""
        crf = self._fitted()
        layout, w = crf.layout_, crf.coef_
        L = len(self._classes)
        end = int(layout.bias_edge[1])
        if layout.graph.n_edges != 1 or layout.n_params != end or np.any(
                w[layout.bias_unary:layout.bias_edge[0]] != 0):
            raise ValueError("this model has weights a CRFsuite model file cannot hold "
                             "(label biases, joint-state or back-off weights)")
        to_id = np.empty(L, dtype=np.int64)
        to_id[self._sorted_index] = np.arange(L)
        obs = np.repeat(np.arange(layout.n_features), np.diff(layout.feat_ptr))
        table = w[:layout.n_table]
        nz = np.flatnonzero(table)
        trans = w[layout.bias_edge[0]:end]
        tz = np.flatnonzero(trans)
        return CRFsuiteModel(list(self._classes), [str(n) for n in crf.observation_names_],
                             obs[nz], to_id[layout.ent_col[nz]], table[nz],
                             to_id[tz // L], to_id[tz % L], trans[tz])

    def _file_bytes(self):
        """The model's CRFsuite model file (the file loaded, or the one ``fit`` writes)."""
        self._fitted()
        if self._file is None:
            self._file = _model_file.to_bytes(self._crfsuite_model())
        return self._file

    def _file_model(self):
        """The model file read back: :class:`CRFsuiteModel` with its header."""
        if self._parsed is None:
            self._parsed = _model_file.read(self._file_bytes())
        return self._parsed

    def _load(self, model, data=None):
        """Make this estimator predict with the CRFsuite model ``model`` (read from the
        file content ``data``): ``crf_`` holds its weights."""
        self.crf_ = _crf_from_file_model(model)
        self._set_classes(model.labels)
        self._file, self._parsed = data, (model if data is not None else None)

    def __getstate__(self):
        state = super().__getstate__()
        state["_info"] = state["_parsed"] = state["_tagger"] = state["_file"] = None
        return state

    def __setstate__(self, state):
        state.setdefault("_label_ids", None)
        super().__setstate__(state)
        if hasattr(self, "crf_") and self._label_ids is None:   # pickled before tagger_
            self._set_classes(self._classes)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = False
        tags.input_tags.two_d_array = False
        tags.target_tags.required = True
        return tags


# ---------------------------------------------------------------------- helpers
def _real(value, name, default, minimum=None):
    if value is None:
        return default
    if not isinstance(value, numbers.Real) or isinstance(value, bool) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value!r}")
    return float(value)


def _positive_int(value, name, default):
    if value is None:
        return default
    if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def _flag(value, name):
    if value is None:
        return False
    if not isinstance(value, (bool, np.bool_, numbers.Integral)) or value not in (0, 1):
        raise ValueError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def _new_crf(settings):
    """The unfitted one-chain :class:`FactorialCRF` that holds the drop-in's model."""
    c2 = settings.get("c2", 1.0)
    return FactorialCRF(
        sigma=math.inf if c2 == 0 else 1.0 / math.sqrt(2.0 * c2),
        l1=settings.get("c1", 0.0), objective="likelihood", solver="lbfgs",
        lbfgs_memory=settings.get("num_memories", _LBFGS_DEFAULTS["num_memories"]),
        max_iter=max(1, settings.get("max_iterations", 0)), min_instance_freq=1,
        solver_options=None,
        unary_features="default", transition_features="default",
        forbidden_transitions=None, finetune_iter=0, state_transitions=False,
        inference="exact")


def _crf_from_file_model(model):
    """A fitted one-chain :class:`FactorialCRF` with the weights of the CRFsuite model
    ``model`` (:class:`CRFsuiteModel`): its attributes are the observations, a state
    feature an (observation, label) weight, a transition feature an in-chain
    transition weight; no label bias."""
    crf = _new_crf({})
    crf.unary_features = "supported"
    labels = sorted(model.labels)
    L, A = len(labels), len(model.attributes)
    if L == 0:
        raise ValueError("the CRFsuite model has no labels")
    position = {label: k for k, label in enumerate(labels)}
    sorted_of = np.array([position[label] for label in model.labels], dtype=np.int64)
    crf.classes_ = [np.array(labels, dtype=object)]
    crf.n_chains_, crf._one_chain = 1, True
    encoder = ObservationEncoder()
    encoder._fit_keep(NAMES, np.array(model.attributes, dtype=object), A,
                      np.ones(A, dtype=bool))
    crf.encoder_ = encoder
    crf._fit_graph()
    keys = np.asarray(model.state_attr, np.int64) * L + sorted_of[model.state_label]
    order = np.argsort(keys, kind="stable")
    keys = keys[order]
    if np.any(np.diff(keys) == 0):
        raise ValueError("the CRFsuite model has a state feature twice")
    layout = ParameterLayout.from_keys(crf.graph_, A, keys)
    if layout.score_width != L or layout.n_table != len(keys):
        raise RuntimeError("unexpected parameter layout for a one-chain model")  # a bug
    coef = np.zeros(layout.n_params)
    coef[:layout.n_table] = np.asarray(model.state_weight, np.float64)[order]
    trans = sorted_of[model.trans_from] * L + sorted_of[model.trans_to]
    coef[layout.bias_edge[0] + trans] = model.trans_weight
    crf.layout_, crf.coef_ = layout, coef
    crf.joint_states_ = np.arange(L, dtype=np.int32)[:, None]
    crf.forbidden_, crf._backoff, crf._scored = {}, {}, {}
    crf._grammar = {"open": [], "new_rate": None}
    crf.transitions_ = None
    crf.n_iter_, crf.converged_, crf.loss_curve_ = 0, True, []
    crf.inference_stats_ = {"method": "exact", "converged_fraction": 1.0,
                            "mean_iterations": 0.0, "phase": "fit"}
    return crf


def _crfsuite_layout(crf, batch, matrix, all_possible_states):
    """The parameter layout with CRFsuite's state features.

    Without ``all_possible_states`` an (attribute, label) pair has a weight when
    the attribute occurs at a token with that label -- with any value, zero
    included (``{"upper": False}``), as in CRFsuite; with it every pair has one.
    An attribute whose value is zero at every training token has none: its
    weights would stay 0.
    """
    L = crf.graph_.n_labels[0]
    n_features = crf.n_features_in_
    if all_possible_states:
        keys = np.arange(n_features * L, dtype=np.int64)
    else:
        X, gold = batch.X.tocsr(), batch.gold[:, 0].astype(np.int64)
        rows = np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))
        keys = [X.indices.astype(np.int64) * L + gold[rows]]
        zero = matrix.data == 0     # often a million of them (False flags)
        if zero.any():
            kept = crf.encoder_.kept_columns
            column = np.full(matrix.shape[1], -1, dtype=np.int64)
            column[kept] = np.arange(len(kept))
            zrow = np.repeat(np.arange(matrix.shape[0]), np.diff(matrix.indptr))[zero]
            zcol = column[matrix.indices[zero]]
            known = zcol >= 0
            keys.append(zcol[known] * L + gold[zrow[known]])
        keys = unique_int(np.concatenate(keys))     # sort-based: np.unique hashes, slower
    return ParameterLayout.from_keys(crf.graph_, n_features, keys)


def _crfsuite_features(layout, batch, settings):
    """Mask of the weights CRFsuite's feature generation creates; the others stay 0.

    State features: the (attribute, label) pairs seen in training (all of them
    with ``all_possible_states``); transitions: the label pairs seen (all with
    ``all_possible_transitions``); each kept when its frequency -- summed
    attribute values, or pair count -- is at least ``min_freq``.  No label bias.
    """
    L = layout.graph.n_labels[0]
    X, gold = batch.X.tocsr(), batch.gold[:, 0].astype(np.int64)
    n = X.shape[0]
    onehot = sp.csr_matrix((np.ones(n), (np.arange(n), gold)), shape=(n, L))
    freq = (X.T @ onehot).tocoo()
    keys = freq.row.astype(np.int64) * L + freq.col
    order = np.argsort(keys)
    keys, values = keys[order], freq.data[order]
    entry = (np.repeat(np.arange(layout.n_features, dtype=np.int64), np.diff(layout.feat_ptr)) * L
             + layout.ent_col)
    pos = np.minimum(np.searchsorted(keys, entry), max(len(keys) - 1, 0))
    entry_freq = np.zeros(len(entry))
    if len(keys):
        hit = keys[pos] == entry
        entry_freq[hit] = values[pos[hit]]
    free = np.zeros(layout.n_params, dtype=bool)
    free[:layout.n_table] = entry_freq >= settings["min_freq"]
    rows = _valid_edge_rows(layout.graph, 0, batch.seq_ptr, n)
    counts = np.bincount(gold_assignment(layout.graph, 0, rows, batch.gold), minlength=L * L)
    in_set = np.ones(L * L, bool) if settings["all_possible_transitions"] else counts > 0
    free[layout.bias_edge[0]:layout.bias_edge[1]] = in_set & (counts >= settings["min_freq"])
    return free


class _Evaluations:
    """The restricted objective, counting evaluations and keeping the last gradient norm."""

    def __init__(self, restricted):
        self.restricted = restricted
        self.n_evaluations = 0
        self.last_x = None
        self.last_gnorm = None
        self.first_loss = None

    def loss_gradient(self, x):
        loss, grad = self.restricted.loss_gradient(x)
        if self.first_loss is None:
            self.first_loss = float(loss)
        self.n_evaluations += 1
        self.last_x = np.array(x, dtype=np.float64)
        self.last_gnorm = float(np.linalg.norm(grad))
        return loss, grad

    def gradient_norm(self, x):
        """``||g(x)||``: the last evaluation's (scipy reports the point it evaluated last)."""
        if self.last_x is None or not np.array_equal(x, self.last_x):
            return float(np.linalg.norm(self.restricted.loss_gradient(x)[1]))
        return self.last_gnorm


class _HeldOut:
    """Held-out sequences encoded once, scored by Viterbi as CRFsuite's holdout evaluation."""

    def __init__(self, crf, X, y):
        self.crf = crf
        Xm, self.seq_ptr = crf.encoder_.transform(X)
        if len(y) != len(self.seq_ptr) - 1:
            raise ValueError(f"X_dev and y_dev have different numbers of sequences: "
                             f"{len(self.seq_ptr) - 1} != {len(y)}")
        for i, (n, seq) in enumerate(zip(np.diff(self.seq_ptr), y)):
            if n != len(seq):
                raise ValueError(f"sequence {i}: X_dev has {n} tokens but y_dev {len(seq)} labels")
        self.obs = crf.layout_.observation_rows(Xm, self.seq_ptr)
        self.labels = crf.classes_[0].tolist()
        index = {lab: i for i, lab in enumerate(self.labels)}
        self.gold = np.array([index.get(lab, -1) for seq in y for lab in seq], dtype=np.int64)
        self.n_threads = kernel_threads(crf.n_jobs)

    def scores(self, coef):
        crf = self.crf
        unary, pair, _ = crf.layout_.potentials(coef, self.obs, self.n_threads, crf.forbidden_)
        pred, _, _ = ExactInference(crf.graph_, n_threads=self.n_threads).map(
            self.seq_ptr, unary, pair)
        pred = pred[:, 0].astype(np.int64)
        L = len(self.labels)
        right = pred == self.gold
        match = np.bincount(pred[right], minlength=L)
        model = np.bincount(pred, minlength=L)
        ref = np.bincount(self.gold[self.gold >= 0], minlength=L)
        scores, sums = {}, np.zeros(3)
        for i, label in enumerate(self.labels):
            if ref[i] == 0:
                scores[label] = LabelScore(int(match[i]), int(model[i]), 0, None, None, None)
                continue
            p = match[i] / model[i] if model[i] else 0.0
            r = match[i] / ref[i]
            f = 2 * p * r / (p + r) if p + r > 0 else 0.0
            scores[label] = LabelScore(int(match[i]), int(model[i]), int(ref[i]), p, r, f)
            sums += (p, r, f)
        seq_of = np.repeat(np.arange(len(self.seq_ptr) - 1), np.diff(self.seq_ptr))
        wrong_seqs = np.unique(seq_of[~right])
        n_seq = len(self.seq_ptr) - 1
        item = Fraction(int(right.sum()), max(len(right), 1))
        instance = Fraction(n_seq - len(wrong_seqs), max(n_seq, 1))
        return dict(scores=scores, avg_precision=sums[0] / L, avg_recall=sums[1] / L,
                    avg_f1=sums[2] / L, item_accuracy=item, item_accuracy_float=float(item),
                    instance_accuracy=instance, instance_accuracy_float=float(instance))


def _print_iteration(entry):
    line = (f"Iter {entry['num']:<3} time={entry['time']:<5.2f} loss={entry['loss']:<8.2f} "
            f"active={entry['active_features']:<5} ")
    if "avg_f1" in entry:
        line += (f"precision={entry['avg_precision']:0.3f}  recall={entry['avg_recall']:0.3f}  "
                 f"F1={entry['avg_f1']:0.3f}  Acc(item/seq)={entry['item_accuracy_float']:0.3f} "
                 f"{entry['instance_accuracy_float']:0.3f}  ")
    line += f"feature_norm={entry['feature_norm']:<8.2f}"
    print(line.strip(), file=sys.stdout, flush=True)
