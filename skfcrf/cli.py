"""The ``skfcrf`` command line.

Subcommands
-----------
``skfcrf demo``
    The embedded default: cross-validates a factorial CRF on synthetic medical
    dictations, prints the per-chain accuracy / WindowDiff tables with confidence
    intervals and writes one recognised report as HTML and Markdown.
``skfcrf train DATA --model PATH``
    Fits a model on a CoNLL-style column file.  The CRF is saved with
    :meth:`skfcrf.FactorialCRF.save` (arrays + JSON, no pickle) and the feature
    configuration next to it as ``PATH.features.json`` (plain JSON).
``skfcrf tag DATA --model PATH``
    Writes predicted label columns, or the sequences rendered as HTML/Markdown.
``skfcrf evaluate DATA --model PATH``
    Prints per-chain and joint accuracy, per-label reports, segment F1 and WindowDiff.

Errors are reported as one line ``skfcrf: error: ...`` on stderr with a non-zero
exit status (2 for usage errors, 1 otherwise).
"""
import argparse
import html
import json
import os
import sys
import time
import warnings
import zipfile

__all__ = ["main", "build_parser", "build_features", "FEATURE_KINDS"]

PROG = "skfcrf"
FEATURES_SUFFIX = ".features.json"
FEATURES_FORMAT = "skfcrf-cli-features"
FEATURES_VERSION = 1
FEATURE_KINDS = ("ngram", "concepts", "position", "shape")
DEFAULT_FEATURES = ("ngram", "concepts", "position")
DEMO_REPORT = "skfcrf_demo_report"


class CLIError(Exception):
    """An error reported to the user as one line (exit status ``status``)."""

    def __init__(self, message, status=1):
        super().__init__(message)
        self.status = status


class _Parser(argparse.ArgumentParser):
    """ArgumentParser whose errors are one line on stderr (no usage block)."""

    def error(self, message):
        raise CLIError(f"{message} (see '{self.prog} --help')", status=2)


# ----------------------------------------------------------------------------- option types
def _bounded(convert, ok, what):
    """An argparse type: ``convert`` the text, then require ``ok(value)``."""
    def parse(text):
        try:
            v = convert(text)
        except ValueError:
            v = None
        if v is None or not ok(v):
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}")
        return v
    return parse


_positive_int = _bounded(int, lambda v: v >= 1, "a positive integer")
_nonnegative_int = _bounded(int, lambda v: v >= 0, "a non-negative integer")
_positive_float = _bounded(float, lambda v: v > 0, "a positive number")


def _n_jobs(text):
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if v == 0:
        raise argparse.ArgumentTypeError("n-jobs must not be 0 (use -1 for all cores)")
    return v


def _instance_freq(text):
    """An int >= 1 (number of sequences) or a float in (0, 1] (fraction of them)."""
    try:
        v = int(text)
    except ValueError:
        try:
            v = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected an integer >= 1 or a fraction in (0, 1], got {text!r}") from None
        if not 0 < v <= 1:
            raise argparse.ArgumentTypeError(
                f"expected an integer >= 1 or a fraction in (0, 1], got {text!r}")
        return v
    if v < 1:
        raise argparse.ArgumentTypeError(
            f"expected an integer >= 1 or a fraction in (0, 1], got {text!r}")
    return v


def _feature_list(text):
    kinds = [k.strip() for k in text.split(",") if k.strip()]
    if not kinds:
        raise argparse.ArgumentTypeError("expected a comma-separated list of feature kinds")
    bad = [k for k in kinds if k not in FEATURE_KINDS]
    if bad:
        raise argparse.ArgumentTypeError(
            f"unknown feature kind {bad[0]!r} (choose from {', '.join(FEATURE_KINDS)})")
    return list(dict.fromkeys(kinds))


_SEPARATORS = {"whitespace": None, "tab": "\t", "space": " "}


# ----------------------------------------------------------------------------- features
def _text_attribute(attributes):
    return "word" if "word" in attributes else attributes[0]


