"""Target 2 / issue 2: joint POS + chunking from words (two chains) vs a CRFsuite cascade.

The cascade trains a CRFsuite POS tagger on word observations and a CRFsuite
chunker on word observations plus the POS n-grams of the chunking example (gold
POS in training, predicted POS at test).  skfcrf trains one two-chain FCRF
(chain 0 POS, chain 1 chunks, coupled) with FactorialCRF's default objective (or
``--fcrf-objective``) on the word observations only.  Same process, same machine
load; prints times, ratios and F1.

    python benchmarks/bench_conll_joint.py [--iterations 100] [--fcrf-iterations 100] [--n-jobs 1]
        [--fcrf-objective chainwise|pseudolikelihood|likelihood]
        [--coupling-features default|supported]
        [--refine-likelihood N]
        [--variant JSON [--variant JSON ...]]
        [--two-stage JSON [--two-stage JSON ...]]

``--variant``: fit one FCRF per given JSON object of ``FactorialCRF`` parameters
(over the options above), after the one cascade, in the same process; e.g.
``--variant '{}' --variant '{"coupling_features": "supported",
"coupling_observations": "ngramwindow-2__lower@0="}'`` compares the default
couplings with observation-dependent ones restricted to the current lowercased
word.

``--two-stage``: also fit one :class:`skfcrf.ensemble.TwoStage` per given JSON
object, after the variants: a one-chain POS ``FactorialCRF`` first (the FCRF's
parameters, overridden by the object's key ``first``), whose cross-fitted labels
the second stage, the two-chain ``FactorialCRF`` with the FCRF's parameters
(overridden by the key ``second``), observes; the object's other keys are ``TwoStage``'s (``cv``, ``offsets``,
``ngram_range``, ...).  E.g. ``--two-stage '{"first": {"solver": "sgd", "objective":
"likelihood", "max_iter": 10}, "cv": 2, "offsets": [-2, -1, 0, 1, 2], "ngram_range":
[1, 3]}'``: the cascade's window of predicted POS n-grams, from the model's own
first stage (10 epochs of SGD) instead of the user's input.

Issue 6's target 2 is the pseudolikelihood run; issue 2 asks only for the F1,
which ``--fcrf-objective likelihood`` (TRP sum-product marginals) improves.
"""
import argparse
import json
import math
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from skfcrf import FactorialCRF
from skfcrf.ensemble import TwoStage
from skfcrf.transformers import NGramWindow, make_sequence_union

from _conll import Timer, chain_labels, chunk_f1, crfsuite, load, word_observations
from _conll import merge_observations as merge


def pos_ngrams(tokens_with_pos):
    return make_sequence_union(NGramWindow("pos", ngram_range=(1, 3))).fit_transform(tokens_with_pos)


