"""Token accuracy per chain, averaged over chains, and joint over chains.

Missing gold labels (``None`` in ``y_true``, partial annotation) are skipped: a
chain's accuracy counts the tokens whose label in that chain is given, the
joint accuracy the tokens whose labels are given in every chain.
"""
import numpy as np

from skfcrf.metrics._common import check_y_pair, label_equal, resolve_chain


def _correct_matrix(true, pred):
    """Per-token, per-chain correctness of all sequences, ``(n_tokens_total, n_chains)``
    float: 1 right, 0 wrong, NaN where the gold label is missing."""
    n_chains = true[0].shape[1]
    rows = [
        np.column_stack([np.where(np.equal(t[:, c], None), np.nan, label_equal(t[:, c], p[:, c]))
                         for c in range(n_chains)])
        for t, p in zip(true, pred)
        if t.shape[0]
    ]
    if not rows:
        raise ValueError("y_true contains no tokens")
    return np.vstack(rows)


def _accuracies(correct):
    """Per chain the mean correctness over the tokens with a given gold label."""
    given = ~np.isnan(correct)
    if not given.any(axis=0).all():
        c = int(np.flatnonzero(~given.any(axis=0))[0])
        raise ValueError(f"y_true has no given label in chain {c}: nothing to score")
    return np.nansum(correct, axis=0) / given.sum(axis=0)


def chain_accuracy(y_true, y_pred, chain=None):
    """Token accuracy (Correct / N) of one chain, or of every chain.

    Counts are pooled over all sequences (the paper's eq. 6.2): ``N`` is the
    total number of tokens, ``Correct`` the number of tokens whose label in the
    chain is right.

    Parameters
    ----------
    y_true, y_pred : list of array-like
        Label sequences: each ``(n_tokens, n_chains)``, a list of per-token
        tuples, or a 1-D label sequence (one chain).
    chain : int or None, default=None
        Chain index (negative values count from the top chain). ``None``
        returns the accuracy of every chain.

    Returns
    -------
    accuracy : float or ndarray of shape (n_chains,)

    Examples
    --------
    >>> y_true = [[("BeginSentence", "BeginSec"), ("Sentence", "Sec")]]
    >>> y_pred = [[("BeginSentence", "BeginSec"), ("Sentence", "BeginSec")]]
    >>> chain_accuracy(y_true, y_pred, chain=0)
    1.0
    >>> chain_accuracy(y_true, y_pred).tolist()
    [1.0, 0.5]
    """
    true, pred, n_chains = check_y_pair(y_true, y_pred, allow_missing=True)
    c = resolve_chain(chain, n_chains, allow_none=True)
    acc = _accuracies(_correct_matrix(true, pred))
    if c is None:
        return acc
    return float(acc[c])


def average_accuracy(y_true, y_pred):
    """Accuracy averaged over chains ("Average" in the paper's tables 6.1/6.2).

    This is the unweighted mean of :func:`chain_accuracy` over all chains.
    With complete gold labels every chain has the same number of tokens, and it
    equals the fraction of correct (token, chain) labels.

    Examples
    --------
    >>> y_true = [[("BeginSentence", "BeginSec"), ("Sentence", "Sec")]]
    >>> y_pred = [[("BeginSentence", "BeginSec"), ("Sentence", "BeginSec")]]
    >>> average_accuracy(y_true, y_pred)
    0.75
    """
    true, pred, _ = check_y_pair(y_true, y_pred, allow_missing=True)
    return float(_accuracies(_correct_matrix(true, pred)).mean())


def joint_accuracy(y_true, y_pred):
    """Fraction of tokens whose labels are right in *all* chains ("Joint").

    Tokens with a missing gold label are skipped.  With complete gold labels
    always ``<= average_accuracy``; equals :func:`chain_accuracy` for a single
    chain.

    Examples
    --------
    >>> y_true = [[("BeginSentence", "BeginSec"), ("Sentence", "Sec")]]
    >>> y_pred = [[("BeginSentence", "BeginSec"), ("Sentence", "BeginSec")]]
    >>> joint_accuracy(y_true, y_pred)
    0.5
    """
    true, pred, _ = check_y_pair(y_true, y_pred, allow_missing=True)
    correct = _correct_matrix(true, pred)
    complete = ~np.isnan(correct).any(axis=1)
    if not complete.any():
        raise ValueError("y_true has no token with every label given: nothing to score")
    return float((correct[complete] == 1).all(axis=1).mean())
