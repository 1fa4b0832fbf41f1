"""Label transfer by alignment against the generator's ground truth (issue 27, goal 2).

For each word error rate, ``make_dictation_pairs`` gives formatted reports, recognizer
transcripts of them and the transcripts' true labels.  The report text is parsed
(``parse_report``), the transcript aligned to it (``align_transcript``) and the
transferred labels compared with the truth on the transcript tokens that stem from a
report word (``source >= 0``): section type (chain 2 without its Begin prefix), line
class (chain 0 without its Begin prefix), and per chain the F1 of segment boundaries
(Begin labels) over all transcript tokens.

    python benchmarks/bench_alignment.py --n-reports 200 --rates 0 0.1 0.3
"""
import argparse
import time

import numpy as np

from skfcrf.datasets import make_dictation_pairs
from skfcrf.structure import align_transcript, parse_report


def _strip(label):
    return label[5:] if label.startswith("Begin") else label


def boundary_f1(true, pred):
    t = np.array([lab.startswith("Begin") or lab == "Enummarker" for lab in true])
    p = np.array([lab.startswith("Begin") or lab == "Enummarker" for lab in pred])
    tp = np.sum(t & p)
    return 2 * tp / max(t.sum() + p.sum(), 1)


def evaluate(rate, n_reports, seed):
    pairs = make_dictation_pairs(n_reports, word_error_rate=rate, random_state=seed)
    right = np.zeros(2)
    total = 0
    true_b = [[], [], []]
    pred_b = [[], [], []]
    match = []
    t0 = time.perf_counter()
    for pair in pairs:
        # the default tables map the generator's headings to its types
        toks, labs = parse_report(pair.text, errors="ignore")
        pred, stats = align_transcript(toks, labs, pair.transcript)
        match.append(stats.match_rate)
        from_report = pair.source >= 0
        for k, chain in enumerate((0, 2)):
            t = [_strip(x) for x in pair.labels[from_report, chain]]
            p = [_strip(x) for x in pred[from_report, chain]]
            right[k] += sum(a == b for a, b in zip(t, p))
        total += from_report.sum()
        for c in range(3):
            true_b[c].extend(pair.labels[:, c])
            pred_b[c].extend(pred[:, c])
    elapsed = time.perf_counter() - t0
    f1 = [boundary_f1(true_b[c], pred_b[c]) for c in range(3)]
    return right / total, f1, float(np.mean(match)), elapsed, total


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n-reports", type=int, default=200)
    ap.add_argument("--rates", type=float, nargs="+", default=[0.0, 0.1, 0.3])
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    print(f"{args.n_reports} generated report/transcript pairs per rate, seed {args.seed}")
    print(f"{'WER':>5} {'line class':>10} {'section':>8} {'bF1 c0':>7} {'bF1 c1':>7} {'bF1 c2':>7} "
          f"{'match':>6} {'tokens':>8} {'parse+align s':>13}")
    for rate in args.rates:
        acc, f1, match, elapsed, total = evaluate(rate, args.n_reports, args.seed)
        print(f"{rate:5.2f} {acc[0]:10.4f} {acc[1]:8.4f} {f1[0]:7.4f} {f1[1]:7.4f} {f1[2]:7.4f} "
              f"{match:6.3f} {total:8d} {elapsed:13.2f}")


if __name__ == "__main__":
    main()
