"""Gold and predicted structure of a report side by side, as self-contained HTML pages.

Page layout (one report, :func:`render_comparison`)
    A header with the title, the report's scores (joint token accuracy, accuracy
    and WindowDiff per chain, from :mod:`skfcrf.metrics`), the decoding status
    (a :class:`~skfcrf.estimators.SequenceDecoding` record: status, iterations,
    ``log_prob``) and a legend; then two columns, *Gold* and
    *Predicted*.  Each column draws the segment tree of
    :func:`~skfcrf.structure.chains_to_segments` as nested boxes, coarsest chain
    outside::

        <div class="seg lvl-2" data-level="2" data-type="Plan">   section
          <div class="tag">Plan ...</div>
          <div class="seg lvl-1" data-type="Paragraph"> ...        paragraph, subsection
            <div class="seg lvl-0 leaf" data-type="Sentence">      sentence, heading
              <span class="tag">Sentence</span>
              <span class="tok" data-i="17">word</span> ...

    A box's colour depends on its type only (the same in both columns).

Disagreements
    A token whose labels differ on any chain has the class ``diff`` (and
    ``d<c>`` for every differing chain ``c``; its ``title`` shows both label
    rows).  A segment with no segment of the same chain, type and span in the
    other structure has the class ``unmatched``.

Everything (CSS, a few lines of script: hovering a token highlights it in both
columns, a button jumps to the next disagreement) is inline: the pages load no
network resource.  :func:`write_comparison_pages` writes one page per report
and an ``index.html`` table of their scores.
"""
import html
import math
import os
import zlib

import numpy as np

from skfcrf._validation import check_label_sequences
from skfcrf.metrics._accuracy import chain_accuracy, joint_accuracy
from skfcrf.metrics._segments import segment_boundaries, windowdiff
from skfcrf.structure._render import _word
from skfcrf.structure._segments import LabelScheme, chains_to_segments

__all__ = ["render_comparison", "write_comparison_pages", "comparison_scores"]

_STATUS_CLASS = {"exact": "ok", "converged": "warn", "approximate": "bad"}