def build_features(config):
    """The feature pipeline described by a feature configuration dict.

    Parameters
    ----------
    config : dict
        ``attributes`` (token attribute columns), ``features`` (subset of
        :data:`FEATURE_KINDS`), ``lowercase``, ``ngram_window``,
        ``concept_window``, ``position_bins``.

    Returns
    -------
    SequenceFeatureUnion
        n-gram windows over every attribute (``ngram``), bag of concepts over the
        words (``concepts``), relative position (``position``) and word shape
        (``shape``).
    """
    from skfcrf.transformers import (
        BagOfConcepts,
        NGramWindow,
        RelativePosition,
        SequenceFeatureUnion,
        WordShape,
    )

    attributes = list(config["attributes"])
    text_attr = _text_attribute(attributes)
    w = int(config.get("ngram_window", 2))
    offsets = tuple(range(-w, w + 1))
    parts = []
    for kind in config["features"]:
        if kind == "ngram":
            for a in attributes:
                parts.append((f"ngram_{a}", NGramWindow(attribute=a, offsets=offsets,
                                                        lowercase=bool(config.get("lowercase")))))
        elif kind == "concepts":
            parts.append(("concepts", BagOfConcepts(window=int(config.get("concept_window", 10)),
                                                    attribute=text_attr)))
        elif kind == "position":
            parts.append(("position", RelativePosition(n_bins=int(config.get("position_bins", 8)))))
        elif kind == "shape":
            parts.append(("shape", WordShape(attribute=text_attr)))
        else:
            raise CLIError(f"unknown feature kind {kind!r} in the feature configuration")
    return SequenceFeatureUnion(parts)


def _features_path(model_path):
    return os.fspath(model_path) + FEATURES_SUFFIX


def _load_model(model_path):
    """(FactorialCRF, feature config) of a model written by ``skfcrf train``."""
    from skfcrf import FactorialCRF

    if not os.path.isfile(model_path):
        raise CLIError(f"model file not found: {model_path}")
    fpath = _features_path(model_path)
    if not os.path.isfile(fpath):
        raise CLIError(f"feature configuration not found: {fpath} (written by 'skfcrf train' "
                       "next to the model)")
    if not zipfile.is_zipfile(model_path):
        raise CLIError(f"invalid model file {model_path}: not an skfcrf model (expected the .npz "
                       "archive written by 'skfcrf train')")
    try:
        crf = FactorialCRF.load(model_path)
    except Exception as exc:  # np.load/zip/json/key errors of a foreign or damaged file
        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        if detail.startswith(model_path):
            raise CLIError(f"invalid model file {detail}") from None
        raise CLIError(f"invalid model file {model_path}: {detail}") from None
    try:
        with open(fpath, encoding="utf-8") as fh:
            config = json.load(fh)
    except (OSError, ValueError) as exc:
        raise CLIError(f"invalid feature configuration {fpath}: {exc}") from None
    if not isinstance(config, dict) or config.get("format") != FEATURES_FORMAT:
        raise CLIError(f"invalid feature configuration {fpath}: not written by 'skfcrf train'")
    if config.get("version") != FEATURES_VERSION:
        raise CLIError(f"invalid feature configuration {fpath}: unsupported version "
                       f"{config.get('version')!r}")
    try:
        attrs = config["attributes"]
        feats = config["features"]
        n_labels = config["label_columns"]
        if not (isinstance(attrs, list) and attrs and all(isinstance(a, str) for a in attrs)):
            raise ValueError("attributes")
        if not (isinstance(feats, list) and all(f in FEATURE_KINDS for f in feats)):
            raise ValueError("features")
        if not isinstance(n_labels, int) or n_labels < 1:
            raise ValueError("label_columns")
        if config.get("sep") not in _SEPARATORS:
            raise ValueError("sep")
    except (KeyError, ValueError) as exc:
        raise CLIError(f"invalid feature configuration {fpath}: bad or missing "
                       f"{exc.args[0]!r}") from None
    if n_labels != crf.n_chains_:
        raise CLIError(f"feature configuration {fpath} describes {n_labels} label columns but "
                       f"the model has {crf.n_chains_} chains")
    return crf, config


