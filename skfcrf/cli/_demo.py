"""``skfcrf demo``: cross-validation on the embedded synthetic dictations.

For each style of :func:`skfcrf.datasets.make_dictations` (``cor``: formatted
reports, ``rcg``: recognizer output) the pipeline
(:func:`skfcrf.transformers.make_dictation_features` and a
:class:`skfcrf.FactorialCRF` with its default objective and a few iterations of
likelihood fine-tuning) is cross-validated by
:func:`sklearn.model_selection.cross_validate` over a 3-fold shuffled
:class:`~sklearn.model_selection.KFold`, scored by the package's scorers
(:func:`skfcrf.metrics.make_chain_scorer`: accuracy and WindowDiff per chain,
average and joint accuracy).  Each test fold is decoded once, by
:meth:`skfcrf.FactorialCRF.decode` (:class:`FoldScorer`): the scorers read the
raw labels and the labels post-processed with the style's preset
(:data:`skfcrf.structure.COR_RULES`, :data:`skfcrf.structure.RCG_RULES`; for
``rcg`` also with the opt-in rule 8.1) from it, and the convergence of TRP decoding
(not a scorer) comes from the same records.  The tables
(:mod:`skfcrf.cli._demo_tables`) are the thesis's 6.1/6.2 (accuracy), 6.9/6.10
(WindowDiff) and the macro F1 of 6.3-6.8, without and with post-processing.
With ``--output-dir`` (and only then: the demo writes no file otherwise) the first
test report of fold 1 (``rcg`` style) is rendered as HTML and Markdown, and its gold and
predicted structure are compared side by side
(:func:`skfcrf.structure.render_comparison`).  Training shows an iteration bar
per fold (:class:`~skfcrf.cli._progress.FitProgress`) on a terminal, counting to the
fold's budget in all stages (:func:`~skfcrf.cli._progress.fit_budget`).
"""
import argparse
import html
import os
import time

from sklearn.base import BaseEstimator

from skfcrf.cli._common import (
    CLIError,
    add_fit_options,
    convergence_summary,
    html_document,
    nonnegative_int,
    positive_int,
    progress,
)
from skfcrf.cli._files import check_writable
from skfcrf.cli._progress import FitProgress, fit_budget

#: demo defaults, chosen so that ``skfcrf demo`` finishes in a few minutes on 2 cores
DEMO_N_REPORTS = 60
#: the dictation styles cross-validated, each with its post-processing preset
STYLES = ("cor", "rcg")
DEMO_MAX_ITER = 100
DEMO_FINETUNE_ITER = 10
DEMO_BP_MAX_ITER = 200
DEMO_REPORT = "skfcrf_demo_report"
DEMO_COMPARISON = "skfcrf_demo_comparison"
N_FOLDS = 3


def add_parser(sub):
    d = sub.add_parser("demo", help="cross-validate on synthetic dictations, print the tables "
                       "and write one rendered report",
                       description="Structure recognition on the embedded synthetic dictations, "
                       "formatted (cor) and recognizer (rcg) style: "
                       "3-fold cross-validation of a factorial CRF (the default objective "
                       "and likelihood fine-tuning), per-chain "
                       "accuracy and WindowDiff with 95% confidence intervals, without and with "
                       "the thesis's post-processing, macro F1 per level, TRP convergence, "
                       "and one recognised report rendered as HTML and Markdown.")
    d.add_argument("--n-reports", type=positive_int, metavar="N", default=DEMO_N_REPORTS,
                   help="number of synthetic reports per style (default: %(default)s)")
    d.add_argument("--styles", type=style_list, metavar="STYLES", default=list(STYLES),
                   help="comma-separated dictation styles to cross-validate, from cor "
                   "(formatted reports) and rcg (recognizer output) (default: cor,rcg)")
    d.add_argument("--per-label", action="store_true",
                   help="also print the per-label precision/recall/F1 tables after "
                   "post-processing, counts pooled over the folds (the thesis's 6.3-6.8)")
    d.add_argument("--max-iter", type=positive_int, metavar="N", default=DEMO_MAX_ITER,
                   help="L-BFGS iterations per chain of each fold's first stage (default: "
                   "%(default)s; a cheaper chain may run a multiple, and fine-tuning and "
                   "joint-state transitions follow: the progress output gives each fold's "
                   "total)")
    d.add_argument("--finetune-iter", type=nonnegative_int, metavar="N",
                   default=DEMO_FINETUNE_ITER,
                   help="iterations of exact likelihood fine-tuning after the first stage "
                   "objective (default: %(default)s)")
    d.add_argument("--bp-max-iter", type=positive_int, metavar="N", default=DEMO_BP_MAX_ITER,
                   help="TRP iterations per report when decoding (default: %(default)s)")
    d.add_argument("--output-dir", metavar="DIR",
                   help="write skfcrf_demo_report.html/.md (one recognised report) and "
                   "skfcrf_demo_comparison.html (its gold and predicted structure) into this "
                   "existing directory (default: no file is written)")
    add_fit_options(d, min_instance_freq=2, instances="reports")
    d.set_defaults(func=run)
    return d