_CSS = """
:root { --fg:#1d2330; --muted:#5b6475; --line:#d5dae3; --diff:#d7263d; }
* { box-sizing:border-box; }
body { margin:0; font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;
       color:var(--fg); background:#f4f6f9; }
header { background:#fff; border-bottom:1px solid var(--line); padding:14px 22px; }
header h1 { font-size:20px; margin:0 0 8px; }
nav { font-size:13px; margin-bottom:6px; } nav a { margin-right:14px; }
.summary { display:flex; flex-wrap:wrap; gap:18px; align-items:flex-start; }
.card { background:#fafbfc; border:1px solid var(--line); border-radius:8px; padding:8px 12px;
        max-width:440px; }
.card h2 { font-size:12px; text-transform:uppercase; letter-spacing:.05em; color:var(--muted);
           margin:0 0 4px; }
table.scores { border-collapse:collapse; font-variant-numeric:tabular-nums; }
table.scores td, table.scores th { padding:2px 10px 2px 0; text-align:right; }
table.scores th:first-child, table.scores td:first-child { text-align:left; }
.badge { display:inline-block; padding:1px 9px; border-radius:10px; font-weight:600;
         font-size:13px; }
.badge.ok { background:#d8f3dc; color:#1b5e20; } .badge.warn { background:#fff1c2; color:#7a5900; }
.badge.bad { background:#ffd9dc; color:#8b0012; } .badge.none { background:#e6e9ef; }
.legend { display:grid; grid-template-columns:auto auto; gap:3px 10px; font-size:13px;
          align-items:center; }
.swatch { display:inline-block; width:34px; height:16px; border-radius:4px; vertical-align:middle; }
button { font:inherit; font-size:13px; padding:3px 10px; border-radius:6px;
         border:1px solid var(--line); background:#fff; cursor:pointer; }
main { display:grid; grid-template-columns:1fr 1fr; gap:18px; padding:16px 22px; }
@media (max-width: 900px) { main { grid-template-columns:1fr; } }
.column > h2 { font-size:16px; margin:0 0 8px; padding:6px 10px; border-radius:6px;
               background:#fff; border:1px solid var(--line); }
.seg { border:1px solid hsl(var(--h) 45% 62%); border-radius:7px;
       background:hsl(var(--h) 70% 97%); margin:6px 0; padding:4px 8px 6px; }
.seg.lvl-top { border-width:1px 1px 1px 7px; background:hsl(var(--h) 65% 95%);
               margin:10px 0; }
.seg > .tag { font-size:12px; font-weight:600; color:hsl(var(--h) 60% 28%); }
.seg > .tag small { font-weight:400; color:var(--muted); margin-left:6px; }
.seg.leaf { display:flex; gap:8px; align-items:baseline; padding:2px 6px; margin:3px 0;
            background:#fff; border-color:hsl(var(--h) 35% 78%); }
.seg.leaf > .tag { flex:none; min-width:92px; font-size:11px; padding:0 6px; border-radius:8px;
                   background:hsl(var(--h) 60% 90%); text-align:center; }
.seg.outside { background:repeating-linear-gradient(45deg,#f3f3f3 0 6px,#fafafa 6px 12px);
               border-style:dotted; --h:0; border-color:#aaa; }
.seg.outside > .tag { color:#666; }
.seg.unmatched { border-style:dashed; border-color:var(--diff); }
.seg.lvl-top.unmatched { border-left-style:solid; border-left-color:hsl(var(--h) 45% 62%); }
.seg.unmatched > .tag::after { content:" \\2260"; color:var(--diff); font-weight:700; }
.seg.leaf.unmatched > .tag { background:#ffd3d8; color:#8b0012; }
.toks { line-height:1.7; }
.tok { padding:1px 1px; border-radius:3px; }
.tok.diff { background:#ffd3d8; box-shadow:inset 0 -2px 0 var(--diff); }
.tok.hl { background:#ffe066; outline:1px solid #c99a00; }
.tok.current { outline:2px solid var(--diff); }
table.index { border-collapse:collapse; background:#fff; margin:16px 22px;
              font-variant-numeric:tabular-nums; }
table.index th, table.index td { border-bottom:1px solid var(--line); padding:4px 12px;
                                 text-align:right; }
table.index th:nth-child(-n+2), table.index td:nth-child(-n+2) { text-align:left; }
table.index tr.total td { font-weight:600; border-top:2px solid var(--line); }
table.index th { cursor:pointer; user-select:none; }
table.index th:hover { text-decoration:underline; }
"""

_JS = """
(function () {
  var toks = function (i) { return document.querySelectorAll('.tok[data-i="' + i + '"]'); };
  function mark(ev, on) {
    var t = ev.target.closest ? ev.target.closest('.tok') : null;
    if (!t) return;
    toks(t.getAttribute('data-i')).forEach(function (e) { e.classList.toggle('hl', on); });
  }
  document.addEventListener('mouseover', function (ev) { mark(ev, true); });
  document.addEventListener('mouseout', function (ev) { mark(ev, false); });
  var diffs = document.querySelectorAll('.column.predicted .tok.diff');
  var next = document.getElementById('next-diff');
  var k = -1;
  if (next) {
    if (!diffs.length) { next.disabled = true; }
    next.addEventListener('click', function () {
      if (!diffs.length) return;
      if (k >= 0) diffs[k].classList.remove('current');
      k = (k + 1) % diffs.length;
      diffs[k].classList.add('current');
      diffs[k].scrollIntoView({block: 'center'});
    });
  }
  document.querySelectorAll('table.index th').forEach(function (th, col) {
    th.addEventListener('click', function () {  // sort the rows by this column
      var body = th.closest('table').tBodies[0];
      var rows = Array.prototype.slice.call(body.querySelectorAll('tr:not(.total)'));
      var key = function (r) { return r.cells[col].getAttribute('data-v') || r.cells[col].textContent; };
      var up = th.getAttribute('data-up') !== '1';
      th.setAttribute('data-up', up ? '1' : '0');
      rows.sort(function (a, b) {
        var x = key(a), y = key(b), nx = parseFloat(x), ny = parseFloat(y);
        var c = (isNaN(nx) || isNaN(ny)) ? String(x).localeCompare(String(y)) : nx - ny;
        return up ? c : -c;
      });
      var total = body.querySelector('tr.total');
      rows.forEach(function (r) { body.insertBefore(r, total); });
    });
  });
  document.body.setAttribute('data-ready', String(diffs.length));
})();
"""


