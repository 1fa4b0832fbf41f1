"""The tables ``skfcrf demo`` prints: the thesis's tables with and without post-processing.

Every table is built from the ``cross_validate`` result of one style (``cv``: a
dict of per-fold score arrays, keys ``test_<variant><score>``) and the variants
scored: ``(prefix, column title)`` pairs, prefix ``""`` for the raw
predictions (see :class:`skfcrf.cli._demo.FoldScorer`).  Accuracy and
WindowDiff are printed as mean ± 95% confidence half-width over the folds
(Student's t, :func:`skfcrf.metrics.confidence_interval`) in percent.
"""
from skfcrf.metrics import confidence_interval

#: the thesis's names for the demo's chains (the dictation chains, finest first)
LEVELS = ("sentence", "subsection", "section")


def fmt_ci(mean, hw, scale=100.0):
    return f"{scale * mean:6.2f} ± {scale * hw:5.2f}"


def _table(title, rows, variants, cell):
    """``title``, a header of the variants' titles, then one line per ``(name, key)`` row."""
    width = max(len(name) for name, _ in rows)
    cols = [max(15, len(t)) for _, t in variants]
    lines = [title, "  " + " " * width + "".join(f"  {t:>{w}}" for (_, t), w in zip(variants, cols))]
    for name, key in rows:
        lines.append(f"  {name:<{width}}" + "".join(f"  {cell(p, key):>{w}}"
                                                   for (p, _), w in zip(variants, cols)))
    return "\n".join(lines)


def accuracy_table(number, style, cv, variants, n_chains, n_folds):
    """Tables 6.1/6.2: accuracy per level, average and joint, per variant."""
    rows = [(LEVELS[c] if c < len(LEVELS) else f"chain {c}", f"accuracy_{c}")
            for c in range(n_chains)] + [("average", "average"), ("joint", "joint")]
    return _table(f"Table {number}. Accuracy (%) on {style}-style dictations, mean ± 95% "
                  f"confidence interval over {n_folds} folds", rows, variants,
                  lambda p, key: fmt_ci(*confidence_interval(cv[f"test_{p}{key}"])))


def windowdiff_table(number, style, cv, variants, n_chains, n_folds):
    """Tables 6.9/6.10: WindowDiff per level (lower is better), per variant."""
    rows = [(LEVELS[c] if c < len(LEVELS) else f"chain {c}", f"windowdiff_{c}")
            for c in range(n_chains)]
    return _table(f"Table {number}. WindowDiff (%) on {style}-style dictations (lower is "
                  f"better), mean ± 95% confidence interval over {n_folds} folds", rows, variants,
                  lambda p, key: fmt_ci(*confidence_interval(-cv[f"test_{p}{key}"])))


def macro_f1_table(number, columns, n_chains):
    """The bottom rows of tables 6.3-6.8: macro-averaged F1 per level, counts pooled over the
    folds.  ``columns``: ``(title, {chain: report dict})`` with the dicts of
    :func:`skfcrf.metrics.pooled_classification_report` (its default convention,
    scikit-learn's: every label counts, a label never predicted with F1 0; the thesis left
    undefined scores out, which can raise the average)."""
    rows = [(LEVELS[c] if c < len(LEVELS) else f"chain {c}", c) for c in range(n_chains)]
    variants = [(k, title) for k, (title, _) in enumerate(columns)]
    return _table(f"Table {number}. Macro-averaged F1 (%) per level, counts pooled over the "
                  "folds (the bottom rows of the thesis's tables 6.3-6.8; every label counted, "
                  "as scikit-learn's f1_score)", rows, variants,
                  lambda k, c: f"{100 * columns[k][1][c]['macro'][2]:6.2f}")
