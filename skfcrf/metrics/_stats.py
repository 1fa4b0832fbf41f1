"""Confidence intervals over cross-validation folds."""
import numpy as np
from scipy import stats


def confidence_interval(scores, confidence=0.95):
    """Student's t confidence interval of the mean of per-fold scores.

    Implements the paper's equation 6.1: ``mean +- t(alpha/2, N-1) * s / sqrt(N)``
    where ``s`` is the sample standard deviation (``ddof=1``), ``N`` the number
    of scores and ``t(alpha/2, N-1)`` the upper ``alpha/2`` critical value of
    Student's t distribution with ``N - 1`` degrees of freedom,
    ``alpha = 1 - confidence``.

    Parameters
    ----------
    scores : array-like of float, shape (n_folds,)
        One score per fold/run; at least two, all finite.
    confidence : float in (0, 1), default=0.95

    Returns
    -------
    mean : float
    half_width : float
        The interval is ``(mean - half_width, mean + half_width)``.

    Examples
    --------
    >>> mean, hw = confidence_interval([0.90, 0.92, 0.94])
    >>> round(mean, 4), round(hw, 4)
    (0.92, 0.0497)
    """
    scores = np.asarray(scores, dtype=float)
    if scores.ndim != 1:
        raise ValueError(f"scores must be 1-D, got shape {scores.shape}")
    if scores.size < 2:
        raise ValueError(
            f"confidence_interval needs at least 2 scores (got {scores.size}); "
            "the sample standard deviation is undefined otherwise"
        )
    if not np.all(np.isfinite(scores)):
        raise ValueError("scores must be finite (no NaN or inf)")
    if not (isinstance(confidence, (int, float, np.floating)) and 0 < confidence < 1):
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    n = scores.size
    mean = float(scores.mean())
    s = float(scores.std(ddof=1))
    t = float(stats.t.ppf(1.0 - (1.0 - confidence) / 2.0, n - 1))
    return mean, float(t * s / np.sqrt(n))