def _hue(label):
    """A stable hue for a segment type, the same in every page."""
    if label is None:
        return 0
    return zlib.crc32(str(label).encode("utf-8")) % 360


def _labels_2d(labels, name):
    seqs, _ = check_label_sequences([labels], name=name)
    return seqs[0]


def _fmt(value, percent=True):
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "&ndash;"
    return f"{100 * value:.2f}%" if percent else f"{value:.4f}"


def _cell(value):
    """A table cell of a score, with its value for sorting."""
    v = "" if value is None else f' data-v="{value:.6f}"'
    return f"<td{v}>{_fmt(value)}</td>"


def comparison_scores(y_true, y_pred, *, scheme=None):
    """The scores of one report shown by :func:`render_comparison`.

    Parameters
    ----------
    y_true, y_pred : array-like, shape (n_tokens, n_chains) or (n_tokens,)
        Gold and predicted label chains of one report.
    scheme : LabelScheme, optional
        Its begin prefixes mark the WindowDiff boundaries.

    Returns
    -------
    scores : dict
        ``"joint"`` (:func:`~skfcrf.metrics.joint_accuracy`), ``"accuracy"``
        (list, :func:`~skfcrf.metrics.chain_accuracy` per chain),
        ``"windowdiff"`` (list, :func:`~skfcrf.metrics.windowdiff` per chain;
        ``None`` for a chain without Begin boundaries in the gold labels or a
        report too short for the window), ``"n_tokens"`` and ``"n_diff"``
        (tokens whose labels differ on some chain).
    """
    gold = _labels_2d(y_true, "y_true")
    pred = _labels_2d(y_pred, "y_pred")
    if gold.shape != pred.shape:
        raise ValueError(f"y_true has shape {gold.shape} but y_pred {pred.shape}")
    n, c = gold.shape
    prefixes = (scheme or LabelScheme()).begin_prefixes
    out = {"n_tokens": n, "n_diff": int(np.sum(np.any(gold != pred, axis=1))) if n else 0}
    if n == 0:
        out.update(joint=None, accuracy=[None] * c, windowdiff=[None] * c)
        return out
    out["joint"] = float(joint_accuracy([gold], [pred]))
    out["accuracy"] = [float(a) for a in chain_accuracy([gold], [pred])]
    wds = []
    for k in range(c):
        b = segment_boundaries([gold], chain=k, begin_prefixes=prefixes)[0]
        wd = None
        if len(b) and b.any():
            try:
                wd = float(windowdiff([gold], [pred], chain=k, begin_prefixes=prefixes))
            except ValueError:  # the report is shorter than the window
                wd = None
        wds.append(wd)
    out["windowdiff"] = wds
    return out


def _segment_keys(root):
    return {(s.level, s.start, s.end, s.label) for s in root.iter() if s is not root}


