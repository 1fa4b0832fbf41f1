"""Metrics of ``sklearn_crfsuite.metrics``, over flattened label sequences.

The ``flat_*`` functions flatten ``y_true`` and ``y_pred`` (lists of label
sequences) into one list of token labels each and call the function of
:mod:`sklearn.metrics` of the same name, passing the keyword arguments on
(``average=``, ``labels=``, ...).  :func:`sequence_accuracy_score` is the
fraction of sequences labelled entirely right.

Examples
--------
>>> from skfcrf.crfsuite import metrics
>>> y_true = [["B-NP", "I-NP", "O"], ["B-VP"]]
>>> y_pred = [["B-NP", "B-NP", "O"], ["B-VP"]]
>>> metrics.flat_accuracy_score(y_true, y_pred)
0.75
>>> metrics.sequence_accuracy_score(y_true, y_pred)
0.5
>>> round(metrics.flat_f1_score(y_true, y_pred, average="micro", labels=["B-NP", "I-NP"]), 4)
0.5
"""
from functools import wraps
from itertools import chain

from sklearn import metrics as _metrics

__all__ = ["flat_accuracy_score", "flat_precision_score", "flat_recall_score", "flat_f1_score",
           "flat_fbeta_score", "flat_classification_report", "sequence_accuracy_score"]


def flatten(y):
    """One list of the labels of all the sequences of ``y``, in order.

    >>> flatten([["a", "b"], ["c"]])
    ['a', 'b', 'c']
    """
    return list(chain.from_iterable(y))


def _flattens_y(func):
    @wraps(func)
    def wrapper(y_true, y_pred, *args, **kwargs):
        return func(flatten(y_true), flatten(y_pred), *args, **kwargs)

    return wrapper


@_flattens_y
def flat_accuracy_score(y_true, y_pred):
    """Accuracy over the tokens of all the sequences (:func:`sklearn.metrics.accuracy_score`)."""
    return _metrics.accuracy_score(y_true, y_pred)


@_flattens_y
def flat_precision_score(y_true, y_pred, **kwargs):
    """Precision over the tokens (:func:`sklearn.metrics.precision_score` and its keywords)."""
    return _metrics.precision_score(y_true, y_pred, **kwargs)


@_flattens_y
def flat_recall_score(y_true, y_pred, **kwargs):
    """Recall over the tokens (:func:`sklearn.metrics.recall_score` and its keywords)."""
    return _metrics.recall_score(y_true, y_pred, **kwargs)


@_flattens_y
def flat_f1_score(y_true, y_pred, **kwargs):
    """F1 over the tokens (:func:`sklearn.metrics.f1_score` and its keywords).

    The sklearn-crfsuite tutorial's chunk/entity score is
    ``flat_f1_score(y_true, y_pred, average="weighted", labels=labels)`` with
    ``labels`` the model's ``classes_`` without ``"O"``.
    """
    return _metrics.f1_score(y_true, y_pred, **kwargs)


@_flattens_y
def flat_fbeta_score(y_true, y_pred, beta, **kwargs):
    """F-beta over the tokens (:func:`sklearn.metrics.fbeta_score` and its keywords)."""
    return _metrics.fbeta_score(y_true, y_pred, beta=beta, **kwargs)


@_flattens_y
def flat_classification_report(y_true, y_pred, labels=None, **kwargs):
    """Per-label precision, recall, F1 and support over the tokens, as text
    (:func:`sklearn.metrics.classification_report` and its keywords)."""
    return _metrics.classification_report(y_true, y_pred, labels=labels, **kwargs)


def sequence_accuracy_score(y_true, y_pred):
    """Fraction of the sequences whose every label is right (0 for no sequence).

    sklearn-crfsuite compares the two lists as numpy arrays, which counts
    tokens instead of sequences when all the sequences have the same length;
    this function always counts sequences.

    Raises
    ------
    ValueError
        When ``y_true`` and ``y_pred`` have different numbers of sequences.
    """
    y_true, y_pred = list(y_true), list(y_pred)
    if len(y_true) != len(y_pred):
        raise ValueError(f"y_true and y_pred have different numbers of sequences: "
                         f"{len(y_true)} != {len(y_pred)}")
    if not y_true:
        return 0
    right = sum(list(t) == list(p) for t, p in zip(y_true, y_pred))
    return right / len(y_true)
