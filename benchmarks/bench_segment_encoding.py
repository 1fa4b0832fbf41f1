"""BME (or BIOES) restructuring of the segment chains against the BIO labels (issue 31, item 4).

Thesis ``002_981edd11709a4c73.txt`` section 6.3 trains on Chou's begin / middle / end
states instead of begin / inside.  :class:`skfcrf.structure.SegmentEncoded` does that
around the default ``FactorialCRF`` and answers in the user's labels, so both rows
are scored on the same gold labels: joint and per-chain accuracy, WindowDiff of the
dictation chains, chunk F1 (conlleval) on CoNLL-2000, the token-level F1 (micro and
macro) and Cohen's kappa (micro) over the tags of both or all three chains
(:func:`skfcrf.metrics.token_f1`, :func:`~skfcrf.metrics.cohen_kappa`; ``O`` is not a
tag), and the fit time.

    python benchmarks/bench_segment_encoding.py --task dictations
    python benchmarks/bench_segment_encoding.py --task conll [--n-train 2000 --n-test 500]

Data as ``bench_calibration.py``'s: ``make_dictations(300, "rcg", random_state=1)``, the
first 200 reports to train and the last 100 to test, ``make_dictation_features()``,
``sigma=31.6``; CoNLL-2000 POS + chunks from word observations.
"""
from bench_calibration import data, summary, tag_scores, task_parser, timed_fit

from skfcrf import FactorialCRF
from skfcrf.structure import SegmentEncoded


def main():
    ap = task_parser(__doc__)
    ap.add_argument("--schemes", nargs="+", default=["bio", "bme"],
                    choices=("bio", "bme", "bioes"))
    args = ap.parse_args()
    Xtr, ytr, Xte, yte, params = data(args.task, args.n_train, args.n_test)
    for scheme in args.schemes:
        crf = FactorialCRF(n_jobs=args.n_jobs, **params)
        model = crf if scheme == "bio" else SegmentEncoded(crf, scheme=scheme)
        fit = timed_fit(model, Xtr, ytr)
        pred = model.predict(Xte)
        print(f"{args.task} {scheme}: {summary(args.task, yte, pred)}  {tag_scores(yte, pred)}"
              f"  fit {fit:.1f} s", flush=True)


if __name__ == "__main__":
    main()