class _Column:
    """Draws one structure (gold or predicted) as nested boxes."""

    def __init__(self, tokens, root, other_keys, diff_title, chain_names):
        self.tokens = tokens
        self.root = root
        self.other = other_keys
        self.diff_title = diff_title
        self.names = chain_names
        self.top = root.level - 1

    def html(self):
        return "\n".join(self._seg(s) for s in self.root.children)

    def _classes(self, seg):
        cls = ["seg", f"lvl-{seg.level}"]
        if seg.level == self.top:
            cls.append("lvl-top")
        if seg.level == 0:
            cls.append("leaf")
        if seg.label is None:
            cls.append("outside")
        if (seg.level, seg.start, seg.end, seg.label) not in self.other:
            cls.append("unmatched")
        return " ".join(cls)

    def _seg(self, seg):
        label = "O (outside)" if seg.label is None else str(seg.label)
        typ = "" if seg.label is None else f' data-type="{html.escape(str(seg.label), quote=True)}"'
        head = (f'<div class="{self._classes(seg)}" data-level="{seg.level}"{typ} '
                f'style="--h:{_hue(seg.label)}">')
        span = f"tokens {seg.start + 1}&ndash;{seg.end}"
        if seg.level == 0:
            toks = " ".join(self._tok(i) for i in range(seg.start, seg.end))
            return (f'{head}<span class="tag" title="{html.escape(self.names[0])}, {span}">'
                    f'{html.escape(label)}</span><span class="toks">{toks}</span></div>')
        inner = "\n".join(self._seg(ch) for ch in seg.children)
        return (f'{head}<div class="tag">{html.escape(label)}<small>'
                f'{html.escape(self.names[seg.level])} &middot; {span}</small></div>\n{inner}</div>')

    def _tok(self, i):
        word = html.escape(_word(self.tokens[i]))
        title = self.diff_title.get(i)
        if title is None:
            return f'<span class="tok" data-i="{i}">{word}</span>'
        cls, text = title
        text = html.escape(text, quote=True)
        return f'<span class="tok diff {cls}" data-i="{i}" title="{text}">{word}</span>'


def _diff_titles(gold, pred, chain_names):
    out = {}
    for i in np.flatnonzero(np.any(gold != pred, axis=1)):
        chains = [c for c in range(gold.shape[1]) if gold[i, c] != pred[i, c]]
        text = "\n".join([f"{chain_names[c]}: gold {gold[i, c]}, predicted {pred[i, c]}"
                          for c in chains])
        out[int(i)] = (" ".join(f"d{c}" for c in chains), text)
    return out


def _status_html(decoding):
    if decoding is None:
        return '<span class="badge none">not given</span>'
    status = str(decoding.status)
    parts = [f'<span class="badge {_STATUS_CLASS.get(status, "none")}">{html.escape(status)}</span>',
             f"{int(decoding.n_iter)} iteration{'s' if decoding.n_iter != 1 else ''}"]
    log_prob = getattr(decoding, "log_prob", float("nan"))
    if log_prob is not None and not math.isnan(log_prob):
        # a probability above 1 is a bug upstream: say so rather than show it plainly
        flag = ' <span class="badge bad">invalid: &gt; 0</span>' if log_prob > 1e-9 else ""
        parts.append(f"log p(labels | x) = {log_prob:.3f}{flag}")
    return "<br>".join(parts)


def _scores_html(scores, chain_names):
    rows = ["<tr><th>chain</th><th>accuracy</th><th>WindowDiff</th></tr>"]
    for c, name in enumerate(chain_names):
        rows.append(f"<tr><td>{html.escape(name)}</td><td>{_fmt(scores['accuracy'][c])}</td>"
                    f"<td>{_fmt(scores['windowdiff'][c], percent=False)}</td></tr>")
    rows.append(f"<tr><td><b>joint</b></td><td><b>{_fmt(scores['joint'])}</b></td><td></td></tr>")
    return '<table class="scores">' + "".join(rows) + "</table>"


