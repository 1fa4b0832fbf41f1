"""``skfcrf train DATA --model PATH``: fit a model on a CoNLL-style column file."""
import argparse
import json
import os
import time

from skfcrf.cli._common import (
    AUTO_FEATURES,
    DICTATION_FEATURES,
    FEATURE_KINDS,
    GENERAL_FEATURES,
    PROG,
    SEPARATORS,
    CLIError,
    add_fit_options,
    counted,
    feature_list,
    nonnegative_int,
    positive_float,
    positive_int,
    progress,
)
from skfcrf.cli._files import (
    FEATURES_FORMAT,
    FEATURES_VERSION,
    check_chain_names,
    check_writable,
    default_chain_names,
    features_from_config,
    features_path,
    infer_label_columns,
    looks_like_dictations,
    read_data,
)
from skfcrf.cli._inspect import anchors_line, transitions_line
from skfcrf.cli._progress import FitProgress, fit_budget
from skfcrf.inference import METHODS
from skfcrf.metrics import SCORER_METRICS
from skfcrf.model._layout import SUPPORT_MODES, TRANSITION_MODES
from skfcrf.solvers import SOLVERS


def add_parser(sub):
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
    t.add_argument("--label-columns", type=positive_int, metavar="N",
                   help="number of trailing label columns = label chains (default: every "
                   "column after the attributes, when all lines have as many columns)")
    t.add_argument("--chain-names", nargs="+", metavar="NAME",
                   help="one name per label column, chain 0 first, stored with the model and "
                   "used by tag, evaluate, view and inspect (without it: sentence subsection "
                   "section for three label columns of the dictation scheme, else chain 0, "
                   "chain 1, ...)")
    t.add_argument("--sep", choices=sorted(SEPARATORS), default="whitespace",
                   help="column separator (default: whitespace)")
    t.add_argument("--features", type=feature_list, default=[AUTO_FEATURES],
                   metavar="KINDS",
                   help="comma-separated feature kinds from " + ",".join(FEATURE_KINDS)
                   + ", or auto (the default): " + ",".join(DICTATION_FEATURES)
                   + " when the labels follow the dictation scheme (three label columns: "
                   "sentences, subsections, sections), else " + ",".join(GENERAL_FEATURES)
                   + "; auto with --lexicon adds lexicon.  The kinds are stored with the "
                   "model, and tag, evaluate and view use them")
    t.add_argument("--lowercase", action="store_true", help="lowercase n-gram values")
    t.add_argument("--ngram-window", type=nonnegative_int, default=2, metavar="W",
                   help="n-grams at offsets -W..W (default: 2)")
    t.add_argument("--concept-window", type=nonnegative_int, default=10, metavar="W",
                   help="bag-of-concepts window +-W (default: 10)")
    t.add_argument("--position-bins", type=positive_int, default=8, metavar="N",
                   help="relative-position bins (default: 8)")
    t.add_argument("--affix-length", type=positive_int, default=4, metavar="N",
                   help="longest prefix and suffix of the affix features (default: 4)")
    t.add_argument("--lexicon", metavar="FILE",
                   help="lexicon of the lexicon features: one entry per line, the phrase's "
                   "words then its class ('blood pressure VITAL'); # starts a comment")
    add_model_options(t)
    add_fit_options(t, min_instance_freq=1, instances="training sequences")
    t.set_defaults(func=run)
    return t