# ----------------------------------------------------------------------------- data
def _read(path, attributes, n_label_columns, sep):
    from skfcrf.datasets import read_conll

    if not os.path.exists(path):
        raise CLIError(f"data file not found: {path}")
    if os.path.isdir(path):
        raise CLIError(f"data path is a directory, not a file: {path}")
    try:
        X, y = read_conll(path, n_label_columns=n_label_columns, attributes=tuple(attributes),
                          sep=_SEPARATORS[sep])
    except UnicodeDecodeError as exc:
        raise CLIError(f"{path}: not a UTF-8 text file ({exc.reason} at byte "
                       f"{exc.start})") from None
    except ValueError as exc:
        raise CLIError(f"malformed data file {exc}") from None
    if not X:
        raise CLIError(f"{path}: no sequences found (empty file?)")
    if len(attributes) == 1 and attributes[0] != "word":
        # transformers read plain str tokens as the "word" attribute
        X = [[{attributes[0]: t} for t in seq] for seq in X]
    return X, y


def _count_columns(path, sep):
    """Number of columns on the first non-blank line of a column file."""
    try:
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                line = line.rstrip("\r\n")
                if line.strip():
                    s = _SEPARATORS[sep]
                    return len(line.split() if s is None else line.split(s))
    except UnicodeDecodeError as exc:
        raise CLIError(f"{path}: not a UTF-8 text file ({exc.reason} at byte "
                       f"{exc.start})") from None
    except OSError as exc:
        raise CLIError(f"cannot read {path}: {exc.strerror}") from None
    return 0


def _chain_names(n_chains):
    return [f"chain {c}" for c in range(n_chains)]


def _as_2d(seqs):
    import numpy as np

    return [np.asarray(s, dtype=object).reshape(len(s), -1) for s in seqs]


def _has_boundaries(y, chain):
    from skfcrf.metrics import segment_boundaries

    return any(len(b) and b.any() for b in segment_boundaries(y, chain=chain))


def _progress(msg, quiet=False):
    if not quiet:
        print(msg, file=sys.stderr, flush=True)


# ----------------------------------------------------------------------------- train
def _cmd_train(args):
    from sklearn.exceptions import ConvergenceWarning

    from skfcrf import FactorialCRF

    if len(set(args.attributes)) != len(args.attributes):
        raise CLIError(f"--attributes must be distinct, got {' '.join(args.attributes)}", 2)
    config = {
        "format": FEATURES_FORMAT,
        "version": FEATURES_VERSION,
        "attributes": list(args.attributes),
        "label_columns": args.label_columns,
        "sep": args.sep,
        "features": list(args.features),
        "lowercase": bool(args.lowercase),
        "ngram_window": args.ngram_window,
        "concept_window": args.concept_window,
        "position_bins": args.position_bins,
    }
    model_dir = os.path.dirname(os.path.abspath(args.model))
    if not os.path.isdir(model_dir):
        raise CLIError(f"cannot write the model: directory does not exist: {model_dir}")
    if os.path.isdir(args.model):
        raise CLIError(f"cannot write the model: {args.model} is a directory")
    X, y = _read(args.data, args.attributes, args.label_columns, args.sep)
    n_tokens = sum(len(s) for s in X)
    _progress(f"read {len(X)} sequences ({n_tokens} tokens, {args.label_columns} label "
              f"column{'s' if args.label_columns != 1 else ''}) from {args.data}", args.quiet)
    t0 = time.perf_counter()
    Xf = build_features(config).fit_transform(X)
    crf = FactorialCRF(sigma=args.sigma, objective=args.objective, solver=args.solver,
                       max_iter=args.max_iter, min_instance_freq=args.min_instance_freq,
                       bp_max_iter=args.bp_max_iter, n_jobs=args.n_jobs,
                       random_state=args.seed, verbose=args.verbose)
    _progress(f"training ({args.objective}, {args.solver}, at most {args.max_iter} iterations)...",
              args.quiet)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        crf.fit(Xf, y)
    converged = not any(issubclass(w.category, ConvergenceWarning) for w in caught)
    try:
        crf.save(args.model)
        with open(_features_path(args.model), "w", encoding="utf-8") as fh:
            json.dump(config, fh, indent=2)
            fh.write("\n")
    except OSError as exc:
        raise CLIError(f"cannot write model {args.model}: {exc.strerror or exc}") from None
    note = "" if converged else f" (stopped at --max-iter {args.max_iter})"
    _progress(f"trained in {time.perf_counter() - t0:.1f} s: {crf.n_iter_} iterations{note}, "
              f"{crf.n_features_in_} observations, {crf.coef_.size} weights", args.quiet)
    print(f"model written to {args.model} (features: {_features_path(args.model)})")
    return 0


