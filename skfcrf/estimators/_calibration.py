"""Calibration of the token marginals: one temperature per chain, fitted on held-out data.

A model trained to (near) convergence on its training sequences is
over-confident on new ones: the largest token marginal of
:meth:`~skfcrf.FactorialCRF.predict_marginals` is on average higher than the
rate at which that label is right (issue 29: on the dictations' section chain
the mean confidence is 99.6 % for 94.4 % accuracy -- a whole section labelled
wrongly gets the confidence a long segment of consistent evidence gives).
``calibration="temperature"`` learns, per chain ``c``, a temperature ``T_c``
and reports the tempered marginals

    ``p'_t(j) = p_t(j) ** (1 / T_c) / sum_k p_t(k) ** (1 / T_c)``

instead of ``p_t(j)``.  The map is applied per token, chain by chain, and
preserves the order of the labels of every token: the per-token most
probable label, the labels with marginal 0 (forbidden, or fixed away) and the
fixed labels (marginal 1) are unchanged.  It does not change the model: the
weights, :meth:`~skfcrf.FactorialCRF.predict`, :meth:`~skfcrf.FactorialCRF.decode`
and :meth:`~skfcrf.FactorialCRF.log_prob` stay those of the joint model (a
per-chain temperature on the token marginals is not the temperature of one
joint distribution; dividing all weights by one ``T`` would be, and leaves
the Viterbi labelling unchanged too, but one temperature cannot serve chains
that are over-confident to very different degrees: on the dictations about 2.5
for the sentence chains and 10 for the section chain).

The temperatures minimise the Brier score of the tempered marginals on tokens
the model was not trained on (:func:`fit_temperature`).  The Brier score is a
strictly proper score, like the log loss, but bounded per token: the log loss
is dominated by the few confidently wrong tokens (a wrongly labelled section
can have a log-odds margin of 50 nats) and pushes the temperature past the
calibrated one.
"""
import numpy as np
from scipy.optimize import minimize_scalar
from sklearn.model_selection import KFold

__all__ = ["calibration_folds", "fit_temperature", "temper", "brier_score",
           "held_out_targets"]

#: The search interval of ``log T`` (T from 1/20 to 400).
LOG_T_BOUNDS = (-np.log(20.0), np.log(400.0))


def calibration_folds(n_sequences, n_folds, random_state):
    """``(train, held)`` index pairs of ``n_folds`` shuffled folds of the sequences."""
    if n_sequences < n_folds:
        raise ValueError(f"calibration: calibration_cv={n_folds} folds need at least "
                         f"{n_folds} training sequences, got {n_sequences}")
    return list(KFold(n_folds, shuffle=True, random_state=random_state).split(
        np.arange(n_sequences)))


def temper(marginals, temperature):
    """``marginals ** (1 / temperature)``, normalised per row.

    Parameters
    ----------
    marginals : ndarray of shape (n_tokens, n_labels)
        Rows of probabilities (zeros allowed; each row sums to 1).
    temperature : float
        Positive; 1 returns the marginals unchanged, larger values flatten them.

    Returns
    -------
    ndarray of shape (n_tokens, n_labels)
        Zeros stay zero and the order of every row's entries is kept.
    """
    marginals = np.asarray(marginals, dtype=float)
    if temperature == 1.0 or marginals.size == 0:
        return marginals.copy()
    with np.errstate(divide="ignore"):
        logm = np.log(marginals)
    top = logm.max(axis=1, keepdims=True)
    top[~np.isfinite(top)] = 0.0          # an all-zero row (cannot happen for a model's marginals)
    out = np.exp((logm - top) / temperature)
    total = out.sum(axis=1, keepdims=True)
    total[total == 0] = 1.0
    return out / total


