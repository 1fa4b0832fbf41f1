"""Models without in-chain transitions against the default (issue 31, item 2).

``transition_features="none"`` drops every in-chain template: the independent-labels
models of Marcheggiani (2014, section 3.2), IML (``coupling="none"``: one classifier
per chain and token) and CML (``coupling="all"``: the chains' labels of a token coupled,
the "overall" variable being their joint state), and the default coupling
(``"adjacent"``) without transitions.  Each row is scored as
``bench_segment_encoding.py``'s: joint and per-chain accuracy, WindowDiff of the
dictation chains or chunk F1 (conlleval) on CoNLL-2000, token F1 (micro / macro) and
Cohen's kappa over the tags of all chains (``O`` is not a tag), fit time.

    python benchmarks/bench_no_transitions.py --task dictations
    python benchmarks/bench_no_transitions.py --task conll [--n-train 2000 --n-test 500]

Data as ``bench_calibration.py``'s (dictations 200 / 100 with ``sigma=31.6``; CoNLL-2000
POS + chunks from word observations).
"""
from bench_calibration import data, summary, tag_scores, task_parser, timed_fit

from skfcrf import FactorialCRF

MODELS = {
    "default": {},
    "none-adjacent": dict(transition_features="none"),
    "IML": dict(transition_features="none", coupling="none"),
    "CML": dict(transition_features="none", coupling="all"),
}


def main():
    ap = task_parser(__doc__)
    ap.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    args = ap.parse_args()
    Xtr, ytr, Xte, yte, params = data(args.task, args.n_train, args.n_test)
    for name in args.models:
        model = FactorialCRF(n_jobs=args.n_jobs, **{**params, **MODELS[name]})
        fit = timed_fit(model, Xtr, ytr)
        pred = model.predict(Xte)
        print(f"{args.task} {name}: {summary(args.task, yte, pred)}  {tag_scores(yte, pred)}"
              f"  fit {fit:.1f} s", flush=True)


if __name__ == "__main__":
    main()
