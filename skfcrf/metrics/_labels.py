"""Per-label precision / recall / F1, text report and confusion matrices."""
import warnings

import numpy as np

from skfcrf.metrics._common import (
    chain_pair,
    check_y_pair,
    resolve_chain,
    sort_labels,
)


def _given_pair(y_true, y_pred, chain):
    """One chain's label arrays per sequence, without the tokens whose gold label is
    missing (``None`` in ``y_true``: partial annotation is skipped)."""
    true, pred, c = chain_pair(y_true, y_pred, chain, allow_missing=True)
    keep = [np.not_equal(t, None) for t in true]
    return [t[k] for t, k in zip(true, keep)], [p[k] for p, k in zip(pred, keep)], c


def _resolve_labels(true, pred, labels):
    if labels is None:
        seen = set()
        for seq in true + pred:
            seen.update(seq.tolist())
        return sort_labels(seen)
    labels = list(labels)
    if not labels:
        raise ValueError("labels must not be empty")
    if len(set(labels)) != len(labels):
        raise ValueError("labels contains duplicates")
    return labels


def label_counts(y_true, y_pred, chain=None, labels=None):
    """Per-label counts N, Correct and Returned of one chain (the paper's tables).

    ``N`` is how often a label should have been assigned (reference count),
    ``Returned`` how often it was assigned (predicted count) and ``Correct``
    how often it was assigned correctly. Counts are pooled over sequences.

    Parameters
    ----------
    y_true, y_pred : list of array-like
        Label sequences.
    chain : int or None
        Chain index; may be ``None`` only for single-chain data.
    labels : sequence, optional
        Labels to count, in this order. Defaults to the sorted union of the
        labels occurring in ``y_true`` and ``y_pred`` for that chain.

    Returns
    -------
    labels : list
    n, correct, returned : ndarray of int, shape (n_labels,)

    Examples
    --------
    >>> labels, n, correct, returned = label_counts([["a", "a", "b"]], [["a", "b", "b"]])
    >>> labels, n.tolist(), correct.tolist(), returned.tolist()
    (['a', 'b'], [2, 1], [1, 1], [1, 2])
    """
    true, pred, _ = _given_pair(y_true, y_pred, chain)
    labels = _resolve_labels(true, pred, labels)
    index = {lab: i for i, lab in enumerate(labels)}
    n = np.zeros(len(labels), dtype=np.int64)
    correct = np.zeros(len(labels), dtype=np.int64)
    returned = np.zeros(len(labels), dtype=np.int64)
    for t_seq, p_seq in zip(true, pred):
        for t, p in zip(t_seq.tolist(), p_seq.tolist()):
            i = index.get(t)
            j = index.get(p)
            if i is not None:
                n[i] += 1
                if t == p:
                    correct[i] += 1
            if j is not None:
                returned[j] += 1
    return labels, n, correct, returned


#: The macro-average conventions of :func:`precision_recall_fscore` and the reports.
CONVENTIONS = ("sklearn", "thesis")


def _check_convention(convention, zero_division):
    """Validate ``convention`` and ``zero_division`` (scikit-learn's values)."""
    if convention not in CONVENTIONS:
        raise ValueError(f"convention must be 'sklearn' or 'thesis', got {convention!r}")
    if isinstance(zero_division, str):
        if zero_division != "warn":
            raise ValueError(f"zero_division must be 'warn', 0.0, 1.0 or np.nan, got {zero_division!r}")
    elif (isinstance(zero_division, (bool, np.bool_))
          or not isinstance(zero_division, (int, float, np.integer, np.floating))
          or not (np.isnan(zero_division) or zero_division in (0, 1))):
        raise ValueError(f"zero_division must be 'warn', 0.0, 1.0 or np.nan, got {zero_division!r}")
    if convention == "thesis" and not (isinstance(zero_division, str) or np.isnan(zero_division)):
        raise ValueError(
            f"convention='thesis' leaves undefined scores N/A (NaN) and out of the macro "
            f"average, so zero_division={zero_division!r} does not apply; drop zero_division, "
            "or use convention='sklearn' to count undefined scores as zero_division")