# ----------------------------------------------------------------------------- tag
def _cmd_tag(args):
    from skfcrf.datasets import write_conll

    crf, config = _load_model(args.model)
    attributes = config["attributes"]
    sep = config["sep"]
    n_chains = crf.n_chains_
    n_attr = len(attributes)
    n_cols = _count_columns(args.data, sep) if os.path.isfile(args.data) else n_attr
    # gold label columns, if present, are read and ignored
    n_label_columns = n_chains if n_cols == n_attr + n_chains else 0
    X, _ = _read(args.data, attributes, n_label_columns, sep)
    _progress(f"tagging {len(X)} sequences...", args.quiet)
    y_pred = crf.predict(build_features(config).transform(X))
    if args.format == "columns":
        out = args.output if args.output else sys.stdout
        write_conll(out, X, y_pred, attributes=attributes,
                    sep="\t" if sep == "tab" else " ")
    else:
        text = _render_documents(X, y_pred, args.format)
        if args.output:
            with open(args.output, "w", encoding="utf-8") as fh:
                fh.write(text)
        else:
            sys.stdout.write(text)
    if args.output:
        _progress(f"wrote {args.output}", args.quiet)
    return 0


def _render_documents(X, y_pred, fmt, title="skfcrf"):
    from skfcrf.structure import render_html, render_markdown, repair

    parts = []
    for i, (tokens, labels) in enumerate(zip(X, y_pred)):
        fixed = repair(labels, tokens=tokens)
        if fmt == "html":
            parts.append(f"<article id=\"seq-{i + 1}\">\n{render_html(tokens, fixed)}</article>")
        else:
            parts.append(render_markdown(tokens, fixed))
    if fmt == "html":
        return _html_document(title, "\n".join(parts))
    return "\n---\n\n".join(parts)


def _html_document(title, body):
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f"<title>{html.escape(title)}</title>\n</head>\n<body>\n{body}\n</body>\n</html>\n")


# ----------------------------------------------------------------------------- evaluate
def _cmd_evaluate(args):
    from skfcrf.metrics import (
        chain_accuracy,
        classification_report,
        joint_accuracy,
        segment_f1,
        windowdiff,
    )

    crf, config = _load_model(args.model)
    n_chains = crf.n_chains_
    X, y = _read(args.data, config["attributes"], n_chains, config["sep"])
    _progress(f"tagging {len(X)} sequences...", args.quiet)
    y_pred = crf.predict(build_features(config).transform(X))
    yt, yp = _as_2d(y), _as_2d(y_pred)
    names = _chain_names(n_chains)
    acc = chain_accuracy(yt, yp)
    width = max(len(n) for n in names + ["joint"])
    n_tokens = sum(len(s) for s in yt)
    print(f"{args.data}: {len(yt)} sequences, {n_tokens} tokens, {n_chains} "
          f"chain{'s' if n_chains != 1 else ''}")
    print()
    print(f"{'':<{width}}  accuracy  segment F1  WindowDiff")
    for c in range(n_chains):
        f1 = segment_f1(yt, yp, chain=c)
        wd = None
        if _has_boundaries(yt, c):
            try:
                wd = windowdiff(yt, yp, chain=c)
            except ValueError:  # no sequence longer than the window
                wd = None
        wd_s = f"{wd:10.4f}" if wd is not None else f"{'-':>10}"
        print(f"{names[c]:<{width}}  {acc[c]:8.4f}  {f1:10.4f}  {wd_s}")
    print(f"{'joint':<{width}}  {joint_accuracy(yt, yp):8.4f}")
    stats = crf.inference_stats_
    if stats.get("method") == "trp":
        print(f"\nTRP max-product converged on {100 * stats['converged_fraction']:.1f}% of the "
              f"sequences (mean {stats['mean_iterations']:.1f} iterations)")
    for c in range(n_chains):
        print()
        print(classification_report(yt, yp, chain=c).rstrip())
    return 0


