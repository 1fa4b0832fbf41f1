"""Per-label precision / recall / F1, text report and confusion matrices."""
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


def _prf_from_counts(n, correct, returned, zero_division):
    """P, R, F1 arrays; undefined entries get ``zero_division`` (F1 is nan if P or R is)."""
    n = np.asarray(n, dtype=float)
    correct = np.asarray(correct, dtype=float)
    returned = np.asarray(returned, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = np.where(returned > 0, correct / np.where(returned > 0, returned, 1), zero_division)
        r = np.where(n > 0, correct / np.where(n > 0, n, 1), zero_division)
        denom = p + r
        f = np.where(denom > 0, 2 * p * r / np.where(denom > 0, denom, 1), 0.0)
    f = np.where(np.isnan(p) | np.isnan(r), np.nan, f)
    return p.astype(float), r.astype(float), f.astype(float)


def precision_recall_fscore(
    y_true, y_pred, chain=None, labels=None, average=None, zero_division=np.nan
):
    """Per-label precision, recall and F1 of one chain, or their micro/macro average.

    Following the paper (section 6.3): ``P_y = Correct_y / Returned_y``,
    ``R_y = Correct_y / N_y``, ``F1_y = 2 P_y R_y / (P_y + R_y)``.

    * ``average=None``: per-label arrays.
    * ``"micro"``: sum ``N``, ``Correct`` and ``Returned`` over ``labels``, then
      compute P/R/F1 (equals accuracy when all labels are included).
    * ``"macro"``: unweighted mean of the per-label scores over the labels where
      the score is *defined* (the paper's convention; undefined = "N/A").

    A precision with ``Returned_y = 0`` or a recall with ``N_y = 0`` is undefined
    and set to ``zero_division`` (default ``nan``, i.e. "N/A"); F1 is ``nan``
    whenever P or R is ``nan``, and 0 when ``P + R = 0``.

    Parameters
    ----------
    y_true, y_pred : list of array-like
        Label sequences.
    chain : int or None
        Chain index; may be ``None`` only for single-chain data.
    labels : sequence, optional
        Labels to report, in this order (default: sorted union of observed labels).
    average : {None, "micro", "macro"}
    zero_division : float, default=nan
        Value for undefined precision/recall.

    Returns
    -------
    precision, recall, fscore : ndarray of shape (n_labels,) or float
    support : ndarray of int of shape (n_labels,) or int
        ``N_y`` per label, or its sum over ``labels`` when averaging.

    Examples
    --------
    >>> p, r, f, n = precision_recall_fscore([["a", "a", "b"]], [["a", "b", "b"]])
    >>> p.tolist(), r.tolist(), n.tolist()
    ([1.0, 0.5], [0.5, 1.0], [2, 1])
    >>> round(precision_recall_fscore([["a", "a", "b"]], [["a", "b", "b"]],
    ...                               average="macro")[2], 4)
    0.6667
    """
    if average not in (None, "micro", "macro"):
        raise ValueError(f"average must be None, 'micro' or 'macro', got {average!r}")
    _, n, correct, returned = label_counts(y_true, y_pred, chain, labels)
    if average == "micro":
        p, r, f = _prf_from_counts([n.sum()], [correct.sum()], [returned.sum()], zero_division)
        return float(p[0]), float(r[0]), float(f[0]), int(n.sum())
    p, r, f = _prf_from_counts(n, correct, returned, zero_division)
    if average == "macro":
        return _nanmean(p), _nanmean(r), _nanmean(f), int(n.sum())
    return p, r, f, n


def _nanmean(a):
    a = np.asarray(a, dtype=float)
    a = a[~np.isnan(a)]
    return float(a.mean()) if a.size else float("nan")


def classification_report(y_true, y_pred, chain=None, labels=None, digits=2):
    """Text table per label: N, Correct, Returned, P, R, F1 (as in the paper).

    The ``Total`` row sums the counts and gives macro-averaged P, R and F1
    (the paper's convention); a ``Micro`` row follows. Undefined scores are
    shown as ``N/A``.

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
    """
    true, pred, n_chains = check_y_pair(y_true, y_pred, allow_missing=True)
    c = resolve_chain(chain, n_chains, allow_none=True)
    chains = range(n_chains) if c is None else [c]
    blocks = []
    for ci in chains:
        t = [s[:, ci] for s in true]
        p = [s[:, ci] for s in pred]
        blocks.append(f"Chain {ci}\n" + _report_table(t, p, labels, digits))
    return "\n\n".join(blocks)


def _report_table(t, p, labels, digits):
    labs, n, correct, returned = label_counts(t, p, 0, labels)
    prec, rec, f1 = _prf_from_counts(n, correct, returned, np.nan)
    mp, mr, mf = _prf_from_counts([n.sum()], [correct.sum()], [returned.sum()], np.nan)

    def fmt(x):
        return "N/A" if np.isnan(x) else f"{x:.{digits}f}"

    rows = [[str(lab), str(a), str(b), str(c), fmt(x), fmt(y), fmt(z)]
            for lab, a, b, c, x, y, z in zip(labs, n, correct, returned, prec, rec, f1)]
    rows.append(["Total", str(n.sum()), str(correct.sum()), str(returned.sum()),
                 fmt(_nanmean(prec)), fmt(_nanmean(rec)), fmt(_nanmean(f1))])
    rows.append(["Micro", str(n.sum()), str(correct.sum()), str(returned.sum()),
                 fmt(mp[0]), fmt(mr[0]), fmt(mf[0])])
    header = ["Label", "N", "Correct", "Returned", "P", "R", "F1"]
    width = [max(len(r[i]) for r in rows + [header]) for i in range(len(header))]
    width[4:] = [max(w, digits + 2) for w in width[4:]]

    def line(r):
        first = r[0].ljust(width[0])
        rest = [v.rjust(w) for v, w in zip(r[1:], width[1:])]
        return "  ".join([first] + rest).rstrip()

    return "\n".join(line(r) for r in [header] + rows)


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
                                 confidence=0.95):
    """Per-label N, Correct, Returned, P, R, F1 pooled over cross-validation folds.

    The thesis's tables 6.3-6.8: the counts are summed over all test folds
    ("computed over all three independent test sets"), P/R/F1 per label come
    from the pooled counts, the ``Total`` row gives their macro average over the
    labels where they are defined, and a ``Folds`` row the macro P/R/F1 as the
    mean ± confidence half-width over the folds (:func:`confidence_interval`,
    Student's t; needs two folds or more).

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

    Returns
    -------
    report : str, or dict
        With ``output_dict``: ``{chain: {"labels", "n", "correct", "returned",
        "precision", "recall", "f1", "macro": (p, r, f1), "folds": {"precision":
        (mean, half_width), "recall": ..., "f1": ...}}}`` (arrays per label;
        undefined scores NaN; ``"folds"`` entries are None with one fold).

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
        p, r, f = _prf_from_counts(n, correct, returned, np.nan)
        per_fold = np.array([precision_recall_fscore(t, pp, None, labs, "macro")[:3]
                             for t, pp in zip(true, pred)])
        stats = {}
        for k, name in enumerate(("precision", "recall", "f1")):
            vals = per_fold[:, k]
            vals = vals[~np.isnan(vals)]
            stats[name] = confidence_interval(vals, confidence) if vals.size > 1 else None
        out[ci] = {"labels": labs, "n": n, "correct": correct, "returned": returned,
                   "precision": p, "recall": r, "f1": f,
                   "macro": (_nanmean(p), _nanmean(r), _nanmean(f)), "folds": stats}
    if output_dict:
        return out
    return "\n\n".join(f"Chain {ci} (pooled over {len(folds)} fold{'s' if len(folds) != 1 else ''})\n"
                       + _pooled_table(d, digits) for ci, d in out.items())


def _pooled_table(d, digits):
    def fmt(x):
        return "N/A" if np.isnan(x) else f"{x:.{digits}f}"

    def fmt_ci(s):
        return "N/A" if s is None else f"{s[0]:.{digits}f} ± {s[1]:.{digits}f}"

    rows = [[str(lab), str(a), str(b), str(c), fmt(x), fmt(y), fmt(z)]
            for lab, a, b, c, x, y, z in zip(d["labels"], d["n"], d["correct"], d["returned"],
                                             d["precision"], d["recall"], d["f1"])]
    rows.append(["Total", str(d["n"].sum()), str(d["correct"].sum()), str(d["returned"].sum()),
                 *(fmt(v) for v in d["macro"])])
    rows.append(["Folds", "", "", "", *(fmt_ci(d["folds"][k]) for k in ("precision", "recall", "f1"))])
    header = ["Label", "N", "Correct", "Returned", "P", "R", "F1"]
    width = [max(len(r[i]) for r in rows + [header]) for i in range(len(header))]

    def line(r):
        return "  ".join([r[0].ljust(width[0])] + [v.rjust(w) for v, w in zip(r[1:], width[1:])]).rstrip()

    return "\n".join(line(r) for r in [header] + rows)