def run(args):
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    from skfcrf import FactorialCRF

    if len(set(args.attributes)) != len(args.attributes):
        raise CLIError(f"--attributes must be distinct, got {' '.join(args.attributes)}", 2)
    if args.label_columns is None:
        args.label_columns = infer_label_columns(args.data, len(args.attributes), args.sep)
    if args.chain_names is not None:
        problem = check_chain_names(args.chain_names, args.label_columns)
        if problem:
            raise CLIError(f"--chain-names: {problem} (one distinct name per label column, "
                           "chain 0 first)", 2)
    check_writable(args.model, "the model", replace=True)
    check_writable(features_path(args.model), "the feature configuration")
    auto = args.features == [AUTO_FEATURES]
    config = {
        "format": FEATURES_FORMAT,
        "version": FEATURES_VERSION,
        "attributes": list(args.attributes),
        "label_columns": args.label_columns,
        "sep": args.sep,
        "features": list(args.features),     # auto: chosen once the labels are read
        "lowercase": bool(args.lowercase),
        "ngram_window": args.ngram_window,
        "concept_window": args.concept_window,
        "position_bins": args.position_bins,
        "affix_length": args.affix_length,
    }
    if not auto and ("lexicon" in args.features) != (args.lexicon is not None):
        raise CLIError("the lexicon feature kind and --lexicon FILE go together "
                       "(--features ...,lexicon --lexicon FILE)", 2)
    if args.lexicon is not None:
        config["lexicon"] = read_lexicon(args.lexicon)
    params = model_params(args)  # reads and checks the forbidden-label files first
    X, y = read_data(args.data, args.attributes, args.label_columns, args.sep)
    n_tokens = sum(len(s) for s in X)
    # stored beside the attributes: the names of the label columns, as those of the others
    config["chain_names"] = (list(args.chain_names) if args.chain_names is not None
                             else default_chain_names(y, args.label_columns))
    progress(f"read {counted(len(X), 'sequence')} ({counted(n_tokens, 'token')}, "
             f"{counted(args.label_columns, 'label column')}: "
             f"{', '.join(config['chain_names'])}) from {args.data}", args.quiet)
    if auto:
        config["features"] = auto_features(y, args.lexicon is not None)
        scheme = "follow" if looks_like_dictations(y) else "do not follow"
        progress(f"features: {','.join(config['features'])} (auto: the labels {scheme} the "
                 "dictation scheme)", args.quiet)
    else:
        progress(f"features: {','.join(config['features'])}", args.quiet)
    t0 = time.perf_counter()
    Xf = features_from_config(config).fit_transform(X)
    crf = FactorialCRF(sigma=args.sigma, min_instance_freq=args.min_instance_freq,
                       n_jobs=args.n_jobs, random_state=args.seed, verbose=args.verbose,
                       **params)
    try:
        budget = fit_budget(crf, Xf, y)
    except (ValueError, MemoryError) as exc:  # what fit would say at once
        raise CLIError(f"cannot train: {_one_line(exc)}") from None
    # an iteration bar with an ETA against the most iterations of all the stages;
    # -v prints them instead
    fit_progress = FitProgress(budget.total, "training", quiet=args.quiet or args.verbose > 0)
    crf.set_params(callback=fit_progress.callback)
    progress(f"training ({args.objective}, {args.solver}; {budget.describe()})...", args.quiet)
    with warnings.catch_warnings():
        # reported below from converged_, as one line
        warnings.simplefilter("ignore", ConvergenceWarning)
        try:
            crf.fit(Xf, y)
        except KeyboardInterrupt:
            fit_progress.finish()
            return _write_interrupted(crf, config, args.model)
        except (ValueError, MemoryError) as exc:  # e.g. a forbidden label the data lacks
            raise CLIError(f"cannot train: {_one_line(exc)}") from None
        finally:
            fit_progress.finish()
    write_model(crf, config, args.model)
    # n_iter_ counts every stage, and the fit does not say how many each ran: converged_
    # is the first stage's
    note = ("" if crf.converged_ else
            "; the first stage stopped before converging (a chain used all its iterations, "
            "or no step lowered the loss further; a larger --max-iter trains it further)")
    progress(f"trained in {time.perf_counter() - t0:.1f} s: {crf.n_iter_} of at most "
             f"{budget.total} iterations in all stages, {crf.n_features_in_} observations, "
             f"{crf.coef_.size} weights{note}", args.quiet)
    for line in (transitions_line(crf, config["chain_names"]),
                 anchors_line(crf, config["chain_names"])):
        if line is not None:
            progress(line, args.quiet)
    print(f"model written to {args.model} (features: {features_path(args.model)})")
    return 0


def auto_features(y, lexicon=False):
    """The feature kinds of ``--features auto`` for the label sequences ``y``: the dictation
    set when the labels follow the dictation scheme
    (:func:`skfcrf.cli._files.looks_like_dictations`), the general one otherwise; with a
    lexicon (``--lexicon FILE``) also ``lexicon``."""
    kinds = list(DICTATION_FEATURES if looks_like_dictations(y) else GENERAL_FEATURES)
    return kinds + ["lexicon"] if lexicon else kinds


