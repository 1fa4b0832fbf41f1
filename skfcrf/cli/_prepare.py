"""``skfcrf prepare REPORTS TRANSCRIPTS -o OUT``: training data from pairs of formatted reports
and recognizer transcripts.

Each report is parsed into its structure (:func:`skfcrf.structure.parse_report`), the
transcript of the same name is aligned with it (:func:`skfcrf.structure.align_transcript`)
and the transcript's tokens are written with the transferred labels as one CoNLL block
``token chain0 chain1 chain2``.  What cannot be used is listed with the reason and
skipped, never written with guessed labels: unpaired files, empty, unreadable or
non-UTF-8 files, texts without a token, and pairs whose share of matched report words is
below ``--min-match`` (typically the transcript of a different report).
"""
import json
import math
import os
import re
import sys
import tempfile

from skfcrf.cli._common import CLIError, add_quiet, n_jobs, progress
from skfcrf.cli._files import check_writable
from skfcrf.cli._progress import bar

#: skip reasons, in the order of the summary table
REASONS = (
    "report unreadable", "transcript unreadable",
    "report not UTF-8", "transcript not UTF-8",
    "report empty", "transcript empty",
    "report has no token", "transcript has no token",
    "match rate below --min-match",
)
#: pairs per task of the worker processes (``--n-jobs`` other than 1)
CHUNK_SIZE = 25
#: at most this many unplaced lines are quoted per file
MAX_QUOTED = 3


def _fraction(text):
    """A number in [0, 1]."""
    import argparse

    try:
        v = float(text)
    except ValueError:
        v = None
    if v is None or not 0 <= v <= 1:
        raise argparse.ArgumentTypeError(f"expected a number in [0, 1], got {text!r}")
    return v


def add_parser(sub):
    g = sub.add_parser(
        "prepare", help="align recognizer transcripts with their formatted reports (training data)",
        description="Pair the formatted reports in REPORTS with the recognizer transcripts in "
        "TRANSCRIPTS by file name, parse each report into its structure, align the transcript "
        "with it and write the transcript's tokens with the transferred labels to OUT: one "
        "CoNLL block 'token chain0 chain1 chain2' per pair, in sorted name order. Pairs that "
        "cannot be used are listed with the reason and skipped.")
    g.add_argument("reports", metavar="REPORTS", help="directory of formatted reports (UTF-8 text)")
    g.add_argument("transcripts", metavar="TRANSCRIPTS",
                   help="directory of recognizer transcripts, named as their reports")
    g.add_argument("-o", "--output", required=True, metavar="OUT",
                   help="output file (written only when at least one pair is kept)")
    g.add_argument("--section-types", metavar="FILE",
                   help="JSON list of [pattern, type] pairs: the first pattern found "
                   "(case-insensitive) in a heading gives its section type (default: "
                   "skfcrf.structure.DEFAULT_SECTION_TYPES)")
    g.add_argument("--min-match", type=_fraction, metavar="R", default=0.5,
                   help="skip pairs in which less than this share of the report's words is "
                   "matched in the transcript (default: %(default)s)")
    g.add_argument("--n-jobs", type=n_jobs, metavar="N", default=1,
                   help="worker processes (default: %(default)s; -1: all cores)")
    add_quiet(g)
    g.set_defaults(func=run)
    return g


# ----------------------------------------------------------------------------- inputs
def load_section_types(path):
    """The ``[pattern, type]`` pairs of a ``--section-types`` file; CLIError (status 2) when the
    file is missing or malformed."""
    def bad(why):
        return CLIError(f"argument --section-types: {path}: {why}", status=2)

    try:
        with open(path, encoding="utf-8-sig") as fh:
            data = json.load(fh)
    except FileNotFoundError:
        raise bad("file not found") from None
    except IsADirectoryError:
        raise bad("is a directory") from None
    except OSError as exc:
        raise bad(f"cannot read it ({exc.strerror})") from None
    except UnicodeDecodeError as exc:
        raise bad(f"not a UTF-8 text file ({exc.reason} at byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise bad(f"invalid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})") from None
    if not isinstance(data, list):
        raise bad(f"expected a JSON list of [pattern, type] pairs, got a {type(data).__name__}")
    pairs = []
    for i, item in enumerate(data):
        if not (isinstance(item, list) and len(item) == 2 and all(isinstance(s, str) for s in item)):
            raise bad(f"entry {i} is {json.dumps(item)}; expected a [pattern, type] pair of strings")
        pattern, kind = item
        try:
            re.compile(pattern)
        except re.error as exc:
            raise bad(f"entry {i}: invalid regular expression {pattern!r} ({exc})") from None
        if not kind or any(c.isspace() for c in kind):
            raise bad(f"entry {i}: section type {kind!r} must be a non-empty name without "
                      "white space (it becomes a label column)")
        pairs.append((pattern, kind))
    return pairs


