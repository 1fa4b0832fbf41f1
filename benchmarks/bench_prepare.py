"""Time ``skfcrf prepare`` on N pairs of formatted reports and recognizer transcripts.

Issue 27 goal: 1,000 pairs of 500-word reports in under a minute on 2 cores.

The pairs are written to a temporary directory first (not timed):

* ``--source generated`` (default): :func:`skfcrf.datasets.make_dictation_pairs`
  (synthetic reports of ~550 words, transcripts at ``--wer``);
* ``--source real``: the shared real reports (``../shared/data/mtsamples-urology``,
  override with ``SKFCRF_MTSAMPLES=/path``), each repeated or cut to about
  ``--words`` words, with transcripts from :func:`skfcrf.datasets.dictate_report`.

Then ``skfcrf prepare REPORTS TRANSCRIPTS -o OUT -q`` runs as a subprocess (the
whole command: start-up, reading, parsing, aligning, writing) for every ``--n-jobs``
value, alternated ``--repeat`` times in one run; the median wall time of each is
printed, with the pairs and tokens written.

Usage::

    python benchmarks/bench_prepare.py [--n-pairs 1000] [--n-jobs 1 2] [--repeat 3]
        [--source generated|real] [--wer 0.1] [--words 500]
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
try:
    import skfcrf  # noqa: F401
except ImportError:  # running from a source checkout without installing
    sys.path.insert(0, str(ROOT))

REAL = os.environ.get("SKFCRF_MTSAMPLES", str(ROOT.parent / "shared" / "data" / "mtsamples-urology"))


def generated_pairs(n, wer, seed):
    from skfcrf.datasets import make_dictation_pairs

    for p in make_dictation_pairs(n, word_error_rate=wer, random_state=seed):
        yield p.text, p.transcript


def real_pairs(n, wer, words, seed):
    """The shared reports cycled; each report's lines repeated until it has ``words`` words,
    then cut at the line that passes it."""
    import numpy as np

    from skfcrf.datasets import dictate_report
    from skfcrf.structure import parse_report

    texts = [p.read_text(encoding="utf-8") for p in sorted(Path(REAL).glob("*.txt"))]
    if not texts:
        sys.exit(f"no reports in {REAL} (set SKFCRF_MTSAMPLES)")
    rs = np.random.RandomState(seed)
    for i in range(n):
        lines = texts[i % len(texts)].splitlines()
        out, count = [], 0
        while count < words:
            for line in lines:
                out.append(line)
                count += len(line.split())
                if count >= words:
                    break
        text = "\n".join(out) + "\n"
        tokens, labels = parse_report(text, errors="ignore")
        transcript, _, _ = dictate_report(tokens, labels, word_error_rate=wer,
                                          random_state=int(rs.randint(2**31 - 1)))
        yield text, transcript


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n-pairs", type=int, default=1000)
    ap.add_argument("--n-jobs", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--source", choices=("generated", "real"), default="generated")
    ap.add_argument("--wer", type=float, default=0.1)
    ap.add_argument("--words", type=int, default=500, help="report length for --source real")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        rep, tra = Path(tmp, "reports"), Path(tmp, "transcripts")
        rep.mkdir()
        tra.mkdir()
        t0 = time.perf_counter()
        pairs = (generated_pairs(args.n_pairs, args.wer, args.seed) if args.source == "generated"
                 else real_pairs(args.n_pairs, args.wer, args.words, args.seed))
        n_words = 0
        for i, (text, transcript) in enumerate(pairs):
            name = f"{i:05d}.txt"
            (rep / name).write_text(text, encoding="utf-8")
            (tra / name).write_text(" ".join(transcript) + "\n", encoding="utf-8")
            n_words += len(text.split())
        print(f"{args.n_pairs} pairs ({args.source}, WER {args.wer}), "
              f"{n_words / args.n_pairs:.0f} report words per pair on average, "
              f"generated in {time.perf_counter() - t0:.1f} s")

        env = dict(os.environ)
        env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
        times = {j: [] for j in args.n_jobs}
        out = Path(tmp, "out.conll")
        for _ in range(args.repeat):
            for j in args.n_jobs:
                cmd = [sys.executable, "-m", "skfcrf", "prepare", str(rep), str(tra), "-o", str(out),
                       "-q", "--n-jobs", str(j)]
                t = time.perf_counter()
                res = subprocess.run(cmd, env=env, capture_output=True, text=True)
                times[j].append(time.perf_counter() - t)
                if res.returncode != 0:
                    sys.exit(f"skfcrf prepare failed ({res.returncode}):\n{res.stderr}")
                lines = out.read_text(encoding="utf-8").split("\n")
                n_tokens = sum(1 for ln in lines if ln)
                n_blocks = lines.count("") if lines else 0  # separators + the final newline
        print(f"written: {n_blocks} pairs, {n_tokens} tokens")
        print("n_jobs  median s  runs")
        for j in args.n_jobs:
            print(f"{j:6d}  {statistics.median(times[j]):8.2f}  "
                  + " ".join(f"{t:.2f}" for t in times[j]))


if __name__ == "__main__":
    main()
