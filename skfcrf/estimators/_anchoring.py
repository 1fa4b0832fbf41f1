"""``anchors="auto"``: which chains' own confident labels MAP decoding keeps, chosen on held-out data.

Anchored decoding (:mod:`skfcrf.inference._anchors`) keeps a chain's label where
the chain's own factors are sure of it, so that the joint decoding cannot
overrule it.  Whether that pays depends on the data: on the dictations the
sentence chain alone is nearly always right and the section chain's errors
(a section start missed, a transition never seen) should not move it; on the
urology reports it is the subsection chain; anchoring a weak chain carries its
errors into the others.  So ``"auto"`` measures it: the same estimator is fitted
once more on two thirds of the training sequences (every third sequence held
out; at most :data:`MAX_FIT_TOKENS` tokens fitted and :data:`MAX_HELDOUT_TOKENS`
decoded, so the cost stays a fraction of the fit) and the held-out third is
decoded with no anchor, then with anchors added greedily, one chain at a time,
while the joint accuracy (every chain right at a token) rises, and rises clearly:
per held-out sequence, by Student's paired t-test at :data:`P_VALUE` (a weak
chain's own labels can be sure and wrong -- GUM's paragraph chain calls a
paragraph a list item -- and a small held-out gain for it turned into a loss
of 18 points on a test fold).

The result is the fitted ``anchors_`` dict: ``chains``, ``threshold``,
``heldout`` (anchor set -> held-out joint accuracy) and ``reason``.
"""
import numpy as np
from scipy import stats

from skfcrf.inference._anchors import ANCHOR_THRESHOLD

#: Tokens of the held-out fit's training part (the first sequences of the two thirds).
MAX_FIT_TOKENS = 40_000
#: Tokens of the held-out third decoded to compare the anchor sets.
MAX_HELDOUT_TOKENS = 20_000
#: Fewest training sequences ``"auto"`` splits.
MIN_SEQUENCES = 6
#: Largest p-value (paired t-test over the held-out sequences) of a gain that adds an anchor.
P_VALUE = 0.05


def anchors_record(chains, reason, heldout=None):
    """The ``anchors_`` dict."""
    return {"chains": [int(c) for c in chains], "threshold": ANCHOR_THRESHOLD,
            "heldout": heldout or {}, "reason": reason}


def _prefix(indices, lengths, budget):
    """The first of ``indices`` whose lengths sum to at most ``budget`` (at least one)."""
    total = np.cumsum([lengths[i] for i in indices])
    return indices[:max(1, int(np.searchsorted(total, budget, side="right")))]


def sequence_accuracies(y, pred):
    """Per sequence the share of its tokens with every chain right (NaN when empty)."""
    out = []
    for gold, guess in zip(y, pred):
        gold = np.asarray(gold, dtype=object).reshape(len(gold), -1)
        guess = np.asarray(guess, dtype=object).reshape(len(gold), -1)
        out.append(np.all(gold == guess, axis=1).mean() if len(gold) else np.nan)
    return np.asarray(out, dtype=float)


def clear_gain(new, old):
    """``(gain, p)``: the mean per-sequence gain of ``new`` over ``old`` and its
    two-sided paired t-test p-value (0 for a constant positive gain, 1 for none)."""
    keep = np.isfinite(new) & np.isfinite(old)
    d = new[keep] - old[keep]
    if d.size < 2 or not np.any(d):
        return 0.0, 1.0
    if np.all(d == d[0]):
        return float(d[0]), 0.0 if d[0] > 0 else 1.0
    return float(d.mean()), float(stats.ttest_rel(new[keep], old[keep]).pvalue)


def joint_hits(y, pred):
    """Tokens with every chain right, and tokens, over label sequences ``y`` and
    predictions ``pred`` (per sequence ``(T, C)``)."""
    hits = total = 0
    for gold, guess in zip(y, pred):
        gold = np.asarray(gold, dtype=object).reshape(len(gold), -1)
        guess = np.asarray(guess, dtype=object).reshape(len(gold), -1)
        hits += int(np.all(gold == guess, axis=1).sum())
        total += len(gold)
    return hits, total


def choose_anchors(fit_copy, X, y, n_chains):
    """Greedy held-out choice of the anchored chains.

    Parameters
    ----------
    fit_copy : callable
        ``fit_copy(X, y)`` returns the estimator fitted on ``X, y`` with
        ``anchors=None`` (the held-out fit); anchored predictions of it are
        made by setting its ``anchors_``.
    X, y : lists
        The training sequences (every label given).
    n_chains : int

    Returns
    -------
    dict
        The ``anchors_`` record.
    """
    lengths = [len(s) for s in y]
    fit_idx = _prefix([i for i in range(len(y)) if i % 3 != 2], lengths, MAX_FIT_TOKENS)
    held_idx = _prefix([i for i in range(len(y)) if i % 3 == 2], lengths, MAX_HELDOUT_TOKENS)
    model = fit_copy([X[i] for i in fit_idx], [y[i] for i in fit_idx])
    Xh, yh = [X[i] for i in held_idx], [y[i] for i in held_idx]

    def trial(chains):
        model.anchors_ = anchors_record(chains, "held-out trial")
        pred = model.predict(Xh)
        hits, total = joint_hits(yh, pred)
        return hits / max(total, 1), sequence_accuracies(yh, pred)

    heldout = {(): trial(())}
    chosen, p_chosen = (), None
    while len(chosen) < n_chains:
        trials = [tuple(sorted(chosen + (c,))) for c in range(n_chains) if c not in chosen]
        for chains in trials:
            heldout[chains] = trial(chains)
        chains = max(trials, key=lambda k: (heldout[k][0], -len(k)))
        gain, p = clear_gain(heldout[chains][1], heldout[chosen][1])
        if heldout[chains][0] <= heldout[chosen][0] or gain <= 0 or p >= P_VALUE:
            break
        chosen, p_chosen = chains, p
    shown = {",".join(map(str, k)) or "none": round(v[0], 6) for k, v in heldout.items()}
    n_fit, n_held = sum(lengths[i] for i in fit_idx), sum(lengths[i] for i in held_idx)
    where = (f"a copy fitted on {n_fit} tokens, {len(held_idx)} held-out sequences "
             f"({n_held} tokens) decoded")
    if chosen:
        reason = (f"anchoring chain(s) {list(chosen)} raised the held-out joint accuracy from "
                  f"{heldout[()][0]:.4f} to {heldout[chosen][0]:.4f}, paired t-test p = "
                  f"{p_chosen:.2g} ({where})")
    else:
        reason = (f"no anchor raised the held-out joint accuracy {heldout[()][0]:.4f} with "
                  f"p < {P_VALUE} ({where})")
    return anchors_record(chosen, reason, shown)