def write_model(crf, config, path):
    """Write the fitted ``crf`` to ``path`` and its feature ``config`` beside it
    (``PATH.features.json``); CLIError when a file cannot be written."""
    try:
        crf.save(path)
        with open(features_path(path), "w", encoding="utf-8") as fh:
            json.dump(config, fh, indent=2)
            fh.write("\n")
    except OSError as exc:
        raise CLIError(f"cannot write model {path}: {exc.strerror or exc}") from None


def _write_interrupted(crf, config, path):
    """After Ctrl-C in ``fit``: write the model trained so far (the weights of the last
    completed iteration, which :meth:`skfcrf.FactorialCRF.fit` keeps on an interrupt),
    say so on stderr and return 130; nothing is written when no iteration completed."""
    import sys

    n_iter = getattr(crf, "n_iter_", 0)
    if not hasattr(crf, "coef_") or n_iter < 1:
        raise CLIError("interrupted before the first training iteration completed: no model "
                       "written", 130)
    write_model(crf, config, path)
    state = "converged" if crf.converged_ else "not converged"
    print(f"{PROG}: interrupted: wrote the model trained so far ({counted(n_iter, 'iteration')}, "
          f"{state}) to {path} (features: {features_path(path)})", file=sys.stderr, flush=True)
    return 130


def read_lexicon(path):
    """``[[phrase, class], ...]`` of a lexicon file (one ``words... CLASS`` per line)."""
    entries = []
    try:
        with open(path, encoding="utf-8-sig") as fh:
            for number, line in enumerate(fh, 1):
                fields = line.split("#", 1)[0].split()
                if not fields:
                    continue
                if len(fields) < 2:
                    raise CLIError(f"{path} line {number}: expected the phrase's words, then "
                                   f"its class, got {line.strip()!r}", 2)
                entries.append([" ".join(fields[:-1]), fields[-1]])
    except OSError as exc:
        raise CLIError(f"cannot read the lexicon {path}: {exc.strerror}", 2) from None
    except UnicodeDecodeError as exc:
        raise CLIError(f"{path}: not a UTF-8 text file ({exc.reason} at byte {exc.start})",
                       2) from None
    if not entries:
        raise CLIError(f"the lexicon {path} has no entry", 2)
    return entries


def _one_line(exc):
    return " ".join(str(exc).split())


