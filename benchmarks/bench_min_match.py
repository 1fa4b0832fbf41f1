"""How well the match rate separates right from mismatched report/transcript pairs.

The shared real reports (``../shared/data/mtsamples-urology``) are parsed, each is dictated
by the noise model (``dictate_report``, ``--wer``), and ``align_transcript`` aligns every
report with its own transcript and, for ``--n-random`` random pairs, with the transcript of
another report.  ``skfcrf prepare --min-match R`` keeps a pair when its match rate is at
least R (default 0.5).

    python benchmarks/bench_min_match.py [--wer 0.3] [--n-random 300]
"""
import argparse
import glob
import os

import numpy as np

from skfcrf.datasets import dictate_report
from skfcrf.structure import align_transcript, parse_report

REPORTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "data",
                       "mtsamples-urology")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--wer", type=float, default=0.3)
    ap.add_argument("--n-random", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    reports = []
    for path in sorted(glob.glob(os.path.join(REPORTS, "*.txt"))):
        with open(path, encoding="utf-8") as fh:
            reports.append(parse_report(fh.read(), errors="ignore"))
    transcripts = [dictate_report(t, lab, word_error_rate=args.wer, random_state=i)[0]
                   for i, (t, lab) in enumerate(reports)]
    right = [align_transcript(*reports[i], transcripts[i])[1].match_rate for i in range(len(reports))]
    rng = np.random.default_rng(args.seed)
    wrong = []
    for _ in range(args.n_random):
        i, j = rng.choice(len(reports), 2, replace=False)
        wrong.append(align_transcript(*reports[i], transcripts[j])[1].match_rate)
    print(f"{len(reports)} real reports, transcripts at WER {args.wer}")
    print(f"right pairs:      min {min(right):.3f}  median {np.median(right):.3f}")
    print(f"mismatched pairs: max {max(wrong):.3f}  median {np.median(wrong):.3f}  ({args.n_random} random)")


if __name__ == "__main__":
    main()