def _legend_html(chain_names):
    items = []
    top = len(chain_names) - 1
    for level in range(top, -1, -1):
        if level == top:
            style = "border:1px solid #7fbf8f;border-left:7px solid #7fbf8f;background:#e8f6ec"
        elif level == 0:
            style = "border:1px solid #d9c9a3;background:#fff;box-shadow:inset 4px 0 0 #f3e6bf"
        else:
            style = "border:1px solid #c48fc4;background:#fbf0fb"
        name = chain_names[level]
        title = name if name == f"chain {level}" else f"{name} (chain {level})"
        items.append((f'<span class="swatch" style="{style}"></span>',
                      f"{html.escape(title)} segment; colour = its type"))
    items += [
        ('<span class="swatch" style="border:1px dotted #aaa;background:repeating-linear-gradient('
         '45deg,#f3f3f3 0 6px,#fafafa 6px 12px)"></span>', "outside (O) tokens"),
        ('<span class="tok diff">word</span>', "token labelled differently (hover: the labels)"),
        ('<span class="swatch" style="border:1px dashed #d7263d"></span>',
         "segment &ne;: no segment of the same type and span in the other column"),
    ]
    return '<div class="legend">' + "".join(f"<span>{a}</span><span>{b}</span>" for a, b in items) + "</div>"


def _page(title, header_body, main_body):
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            f"<title>{html.escape(title)}</title>\n<style>{_CSS}</style>\n</head>\n<body>\n"
            f"<header>\n{header_body}\n</header>\n{main_body}\n<script>{_JS}</script>\n"
            "</body>\n</html>\n")


def _chain_names(chain_names, n_chains):
    if chain_names is None:
        return [f"chain {c}" for c in range(n_chains)]
    names = [str(n) for n in chain_names]
    if len(names) != n_chains:
        raise ValueError(f"{len(names)} chain names for {n_chains} chains")
    return names


def _split_decoding(y_pred, decoding):
    """``y_pred`` may be a SequenceDecoding record: its labels, and the record."""
    if hasattr(y_pred, "labels") and hasattr(y_pred, "status"):
        return y_pred.labels, (decoding if decoding is not None else y_pred)
    return y_pred, decoding


