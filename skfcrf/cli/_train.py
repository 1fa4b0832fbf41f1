"""``skfcrf train DATA --model PATH``: fit a model on a CoNLL-style column file."""
import json
import os
import time

from skfcrf.cli._common import (
    DEFAULT_FEATURES,
    FEATURE_KINDS,
    SEPARATORS,
    CLIError,
    add_fit_options,
    feature_list,
    nonnegative_int,
    positive_int,
    progress,
)
from skfcrf.cli._files import (
    FEATURES_FORMAT,
    FEATURES_VERSION,
    features_from_config,
    features_path,
    read_data,
)
from skfcrf.cli._progress import FitProgress


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
    t.add_argument("--label-columns", type=positive_int, default=1, metavar="N",
                   help="number of trailing label columns = label chains (default: 1)")
    t.add_argument("--sep", choices=sorted(SEPARATORS), default="whitespace",
                   help="column separator (default: whitespace)")
    t.add_argument("--features", type=feature_list, default=list(DEFAULT_FEATURES),
                   metavar="KINDS",
                   help="comma-separated feature kinds from " + ",".join(FEATURE_KINDS)
                   + " (default: " + ",".join(DEFAULT_FEATURES) + ")")
    t.add_argument("--lowercase", action="store_true", help="lowercase n-gram values")
    t.add_argument("--ngram-window", type=nonnegative_int, default=2, metavar="W",
                   help="n-grams at offsets -W..W (default: 2)")
    t.add_argument("--concept-window", type=nonnegative_int, default=10, metavar="W",
                   help="bag-of-concepts window +-W (default: 10)")
    t.add_argument("--position-bins", type=positive_int, default=8, metavar="N",
                   help="relative-position bins (default: 8)")
    t.add_argument("--objective", choices=("pseudolikelihood", "likelihood"),
                   default="pseudolikelihood", help="training objective (default: %(default)s)")
    t.add_argument("--solver", choices=("lbfgs", "olbfgs"), default="lbfgs",
                   help="optimiser (default: %(default)s)")
    t.add_argument("--max-iter", type=positive_int, metavar="N", default=800,
                   help="L-BFGS iterations / oLBFGS epochs (default: %(default)s)")
    t.add_argument("--bp-max-iter", type=positive_int, metavar="N", default=1000,
                   help="TRP iterations per sequence when decoding several chains "
                   "(default: %(default)s; stored in the model)")
    add_fit_options(t, min_instance_freq=1, instances="training sequences")
    t.set_defaults(func=run)
    return t


def run(args):
    import warnings

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
    X, y = read_data(args.data, args.attributes, args.label_columns, args.sep)
    n_tokens = sum(len(s) for s in X)
    progress(f"read {len(X)} sequences ({n_tokens} tokens, {args.label_columns} label "
             f"column{'s' if args.label_columns != 1 else ''}) from {args.data}", args.quiet)
    t0 = time.perf_counter()
    Xf = features_from_config(config).fit_transform(X)
    crf = FactorialCRF(sigma=args.sigma, objective=args.objective, solver=args.solver,
                       max_iter=args.max_iter, min_instance_freq=args.min_instance_freq,
                       bp_max_iter=args.bp_max_iter, n_jobs=args.n_jobs,
                       random_state=args.seed, verbose=args.verbose)
    # an iteration bar with an ETA against the most iterations training may take (the
    # likelihood fine-tuning stage follows the other objectives); -v prints them instead
    fit_progress = FitProgress(
        crf.max_iter + (crf.finetune_iter if crf.objective != "likelihood" else 0),
        "training", quiet=args.quiet or args.verbose > 0)
    crf.set_params(callback=fit_progress.callback)
    progress(f"training ({args.objective}, {args.solver}, at most {args.max_iter} iterations)...",
             args.quiet)
    with warnings.catch_warnings():
        # reported below from converged_, as one line
        warnings.simplefilter("ignore", ConvergenceWarning)
        try:
            crf.fit(Xf, y)
        finally:
            fit_progress.finish()
    try:
        crf.save(args.model)
        with open(features_path(args.model), "w", encoding="utf-8") as fh:
            json.dump(config, fh, indent=2)
            fh.write("\n")
    except OSError as exc:
        raise CLIError(f"cannot write model {args.model}: {exc.strerror or exc}") from None
    note = ("" if crf.converged_ else f" (stopped at --max-iter {args.max_iter})"
            if crf.n_iter_ >= args.max_iter else " (not converged)")
    progress(f"trained in {time.perf_counter() - t0:.1f} s: {crf.n_iter_} iterations{note}, "
             f"{crf.n_features_in_} observations, {crf.coef_.size} weights", args.quiet)
    print(f"model written to {args.model} (features: {features_path(args.model)})")
    return 0