def style_list(text):
    """Comma-separated dictation styles, duplicates dropped."""
    styles = [v.strip() for v in text.split(",") if v.strip()]
    bad = [v for v in styles if v not in STYLES]
    if not styles or bad:
        raise argparse.ArgumentTypeError(
            f"expected styles from {', '.join(STYLES)}, got {text!r}")
    return list(dict.fromkeys(styles))


def repair_variants(style):
    """``{score prefix: (column title, rules)}``: the post-processing scored for ``style``.

    The style's preset (:data:`~skfcrf.structure.COR_RULES` or
    :data:`~skfcrf.structure.RCG_RULES`); for ``rcg`` also with the opt-in rule 8.1
    (:data:`~skfcrf.structure.RCG_RULES_WITH_8_1`), whose effect is measured on the
    same decodings.
    """
    from skfcrf.structure import REPAIR_PRESETS

    variants = {"repaired_": (f"with post-proc. ({style})", REPAIR_PRESETS[style])}
    if style == "rcg":
        variants["with81_"] = ("rcg + rule 8.1", REPAIR_PRESETS["rcg+8.1"])
    return variants


def demo_scoring(n_chains):
    """The package's scorers of the demo, per chain and overall.

    Keys ``accuracy_<c>`` and ``windowdiff_<c>`` (negated, as scikit-learn
    maximises scores) for every chain ``c``, ``average`` and ``joint`` accuracy.
    """
    from skfcrf.metrics import make_chain_scorer

    scoring = {f"accuracy_{c}": make_chain_scorer("accuracy", chain=c) for c in range(n_chains)}
    scoring["average"] = make_chain_scorer("average_accuracy")
    scoring["joint"] = make_chain_scorer("joint_accuracy")
    scoring.update({f"windowdiff_{c}": make_chain_scorer("windowdiff", chain=c)
                    for c in range(n_chains)})
    return scoring