def _files(path, what):
    if not os.path.exists(path):
        raise CLIError(f"{what} directory not found: {path}")
    if not os.path.isdir(path):
        raise CLIError(f"{what} path is not a directory: {path}")
    try:
        with os.scandir(path) as it:
            return {e.name for e in it if e.is_file()}
    except OSError as exc:
        raise CLIError(f"cannot list {what} directory {path}: {exc.strerror}") from None


def _read(path, who):
    """(text, None) or (None, (reason, detail))."""
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        return None, (f"{who} unreadable", exc.strerror or type(exc).__name__)
    if not data:
        return None, (f"{who} empty", "0 bytes")
    try:
        # a byte-order mark is no part of the text
        return data.decode("utf-8-sig"), None
    except UnicodeDecodeError as exc:
        return None, (f"{who} not UTF-8", f"{exc.reason} at byte {exc.start}")


# ----------------------------------------------------------------------------- one pair
def prepare_pair(report_path, transcript_path, section_types, min_match):
    """Parse, align and format one pair.

    Returns
    -------
    dict
        ``skip`` (None or ``(reason, detail)``), ``block`` (the CoNLL lines, no final
        newline), ``n_tokens``, ``stats`` (``AlignmentStats`` or None), ``no_heading``
        (bool) and ``unplaced`` (list of ``(line, text)``).
    """
    from skfcrf.structure import align_transcript, parse_report

    rec = {"skip": None, "block": None, "n_tokens": 0, "stats": None, "no_heading": False,
           "unplaced": []}
    report, err = _read(report_path, "report")
    transcript, err2 = _read(transcript_path, "transcript")
    if err or err2:
        rec["skip"] = err or err2
        return rec
    words = transcript.split()
    if not report.strip():
        rec["skip"] = ("report has no token", "white space only")
        return rec
    if not words:
        rec["skip"] = ("transcript has no token", "white space only")
        return rec
    try:
        tokens, labels, problems = parse_report(report, section_types=section_types,
                                                errors="ignore", return_problems=True)
    except ValueError as exc:
        rec["skip"] = ("report has no token", str(exc))
        return rec
    rec["no_heading"] = any(p.kind == "no-heading" for p in problems)
    rec["unplaced"] = [(p.line, p.text) for p in problems if p.kind == "unplaced"]
    y, stats = align_transcript(tokens, labels, words)
    rec["stats"] = stats
    if not stats.match_rate >= min_match:
        rec["skip"] = ("match rate below --min-match",
                       f"{stats.match_rate:.3f} of the report's words matched, below {min_match:g}; "
                       "the transcript of another report?")
        return rec
    if len(y) != len(words):  # the aligner's contract; never write shifted labels
        raise RuntimeError(f"align_transcript returned {len(y)} label rows for {len(words)} "
                           f"transcript tokens ({transcript_path})")
    rows = y.tolist() if hasattr(y, "tolist") else [list(r) for r in y]
    rec["block"] = "\n".join([f"{w} {a} {b} {c}" for w, (a, b, c) in zip(words, rows)])
    rec["n_tokens"] = len(words)
    return rec


def _prepare_chunk(jobs, section_types, min_match):
    return [prepare_pair(r, t, section_types, min_match) for r, t in jobs]


