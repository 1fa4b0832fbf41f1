"""Post-processing after prediction: repair whole predictions, and the :class:`Repaired` meta-estimator.

Predictions are lists of label sequences, one ``(n_tokens, n_chains)`` object
array per sequence (1-D for a one-chain model), as ``FactorialCRF.predict``
returns them.  The ``X`` given alongside is the estimator's input: per sequence
its tokens, which :func:`repair` hands to the rules (``Segment.tokens``).  When
the estimator is a :class:`~sklearn.pipeline.Pipeline` whose first step turns
token dicts into features, ``X`` holds the token dicts, with their ``"word"``
(what :func:`fix_long_headings` reads); a bare :class:`~skfcrf.FactorialCRF`
gets feature dicts instead, and rules that read words then see none.
"""
import dataclasses

import numpy as np
from sklearn.base import BaseEstimator, MetaEstimatorMixin, clone
from sklearn.utils import get_tags
from sklearn.utils.validation import check_is_fitted

from skfcrf.metrics._accuracy import joint_accuracy
from skfcrf.structure._postprocess import resolve_rules
from skfcrf.structure._repair import repair

__all__ = ["Repaired", "repair_sequences"]


def repair_sequences(y_pred, rules="formal", X=None, **kwargs):
    """Repair every predicted sequence (:func:`repair` on each, with its tokens).

    Parameters
    ----------
    y_pred : list of array-like
        Predicted label sequences, e.g. ``FactorialCRF.predict(X)``.
    rules : str or sequence of callable, default="formal"
        A preset name of :data:`REPAIR_PRESETS` (``"formal"``, ``"cor"``,
        ``"rcg"``) or the rules (see :func:`resolve_rules`).
    X : list of sequences, optional
        The sequences the labels were predicted for; a sequence whose length
        equals its labels' is passed to :func:`repair` as ``tokens``.
    **kwargs
        Passed to :func:`repair` (``scheme=``, ``max_iter=``, ...).

    Returns
    -------
    list of ndarray of dtype object
        The repaired sequences, shaped like the input ones.

    Examples
    --------
    >>> repair_sequences([["Plan", "Plan", "Diagnosis"]])[0].tolist()
    ['BeginPlan', 'Plan', 'BeginDiagnosis']
    """
    rules = resolve_rules(rules)
    y_pred = list(y_pred)
    X = [None] * len(y_pred) if X is None else list(X)
    if len(X) != len(y_pred):
        raise ValueError(f"X has {len(X)} sequences but y_pred {len(y_pred)}")
    return [repair(labels, rules, tokens=_tokens(x, labels), **kwargs)
            for labels, x in zip(y_pred, X)]


def _tokens(x, labels):
    """``x`` as the tokens of ``labels`` when it is a sequence of the same length, else None."""
    if x is None or isinstance(x, (str, bytes, dict)):
        return None
    try:
        return x if len(x) == len(labels) else None
    except TypeError:
        return None


