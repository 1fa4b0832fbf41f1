"""scikit-learn scorers for sequence and segmentation metrics."""
import numpy as np
from sklearn.metrics import make_scorer

from skfcrf.metrics._accuracy import average_accuracy, chain_accuracy, joint_accuracy
from skfcrf.metrics._agreement import cohen_kappa, token_f1
from skfcrf.metrics._common import check_y_pair
from skfcrf.metrics._labels import precision_recall_fscore
from skfcrf.metrics._segments import pk, segment_f1, windowdiff


def _prf_score(y_true, y_pred, chain=None, which="f1", average="macro", **kwargs):
    """One of precision/recall/F1 (micro or macro) as a single float."""
    p, r, f, _ = precision_recall_fscore(y_true, y_pred, chain, average=average, **kwargs)
    return {"precision": p, "recall": r, "f1": f}[which]


def _mean_over_chains(y_true, y_pred, metric, **kwargs):
    """Unweighted mean of a per-chain metric over all chains."""
    _, _, n_chains = check_y_pair(y_true, y_pred)
    return float(np.mean([metric(y_true, y_pred, chain=c, **kwargs) for c in range(n_chains)]))


# name -> (score function, greater_is_better, takes a chain, fixed kwargs)
_METRICS = {
    "windowdiff": (windowdiff, False, True, {}),
    "pk": (pk, False, True, {}),
    "accuracy": (chain_accuracy, True, True, {}),
    "chain_accuracy": (chain_accuracy, True, True, {}),
    "average_accuracy": (average_accuracy, True, False, {}),
    "joint_accuracy": (joint_accuracy, True, False, {}),
    "segment_f1": (segment_f1, True, True, {}),
    "token_f1_micro": (token_f1, True, False, {"average": "micro"}),
    "token_f1_macro": (token_f1, True, False, {"average": "macro"}),
    "kappa_micro": (cohen_kappa, True, False, {"average": "micro"}),
    "kappa_macro": (cohen_kappa, True, False, {"average": "macro"}),
}
for _which in ("precision", "recall", "f1"):
    for _avg in ("micro", "macro"):
        _METRICS[f"{_which}_{_avg}"] = (_prf_score, True, True, {"which": _which, "average": _avg})
del _which, _avg

SCORER_METRICS = tuple(sorted(_METRICS))

#: the package's own metric functions -> greater_is_better, so that passing the function
#: scores it the same way as passing its name (a loss such as WindowDiff is minimised)
_OWN_FUNCTIONS = {func: gib for func, gib, _, _ in _METRICS.values() if func is not _prf_score}