def quiet_fit(model, X, y):
    """Fit ``model`` without its convergence warnings; the seconds it took."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        with Timer() as t:
            model.fit(X, y)
    return t.seconds


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iterations", type=int, default=100)
    ap.add_argument("--fcrf-iterations", type=int, default=100)
    ap.add_argument("--sigma", type=float, default=1 / math.sqrt(2))
    ap.add_argument("--n-jobs", type=int, default=1)
    ap.add_argument("--fcrf-objective", default=None,
                    choices=["chainwise", "pseudolikelihood", "likelihood"],
                    help="default: FactorialCRF's default (staged chain-wise + likelihood)")
    ap.add_argument("--coupling-features", default="default", choices=["default", "supported", "all"])
    ap.add_argument("--refine-likelihood", type=int, default=0, metavar="N",
                    help="afterwards, continue the FCRF with N iterations of likelihood training (TRP)")
    ap.add_argument("--variant", action="append", type=json.loads, default=None,
                    metavar="JSON", help="FactorialCRF parameters of one FCRF fit (repeatable)")
    ap.add_argument("--two-stage", action="append", type=json.loads, default=[],
                    metavar="JSON", help="TwoStage parameters (+ first: FactorialCRF parameters) of one fit "
                                         "(repeatable)")
    args = ap.parse_args()

    X_train, y_train = load("train")
    X_test, y_test = load("test")
    W_train, W_test = word_observations(X_train), word_observations(X_test)
    pos_train, chunk_train = chain_labels(y_train, 0), chain_labels(y_train, 1)
    pos_test, chunk_test = chain_labels(y_test, 0), chain_labels(y_test, 1)

    # cascade
    c2 = 1.0 / (2 * args.sigma ** 2)
    tagger, chunker = crfsuite(c2, args.iterations), crfsuite(c2, args.iterations)
    C_train = merge(W_train, pos_ngrams(X_train))
    with Timer() as t_tag:
        tagger.fit(W_train, pos_train)
    with Timer() as t_chunk:
        chunker.fit(C_train, chunk_train)
    with Timer() as t_cascade_pred:
        pred_pos = tagger.predict(W_test)
        X_test_pred = [[{"word": tok["word"], "pos": p} for tok, p in zip(s, ps)]
                       for s, ps in zip(X_test, pred_pos)]
        pred_chunk_cascade = chunker.predict(merge(W_test, pos_ngrams(X_test_pred)))
    pos_acc_cascade = np.mean([a == b for s, t in zip(pred_pos, pos_test) for a, b in zip(s, t)])
    f1_cascade = chunk_f1(chunk_test, pred_chunk_cascade)

    print(f"{'':22s} {'train s':>8s} {'predict s':>10s} {'POS acc':>8s} {'chunk F1':>9s}")
    print(f"{'CRFsuite cascade':22s} {t_tag.seconds + t_chunk.seconds:8.1f} {t_cascade_pred.seconds:10.2f} "
          f"{pos_acc_cascade:8.4f} {f1_cascade:9.4f}   "
          f"(tagger {t_tag.seconds:.1f} s + chunker {t_chunk.seconds:.1f} s)", flush=True)

    # joint FCRF
    y_joint = [list(zip(p, c)) for p, c in zip(pos_train, chunk_train)]
    base = dict(sigma=args.sigma, max_iter=args.fcrf_iterations, lbfgs_memory=6, tol=1e-12,
                n_jobs=args.n_jobs, coupling_features=args.coupling_features)
    t_cascade = t_tag.seconds + t_chunk.seconds

    def print_ratio(seconds, f1):
        print(f"ratio skfcrf/cascade training time: {seconds / t_cascade:.3f}; "
              f"chunk F1 difference {f1 - f1_cascade:+.4f}", flush=True)

    for variant in args.variant or [{}]:
        params = dict(base)
        if args.fcrf_objective:
            params["objective"] = args.fcrf_objective
        fcrf = FactorialCRF(**{**params, **variant})
        t_fcrf = quiet_fit(fcrf, W_train, y_joint)
        with Timer() as t_fcrf_pred:
            decoded = fcrf.decode(W_test)
        pred = [d.labels for d in decoded]
        converged = np.mean([d.converged for d in decoded])
        mean_iter = np.mean([d.n_iter for d in decoded])
        pos_acc = np.mean([a == b for s, t in zip(pred, pos_test) for a, b in zip(s[:, 0], t)])
        f1 = chunk_f1(chunk_test, [list(s[:, 1]) for s in pred])
        # "independent" is the staged default's first stage, not independent chains
        name = ("skfcrf FCRF" if fcrf.objective == "independent"
                else f"skfcrf FCRF {fcrf.objective}")
        print(f"{name:22s} {t_fcrf:8.1f} {t_fcrf_pred.seconds:10.2f} "
              f"{pos_acc:8.4f} {f1:9.4f}   ({fcrf.n_iter_} iterations; decoding converged "
              f"{converged:.3f}, mean {mean_iter:.1f} iterations; {fcrf.layout_.n_params} weights"
              + (f"; {json.dumps(variant)}" if variant else "") + ")")
        print_ratio(t_fcrf, f1)
    for spec in args.two_stage:
        shown, spec = json.dumps(spec), dict(spec)
        first = FactorialCRF(**{**base, **spec.pop("first", {})})
        second = FactorialCRF(**{**base, **spec.pop("second", {})})
        if "ngram_range" in spec:
            spec["ngram_range"] = tuple(spec["ngram_range"])
        model = TwoStage(first, second, first_chains=0, **spec)
        t_two = quiet_fit(model, W_train, y_joint)
        with Timer() as t_two_pred:
            pred = model.predict(W_test)
        pos_acc = np.mean([a == b for s, t in zip(pred, pos_test) for a, b in zip(s[:, 0], t)])
        f1 = chunk_f1(chunk_test, [list(s[:, 1]) for s in pred])
        print(f"{'skfcrf TwoStage':22s} {t_two:8.1f} {t_two_pred.seconds:10.2f} "
              f"{pos_acc:8.4f} {f1:9.4f}   ({shown})")
        print_ratio(t_two, f1)
    if args.refine_likelihood:
        fcrf.set_params(objective="likelihood", max_iter=args.refine_likelihood, warm_start=True)
        t_ref = quiet_fit(fcrf, W_train, y_joint)
        pred = fcrf.predict(W_test)
        f1_ref = chunk_f1(chunk_test, [list(s[:, 1]) for s in pred])
        print(f"+ {args.refine_likelihood} likelihood (TRP) iterations: {t_ref:.1f} s more, "
              f"chunk F1 {f1_ref:.4f}")


if __name__ == "__main__":
    main()