# ----------------------------------------------------------------------------- demo
def _fmt_ci(mean, hw, scale=100.0):
    return f"{scale * mean:6.2f} ± {scale * hw:5.2f}"


def _cmd_demo(args):
    import numpy as np
    from sklearn.base import clone
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.model_selection import KFold
    from sklearn.pipeline import Pipeline

    from skfcrf import FactorialCRF
    from skfcrf.datasets import DICTATION_CHAINS, make_dictations
    from skfcrf.metrics import (
        average_accuracy,
        chain_accuracy,
        confidence_interval,
        joint_accuracy,
        windowdiff,
    )
    from skfcrf.structure import DICTATION_RULES, render_html, render_markdown, repair
    from skfcrf.transformers import (
        BagOfConcepts,
        NGramWindow,
        RelativePosition,
        make_sequence_union,
    )

    if args.n_reports < 6:
        raise CLIError(f"--n-reports must be at least 6 for 3-fold cross-validation, "
                       f"got {args.n_reports}", 2)
    out_dir = args.output_dir
    if not os.path.isdir(out_dir):
        raise CLIError(f"output directory does not exist: {out_dir}", 2)
    quiet = args.quiet
    n_folds = 3
    t_start = time.perf_counter()
    _progress(f"generating {args.n_reports} synthetic dictations (style rcg, seed {args.seed})...",
              quiet)
    X, y = make_dictations(n_reports=args.n_reports, style="rcg", random_state=args.seed)
    n_tokens = sum(len(s) for s in X)
    model = Pipeline([
        ("features", make_sequence_union(NGramWindow(lowercase=True), BagOfConcepts(window=10),
                                         RelativePosition(n_bins=8))),
        ("crf", FactorialCRF(objective="pseudolikelihood", sigma=args.sigma,
                             max_iter=args.max_iter, min_instance_freq=args.min_instance_freq,
                             bp_max_iter=args.bp_max_iter, n_jobs=args.n_jobs,
                             random_state=args.seed, verbose=args.verbose)),
    ])
    chains = list(DICTATION_CHAINS)
    n_chains = len(chains)
    scores = {"acc": [], "avg": [], "joint": [], "wd": [], "conv": [], "bp_iter": []}
    fits = []
    report = None
    folds = KFold(n_splits=n_folds, shuffle=True, random_state=args.seed)
    for k, (train, test) in enumerate(folds.split(X), 1):
        X_tr, y_tr = [X[i] for i in train], [y[i] for i in train]
        X_te, y_te = [X[i] for i in test], [y[i] for i in test]
        _progress(f"fold {k}/{n_folds}: training on {len(train)} reports "
                  f"({sum(len(s) for s in X_tr)} tokens)...", quiet)
        est = clone(model)
        t0 = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ConvergenceWarning)
            est.fit(X_tr, y_tr)
        t_fit = time.perf_counter() - t0
        hit = any(issubclass(w.category, ConvergenceWarning) for w in caught)
        t0 = time.perf_counter()
        y_pred = est.predict(X_te)
        t_pred = time.perf_counter() - t0
        crf = est.named_steps["crf"]
        stats = crf.inference_stats_
        scores["acc"].append(chain_accuracy(y_te, y_pred))
        scores["avg"].append(average_accuracy(y_te, y_pred))
        scores["joint"].append(joint_accuracy(y_te, y_pred))
        scores["wd"].append([windowdiff(y_te, y_pred, chain=c) for c in range(n_chains)])
        scores["conv"].append(stats.get("converged_fraction", 1.0))
        scores["bp_iter"].append(stats.get("mean_iterations", 0.0))
        fits.append((crf.n_iter_, hit, t_fit))
        _progress(f"fold {k}/{n_folds}: trained in {t_fit:.1f} s ({crf.n_iter_} L-BFGS iterations"
                  f"{', stopped at --max-iter' if hit else ''}), tagged {len(test)} reports in "
                  f"{t_pred:.1f} s: joint accuracy {100 * scores['joint'][-1]:.2f}%", quiet)
        if report is None:
            report = (int(test[0]), X_te[0], y_te[0], y_pred[0])

    acc = np.array(scores["acc"])
    wd = np.array(scores["wd"])
    width = max(len(c) for c in chains + ["average", "joint"])
    print(f"skfcrf demo: {args.n_reports} synthetic dictations (recognizer style, seed "
          f"{args.seed}, {n_tokens} tokens), {n_folds}-fold cross-validation")
    print("FactorialCRF(objective='pseudolikelihood', "
          f"sigma={args.sigma:g}, max_iter={args.max_iter}, bp_max_iter={args.bp_max_iter}, "
          f"min_instance_freq={args.min_instance_freq}) on n-gram window, bag-of-concepts "
          "(window 10) and relative-position (8 bins) observations")
    print()
    print(f"Table 1. Accuracy (%) per chain, mean ± 95% confidence interval over {n_folds} folds")
    print(f"  {'chain':<{width}}  {'accuracy':>15}")
    for c, name in enumerate(chains):
        print(f"  {name:<{width}}  {_fmt_ci(*confidence_interval(acc[:, c]))}")
    print(f"  {'average':<{width}}  {_fmt_ci(*confidence_interval(scores['avg']))}")
    print(f"  {'joint':<{width}}  {_fmt_ci(*confidence_interval(scores['joint']))}")
    print()
    print(f"Table 3. WindowDiff (%) per chain (lower is better), mean ± 95% confidence "
          f"interval over {n_folds} folds")
    print(f"  {'chain':<{width}}  {'WindowDiff':>15}")
    for c, name in enumerate(chains):
        print(f"  {name:<{width}}  {_fmt_ci(*confidence_interval(wd[:, c]))}")
    print()
    conv = np.array(scores["conv"])
    its = np.array(scores["bp_iter"])
    print(f"TRP max-product decoding (at most {args.bp_max_iter} iterations): converged on "
          f"{100 * conv.mean():.1f}% of the test reports "
          f"(per fold {', '.join(f'{100 * v:.1f}%' for v in conv)}), "
          f"mean {its.mean():.1f} iterations")
    n_it = [f[0] for f in fits]
    n_hit = sum(f[1] for f in fits)
    print(f"Training: {', '.join(map(str, n_it))} L-BFGS iterations per fold"
          + (f" ({n_hit} of {n_folds} stopped at --max-iter {args.max_iter})" if n_hit else "")
          + f", {sum(f[2] for f in fits):.1f} s in total")

    idx, tokens, gold, pred = report
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
            fh.write(_html_document(title, body))
    except OSError as exc:
        raise CLIError(f"cannot write the report to {out_dir}: {exc.strerror or exc}") from None
    print(f"Report {idx + 1} rendered to {html_path} and {md_path}")
    print(f"Wall time: {time.perf_counter() - t_start:.1f} s")
    return 0