def render_comparison(tokens, y_true, y_pred, *, decoding=None, title=None, chain_names=None,
                      scheme=None, nav=None):
    """One report's gold and predicted structure side by side, as a complete HTML page.

    Every chain is drawn as nested boxes (sections around paragraphs or
    subsections around sentences and headings for the dictation chains),
    gold on the left, prediction on the right; tokens labelled differently and
    segments without a counterpart are marked (see the module docstring).  The
    header gives the report's scores (:func:`comparison_scores`), the decoding
    status and a legend.  The page is self-contained (inline CSS and script).

    Parameters
    ----------
    tokens : sequence of str or dict
        The report's tokens (dict tokens show their ``"word"``).
    y_true : array-like, shape (n_tokens, n_chains) or (n_tokens,)
        Gold label chains (chain 0 finest).
    y_pred : array-like of the same shape, or SequenceDecoding
        Predicted label chains, or the record of
        :meth:`skfcrf.FactorialCRF.decode` for the report (then its status is
        shown unless ``decoding`` is given).
    decoding : SequenceDecoding, optional
        Its ``status``, ``n_iter`` and ``log_prob`` are shown.
    title : str, optional
        Page title (default ``"Gold and predicted structure"``).
    chain_names : sequence of str, optional
        One name per chain, chain 0 first (default ``"chain 0"``, ...), e.g.
        :data:`skfcrf.datasets.DICTATION_CHAINS`.
    scheme : LabelScheme, optional
        Label conventions (default: Begin/B- prefixes, ``O`` outside).
    nav : list of (str, str), optional
        ``(text, href)`` links shown above the title.

    Returns
    -------
    html : str

    Examples
    --------
    >>> toks = ["fine", "period", "plan", "rest"]
    >>> gold = [("BeginSentence", "BeginHistory"), ("Sentence", "History"),
    ...         ("BeginSentence", "BeginPlan"), ("Sentence", "Plan")]
    >>> pred = [("BeginSentence", "BeginHistory"), ("Sentence", "History"),
    ...         ("Sentence", "History"), ("Sentence", "Plan")]
    >>> page = render_comparison(toks, gold, pred)
    >>> page.count('class="tok diff d0 d1"')  # token 3 differs on both chains, in both columns
    2
    """
    y_pred, decoding = _split_decoding(y_pred, decoding)
    tokens = list(tokens)
    gold = _labels_2d(y_true, "y_true")
    pred = _labels_2d(y_pred, "y_pred")
    if gold.shape != pred.shape:
        raise ValueError(f"y_true has shape {gold.shape} but y_pred {pred.shape}")
    if len(tokens) != gold.shape[0]:
        raise ValueError(f"{len(tokens)} tokens but {gold.shape[0]} labels")
    scheme = scheme or LabelScheme()
    names = _chain_names(chain_names, gold.shape[1])
    title = title or "Gold and predicted structure"
    scores = comparison_scores(gold, pred, scheme=scheme)
    g_root = chains_to_segments(tokens, gold, scheme=scheme)
    p_root = chains_to_segments(tokens, pred, scheme=scheme)
    g_keys, p_keys = _segment_keys(g_root), _segment_keys(p_root)
    titles = _diff_titles(gold, pred, names)
    n_unmatched = (len(g_keys - p_keys), len(p_keys - g_keys))

    links = "".join(f'<a href="{html.escape(h, quote=True)}">{html.escape(t)}</a>'
                    for t, h in (nav or []))
    diff_line = (f"{scores['n_diff']} of {scores['n_tokens']} tokens labelled differently; "
                 f"{n_unmatched[0]} gold and {n_unmatched[1]} predicted segments unmatched")
    header = (
        (f"<nav>{links}</nav>\n" if links else "")
        + f"<h1>{html.escape(title)}</h1>\n<div class=\"summary\">\n"
        + f'<div class="card"><h2>Scores</h2>{_scores_html(scores, names)}</div>\n'
        + f'<div class="card"><h2>Decoding</h2>{_status_html(decoding)}</div>\n'
        + '<div class="card" style="max-width:300px"><h2>Disagreements</h2>'
        + f'<p style="margin:0 0 6px">{diff_line}</p>'
        + '<button id="next-diff" type="button">next disagreement &darr;</button></div>\n'
        + f'<div class="card"><h2>Legend</h2>{_legend_html(names)}</div>\n</div>'
    )
    gold_col = _Column(tokens, g_root, p_keys, titles, names).html()
    pred_col = _Column(tokens, p_root, g_keys, titles, names).html()
    main = ("<main>\n"
            f'<section class="column gold"><h2>Gold</h2>\n{gold_col}\n</section>\n'
            f'<section class="column predicted"><h2>Predicted</h2>\n{pred_col}\n</section>\n'
            "</main>")
    return _page(title, header, main)


