"""Token-level F1 and Cohen's kappa over the tags of every chain, and paired tests.

The event space is the tokens (the token-level F1 of the seed paper
``001_e7e586aa3a14def3.txt``, section 2.3.2, and its Cohen's kappa, section 4.2):
a *tag* is a label of one chain, ``(chain, label)``, and every token whose gold
label is given counts, for every tag of its chain, as a true positive (gold and
predicted label are the tag), false positive (predicted only), false negative
(gold only) or true negative (neither).  With several chains the tags of all of
them are pooled, so overlapping annotations (a token that is a heading *and* in
a section) are scored together.  Tags are the labels seen in ``y_true`` or
``y_pred`` of each chain, except those listed in ``outside`` (labels that mean
"no tag", such as ``"O"``).

Counts per tag ``r``: ``TP_r``, ``FP_r``, ``FN_r`` and ``TN_r = N_c - TP_r - FP_r
- FN_r`` (``N_c`` the tokens of the tag's chain with a gold label).

``token_f1``
    ``F1 = 2 TP / (2 TP + FP + FN)``; ``"micro"`` sums the counts over the tags
    first, ``"macro"`` averages the per-tag F1.  A tag with ``TP = FP = FN = 0``
    has F1 = 1 (the paper's convention: every token was rightly left untagged).
``cohen_kappa``
    ``kappa = (P(A) - P(E)) / (1 - P(E))`` with ``P(A) = (TP + TN) / N`` and
    ``P(E) = ((TP + FP)(TP + FN) + (TN + FP)(TN + FN)) / N**2`` (the paper's
    equation 4.3 prints the denominator as ``N``; chance agreement is a
    probability, so it is ``N**2``).  ``"micro"`` pools the four counts over the
    tags, ``"macro"`` averages the per-tag kappas over the tags where it is
    defined (``P(E) < 1``).

:func:`sequence_scores` scores every sequence on its own, and
:func:`paired_test` compares two systems' per-sequence scores (the paper's
per-report paired t-test, or Wilcoxon's signed-rank or a permutation test).
"""
from collections import namedtuple

import numpy as np
from scipy import stats
from sklearn.utils import check_random_state

from skfcrf.metrics._common import check_y_pair, resolve_chain
from skfcrf.metrics._labels import _given_pair, label_counts

__all__ = ["TagCounts", "tag_counts", "token_f1", "cohen_kappa", "sequence_scores",
           "paired_test", "PairedTest"]

#: Per tag ``(chain, label)`` its counts over the tokens (module docstring).
TagCounts = namedtuple("TagCounts", "tags tp fp fn tn")

#: The result of :func:`paired_test`.
PairedTest = namedtuple("PairedTest", "statistic pvalue mean_difference n")

_AVERAGES = ("micro", "macro")


def tag_counts(y_true, y_pred, chain=None, outside=None):
    """True/false positives and negatives of every tag over the tokens.

    Parameters
    ----------
    y_true, y_pred : list of array-like
        Label sequences (``None`` in ``y_true`` marks a token without a gold
        label: it is left out).
    chain : int or None, default=None
        One chain's tags, or (``None``) those of every chain.
    outside : sequence, optional
        Labels that are not tags (e.g. ``["O"]``); their tokens still count as
        negatives of the other tags.

    Returns
    -------
    TagCounts
        ``tags``: list of ``(chain, label)``; ``tp``, ``fp``, ``fn``, ``tn``: int
        arrays, one entry per tag.

    Examples
    --------
    >>> c = tag_counts([["A", "A", "O"]], [["A", "O", "O"]], outside=["O"])
    >>> c.tags, c.tp.tolist(), c.fp.tolist(), c.fn.tolist(), c.tn.tolist()
    ([(0, 'A')], [1], [0], [1], [1])
    """
    _, _, n_chains = check_y_pair(y_true, y_pred, allow_missing=True)
    chains = range(n_chains) if chain is None else [resolve_chain(chain, n_chains)]
    skip = set() if outside is None else set(outside)
    tags, tp, fp, fn, tn = [], [], [], [], []
    for c in chains:
        true, _, _ = _given_pair(y_true, y_pred, c)
        n_tokens = sum(len(t) for t in true)
        if n_tokens == 0:
            continue
        labels, n, correct, returned = label_counts(y_true, y_pred, c)
        for lab, n_r, tp_r, ret_r in zip(labels, n, correct, returned):
            if lab in skip:
                continue
            tags.append((c, lab))
            tp.append(tp_r)
            fp.append(ret_r - tp_r)
            fn.append(n_r - tp_r)
            tn.append(n_tokens - n_r - ret_r + tp_r)
    as_int = [np.asarray(v, dtype=np.int64) for v in (tp, fp, fn, tn)]
    return TagCounts(tags, *as_int)


def _averaged(y_true, y_pred, chain, average, outside, score):
    """``score(tp, fp, fn, tn)`` of the counts summed over the tags (``"micro"``), or
    the mean of the per-tag scores that are defined (``"macro"``); NaN without a tag."""
    if average not in _AVERAGES:
        raise ValueError(f"average must be 'micro' or 'macro', got {average!r}")
    c = tag_counts(y_true, y_pred, chain, outside)
    if not c.tags:
        return float("nan")
    if average == "micro":
        return float(score(c.tp.sum(), c.fp.sum(), c.fn.sum(), c.tn.sum()))
    per_tag = np.asarray(score(c.tp, c.fp, c.fn, c.tn), dtype=float)
    return float(np.nanmean(per_tag)) if np.isfinite(per_tag).any() else float("nan")


