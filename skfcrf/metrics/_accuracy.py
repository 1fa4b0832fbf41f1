"""Token accuracy per chain, averaged over chains, and joint over chains."""
import numpy as np

from skfcrf.metrics._common import check_y_pair, label_equal, resolve_chain


def _correct_matrix(true, pred):
    """Stack per-token, per-chain correctness of all sequences: (n_tokens_total, n_chains)."""
    n_chains = true[0].shape[1]
    rows = [
        np.column_stack([label_equal(t[:, c], p[:, c]) for c in range(n_chains)])
        for t, p in zip(true, pred)
        if t.shape[0]
    ]
    if not rows:
        raise ValueError("y_true contains no tokens")
    return np.vstack(rows)


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
    true, pred, n_chains = check_y_pair(y_true, y_pred)
    c = resolve_chain(chain, n_chains, allow_none=True)
    acc = _correct_matrix(true, pred).mean(axis=0)
    if c is None:
        return acc
    return float(acc[c])


def average_accuracy(y_true, y_pred):
    """Accuracy averaged over chains ("Average" in the paper's tables 6.1/6.2).

    This is the unweighted mean of :func:`chain_accuracy` over all chains.
    Since every chain has the same number of tokens it equals the fraction of
    correct (token, chain) labels.

    Examples
    --------
    >>> y_true = [[("BeginSentence", "BeginSec"), ("Sentence", "Sec")]]
    >>> y_pred = [[("BeginSentence", "BeginSec"), ("Sentence", "BeginSec")]]
    >>> average_accuracy(y_true, y_pred)
    0.75
    """
    true, pred, _ = check_y_pair(y_true, y_pred)
    return float(_correct_matrix(true, pred).mean(axis=0).mean())


def joint_accuracy(y_true, y_pred):
    """Fraction of tokens whose labels are right in *all* chains ("Joint").

    Always ``<= average_accuracy``; equals :func:`chain_accuracy` for a single
    chain.

    Examples
    --------
    >>> y_true = [[("BeginSentence", "BeginSec"), ("Sentence", "Sec")]]
    >>> y_pred = [[("BeginSentence", "BeginSec"), ("Sentence", "BeginSec")]]
    >>> joint_accuracy(y_true, y_pred)
    0.5
    """
    true, pred, _ = check_y_pair(y_true, y_pred)
    return float(_correct_matrix(true, pred).all(axis=1).mean())