class FoldScorer:
    """The ``scoring`` callable of the demo: decode a test fold once, score it.

    Called by :func:`~sklearn.model_selection.cross_validate` with the fold's
    fitted pipeline (``features`` then ``crf``) and its test reports.  It
    decodes them with :meth:`skfcrf.FactorialCRF.decode`, gives the labels to
    the :func:`demo_scoring` scorers (through :class:`_Decoded`, so the
    pipeline's ``predict`` does not decode a second time), then the labels
    repaired with each of ``variants`` (``{prefix: (title, rules)}``, see
    :func:`repair_variants`; their scores are named ``prefix + name``), adds
    ``iterative`` (1.0 if TRP ran on some report), ``converged`` and
    ``bp_iterations`` (:func:`~skfcrf.cli._common.convergence_summary`),
    prints a progress line, keeps every variant's ``(y_true, y_pred)`` per fold
    in ``folds`` (for the pooled per-label tables) and the first fold's first
    report for the rendered example.  Folds run one after another (``n_jobs=None``).
    """

    def __init__(self, n_chains, quiet=False, variants=None, style="rcg", fit_progress=None,
                 budgets=None):
        self.scorers = demo_scoring(n_chains)
        self.budgets = budgets  # per fold, the most iterations of its fit (FitBudget)
        self.quiet = quiet
        self.fit_progress = fit_progress  # the fold's training bar, closed when it is scored
        self.example_decoding = None
        self.variants = dict(variants or {})
        self.style = style
        self.folds = {prefix: [] for prefix in ("", *self.variants)}
        self.n_folds_done = 0
        self.example = None

    def _score(self, prefix, labels, X, y):
        decoded = _Decoded(labels)
        self.folds[prefix].append((y, labels))
        return {prefix + name: scorer(decoded, X, y) for name, scorer in self.scorers.items()}

    def __call__(self, estimator, X, y):
        from skfcrf.structure import repair_sequences

        if self.fit_progress is not None:
            self.fit_progress.finish()
        t0 = time.perf_counter()
        crf = estimator.named_steps["crf"]
        decodings = crf.decode(estimator.named_steps["features"].transform(X))
        labels = [d.labels for d in decodings]
        scores = self._score("", labels, X, y)
        for prefix, (_, rules) in self.variants.items():
            scores.update(self._score(prefix, repair_sequences(labels, rules, X), X, y))
        iterative, scores["converged"], scores["bp_iterations"] = convergence_summary(decodings)
        scores["iterative"] = float(iterative)
        self.n_folds_done += 1
        fixed = (f", {100 * scores['repaired_joint']:.2f}% after post-processing"
                 if "repaired_joint" in scores else "")
        most = ("" if self.budgets is None else
                f" of at most {self.budgets[(self.n_folds_done - 1) % N_FOLDS].total}")
        progress(f"{self.style} fold {self.n_folds_done}/{N_FOLDS}: trained ({crf.n_iter_}"
                 f"{most} L-BFGS iterations in all stages"
                 f"{'' if crf.converged_ else ', first stage not converged'}), decoded "
                 f"{len(X)} reports in {time.perf_counter() - t0:.1f} s: joint accuracy "
                 f"{100 * scores['joint']:.2f}%{fixed}", self.quiet)
        if self.example is None:
            self.example = (X[0], y[0], labels[0])
            self.example_decoding = decodings[0]
        return scores


class _Decoded(BaseEstimator):
    """Labels already decoded, standing in for the fitted pipeline: ``predict`` returns them."""

    def __init__(self, labels):
        self.labels = labels

    def predict(self, X):
        return self.labels


def run(args):
    import numpy as np

    from skfcrf.cli._demo_tables import (
        accuracy_table,
        macro_f1_table,
        windowdiff_table,
    )
    from skfcrf.datasets import DICTATION_CHAINS
    from skfcrf.metrics import pooled_classification_report

    if args.n_reports < 6:
        raise CLIError(f"--n-reports must be at least 6 for 3-fold cross-validation, "
                       f"got {args.n_reports}", 2)
    out_dir = args.output_dir
    if out_dir is not None:
        check_writable(out_dir, "--output-dir", directory=True)
    t_start = time.perf_counter()
    n_chains = len(DICTATION_CHAINS)
    runs = {style: cross_validate_style(style, args, n_chains) for style in args.styles}

    print(f"skfcrf demo: {args.n_reports} synthetic dictations per style (seed {args.seed}; "
          + ", ".join(f"{style}: {r['n_tokens']} tokens" for style, r in runs.items())
          + f"), {N_FOLDS}-fold cross-validation")
    objective = next(iter(runs.values()))["cv"]["estimator"][0].named_steps["crf"].objective
    print(f"FactorialCRF(objective={objective!r}, "
          f"sigma={args.sigma:g}, max_iter={args.max_iter}, finetune_iter={args.finetune_iter}, "
          f"bp_max_iter={args.bp_max_iter}, "
          f"min_instance_freq={args.min_instance_freq}) on n-gram window, bag-of-concepts "
          "(window 10) and relative-position (8 bins) observations; post-processing: "
          + ", ".join(f"skfcrf.structure.{style.upper()}_RULES ({style})" for style in runs))
    number = 1
    for table in (accuracy_table, windowdiff_table):
        for style, r in runs.items():
            print()
            print(table(number, style, r["cv"], r["columns"], n_chains, N_FOLDS))
            number += 1
    pooled = {style: {p: pooled_classification_report(r["scoring"].folds[p], output_dict=True)
                      for p, _ in r["columns"]} for style, r in runs.items()}
    print()
    print(macro_f1_table(number, [(f"{style}: {title}", pooled[style][p])
                                  for style, r in runs.items() for p, title in r["columns"]
                                  if p != "with81_"], n_chains))
    if args.per_label:
        for style, r in runs.items():
            print()
            print(f"Per-label scores on {style}-style dictations after post-processing, counts "
                  f"pooled over the {N_FOLDS} folds (tables 6.3-6.8)")
            print(pooled_classification_report(r["scoring"].folds["repaired_"]))
    print()
    for style, r in runs.items():
        cv = r["cv"]
        conv, bp_iter = cv["test_converged"], cv["test_bp_iterations"]
        if cv["test_iterative"].any():
            print(f"{style}: TRP max-product decoding (at most {args.bp_max_iter} iterations): "
                  f"converged on {100 * conv.mean():.1f}% of the test reports "
                  f"(per fold {', '.join(f'{100 * v:.1f}%' for v in conv)}), "
                  f"mean {bp_iter.mean():.1f} iterations")
        else:  # inference="auto" chose exact decoding (e.g. over the seen joint label states)
            print(f"{style}: decoding exact on all test reports (inference='auto' chose exact "
                  "inference; no TRP iterations)")
        crfs = [est.named_steps["crf"] for est in cv["estimator"]]
        n_hit = sum(not crf.converged_ for crf in crfs)
        print(f"{style}: training {', '.join(str(crf.n_iter_) for crf in crfs)} L-BFGS "
              "iterations per fold in all stages (of at most "
              f"{', '.join(str(b.total) for b in r['budgets'])})"
              + (f" (in {n_hit} of {N_FOLDS} folds the first stage stopped before converging)"
                 if n_hit else "")
              + f", {float(np.sum(cv['fit_time'])):.1f} s in total")
    example = runs.get("rcg", next(iter(runs.values())))
    idx = int(example["cv"]["indices"]["test"][0][0])
    if out_dir is None:
        print(f"Report {idx + 1} not rendered to files: --output-dir DIR writes them "
              f"({DEMO_REPORT}.html, {DEMO_REPORT}.md and {DEMO_COMPARISON}.html)")
    else:
        _write_report(out_dir, idx, *example["scoring"].example)
        tokens, gold, _ = example["scoring"].example
        _write_comparison(out_dir, idx, tokens, gold, example["scoring"].example_decoding,
                          list(DICTATION_CHAINS))
    print(f"Wall time: {time.perf_counter() - t_start:.1f} s")
    return 0