def _f1(tp, fp, fn):
    denom = 2 * tp + fp + fn
    return np.where(denom > 0, 2 * tp / np.where(denom > 0, denom, 1), 1.0)


def token_f1(y_true, y_pred, chain=None, average="micro", outside=None):
    """Token-level F1 over the tags of every chain (micro or macro average).

    Parameters
    ----------
    y_true, y_pred : list of array-like
    chain : int or None, default=None
        One chain's tags, or every chain's (pooled).
    average : {"micro", "macro"}, default="micro"
    outside : sequence, optional
        Labels that are not tags (see :func:`tag_counts`).

    Returns
    -------
    float
        ``nan`` when there is no tag at all.

    Examples
    --------
    >>> y = [[("A", "x"), ("A", "y"), ("O", "y")]]
    >>> p = [[("A", "x"), ("O", "y"), ("O", "x")]]
    >>> round(token_f1(y, p, outside=["O"]), 4)       # TP 3, FP 1, FN 2
    0.6667
    """
    return _averaged(y_true, y_pred, chain, average, outside,
                     lambda tp, fp, fn, tn: _f1(tp, fp, fn))


def _kappa(tp, fp, fn, tn):
    tp, fp, fn, tn = (np.asarray(v, dtype=float) for v in (tp, fp, fn, tn))
    n = tp + fp + fn + tn
    p_a = (tp + tn) / n
    p_e = ((tp + fp) * (tp + fn) + (tn + fp) * (tn + fn)) / n ** 2
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(p_e < 1.0, (p_a - p_e) / (1.0 - p_e), np.nan)


def cohen_kappa(y_true, y_pred, chain=None, average="micro", outside=None):
    """Cohen's kappa of the tags' token-level agreement (micro or macro average).

    Parameters
    ----------
    y_true, y_pred : list of array-like
    chain : int or None, default=None
        One chain's tags, or every chain's (pooled).
    average : {"micro", "macro"}, default="micro"
        ``"micro"``: kappa of the counts summed over the tags; ``"macro"``: the
        mean of the per-tag kappas that are defined.
    outside : sequence, optional
        Labels that are not tags (see :func:`tag_counts`).

    Returns
    -------
    float
        ``nan`` where kappa is undefined (no tag, or chance agreement 1).

    Examples
    --------
    >>> round(cohen_kappa([["A", "A", "O", "O"]], [["A", "O", "O", "O"]], outside=["O"]), 4)
    0.5
    """
    return _averaged(y_true, y_pred, chain, average, outside, _kappa)


def sequence_scores(y_true, y_pred, metric, **kwargs):
    """``metric`` of every sequence on its own: ``[metric([t], [p], **kwargs)]``.

    Parameters
    ----------
    y_true, y_pred : list of array-like
    metric : callable
        ``metric(y_true, y_pred, **kwargs) -> float``, e.g. :func:`token_f1`
        or :func:`skfcrf.metrics.joint_accuracy`.

    Returns
    -------
    ndarray of shape (n_sequences,)
    """
    true, pred, _ = check_y_pair(y_true, y_pred, allow_missing=True)
    return np.array([metric([t], [p], **kwargs) for t, p in zip(true, pred)], dtype=float)


def paired_test(scores_a, scores_b, method="t", n_resamples=9999, random_state=None):
    """Whether two systems' paired per-sequence scores differ.

    Parameters
    ----------
    scores_a, scores_b : array-like of shape (n,)
        The two systems' scores of the same sequences (:func:`sequence_scores`);
        pairs with a non-finite score are left out.
    method : {"t", "wilcoxon", "permutation"}, default="t"
        Student's paired t-test (the paper's), Wilcoxon's signed-rank test, or a
        sign-flip permutation test of the mean difference (``n_resamples``
        random sign assignments, ``random_state`` seeding them).

    Returns
    -------
    PairedTest
        ``statistic``, the two-sided ``pvalue``, ``mean_difference`` (``a - b``)
        and ``n``, the pairs used.

    Examples
    --------
    >>> r = paired_test([0.9, 0.8, 0.85, 0.95], [0.8, 0.7, 0.8, 0.9])
    >>> round(r.mean_difference, 4), r.pvalue < 0.05
    (0.075, True)
    """
    a = np.asarray(scores_a, dtype=float)
    b = np.asarray(scores_b, dtype=float)
    if a.ndim != 1 or a.shape != b.shape:
        raise ValueError(f"scores_a and scores_b must be 1-D of one length, got shapes "
                         f"{a.shape} and {b.shape}")
    keep = np.isfinite(a) & np.isfinite(b)
    d = a[keep] - b[keep]
    if d.size < 2:
        raise ValueError(f"paired_test needs at least 2 finite pairs, got {d.size}")
    if method == "t":
        res = stats.ttest_rel(a[keep], b[keep])
        statistic, pvalue = res.statistic, res.pvalue
    elif method == "wilcoxon":
        res = stats.wilcoxon(d)
        statistic, pvalue = res.statistic, res.pvalue
    elif method == "permutation":
        rng = check_random_state(random_state)
        res = stats.permutation_test((d,), np.mean, permutation_type="samples",
                                     n_resamples=n_resamples, random_state=rng)
        statistic, pvalue = res.statistic, res.pvalue
    else:
        raise ValueError(f"method must be 't', 'wilcoxon' or 'permutation', got {method!r}")
    return PairedTest(float(statistic), float(pvalue), float(d.mean()), int(d.size))