# ----------------------------------------------------------------------------- command
def run(args):
    check_writable(args.output, "-o", replace=True)   # before reading and aligning
    section_types = load_section_types(args.section_types) if args.section_types else None
    reports = _files(args.reports, "REPORTS")
    transcripts = _files(args.transcripts, "TRANSCRIPTS")
    names = sorted(reports & transcripts)
    only_reports = sorted(reports - transcripts)
    only_transcripts = sorted(transcripts - reports)
    err = sys.stderr
    for name in only_reports:
        print(f"{name}: skipped: no transcript of this name in {args.transcripts}", file=err)
    for name in only_transcripts:
        print(f"{name}: skipped: no report of this name in {args.reports}", file=err)
    if not names:
        raise CLIError(f"no pairs: no file name is in both {args.reports} and {args.transcripts}")

    jobs = [(os.path.join(args.reports, n), os.path.join(args.transcripts, n)) for n in names]
    records = _prepare_all(jobs, section_types, args.min_match, args.n_jobs, args.quiet)

    kept = []
    for name, rec in zip(names, records):
        if rec["skip"]:
            reason, detail = rec["skip"]
            print(f"{name}: skipped: {reason} ({detail})", file=err)
            continue
        if rec["no_heading"]:
            print(f"{name}: note: the report has no heading; aligned as one section", file=err)
        if rec["unplaced"]:
            quoted = "; ".join(f"line {ln}: {text.strip()[:40]!r}" for ln, text in
                               rec["unplaced"][:MAX_QUOTED])
            more = len(rec["unplaced"]) - MAX_QUOTED
            print(f"{name}: note: {len(rec['unplaced'])} report line(s) the grammar cannot place "
                  f"(kept) - {quoted}" + (f"; {more} more" if more > 0 else ""), file=err)
        kept.append(rec)
    if kept:
        _write_atomic(args.output, "\n\n".join(r["block"] for r in kept) + "\n")
    if not args.quiet:
        print(summary_table(names, records, len(only_reports), len(only_transcripts), kept,
                            args.output), file=err, flush=True)
    if not kept:
        raise CLIError(f"no pair was written ({len(names)} found, all skipped); {args.output} "
                       "not written")
    progress(f"wrote {len(kept)} pairs to {args.output}", args.quiet)
    return 0


def _prepare_all(jobs, section_types, min_match, n_jobs_, quiet):
    """The records of :func:`prepare_pair` for ``jobs``, in order, with a progress bar."""
    from joblib import Parallel, delayed, effective_n_jobs

    n_workers = min(effective_n_jobs(n_jobs_), math.ceil(len(jobs) / CHUNK_SIZE))
    b = bar(len(jobs), "aligning", quiet=quiet, unit="pair")
    records = []
    try:
        if n_workers <= 1:
            for r, t in jobs:
                records.append(prepare_pair(r, t, section_types, min_match))
                b.update(1)
            return records
        chunks = [jobs[i:i + CHUNK_SIZE] for i in range(0, len(jobs), CHUNK_SIZE)]
        # a few chunks per worker and round, so the bar moves and no worker idles long
        per_round = 4 * n_workers
        with Parallel(n_jobs=n_workers) as parallel:
            for i in range(0, len(chunks), per_round):
                for part in parallel(delayed(_prepare_chunk)(c, section_types, min_match)
                                     for c in chunks[i:i + per_round]):
                    records.extend(part)
                    b.update(len(part))
        return records
    finally:
        b.close()


def _write_atomic(path, text):
    """Write ``text`` to ``path`` through a temporary file in the same directory, renamed."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def summary_table(names, records, n_only_reports, n_only_transcripts, kept, output):
    """The end-of-run table: pairs found / written / skipped by reason, tokens, match rates and
    edit operations of the written pairs."""
    rows = [("pairs found", str(len(names)))]
    if n_only_reports:
        rows.append(("reports without transcript", str(n_only_reports)))
    if n_only_transcripts:
        rows.append(("transcripts without report", str(n_only_transcripts)))
    rows.append(("pairs written", str(len(kept))))
    counts = {}
    for rec in records:
        if rec["skip"]:
            counts[rec["skip"][0]] = counts.get(rec["skip"][0], 0) + 1
    rows.append(("pairs skipped", str(sum(counts.values()))))
    for reason in REASONS:
        if counts.get(reason):
            rows.append((f"  {reason}", str(counts[reason])))
    rows.append(("tokens written", str(sum(r["n_tokens"] for r in kept))))
    stats = [r["stats"] for r in kept]
    if stats:
        rates = [s.match_rate for s in stats]
        rows += [("match rate mean", f"{sum(rates) / len(rates):.3f}"),
                 ("match rate min", f"{min(rates):.3f}"),
                 ("report words", str(sum(s.n_report_words for s in stats))),
                 ("  matched", str(sum(s.n_matched for s in stats))),
                 ("  substituted", str(sum(s.n_substituted for s in stats))),
                 ("  deleted", str(sum(s.n_deleted for s in stats))),
                 ("transcript words inserted", str(sum(s.n_inserted for s in stats)))]
    width = max(len(k) for k, _ in rows)
    vwidth = max(len(v) for _, v in rows)
    title = f"prepare -> {output}" if kept else "prepare (nothing written)"
    return "\n".join([title] + [f"  {k:<{width}}  {v:>{vwidth}}" for k, v in rows])