def cross_validate_style(style, args, n_chains):
    """Cross-validate the demo pipeline on ``args.n_reports`` dictations of ``style``.

    Returns a dict: ``cv`` (the :func:`~sklearn.model_selection.cross_validate`
    result, with estimators and test indices), ``scoring`` (its
    :class:`FoldScorer`), ``columns`` (``(score prefix, title)`` of the raw and
    repaired variants) and ``n_tokens``.
    """
    import warnings

    from sklearn.exceptions import ConvergenceWarning
    from sklearn.model_selection import KFold, cross_validate
    from sklearn.pipeline import Pipeline

    from skfcrf import FactorialCRF
    from skfcrf.datasets import make_dictations
    from skfcrf.transformers import make_dictation_features

    quiet = args.quiet
    progress(f"{style}: generating {args.n_reports} synthetic dictations (seed {args.seed}), "
             f"{N_FOLDS}-fold cross-validation...", quiet)
    X, y = make_dictations(n_reports=args.n_reports, style=style, random_state=args.seed)
    crf = FactorialCRF(sigma=args.sigma, finetune_iter=args.finetune_iter,
                       max_iter=args.max_iter, min_instance_freq=args.min_instance_freq,
                       bp_max_iter=args.bp_max_iter, n_jobs=args.n_jobs,
                       random_state=args.seed, verbose=args.verbose)
    folds = KFold(n_splits=N_FOLDS, shuffle=True, random_state=args.seed)
    budgets = fold_budgets(crf, X, y, folds)
    stages = budgets[0].describe().partition(": ")[2]
    if len({b.total for b in budgets}) == 1:
        most = f"at most {budgets[0].total} L-BFGS iterations per fold in all stages: {stages}"
    else:
        totals = [str(b.total) for b in budgets]
        most = (f"at most {', '.join(totals[:-1])} and {totals[-1]} L-BFGS iterations in all "
                f"stages in folds 1-{N_FOLDS}; fold 1: {stages}")
    progress(f"{style}: training ({most}), decoding and scoring...", quiet)
    fit_progress = FitProgress(lambda k: budgets[(k - 1) % N_FOLDS].total,
                               lambda k: f"{style} fold {k}/{N_FOLDS}: training",
                               quiet=quiet or args.verbose > 0)
    crf.set_params(callback=fit_progress.callback)
    model = Pipeline([("features", make_dictation_features()), ("crf", crf)])
    variants = repair_variants(style)
    scoring = FoldScorer(n_chains, quiet, variants, style, fit_progress, budgets)
    with warnings.catch_warnings():
        # a fold stopped at --max-iter is reported from converged_
        warnings.simplefilter("ignore", ConvergenceWarning)
        cv = cross_validate(model, X, y, cv=folds, scoring=scoring, return_estimator=True,
                            return_indices=True, error_score="raise")
    columns = [("", "without post-proc.")] + [(p, title) for p, (title, _) in variants.items()]
    return {"cv": cv, "scoring": scoring, "columns": columns, "budgets": budgets,
            "n_tokens": sum(len(s) for s in X)}