class Repaired(MetaEstimatorMixin, BaseEstimator):
    """An estimator whose predictions are post-processed by :func:`repair`.

    ``fit`` fits a clone of ``estimator`` (``estimator_``); ``predict`` and
    ``decode`` repair its output with ``rules``, passing each input sequence as
    the rules' tokens; ``score`` is the joint accuracy of the repaired labels.
    Wrap the whole :class:`~sklearn.pipeline.Pipeline` (features, then the CRF)
    so that the rules see the token dicts, not the features.

    The wrapped estimator's parameters can be set through it without the
    ``estimator__`` prefix: for ``Repaired(Pipeline([("features", ...),
    ("crf", FactorialCRF())]), "rcg")`` both ``crf__sigma`` and
    ``estimator__crf__sigma`` work, so a :class:`~sklearn.model_selection.GridSearchCV`
    grid written for the pipeline works unchanged on the repaired one.

    Parameters
    ----------
    estimator : estimator
        A label-chain predictor: ``FactorialCRF`` or a pipeline ending in one.
    rules : str or sequence of callable, default="formal"
        A preset name of :data:`REPAIR_PRESETS` (``"formal"``: the formal
        constraints only; ``"cor"``; ``"rcg"``) or the rules themselves.  A
        preset name keeps the estimator picklable with :mod:`pickle` (the rule
        factories return closures, which only cloudpickle/joblib can pickle).

    Attributes
    ----------
    estimator_ : estimator
        The fitted clone of ``estimator``.

    Examples
    --------
    >>> from skfcrf import FactorialCRF
    >>> X = [[{"w=plan": 1}, {"w=see": 1}], [{"w=diagnosis": 1}, {"w=flu": 1}]]
    >>> y = [["BeginPlan", "Plan"], ["BeginDiagnosis", "Diagnosis"]]
    >>> model = Repaired(FactorialCRF(max_iter=30), "formal").fit(X, y)
    >>> model.predict(X)[1].tolist()
    ['BeginDiagnosis', 'Diagnosis']
    >>> sorted(Repaired(FactorialCRF()).set_params(sigma=3.0).get_params())[:3]
    ['estimator', 'estimator__anchors', 'estimator__batch_size']
    """

    def __init__(self, estimator, rules="formal"):
        self.estimator = estimator
        self.rules = rules

    @classmethod
    def around_fitted(cls, estimator, rules="formal"):
        """A fitted ``Repaired`` around an already fitted ``estimator`` (no refit): what
        :func:`skfcrf.metrics.make_chain_scorer` scores with ``repair=``."""
        model = cls(estimator, rules)
        model.estimator_ = estimator
        return model

    # ------------------------------------------------------------------ parameters
    def set_params(self, **params):
        """Set parameters; keys that are not this estimator's go to ``estimator``."""
        own = {}
        inner = {}
        for key, value in params.items():
            (own if key.split("__", 1)[0] in ("estimator", "rules") else inner)[key] = value
        if own:
            super().set_params(**own)
        if inner:
            self.estimator.set_params(**inner)
        return self

    # ------------------------------------------------------------------ fit / predict
    def fit(self, X, y, **fit_params):
        """Fit a clone of ``estimator`` on ``(X, y)``; ``fit_params`` are passed to its ``fit``."""
        resolve_rules(self.rules)  # fail before training on a bad preset name
        self.estimator_ = clone(self.estimator).fit(X, y, **fit_params)
        return self

    def _rules(self):
        return resolve_rules(self.rules)

    def predict(self, X):
        """The fitted estimator's predictions, repaired (one array per sequence)."""
        check_is_fitted(self, "estimator_")
        X = list(X)
        return repair_sequences(self.estimator_.predict(X), self._rules(), X)

    def decode(self, X, **kwargs):
        """The fitted estimator's ``decode`` records with repaired ``labels``.

        ``kwargs`` (``fixed=``, ``n_best=``) go to the estimator's ``decode``
        (the last step's, for a pipeline).  A record whose labels the rules
        changed gets ``log_prob`` NaN (it was that of the
        unrepaired labelling); alternatives are repaired the same way.
        """
        check_is_fitted(self, "estimator_")
        X = list(X)
        est = self.estimator_
        Xt = X
        if hasattr(est, "steps"):  # a pipeline: transform, then the last step decodes
            for _, step in est.steps[:-1]:
                if step is not None and step != "passthrough":
                    Xt = step.transform(Xt)
            est = est.steps[-1][1]
        if not hasattr(est, "decode"):
            raise AttributeError(f"{type(est).__name__} has no decode method")
        rules = self._rules()
        return [_repaired_record(d, rules, x) for d, x in zip(est.decode(Xt, **kwargs), X)]

    def score(self, X, y):
        """Joint accuracy of the repaired predictions: the fraction of tokens at which
        every chain is right."""
        return joint_accuracy(y, self.predict(X))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        if not hasattr(self.estimator, "__sklearn_tags__"):
            return tags
        inner = get_tags(self.estimator)
        tags.estimator_type = inner.estimator_type
        tags.non_deterministic = inner.non_deterministic
        tags.input_tags = inner.input_tags
        tags.target_tags = inner.target_tags
        return tags


def _repaired_record(d, rules, x):
    fixed = repair(d.labels, rules, tokens=_tokens(x, d.labels))
    same = np.array_equal(np.asarray(d.labels, dtype=object), fixed)
    changes = {"labels": fixed}
    if not same:
        changes.update(log_prob=float("nan"))
    if d.alternatives:
        changes["alternatives"] = tuple(_repaired_record(a, rules, x) for a in d.alternatives)
    return dataclasses.replace(d, **changes)
