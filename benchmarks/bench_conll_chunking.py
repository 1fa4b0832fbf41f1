"""Target 1 / issue 2: one-chain CoNLL-2000 chunking, skfcrf vs CRFsuite, same process.

Both get the same observations (CRFsuite's chunking-example features) and the
same prior (CRFsuite c2 = 1 <=> sigma = 1/sqrt(2)), and run 100 L-BFGS
iterations (memory 6, CRFsuite's default; stopping tests disabled on both).
Prints training and prediction times, their ratios, and chunk F1 (conlleval).

    python benchmarks/bench_conll_chunking.py [--iterations 100] [--n-jobs 1]
"""
import argparse
import math

from skfcrf import FactorialCRF

from _conll import Timer, chain_labels, chunk_f1, chunk_observations, load
from _conll import crfsuite as crfsuite_crf


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iterations", type=int, default=100)
    ap.add_argument("--n-jobs", type=int, default=1)
    args = ap.parse_args()

    X_train, y_train = load("train")
    X_test, y_test = load("test")
    with Timer() as t_feat:
        F_train = chunk_observations(X_train)
        F_test = chunk_observations(X_test)
    chunks_train, chunks_test = chain_labels(y_train, 1), chain_labels(y_test, 1)
    n_tok = sum(map(len, F_train))
    print(f"train: {len(F_train)} sentences, {n_tok} tokens; features built in {t_feat.seconds:.1f} s")

    crfsuite = crfsuite_crf(1.0, args.iterations)
    with Timer() as t_cs_fit:
        crfsuite.fit(F_train, chunks_train)
    with Timer() as t_cs_pred:
        pred_cs = crfsuite.predict(F_test)

    ours = FactorialCRF(objective="likelihood", sigma=1 / math.sqrt(2), max_iter=args.iterations,
                        lbfgs_memory=6, tol=1e-12, n_jobs=args.n_jobs)
    import warnings

    from sklearn.exceptions import ConvergenceWarning
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        with Timer() as t_fit:
            ours.fit(F_train, chunks_train)
    with Timer() as t_pred:
        pred = ours.predict(F_test)

    f1_cs = chunk_f1(chunks_test, pred_cs)
    f1 = chunk_f1(chunks_test, pred)
    print(f"{'':10s} {'fit s':>8s} {'predict s':>10s} {'chunk F1':>9s} {'iterations':>10s}")
    print(f"{'CRFsuite':10s} {t_cs_fit.seconds:8.2f} {t_cs_pred.seconds:10.2f} {f1_cs:9.4f} "
          f"{args.iterations:>10}")
    print(f"{'skfcrf':10s} {t_fit.seconds:8.2f} {t_pred.seconds:10.2f} {f1:9.4f} {ours.n_iter_:>10}")
    print(f"ratios skfcrf/CRFsuite: fit {t_fit.seconds / t_cs_fit.seconds:.3f}, "
          f"predict {t_pred.seconds / t_cs_pred.seconds:.3f}; F1 difference {f1 - f1_cs:+.4f}")


if __name__ == "__main__":
    main()