def brier_score(marginals, gold):
    """Mean multi-class Brier score ``sum_j (p(j) - [j == gold]) ** 2`` over tokens.

    ``gold`` holds label indices; ``-1`` marks a gold label outside the
    model's labels (every entry of its indicator is 0: the token is wrong
    whatever the model says).
    """
    sq = (marginals ** 2).sum(axis=1)
    known = gold >= 0
    rows = np.flatnonzero(known)
    sq[rows] += 1.0 - 2.0 * marginals[rows, gold[rows]]
    sq[~known] += 1.0
    return float(sq.mean())


def fit_temperature(marginals, gold):
    """The temperature that minimises the Brier score of the tempered marginals.

    Parameters
    ----------
    marginals : ndarray of shape (n_tokens, n_labels), or list of them
        Marginals of one chain on held-out tokens; a list holds blocks with
        label sets of their own (the held-out folds of models fitted on
        different sequences, which need not know the same labels).
    gold : ndarray of int, shape (n_tokens,), or list of them
        Their gold label indices, ``-1`` for a label the model does not know.

    Returns
    -------
    float
        In ``exp(LOG_T_BOUNDS)``; 1.0 when there is no token, or when every
        token's marginals are one-hot (no temperature changes them).  Tokens
        with non-finite marginals (a sequence without an allowed labelling
        under the model's constraints) are left out.
    """
    if not isinstance(marginals, (list, tuple)):
        marginals, gold = [marginals], [gold]
    blocks, n, sure = [], 0, 0.0
    for m, g in zip(marginals, gold):
        m = np.asarray(m, dtype=float)
        g = np.asarray(g, dtype=np.int64)
        # a sequence the model gives no allowed labelling has NaN marginals: no evidence
        finite = np.isfinite(m).all(axis=1)
        m, g = m[finite], g[finite]
        n += len(m)
        if not len(m):
            continue
        # a token whose largest marginal is 1 is the same at every temperature
        soft = m.max(axis=1) < 1.0
        if (~soft).any():
            sure += brier_score(m[~soft], g[~soft]) * (~soft).sum()
        if soft.any():
            blocks.append((m[soft], g[soft]))
    if not blocks:
        return 1.0

    def loss(log_t):
        t = float(np.exp(log_t))
        return (sure + sum(brier_score(temper(m, t), g) * len(m) for m, g in blocks)) / n

    result = minimize_scalar(loss, bounds=LOG_T_BOUNDS, method="bounded",
                             options={"xatol": 1e-3})
    # the Brier score need not be unimodal in T: keep T = 1 unless the optimum beats it
    return float(np.exp(result.x)) if result.fun < loss(0.0) else 1.0


def held_out_targets(estimator, marginals, y):
    """Per chain the stacked held-out marginals and gold label indices of ``estimator``.

    Parameters
    ----------
    estimator : FactorialCRF
        Fitted; its ``classes_`` index the gold labels.
    marginals : list
        :meth:`~skfcrf.FactorialCRF.predict_marginals` of the held-out sequences.
    y : list of ndarray
        Their label sequences, ``(n_tokens, n_chains)`` object arrays; ``None``
        (or NaN) marks a missing label, which is left out.

    Returns
    -------
    list of (ndarray, ndarray)
        Per chain ``(marginals (n, L_c), gold (n,))`` with ``gold = -1`` for a
        label the estimator does not know.
    """
    out = []
    for c, labels in enumerate(estimator.classes_):
        index = {label: k for k, label in enumerate(labels)}
        rows, gold = [], []
        for seq_m, seq_y in zip(marginals, y):
            col = seq_y[:, c]
            keep = np.array([not _missing(v) for v in col], dtype=bool)
            rows.append(seq_m[c][keep])
            gold.append(np.array([index.get(v, -1) for v in col[keep]], dtype=np.int64))
        n_labels = len(labels)
        out.append((np.concatenate(rows) if rows else np.zeros((0, n_labels)),
                    np.concatenate(gold) if gold else np.zeros(0, np.int64)))
    return out


def _missing(value):
    return value is None or (isinstance(value, float) and value != value)