def _fill_value(convention, zero_division):
    if convention == "thesis":
        return float("nan")
    return 0.0 if isinstance(zero_division, str) else float(zero_division)


def _undefined(n, correct, returned, convention):
    """Masks of the labels whose precision, recall and F1 are undefined.

    Precision is undefined without a returned token, recall without a reference
    token.  F1 is ``2 Correct / (N + Returned)`` (the harmonic mean of P and R
    where both are defined); scikit-learn leaves it undefined only when
    ``N + Returned = 0``, the thesis whenever P or R is undefined."""
    n = np.asarray(n)
    returned = np.asarray(returned)
    p_undef = returned == 0
    r_undef = n == 0
    f_undef = (p_undef | r_undef) if convention == "thesis" else (n + returned == 0)
    return p_undef, r_undef, f_undef


def _prf_from_counts(n, correct, returned, convention="sklearn", zero_division="warn"):
    """P, R, F1 arrays from the counts; undefined entries get the convention's value.

    Under ``"sklearn"`` an undefined score is ``zero_division`` (``"warn"``: 0,
    without warning here); under ``"thesis"`` it is NaN (N/A)."""
    p_undef, r_undef, f_undef = _undefined(n, correct, returned, convention)
    fill = _fill_value(convention, zero_division)
    n = np.asarray(n, dtype=float)
    correct = np.asarray(correct, dtype=float)
    returned = np.asarray(returned, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = np.where(p_undef, fill, correct / np.where(p_undef, 1, returned))
        r = np.where(r_undef, fill, correct / np.where(r_undef, 1, n))
        f = np.where(f_undef, fill, 2 * correct / np.where(f_undef, 1, n + returned))
    return p.astype(float), r.astype(float), f.astype(float)


def _warn_undefined(labels, n, correct, returned, zero_division):
    """scikit-learn's ``UndefinedMetricWarning`` for ``zero_division="warn"``."""
    from sklearn.exceptions import UndefinedMetricWarning

    p_undef, r_undef, f_undef = _undefined(n, correct, returned, "sklearn")
    for name, mask, why in (("Precision", p_undef, "no predicted tokens"),
                            ("Recall", r_undef, "no true tokens"),
                            ("F-score", f_undef, "no true nor predicted tokens")):
        if mask.any():
            which = [labels[i] for i in np.flatnonzero(mask)] if labels is not None else None
            where = f" (labels {which!r})" if which is not None else ""
            warnings.warn(f"{name} is ill-defined and being set to 0.0 in labels with {why}"
                          f"{where}. Use `zero_division` parameter to control this behavior.",
                          UndefinedMetricWarning, stacklevel=3)


def _macro(values):
    """Unweighted mean over the labels, NaN (undefined) entries left out; NaN if all are."""
    a = np.asarray(values, dtype=float)
    a = a[~np.isnan(a)]
    return float(a.mean()) if a.size else float("nan")


def precision_recall_fscore(
    y_true, y_pred, chain=None, labels=None, average=None, zero_division="warn",
    convention="sklearn",
):
    """Per-label precision, recall and F1 of one chain, or their micro/macro average.

    Following the paper (section 6.3): ``P_y = Correct_y / Returned_y``,
    ``R_y = Correct_y / N_y``, ``F1_y = 2 P_y R_y / (P_y + R_y)``
    ``= 2 Correct_y / (N_y + Returned_y)``.  A precision with ``Returned_y = 0``
    or a recall with ``N_y = 0`` is undefined.  The two conventions differ only
    in what happens to undefined scores:

    * ``convention="sklearn"`` (default): the figures of
      :func:`sklearn.metrics.precision_recall_fscore_support` on the flattened
      labels.  An undefined score is ``zero_division``; F1 is
      ``2 Correct_y / (N_y + Returned_y)`` whenever ``N_y + Returned_y > 0``
      (so 0 for a label never predicted).  The macro average is the mean over
      all ``labels``, undefined scores counted as ``zero_division``
      (``np.nan``: left out, as scikit-learn does).
    * ``convention="thesis"``: undefined scores are N/A (NaN), F1 is N/A
      whenever P or R is, and the macro average is the mean over the labels
      where the score is defined (the thesis's tables 6.3-6.8).  This can put
      the macro F1 above both the macro P and R (labels never predicted drop
      out of F1 but count in R), so it is not the default.

    * ``average=None``: per-label arrays.
    * ``"micro"``: sum ``N``, ``Correct`` and ``Returned`` over ``labels``, then
      compute P/R/F1 (equals accuracy when all labels are included).
    * ``"macro"``: unweighted mean of the per-label scores (see above).

    Parameters
    ----------
    y_true, y_pred : list of array-like
        Label sequences.
    chain : int or None
        Chain index; may be ``None`` only for single-chain data.
    labels : sequence, optional
        Labels to report, in this order (default: sorted union of observed labels).
    average : {None, "micro", "macro"}
    zero_division : {"warn", 0.0, 1.0, np.nan}, default="warn"
        Value of an undefined precision, recall or F1 under
        ``convention="sklearn"``, as in scikit-learn: ``"warn"`` acts as 0 and
        raises :class:`sklearn.exceptions.UndefinedMetricWarning`; ``np.nan``
        leaves the label out of the macro average.  ``convention="thesis"``
        takes only ``"warn"`` (the default; no warning) or ``np.nan``.
    convention : {"sklearn", "thesis"}, default="sklearn"
        How undefined scores are set and averaged (see above).

    Returns
    -------
    precision, recall, fscore : ndarray of shape (n_labels,) or float
    support : ndarray of int of shape (n_labels,) or int
        ``N_y`` per label, or its sum over ``labels`` when averaging.

    Raises
    ------
    ValueError
        If ``average``, ``zero_division`` or ``convention`` is not one of the
        values above, or ``zero_division`` is a number with ``convention="thesis"``.

    Examples
    --------
    >>> p, r, f, n = precision_recall_fscore([["a", "a", "b"]], [["a", "b", "b"]])
    >>> p.tolist(), r.tolist(), n.tolist()
    ([1.0, 0.5], [0.5, 1.0], [2, 1])
    >>> round(precision_recall_fscore([["a", "a", "b"]], [["a", "b", "b"]],
    ...                               average="macro")[2], 4)
    0.6667

    ``c`` is never predicted: its precision is undefined.

    >>> y_true, y_pred = [["a", "a", "b", "c"]], [["a", "a", "b", "b"]]
    >>> [round(v, 3) for v in precision_recall_fscore(
    ...     y_true, y_pred, average="macro", zero_division=0.0)[:3]]
    [0.5, 0.667, 0.556]
    >>> [round(v, 3) for v in precision_recall_fscore(
    ...     y_true, y_pred, average="macro", convention="thesis")[:3]]
    [0.75, 0.667, 0.833]
    """
    if average not in (None, "micro", "macro"):
        raise ValueError(f"average must be None, 'micro' or 'macro', got {average!r}")
    _check_convention(convention, zero_division)
    labels, n, correct, returned = label_counts(y_true, y_pred, chain, labels)
    warn = convention == "sklearn" and isinstance(zero_division, str)
    if average == "micro":
        counts = [n.sum()], [correct.sum()], [returned.sum()]
        if warn:
            _warn_undefined(None, *counts, zero_division)
        p, r, f = _prf_from_counts(*counts, convention, zero_division)
        return float(p[0]), float(r[0]), float(f[0]), int(n.sum())
    if warn:
        _warn_undefined(labels, n, correct, returned, zero_division)
    p, r, f = _prf_from_counts(n, correct, returned, convention, zero_division)
    if average == "macro":
        return _macro(p), _macro(r), _macro(f), int(n.sum())
    return p, r, f, n


def classification_report(y_true, y_pred, chain=None, labels=None, digits=2, zero_division="warn",
                          convention="sklearn"):
    """Text table per label: N, Correct, Returned, P, R, F1 (as in the paper).

    The ``Total`` row sums the counts and gives the macro-averaged P, R and F1
    of :func:`precision_recall_fscore` (by default scikit-learn's: over all
    labels, an undefined score counted as 0); a ``Micro`` row follows.
    Undefined scores are shown as ``N/A``, and a line below the table says how
    the ``Total`` row counted them.  Unlike scikit-learn's report this one does
    not warn (``UndefinedMetricWarning``): the table marks them instead.

    Parameters
    ----------
    y_true, y_pred : list of array-like
        Label sequences.
    chain : int or None, default=None
        Chain index; ``None`` reports every chain, one table each.
    labels : sequence, optional
        Labels to report (per chain when ``chain=None``; default: observed labels).
    digits : int, default=2
        Digits after the decimal point.
    zero_division : {"warn", 0.0, 1.0, np.nan}, default="warn"
        What an undefined score counts as in the ``Total`` row under
        ``convention="sklearn"`` (``"warn"``: 0; ``np.nan``: left out), as in
        :func:`precision_recall_fscore`.
    convention : {"sklearn", "thesis"}, default="sklearn"
        ``"thesis"``: the thesis's tables, where F1 is N/A whenever P or R is
        and the ``Total`` row averages the defined scores only (see
        :func:`precision_recall_fscore`).

    Returns
    -------
    report : str

    Examples
    --------
    >>> print(classification_report([["a", "a", "b"]], [["a", "b", "b"]]))
    Chain 0
    Label  N  Correct  Returned     P     R    F1
    a      2        1         1  1.00  0.50  0.67
    b      1        1         2  0.50  1.00  0.67
    Total  3        2         3  0.75  0.75  0.67
    Micro  3        2         3  0.67  0.67  0.67

    A label never predicted (``c``) has no precision; it counts as 0 in the
    macro average, as in :func:`sklearn.metrics.f1_score`:

    >>> print(classification_report([["a", "a", "b", "c"]], [["a", "a", "b", "b"]]))
    Chain 0
    Label  N  Correct  Returned     P     R    F1
    a      2        2         2  1.00  1.00  1.00
    b      1        1         2  0.50  1.00  0.67
    c      1        0         0   N/A  0.00  0.00
    Total  4        3         4  0.50  0.67  0.56
    Micro  4        3         4  0.75  0.75  0.75
    N/A: undefined (P: none returned, R: none in reference); Total counts it as 0, as scikit-learn does
    """
    _check_convention(convention, zero_division)
    true, pred, n_chains = check_y_pair(y_true, y_pred, allow_missing=True)
    c = resolve_chain(chain, n_chains, allow_none=True)
    chains = range(n_chains) if c is None else [c]
    blocks = []
    for ci in chains:
        t = [s[:, ci] for s in true]
        p = [s[:, ci] for s in pred]
        blocks.append(f"Chain {ci}\n" + _report_table(t, p, labels, digits, zero_division, convention))
    return "\n\n".join(blocks)


def _fmt_scores(values, undefined, digits):
    return ["N/A" if u or np.isnan(v) else f"{v:.{digits}f}" for v, u in zip(values, undefined)]


def _undefined_note(undefined, convention, zero_division):
    """The line below a report table that says how the ``Total`` row counted ``N/A``."""
    if not any(np.any(u) for u in undefined):
        return None
    what = "N/A: undefined (P: none returned, R: none in reference"
    if convention == "thesis":
        return what + ", F1: where P or R is); Total leaves it out (convention='thesis')"
    if not isinstance(zero_division, str) and np.isnan(zero_division):
        return what + "); Total leaves it out (zero_division=nan)"
    if isinstance(zero_division, str):
        return what + "); Total counts it as 0, as scikit-learn does"
    return what + f"); Total counts it as {zero_division:g} (zero_division={zero_division!r})"


def _report_table(t, p, labels, digits, zero_division="warn", convention="sklearn"):
    labs, n, correct, returned = label_counts(t, p, 0, labels)
    prec, rec, f1 = _prf_from_counts(n, correct, returned, convention, zero_division)
    undef = _undefined(n, correct, returned, convention)
    micro = [n.sum()], [correct.sum()], [returned.sum()]
    mp, mr, mf = _prf_from_counts(*micro, convention, zero_division)
    micro_undef = _undefined(*micro, convention)

    rows = [[str(lab), str(a), str(b), str(c), *s]
            for lab, a, b, c, *s in zip(labs, n, correct, returned,
                                        *(_fmt_scores(v, u, digits)
                                          for v, u in zip((prec, rec, f1), undef)))]
    rows.append(["Total", str(n.sum()), str(correct.sum()), str(returned.sum()),
                 *_fmt_scores([_macro(prec), _macro(rec), _macro(f1)], [False] * 3, digits)])
    rows.append(["Micro", str(n.sum()), str(correct.sum()), str(returned.sum()),
                 *_fmt_scores([mp[0], mr[0], mf[0]], [u[0] for u in micro_undef], digits)])
    header = ["Label", "N", "Correct", "Returned", "P", "R", "F1"]
    width = [max(len(r[i]) for r in rows + [header]) for i in range(len(header))]
    width[4:] = [max(w, digits + 2) for w in width[4:]]

    def line(r):
        first = r[0].ljust(width[0])
        rest = [v.rjust(w) for v, w in zip(r[1:], width[1:])]
        return "  ".join([first] + rest).rstrip()

    lines = [line(r) for r in [header] + rows]
    note = _undefined_note(undef, convention, zero_division)
    if note is not None:
        lines.append(note)
    return "\n".join(lines)


def confusion_matrix(y_true, y_pred, chain=None, labels=None):
    """Label confusion counts of one chain.

    Entry ``[i, j]`` counts tokens whose reference label is ``labels[i]`` and
    whose predicted label is ``labels[j]`` (rows: reference, columns:
    prediction, as in :func:`sklearn.metrics.confusion_matrix`). Tokens with a
    label outside ``labels`` are ignored.

    Parameters
    ----------
    y_true, y_pred : list of array-like
    chain : int or None
        Chain index; may be ``None`` only for single-chain data.
    labels : sequence, optional
        Row/column order (default: sorted union of observed labels).

    Returns
    -------
    cm : ndarray of int, shape (n_labels, n_labels)

    Examples
    --------
    >>> confusion_matrix([["a", "a", "b"]], [["a", "b", "b"]]).tolist()
    [[1, 1], [0, 1]]
    """
    true, pred, _ = _given_pair(y_true, y_pred, chain)
    labels = _resolve_labels(true, pred, labels)
    index = {lab: i for i, lab in enumerate(labels)}
    cm = np.zeros((len(labels), len(labels)), dtype=np.int64)
    for t_seq, p_seq in zip(true, pred):
        for t, p in zip(t_seq.tolist(), p_seq.tolist()):
            i = index.get(t)
            j = index.get(p)
            if i is not None and j is not None:
                cm[i, j] += 1
    return cm


def plot_confusion_matrix(
    y_true, y_pred, chain=None, labels=None, kind="matrix", normalize=None, ax=None,
    **kwargs,
):
    """Plot the confusion matrix of one chain (needs the ``[plot]`` extra).

    Parameters
    ----------
    y_true, y_pred : list of array-like
    chain : int or None
        Chain index; may be ``None`` only for single-chain data.
    labels : sequence, optional
        Label order (default: sorted union of observed labels).
    kind : {"matrix", "bubble"}, default="matrix"
        ``"matrix"`` draws :class:`sklearn.metrics.ConfusionMatrixDisplay`;
        ``"bubble"`` draws the paper's confusion plot (figures 6.3/6.4): reference
        label on the x-axis, predicted label on the y-axis, dot area
        proportional to the count.
    normalize : {None, "true", "pred", "all"}
        Normalise counts over reference labels (rows), predictions (columns)
        or all tokens.
    ax : matplotlib Axes, optional
    **kwargs
        Passed to ``ConfusionMatrixDisplay.plot`` or ``Axes.scatter``.

    Returns
    -------
    ax : matplotlib Axes

    Raises
    ------
    ImportError
        If matplotlib is not installed.
    """
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ImportError(
            "plot_confusion_matrix requires matplotlib, which is not installed; "
            "install it with: pip install 'skfcrf[plot]'"
        ) from exc
    if kind not in ("matrix", "bubble"):
        raise ValueError(f"kind must be 'matrix' or 'bubble', got {kind!r}")
    if normalize not in (None, "true", "pred", "all"):
        raise ValueError(f"normalize must be None, 'true', 'pred' or 'all', got {normalize!r}")
    true, pred, _ = _given_pair(y_true, y_pred, chain)
    labels = _resolve_labels(true, pred, labels)
    cm = confusion_matrix(true, pred, 0, labels).astype(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        if normalize == "true":
            cm = cm / cm.sum(axis=1, keepdims=True)
        elif normalize == "pred":
            cm = cm / cm.sum(axis=0, keepdims=True)
        elif normalize == "all":
            cm = cm / cm.sum()
    cm = np.nan_to_num(cm)
    if ax is None:
        _, ax = plt.subplots()
    names = [str(lab) for lab in labels]
    if kind == "matrix":
        from sklearn.metrics import ConfusionMatrixDisplay

        if normalize is None:
            cm = cm.astype(np.int64)
        disp = ConfusionMatrixDisplay(cm, display_labels=names)
        kwargs.setdefault("xticks_rotation", "vertical")
        disp.plot(ax=ax, **kwargs)
        return disp.ax_
    ref_idx, pred_idx = np.nonzero(cm)
    counts = cm[ref_idx, pred_idx]
    sizes = 600.0 * counts / counts.max() if counts.size else counts
    ax.scatter(ref_idx, pred_idx, s=sizes, **kwargs)
    ax.set_xticks(range(len(names)))
    ax.set_xticklabels(names, rotation=90)
    ax.set_yticks(range(len(names)))
    ax.set_yticklabels(names)
    ax.set_xlim(-0.5, len(names) - 0.5)
    ax.set_ylim(-0.5, len(names) - 0.5)
    ax.set_xlabel("Reference label")
    ax.set_ylabel("Predicted label")
    ax.grid(True, alpha=0.3)
    return ax


def pooled_classification_report(folds, chain=None, labels=None, digits=2, output_dict=False,
                                 confidence=0.95, zero_division="warn", convention="sklearn"):
    """Per-label N, Correct, Returned, P, R, F1 pooled over cross-validation folds.

    The thesis's tables 6.3-6.8: the counts are summed over all test folds
    ("computed over all three independent test sets"), P/R/F1 per label come
    from the pooled counts, the ``Total`` row gives their macro average (as
    :func:`classification_report`: by default over all labels, undefined scores
    counted as 0 as in scikit-learn; ``convention="thesis"`` averages the
    defined ones only), and a ``Folds`` row the macro P/R/F1 as the mean ±
    confidence half-width over the folds (:func:`confidence_interval`,
    Student's t; needs two folds or more).  Each fold's macro average is taken
    over the labels that occur in that fold (as reference or prediction), as
    scikit-learn's default ``labels`` would: a label missing from a fold
    altogether does not count as 0 there.

    Parameters
    ----------
    folds : iterable of (y_true, y_pred)
        One pair of label-sequence lists per test fold.  (For predictions from
        :func:`sklearn.model_selection.cross_val_predict`, which are pooled
        already, :func:`classification_report` gives the pooled table; only the
        ``Folds`` row needs the folds apart.)
    chain : int or None, default=None
        Chain index; ``None`` reports every chain.
    labels : sequence, optional
        Labels to report (default: those observed in any fold, sorted).
    digits : int, default=2
    output_dict : bool, default=False
        Return the numbers instead of the text.
    confidence : float, default=0.95
    zero_division : {"warn", 0.0, 1.0, np.nan}, default="warn"
        As in :func:`classification_report` (``"warn"``: 0, no warning; the
        text marks undefined scores ``N/A``).
    convention : {"sklearn", "thesis"}, default="sklearn"
        As in :func:`precision_recall_fscore`.

    Returns
    -------
    report : str, or dict
        With ``output_dict``: ``{chain: {"labels", "n", "correct", "returned",
        "precision", "recall", "f1", "macro": (p, r, f1), "folds": {"precision":
        (mean, half_width), "recall": ..., "f1": ...}}}`` (arrays per label;
        undefined scores are ``zero_division``'s value, 0 for ``"warn"``, NaN
        under ``convention="thesis"``; ``"folds"`` entries are None with one fold).

    Examples
    --------
    >>> folds = [([["a", "a", "b"]], [["a", "b", "b"]]), ([["a", "b"]], [["a", "b"]])]
    >>> print(pooled_classification_report(folds))
    Chain 0 (pooled over 2 folds)
    Label  N  Correct  Returned            P            R           F1
    a      3        2         2         1.00         0.67         0.80
    b      2        2         3         0.67         1.00         0.80
    Total  5        4         5         0.83         0.83         0.80
    Folds                        0.88 ± 1.59  0.88 ± 1.59  0.83 ± 2.12
    """
    from skfcrf.metrics._stats import confidence_interval

    _check_convention(convention, zero_division)
    folds = [check_y_pair(t, p)[:2] for t, p in folds]
    if not folds:
        raise ValueError("folds must hold at least one (y_true, y_pred) pair")
    n_chains = {f[0][0].shape[1] for f in folds if f[0]}
    if len(n_chains) > 1:
        raise ValueError(f"the folds have different numbers of chains: {sorted(n_chains)}")
    n_chains = n_chains.pop() if n_chains else 1
    c = resolve_chain(chain, n_chains, allow_none=True)
    out = {}
    for ci in range(n_chains) if c is None else [c]:
        true = [[s[:, ci] for s in t] for t, _ in folds]
        pred = [[s[:, ci] for s in p] for _, p in folds]
        all_t = [s for f in true for s in f]
        all_p = [s for f in pred for s in f]
        labs, n, correct, returned = label_counts(all_t, all_p, None, labels)
        p, r, f = _prf_from_counts(n, correct, returned, convention, zero_division)
        per_fold = []
        for t, pp in zip(true, pred):
            _, fn, fc, fr = label_counts(t, pp, None, labs)
            present = (fn + fr) > 0
            if not present.any():
                continue
            scores = _prf_from_counts(fn[present], fc[present], fr[present], convention, zero_division)
            per_fold.append([_macro(v) for v in scores])
        per_fold = np.array(per_fold, dtype=float).reshape(-1, 3)
        stats = {}
        for k, name in enumerate(("precision", "recall", "f1")):
            vals = per_fold[:, k]
            vals = vals[~np.isnan(vals)]
            stats[name] = confidence_interval(vals, confidence) if vals.size > 1 else None
        out[ci] = {"labels": labs, "n": n, "correct": correct, "returned": returned,
                   "precision": p, "recall": r, "f1": f,
                   "macro": (_macro(p), _macro(r), _macro(f)), "folds": stats,
                   "undefined": _undefined(n, correct, returned, convention)}
    if output_dict:
        for d in out.values():
            del d["undefined"]
        return out
    return "\n\n".join(f"Chain {ci} (pooled over {len(folds)} fold{'s' if len(folds) != 1 else ''})\n"
                       + _pooled_table(d, digits, zero_division, convention) for ci, d in out.items())


def _pooled_table(d, digits, zero_division="warn", convention="sklearn"):
    def fmt(x):
        return "N/A" if np.isnan(x) else f"{x:.{digits}f}"

    def fmt_ci(s):
        return "N/A" if s is None else f"{s[0]:.{digits}f} ± {s[1]:.{digits}f}"

    scores = [_fmt_scores(d[k], u, digits) for k, u in zip(("precision", "recall", "f1"), d["undefined"])]
    rows = [[str(lab), str(a), str(b), str(c), *s]
            for lab, a, b, c, *s in zip(d["labels"], d["n"], d["correct"], d["returned"], *scores)]
    rows.append(["Total", str(d["n"].sum()), str(d["correct"].sum()), str(d["returned"].sum()),
                 *(fmt(v) for v in d["macro"])])
    rows.append(["Folds", "", "", "", *(fmt_ci(d["folds"][k]) for k in ("precision", "recall", "f1"))])
    header = ["Label", "N", "Correct", "Returned", "P", "R", "F1"]
    width = [max(len(r[i]) for r in rows + [header]) for i in range(len(header))]

    def line(r):
        return "  ".join([r[0].ljust(width[0])] + [v.rjust(w) for v, w in zip(r[1:], width[1:])]).rstrip()

    lines = [line(r) for r in [header] + rows]
    note = _undefined_note(d["undefined"], convention, zero_division)
    if note is not None:
        lines.append(note)
    return "\n".join(lines)