# ----------------------------------------------------------------------------- model options
def add_model_options(t):
    """The FactorialCRF options of ``train`` (all but those of :func:`add_fit_options`)."""
    m = t.add_argument_group("model (FactorialCRF parameters; see its documentation)")
    m.add_argument("--objective", choices=("independent", "chainwise", "pseudolikelihood",
                                           "likelihood"),
                   default="independent", help="training objective (default: %(default)s)")
    m.add_argument("--finetune-iter", type=nonnegative_int, metavar="N", default=10,
                   help="likelihood fine-tuning iterations after the objective, when the "
                   "likelihood is exact; 0 disables it (default: %(default)s)")
    m.add_argument("--state-transitions", choices=("auto", "on", "off"), default="auto",
                   help="joint-state transition weights (pairs of label combinations at "
                   "consecutive tokens), learnt by the joint likelihood (default: %(default)s)")
    m.add_argument("--state-transition-iter", type=nonnegative_int, metavar="N", default=10,
                   help="likelihood iterations of the joint-state transition weights alone, "
                   "after the others (default: %(default)s)")
    m.add_argument("--unary-features", choices=SUPPORT_MODES, default="supported",
                   help="feature support of the unary template (default: %(default)s)")
    m.add_argument("--transition-features", choices=TRANSITION_MODES, default="default",
                   help="feature support of the in-chain transition template "
                   "(default: %(default)s)")
    m.add_argument("--coupling-features", choices=SUPPORT_MODES, default="default",
                   help="feature support of the between-chain coupling template "
                   "(default: %(default)s)")
    m.add_argument("--coupling-observations", nargs="+", default=None, metavar="PREFIX",
                   help="with --coupling-features supported|all: only observations whose "
                   "names start with one of these prefixes get coupling weights")
    m.add_argument("--coupling", type=coupling_spec, default="adjacent", metavar="SPEC",
                   help="coupled chain pairs: adjacent, all, none, or pairs such as 0-1,0-2 "
                   "(default: %(default)s)")
    m.add_argument("--forbidden-transitions", default="auto",
                   metavar="auto|unseen|backoff|none|FILE",
                   help="in-chain transitions that may not occur: auto (for several chains: "
                   "unseen, the unseen ones then scored by learnt back-off weights for "
                   "log-probabilities and fixed labels, but for a chain with a loose "
                   "grammar, which stays open; the model says which), unseen "
                   "(those never seen in training), backoff (unseen ones scored by learnt "
                   "back-off weights), none, or a "
                   "file with one 'CHAIN LABEL_FROM LABEL_TO' per line (# comments) "
                   "(default: %(default)s)")
    m.add_argument("--forbidden-couplings", metavar="FILE",
                   help="label pairs that may not co-occur in coupled chains: a file with one "
                   "'CHAIN_I CHAIN_J LABEL_I LABEL_J' per line, CHAIN_I < CHAIN_J")
    m.add_argument("--inference", choices=("auto", *METHODS), default="auto",
                   help="inference for decoding (and the likelihood objective) "
                   "(default: %(default)s; stored in the model)")
    m.add_argument("--bp-max-iter", type=positive_int, metavar="N", default=1000,
                   help="TRP iterations per sequence when decoding several chains "
                   "(default: %(default)s; stored in the model)")
    m.add_argument("--bp-tol", type=positive_float, metavar="T", default=1e-6,
                   help="TRP message tolerance (default: %(default)s)")
    s = t.add_argument_group("solver")
    s.add_argument("--solver", choices=tuple(SOLVERS), default="lbfgs",
                   help="optimiser: batch or online L-BFGS, or one of CRFsuite's online "
                   "trainers (sgd, perceptron, passive_aggressive, arow: with --objective "
                   "likelihood, their constants at CRFsuite's defaults) (default: %(default)s)")
    s.add_argument("--max-iter", type=positive_int, metavar="N", default=100,
                   help="L-BFGS iterations / online epochs of the first stage (default: "
                   "%(default)s; with --objective independent per chain, a chain that costs "
                   "at most 1/k as much per iteration as the costliest may run k times as "
                   "many); --finetune-iter and --state-transition-iter follow, and the "
                   "training message announces the total")
    s.add_argument("--tol", type=positive_float, metavar="T", default=1e-5,
                   help="stopping tolerance (default: %(default)s)")
    s.add_argument("--lbfgs-memory", type=positive_int, metavar="M", default=3,
                   help="correction pairs kept by (online) L-BFGS (default: %(default)s)")
    s.add_argument("--batch-size", type=positive_int, metavar="N", default=32,
                   help="oLBFGS: sequences per mini-batch (default: %(default)s)")
    s.add_argument("--eta0", type=positive_float, metavar="E", default=0.1,
                   help="oLBFGS: initial step size (default: %(default)s)")
    s.add_argument("--tau", type=positive_float, metavar="T", default=1000.0,
                   help="oLBFGS: step-size decay constant (default: %(default)s)")
    s.add_argument("--early-stopping", action="store_true",
                   help="hold out --validation-fraction of the sequences and keep the best "
                   "weights on them")
    s.add_argument("--validation-fraction", type=open_fraction, metavar="F", default=0.1,
                   help="early stopping: held-out fraction, in (0, 1) (default: %(default)s)")
    s.add_argument("--n-iter-no-change", type=positive_int, metavar="N", default=10,
                   help="early stopping: scores without improvement that stop training "
                   "(default: %(default)s)")
    s.add_argument("--validation-interval", type=positive_int, metavar="N", default=5,
                   help="early stopping: iterations between scores (default: %(default)s)")
    s.add_argument("--validation-scoring", choices=SCORER_METRICS, metavar="METRIC",
                   help="early stopping: held-out metric, a name of "
                   "skfcrf.metrics.SCORER_METRICS (default: joint accuracy)")
    s.add_argument("--max-memory", type=positive_int, metavar="BYTES",
                   help="refuse to train when the estimated peak memory exceeds BYTES")