# ----------------------------------------------------------------------------- parser
def build_parser():
    """The ``skfcrf`` argument parser."""
    from skfcrf import __version__

    p = _Parser(prog=PROG, description="Factorial CRFs: several coupled label chains over "
                "token sequences (structure of dictated reports, POS + chunks, ...).")
    p.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    p.add_argument("--traceback", action="store_true",
                   help="show the full traceback of unexpected errors (for bug reports)")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    def common(sp):
        sp.add_argument("-q", "--quiet", action="store_true", help="no progress messages")

    d = sub.add_parser("demo", help="cross-validate on synthetic dictations, print the tables "
                       "and write one rendered report",
                       description="Structure recognition on the embedded synthetic dictations: "
                       "3-fold cross-validation of a factorial CRF (pseudolikelihood), per-chain "
                       "accuracy and WindowDiff with 95% confidence intervals, TRP convergence, "
                       "and one recognised report rendered as HTML and Markdown.")
    d.add_argument("--n-reports", type=_positive_int, metavar="N", default=DEMO_N_REPORTS,
                   help="number of synthetic reports (default: %(default)s)")
    d.add_argument("--max-iter", type=_positive_int, metavar="N", default=DEMO_MAX_ITER,
                   help="L-BFGS iterations per fold (default: %(default)s)")
    d.add_argument("--bp-max-iter", type=_positive_int, metavar="N", default=DEMO_BP_MAX_ITER,
                   help="TRP iterations per report when decoding (default: %(default)s)")
    d.add_argument("--sigma", type=_positive_float, metavar="S", default=10.0,
                   help="Gaussian prior standard deviation (default: %(default)s)")
    d.add_argument("--min-instance-freq", type=_instance_freq, metavar="F", default=2,
                   help="pre-pruning: minimum number of reports an observation occurs in "
                   "(default: %(default)s)")
    d.add_argument("--seed", type=int, metavar="N", default=0,
                   help="random seed (default: %(default)s)")
    d.add_argument("--n-jobs", type=_n_jobs, metavar="N", default=2,
                   help="threads for the CRF kernels (default: %(default)s; -1: all cores)")
    d.add_argument("--output-dir", default=".", metavar="DIR",
                   help="where to write skfcrf_demo_report.html/.md (default: current directory)")
    d.add_argument("-v", "--verbose", action="count", default=0,
                   help="print the training loss at every iteration")
    common(d)
    d.set_defaults(func=_cmd_demo)

    t = sub.add_parser("train", help="fit a model on a CoNLL-style column file",
                       description="Fit a factorial CRF on a CoNLL-style column file (attribute "
                       "columns, then one label column per chain, chain 0 first; blank lines "
                       "between sequences).  Writes the model (PATH, .npz with JSON, no pickle) "
                       "and its feature configuration (PATH.features.json).")
    t.add_argument("data", metavar="DATA", help="training file")
    t.add_argument("--model", required=True, metavar="PATH", help="model file to write")
    t.add_argument("--attributes", nargs="+", default=["word"], metavar="NAME",
                   help="names of the leading attribute columns, in file order "
                   "(default: word)")
    t.add_argument("--label-columns", type=_positive_int, default=1, metavar="N",
                   help="number of trailing label columns = label chains (default: 1)")
    t.add_argument("--sep", choices=sorted(_SEPARATORS), default="whitespace",
                   help="column separator (default: whitespace)")
    t.add_argument("--features", type=_feature_list, default=list(DEFAULT_FEATURES),
                   metavar="KINDS",
                   help="comma-separated feature kinds from " + ",".join(FEATURE_KINDS)
                   + " (default: " + ",".join(DEFAULT_FEATURES) + ")")
    t.add_argument("--lowercase", action="store_true", help="lowercase n-gram values")
    t.add_argument("--ngram-window", type=_nonnegative_int, default=2, metavar="W",
                   help="n-grams at offsets -W..W (default: 2)")
    t.add_argument("--concept-window", type=_nonnegative_int, default=10, metavar="W",
                   help="bag-of-concepts window +-W (default: 10)")
    t.add_argument("--position-bins", type=_positive_int, default=8, metavar="N",
                   help="relative-position bins (default: 8)")
    t.add_argument("--sigma", type=_positive_float, metavar="S", default=10.0,
                   help="Gaussian prior standard deviation (default: 10)")
    t.add_argument("--objective", choices=("pseudolikelihood", "likelihood"),
                   default="pseudolikelihood", help="training objective (default: %(default)s)")
    t.add_argument("--solver", choices=("lbfgs", "olbfgs"), default="lbfgs",
                   help="optimiser (default: %(default)s)")
    t.add_argument("--max-iter", type=_positive_int, metavar="N", default=800,
                   help="L-BFGS iterations / oLBFGS epochs (default: %(default)s)")
    t.add_argument("--bp-max-iter", type=_positive_int, metavar="N", default=1000,
                   help="TRP iterations per sequence when decoding several chains "
                   "(default: %(default)s; stored in the model)")
    t.add_argument("--min-instance-freq", type=_instance_freq, metavar="F", default=1,
                   help="pre-pruning: minimum number (int) or fraction (float) of training "
                   "sequences an observation occurs in (default: %(default)s)")
    t.add_argument("--n-jobs", type=_n_jobs, metavar="N", default=2,
                   help="threads (default: %(default)s; -1: all cores)")
    t.add_argument("--seed", type=int, metavar="N", default=0,
                   help="random seed (default: %(default)s)")
    t.add_argument("-v", "--verbose", action="count", default=0,
                   help="print the training loss at every iteration")
    common(t)
    t.set_defaults(func=_cmd_train)

    g = sub.add_parser("tag", help="predict the label chains of a column file",
                       description="Tag a column file with a model written by 'skfcrf train'. "
                       "The file has the model's attribute columns; gold label columns, if "
                       "present, are ignored.")
    g.add_argument("data", metavar="DATA", help="file to tag")
    g.add_argument("--model", required=True, metavar="PATH", help="model written by 'skfcrf train'")
    g.add_argument("--format", choices=("columns", "html", "markdown"), default="columns",
                   help="attribute + predicted label columns, or the sequences rendered as "
                   "structured documents (default: %(default)s)")
    g.add_argument("--output", metavar="FILE", help="output file (default: standard output)")
    common(g)
    g.set_defaults(func=_cmd_tag)

    e = sub.add_parser("evaluate", help="score a model on a labelled column file",
                       description="Per-chain and joint accuracy, segment F1, WindowDiff and a "
                       "per-label report for every chain.")
    e.add_argument("data", metavar="DATA", help="labelled file (the model's attribute and "
                   "label columns)")
    e.add_argument("--model", required=True, metavar="PATH", help="model written by 'skfcrf train'")
    common(e)
    e.set_defaults(func=_cmd_evaluate)
    return p