def write_comparison_pages(directory, X, y_true, y_pred, *, decodings=None, names=None,
                           title="Gold and predicted structure", chain_names=None, scheme=None,
                           unit="report"):
    """Write one :func:`render_comparison` page per report and an ``index.html``.

    Parameters
    ----------
    directory : str or path
        Created if missing.  Pages are ``report-0001.html``, ... (``unit``) and
        ``index.html``.
    X : list of sequences of tokens
    y_true : list of array-like
        Gold label chains, one per report.
    y_pred : list of array-like or list of SequenceDecoding
        Predicted label chains, or the records of :meth:`skfcrf.FactorialCRF.decode`.
    decodings : list of SequenceDecoding, optional
        Decoding records, when ``y_pred`` holds labels.
    names : list of str, optional
        Report names for the index (default ``"report 1"``, ...).
    title : str, default="Gold and predicted structure"
    chain_names, scheme
        As in :func:`render_comparison`.
    unit : str, default="report"
        What one sequence is, in the index and the page file names: ``"report"`` for
        dictations, ``"sentence"`` or ``"sequence"`` for other data (one lowercase word).

    Returns
    -------
    index : str
        Path of ``index.html``.  The index lists every report with its tokens,
        joint and per-chain accuracy, disagreements and decoding status, and the
        scores pooled over all reports.
    """
    if not (isinstance(unit, str) and unit.isalpha() and unit.islower()):
        raise ValueError(f"unit must be one lowercase word such as 'report', got {unit!r}")
    units = unit + "s"
    X, y_true, y_pred = list(X), list(y_true), list(y_pred)
    if not (len(X) == len(y_true) == len(y_pred)):
        raise ValueError(f"{len(X)} {units}, {len(y_true)} gold and {len(y_pred)} predicted "
                         "label sequences")
    if decodings is not None and len(decodings) != len(X):
        raise ValueError(f"{len(decodings)} decodings for {len(X)} {units}")
    if not X:
        raise ValueError(f"no {units} to write")
    os.makedirs(directory, exist_ok=True)
    names = [f"{unit} {i + 1}" for i in range(len(X))] if names is None else [str(n) for n in names]
    files = [f"{unit}-{i + 1:04d}.html" for i in range(len(X))]
    rows, golds, preds = [], [], []
    for i, (tokens, gold, pred) in enumerate(zip(X, y_true, y_pred)):
        pred, dec = _split_decoding(pred, None if decodings is None else decodings[i])
        nav = [("index", "index.html")]
        if i > 0:
            nav.append(("\u2190 previous", files[i - 1]))
        if i + 1 < len(X):
            nav.append(("next \u2192", files[i + 1]))
        page = render_comparison(tokens, gold, pred, decoding=dec, title=f"{title}: {names[i]}",
                                 chain_names=chain_names, scheme=scheme, nav=nav)
        with open(os.path.join(directory, files[i]), "w", encoding="utf-8") as fh:
            fh.write(page)
        g, p = _labels_2d(gold, "y_true"), _labels_2d(pred, "y_pred")
        golds.append(g)
        preds.append(p)
        rows.append((i, comparison_scores(g, p, scheme=scheme), dec))
    n_chains = golds[0].shape[1]
    cnames = _chain_names(chain_names, n_chains)
    head = (f"<tr><th>#</th><th>{unit}</th><th>tokens</th><th>differing</th><th>joint</th>"
            + "".join(f"<th>{html.escape(n)}</th>" for n in cnames) + "<th>decoding</th></tr>")
    body = []
    for i, sc, dec in rows:
        status = "" if dec is None else (
            f'<span class="badge {_STATUS_CLASS.get(str(dec.status), "none")}">'
            f"{html.escape(str(dec.status))}</span>")
        body.append(f'<tr><td>{i + 1}</td><td><a href="{files[i]}">{html.escape(names[i])}</a></td>'
                    f"<td>{sc['n_tokens']}</td><td>{sc['n_diff']}</td>{_cell(sc['joint'])}"
                    + "".join(_cell(a) for a in sc["accuracy"])
                    + f"<td>{status}</td></tr>")
    nonempty = [k for k, g in enumerate(golds) if len(g)]
    if nonempty:
        gs, ps = [golds[k] for k in nonempty], [preds[k] for k in nonempty]
        pooled = [joint_accuracy(gs, ps), *chain_accuracy(gs, ps)]
        body.append(f"<tr class=\"total\"><td></td><td>all {len(X)} {units} (pooled)</td>"
                    f"<td>{sum(len(g) for g in golds)}</td>"
                    f"<td>{sum(sc['n_diff'] for _, sc, _ in rows)}</td>"
                    + "".join(f"<td>{_fmt(float(v))}</td>" for v in pooled) + "<td></td></tr>")
    header = (f"<h1>{html.escape(title)}</h1>\n<p>{len(X)} {units}: token accuracy per chain "
              f"and joint (all chains right); click a column to sort, follow a {unit} for its "
              "structure.</p>")
    table = f'<table class="index"><thead>{head}</thead><tbody>{"".join(body)}</tbody></table>'
    index = os.path.join(directory, "index.html")
    with open(index, "w", encoding="utf-8") as fh:
        fh.write(_page(title, header, table))
    return index