def fold_budgets(crf, X, y, folds):
    """Per fold of ``folds`` the most L-BFGS iterations the demo's ``crf`` can run on the
    fold's training reports (:func:`~skfcrf.cli._progress.fit_budget`, on the observations
    of the demo's features fitted on them): the budget of the independent chains' first
    stage depends on the data."""
    from sklearn.base import clone

    from skfcrf.transformers import make_dictation_features

    budgets = []
    for train, _ in folds.split(X):
        X_train = [X[i] for i in train]
        Xf = clone(make_dictation_features()).fit_transform(X_train)
        budgets.append(fit_budget(crf, Xf, [y[i] for i in train]))
    return budgets


def _write_report(out_dir, idx, tokens, gold, pred):
    """Render one test report (repaired prediction, then the gold structure)."""
    import numpy as np

    from skfcrf.structure import DICTATION_RULES, render_html, render_markdown, repair

    fixed = repair(pred, DICTATION_RULES, tokens=tokens)
    opts = dict(dictated_punctuation=True, capitalize=True, drop_words=("uh", "um", "ah", "er"))
    doc_acc = float(np.mean(np.all(np.asarray(pred, dtype=object) == gold, axis=1)))
    title = f"skfcrf demo: recognised structure of dictation {idx + 1}"
    note = (f"Report {idx + 1} of the synthetic corpus (test fold 1), structure predicted by the "
            f"factorial CRF and repaired; joint token accuracy {100 * doc_acc:.1f}%.")
    md_path = os.path.join(out_dir, DEMO_REPORT + ".md")
    html_path = os.path.join(out_dir, DEMO_REPORT + ".html")
    ref_title = "Reference structure (gold labels), for comparison"
    try:
        with open(md_path, "w", encoding="utf-8") as fh:
            fh.write(f"# {title}\n\n_{note}_\n\n")
            fh.write(render_markdown(tokens, fixed, **opts))
            fh.write(f"\n---\n\n# {ref_title}\n\n")
            fh.write(render_markdown(tokens, gold, **opts))
        with open(html_path, "w", encoding="utf-8") as fh:
            body = (f"<h1>{html.escape(title)}</h1>\n<p><em>{html.escape(note)}</em></p>\n"
                    f"<main>\n{render_html(tokens, fixed, **opts)}</main>\n<hr>\n"
                    f"<h1>{html.escape(ref_title)}</h1>\n"
                    f"<aside>\n{render_html(tokens, gold, **opts)}</aside>")
            fh.write(html_document(title, body))
    except OSError as exc:
        raise CLIError(f"cannot write the report to {out_dir}: {exc.strerror or exc}") from None
    print(f"Report {idx + 1} rendered to {html_path} and {md_path}")


def _write_comparison(out_dir, idx, tokens, gold, decoding, chains):
    """The same report's gold and predicted (unrepaired) structure side by side."""
    from skfcrf.structure import render_comparison

    path = os.path.join(out_dir, DEMO_COMPARISON + ".html")
    page = render_comparison(tokens, gold, decoding, chain_names=chains,
                             title=f"skfcrf demo: gold and predicted structure of dictation "
                             f"{idx + 1} (test fold 1)")
    try:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(page)
    except OSError as exc:
        raise CLIError(f"cannot write the comparison to {out_dir}: {exc.strerror or exc}") from None
    print(f"Gold and predicted structure of report {idx + 1} compared in {path}")