#: demo defaults, chosen so that ``skfcrf demo`` finishes in a few minutes on 2 cores
DEMO_N_REPORTS = 120
DEMO_MAX_ITER = 100
DEMO_BP_MAX_ITER = 200


def main(argv=None):
    """Run the ``skfcrf`` command; return the exit status."""
    argv = sys.argv[1:] if argv is None else list(argv)
    show_tb = "--traceback" in argv
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        if args.command is None:
            parser.print_help(sys.stderr)
            return 2
        return args.func(args)
    except CLIError as exc:
        _error(exc)
        return exc.status
    except KeyboardInterrupt:
        _error("interrupted")
        return 130
    except BrokenPipeError:
        # output piped into e.g. `head`: stop quietly, without a second error at exit
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError, AttributeError):
            pass
        return 1
    except MemoryError:
        _error("out of memory")
        return 1
    except (OSError, ValueError, TypeError, KeyError, RuntimeError) as exc:
        if show_tb:
            raise
        _error(exc if str(exc).strip() else type(exc).__name__)
        return 1
    except Exception as exc:  # a bug: still one line, the traceback on request
        if show_tb:
            raise
        _error(f"internal error ({type(exc).__name__}: {exc}); rerun with --traceback to see where")
        return 1


def _error(message):
    """Print ``skfcrf: error: message`` as exactly one line on stderr."""
    text = " ".join(str(message).splitlines()).strip()
    print(f"{PROG}: error: {text}", file=sys.stderr, flush=True)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