def coupling_spec(text):
    """``adjacent``, ``all``, ``none`` or comma-separated chain pairs ``I-J``."""
    if text in ("adjacent", "all", "none"):
        return text
    pairs = []
    for part in text.split(","):
        try:
            i, j = (int(v) for v in part.split("-"))
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected adjacent, all, none or chain pairs such as 0-1,1-2, got {text!r}"
            ) from None
        if i < 0 or j < 0 or i == j:
            raise argparse.ArgumentTypeError(f"a coupled pair needs two distinct chains >= 0, "
                                             f"got {part!r}")
        pairs.append((min(i, j), max(i, j)))
    return list(dict.fromkeys(pairs))


def open_fraction(text):
    """A float in (0, 1)."""
    try:
        v = float(text)
    except ValueError:
        v = None
    if v is None or not 0 < v < 1:
        raise argparse.ArgumentTypeError(f"expected a number in (0, 1), got {text!r}")
    return v


def model_params(args):
    """FactorialCRF keyword arguments from the model and solver options."""
    keys = ("objective", "finetune_iter", "state_transition_iter", "unary_features",
            "transition_features", "coupling_features", "coupling_observations", "coupling",
            "inference", "bp_max_iter", "bp_tol", "solver",
            "max_iter", "tol", "lbfgs_memory", "batch_size", "eta0", "tau", "early_stopping",
            "validation_fraction", "n_iter_no_change", "validation_interval",
            "validation_scoring", "max_memory")
    params = {k: getattr(args, k) for k in keys}
    params["state_transitions"] = {"auto": "auto", "on": True, "off": False}[
        args.state_transitions]
    ft = args.forbidden_transitions
    if ft in ("auto", "unseen", "backoff"):
        params["forbidden_transitions"] = ft
    elif ft == "none":
        params["forbidden_transitions"] = None
    else:
        params["forbidden_transitions"] = {
            chain: pairs for (chain,), pairs in _read_label_rows(ft, 1, "--forbidden-transitions",
                                                                  "CHAIN LABEL_FROM LABEL_TO")}
    if args.forbidden_couplings:
        params["forbidden_couplings"] = dict(_read_label_rows(
            args.forbidden_couplings, 2, "--forbidden-couplings", "CHAIN_I CHAIN_J LABEL_I LABEL_J"))
    return params


def _read_label_rows(path, n_chain_fields, option, form):
    """``[(chain indices, [(label, label), ...]), ...]`` from a file of ``form`` lines."""
    if not os.path.isfile(path):
        raise CLIError(f"{option}: file not found: {path}", 2)
    groups = {}
    try:
        with open(path, encoding="utf-8-sig") as fh:
            for lineno, line in enumerate(fh, 1):
                fields = line.split("#", 1)[0].split()
                if not fields:
                    continue
                if len(fields) != n_chain_fields + 2:
                    raise CLIError(f"{path}, line {lineno}: expected '{form}', got "
                                   f"{line.strip()!r}", 2)
                try:
                    chains = tuple(int(v) for v in fields[:n_chain_fields])
                except ValueError:
                    raise CLIError(f"{path}, line {lineno}: chain indices must be integers, "
                                   f"got {' '.join(fields[:n_chain_fields])!r}", 2) from None
                if any(c < 0 for c in chains) or (n_chain_fields == 2 and chains[0] >= chains[1]):
                    raise CLIError(f"{path}, line {lineno}: expected chain indices >= 0"
                                   + (" with CHAIN_I < CHAIN_J" if n_chain_fields == 2 else ""), 2)
                groups.setdefault(chains, []).append(tuple(fields[n_chain_fields:]))
    except UnicodeDecodeError:
        raise CLIError(f"{option}: {path} is not a UTF-8 text file", 2) from None
    except OSError as exc:
        raise CLIError(f"{option}: cannot read {path}: {exc.strerror or exc}", 2) from None
    if not groups:
        raise CLIError(f"{option}: {path} lists no label pairs", 2)
    return list(groups.items())