def make_chain_scorer(metric, chain=None, greater_is_better=None, repair=None, **kwargs):
    """Make an sklearn scorer from a sequence metric, for ``scoring=`` arguments.

    The result is built with :func:`sklearn.metrics.make_scorer` (it calls
    ``estimator.predict(X)`` and passes ``y`` through unchanged, so ``y`` stays
    a list of sequences). Losses (``"windowdiff"``, ``"pk"``) are negated, as
    sklearn maximises scores: ``scorer(est, X, y) == -windowdiff(y, est.predict(X))``.

    Parameters
    ----------
    metric : str or callable
        A name among ``"windowdiff"``, ``"pk"``, ``"accuracy"`` (same as
        ``"chain_accuracy"``), ``"average_accuracy"``, ``"joint_accuracy"``,
        ``"segment_f1"``, ``"precision_micro"``, ``"precision_macro"``,
        ``"recall_micro"``, ``"recall_macro"``, ``"f1_micro"``, ``"f1_macro"``,
        ``"token_f1_micro"``, ``"token_f1_macro"``, ``"kappa_micro"``,
        ``"kappa_macro"`` (:func:`token_f1`, :func:`cohen_kappa`: the tags of every
        chain pooled; ``outside=`` names labels that are not tags);
        or a callable ``metric(y_true, y_pred, **kwargs)`` (given ``chain=``
        too when ``chain`` is not None).
    chain : int or None, default=None
        Chain to evaluate (negative values count from the top chain, ``-1`` is
        the top chain). For per-chain named metrics ``None`` means the
        unweighted mean of the metric over all chains (``"accuracy"`` then
        equals ``"average_accuracy"``). ``"joint_accuracy"``,
        ``"average_accuracy"`` and the token F1 and kappa names use all chains and
        take no ``chain`` (pass the function itself to score one chain).
    greater_is_better : bool, optional
        Only for a callable ``metric`` (default True); named metrics know their
        direction, and so do the package's own metric functions passed as
        callables (``make_chain_scorer(windowdiff, chain=2)`` is scored as a
        loss, like ``"windowdiff"``; ``greater_is_better=True`` with one of them
        is a ``ValueError``).
    repair : str or sequence of callable, optional
        Post-process the predictions before scoring them:
        :func:`skfcrf.structure.repair_sequences` with these rules, a preset
        name of :data:`skfcrf.structure.REPAIR_PRESETS` (``"formal"``,
        ``"cor"``, ``"rcg"``) or the rules themselves; every sequence of ``X``
        is given to the rules as its tokens (for a pipeline: the token dicts).
        The scorer then equals the metric of
        ``repair_sequences(estimator.predict(X), repair, X)``.  Scorers with a
        preset name (or a preset's own tuple) pickle with :mod:`pickle`; other
        rule lists are closures, which joblib's cloudpickle handles.  Each such
        scorer predicts once: to score several metrics from one decoding, wrap
        the estimator in :class:`skfcrf.structure.Repaired` and use plain
        scorers (scikit-learn then predicts once for all of them).
    **kwargs
        Passed to the metric, e.g. ``k=`` or ``begin_prefixes=`` for WindowDiff,
        ``zero_division=`` or ``convention=`` for the precision/recall/F1 names
        (:func:`precision_recall_fscore`: by default scikit-learn's macro average,
        an undefined score counted as 0 with an ``UndefinedMetricWarning``).

    Returns
    -------
    scorer : callable ``scorer(estimator, X, y) -> float``

    Examples
    --------
    >>> from sklearn.model_selection import GridSearchCV
    >>> scoring = {"wd": make_chain_scorer("windowdiff", chain=-1),
    ...            "joint": make_chain_scorer("joint_accuracy")}
    >>> # GridSearchCV(FactorialCRF(), {"sigma": [1, 10]}, scoring=scoring, refit="joint")
    >>> make_chain_scorer("accuracy", chain=2, repair="rcg")
    make_chain_scorer('accuracy', chain=2, repair='rcg')
    """
    if repair is not None:
        return _RepairedScorer(make_chain_scorer(metric, chain, greater_is_better, **kwargs),
                               repair, (metric, chain))
    if callable(metric):
        if chain is not None:
            kwargs["chain"] = chain
        own = _OWN_FUNCTIONS.get(metric)
        if own is not None and greater_is_better is not None and bool(greater_is_better) != own:
            name = metric.__name__
            raise ValueError(
                f"{name} is {'a score' if own else 'a loss'} (greater is "
                f"{'better' if own else 'worse'}); pass greater_is_better={own} or the name "
                f"{name!r}")
        gib = own if own is not None else (True if greater_is_better is None
                                           else bool(greater_is_better))
        return make_scorer(metric, greater_is_better=gib, **kwargs)
    if not isinstance(metric, str) or metric not in _METRICS:
        raise ValueError(
            f"unknown metric {metric!r}; expected a callable or one of {list(SCORER_METRICS)}"
        )
    if greater_is_better is not None:
        raise ValueError(
            f"greater_is_better is fixed for the named metric {metric!r}; "
            "pass it only with a callable metric"
        )
    func, gib, per_chain, fixed = _METRICS[metric]
    kwargs = {**fixed, **kwargs}
    if not per_chain:
        if chain is not None:
            raise ValueError(f"{metric!r} uses all chains; do not pass chain")
        return make_scorer(func, greater_is_better=gib, **kwargs)
    if chain is None:
        return make_scorer(_mean_over_chains, greater_is_better=gib, metric=func, **kwargs)
    return make_scorer(func, greater_is_better=gib, chain=chain, **kwargs)


class _RepairedScorer:
    """A scorer that repairs the predictions (rules ``repair``) before ``scorer`` scores them."""

    def __init__(self, scorer, repair, what):
        from skfcrf.structure._postprocess import preset_name, resolve_rules

        rules = resolve_rules(repair)  # validates; a preset is kept by name (picklable)
        self.scorer = scorer
        self.repair = preset_name(repair) or rules
        self._what = what

    def __call__(self, estimator, X, y_true, **kwargs):
        from skfcrf.structure._repaired import Repaired

        return self.scorer(Repaired.around_fitted(estimator, self.repair), list(X), y_true,
                           **kwargs)

    def __repr__(self):
        metric, chain = self._what
        name = metric if isinstance(metric, str) else getattr(metric, "__name__", repr(metric))
        chain_s = "" if chain is None else f", chain={chain}"
        return f"make_chain_scorer({name!r}{chain_s}, repair={self.repair!r})"
