"""One very long sequence (issue 19, item 6): fit and decode a single 100,000-token sequence.

Synthetic dictations (``make_dictations(..., style="rcg", random_state=0)``) are
concatenated into one sequence of ``--tokens`` tokens with the standard dictation
features (``benchmarks/_dictations.py``).  Two configurations: one chain (the
section chain) and the three chains, both with the default objective (chain-wise,
then likelihood fine-tuning) for ``--max-iter`` / ``--finetune-iter`` iterations.
Each runs in a fresh subprocess, which reports

* fit time and decode time (``decode``, i.e. Viterbi / joint-state Viterbi);
* peak RSS of the process (``resource.getrusage(RUSAGE_SELF).ru_maxrss``) and its
  increase over the high-water mark after imports, data and features (the fit's
  and decoding's own memory);
* whether all marginals (``predict_marginals``) and the loss curve are finite.

    python benchmarks/bench_long_sequence.py [--tokens 100000] [--max-iter 30]
"""
import argparse
import json
import resource
import subprocess
import sys
import time


def peak_rss_mb():
    """High-water resident set size of this process in MB (Linux reports KB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def one_sequence(n_tokens):
    """``n_tokens`` tokens of dictation reports concatenated, with their labels."""
    import numpy as np

    from skfcrf.datasets import make_dictations

    tokens, labels, n = [], [], 0
    seed = 0
    while n < n_tokens:
        X, y = make_dictations(50, style="rcg", random_state=seed)
        for toks, lab in zip(X, y):
            tokens.extend(toks)
            labels.append(lab)
            n += len(toks)
        seed += 1
    return tokens[:n_tokens], np.vstack(labels)[:n_tokens]


def child(args):
    """Run one configuration; print a JSON line of figures."""
    import numpy as np

    from skfcrf import FactorialCRF

    from _dictations import standard_features

    tokens, labels = one_sequence(args.tokens)
    X = standard_features().fit_transform([tokens])
    y = [labels[:, 2:3] if args.chains == 1 else labels]
    crf = FactorialCRF(max_iter=args.max_iter, finetune_iter=args.finetune_iter,
                       random_state=0)
    baseline = peak_rss_mb()
    t0 = time.perf_counter()
    crf.fit(X, y)
    fit_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    decoded = crf.decode(X)[0]
    decode_s = time.perf_counter() - t0
    marginals = crf.predict_marginals(X)[0]
    accuracy = float(np.mean(np.all(np.asarray(decoded.labels).reshape(len(tokens), -1)
                                    == y[0], axis=1)))
    print(json.dumps(dict(
        chains=args.chains, tokens=len(tokens), n_weights=int(crf.coef_.size),
        n_iter=crf.n_iter_, fit_s=round(fit_s, 1), decode_s=round(decode_s, 2),
        status=decoded.status, train_accuracy=round(accuracy, 4),
        finite=bool(all(np.isfinite(m).all() for m in marginals)
                    and np.isfinite(crf.loss_curve_).all()),
        baseline_mb=round(baseline), peak_mb=round(peak_rss_mb()),
        fit_decode_mb=round(peak_rss_mb() - baseline))), flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tokens", type=int, default=100_000)
    parser.add_argument("--max-iter", type=int, default=30)
    parser.add_argument("--finetune-iter", type=int, default=10)
    parser.add_argument("--chains", type=int, choices=(1, 3), default=None,
                        help="run only this configuration, in this process")
    args = parser.parse_args()
    if args.chains is not None:
        child(args)
        return
    print(f"one sequence of {args.tokens:,} tokens; max_iter={args.max_iter}, "
          f"finetune_iter={args.finetune_iter}", flush=True)
    for chains in (1, 3):
        cmd = [sys.executable, __file__, "--chains", str(chains), "--tokens", str(args.tokens),
               "--max-iter", str(args.max_iter), "--finetune-iter", str(args.finetune_iter)]
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
        print(out.strip().splitlines()[-1], flush=True)


if __name__ == "__main__":
    main()
