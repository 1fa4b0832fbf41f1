"""The structure viewer in a real headless browser (Debian's ``chromium``).

What a person would check, automated: the page loads without console messages
(errors, uncaught exceptions), its script ran, every gold section is laid out
visibly (a box of non-zero size, not hidden) with its type shown, the
disagreements have a visibly different background, and the screenshot is a
picture rather than a blank page (many distinct colours).  Layout facts come from
a probe script appended to a copy of the page, which writes what it measured into
the DOM that ``--dump-dom`` prints.

Skipped when no ``chromium`` (or ``chromium-browser``) is on the PATH; ``.ci/run``
installs it when it can (see there).  ``SKFCRF_VIEWER_SCREENSHOT=path`` keeps the
screenshot for a person to look at.
"""
import json
import os
import shutil
import struct
import subprocess
import tempfile
import zlib
from pathlib import Path

import numpy as np
import pytest

from skfcrf.datasets import DICTATION_CHAINS, make_dictations
from skfcrf.estimators import SequenceDecoding
from skfcrf.structure import chains_to_segments, render_comparison, write_comparison_pages

BROWSER = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(BROWSER is None, reason="no chromium on the PATH (apt-get "
                                "install chromium; .ci/run installs it when it can)")

PROBE = """<script>
(function () {
  var out = {sections: [], diff_bg: null, plain_bg: null};
  document.querySelectorAll('.column.gold .seg.lvl-top').forEach(function (el) {
    var r = el.getBoundingClientRect(), tag = el.querySelector('.tag');
    var tr = tag.getBoundingClientRect(), st = getComputedStyle(el);
    out.sections.push({type: el.getAttribute('data-type'), w: r.width, h: r.height,
                       tag_w: tr.width, tag_text: tag.textContent,
                       shown: st.display !== 'none' && st.visibility === 'visible'});
  });
  var d = document.querySelector('.column.predicted .tok.diff');
  var p = document.querySelector('.column.predicted .tok:not(.diff)');
  if (d) out.diff_bg = getComputedStyle(d).backgroundColor;
  if (p) out.plain_bg = getComputedStyle(p).backgroundColor;
  out.n_diff = document.querySelectorAll('main .tok.diff').length;
  // hovering a token highlights it in both columns; the button goes to a disagreement
  d.dispatchEvent(new MouseEvent('mouseover', {bubbles: true}));
  out.n_hl = document.querySelectorAll('.tok.hl[data-i="' + d.getAttribute('data-i') + '"]').length;
  document.getElementById('next-diff').click();
  var cur = document.querySelector('.tok.current');
  out.current_i = cur ? cur.getAttribute('data-i') : null;
  out.first_diff_i = d.getAttribute('data-i');
  var pre = document.createElement('pre');
  pre.id = 'probe';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>
"""


def _chromium(*args, timeout=120):
    """Run headless chromium on our own local pages: a fresh profile, no sandbox (it
    refuses to run as root with one, and containers often lack what it needs), no
    /dev/shm (small in containers); console messages go to stderr."""
    with tempfile.TemporaryDirectory() as profile:
        cmd = [BROWSER, "--headless", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
               "--no-first-run", "--hide-scrollbars", f"--user-data-dir={profile}",
               "--enable-logging=stderr", "--v=0", *args]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def read_png(path):
    """Decode an 8-bit RGB/RGBA PNG (no interlace) into an (h, w, channels) array."""
    with open(path, "rb") as fh:
        data = fh.read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, header = 8, [], None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        chunk = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", chunk)
        elif kind == b"IDAT":
            idat.append(chunk)
        pos += 12 + length
    w, h, depth, color, _, _, interlace = header
    assert depth == 8 and color in (2, 6) and interlace == 0, header
    bpp = 3 if color == 2 else 4
    raw = np.frombuffer(zlib.decompress(b"".join(idat)), dtype=np.uint8).reshape(h, 1 + w * bpp)
    out = np.zeros((h, w * bpp), dtype=np.uint8)
    prev = np.zeros(w * bpp, dtype=np.int64)
    for y in range(h):
        f, line = raw[y, 0], raw[y, 1:].astype(np.int64)
        if f == 0:
            cur = line
        elif f == 1:  # Sub: running sum per channel
            cur = np.cumsum(line.reshape(w, bpp), axis=0).ravel() % 256
        elif f == 2:  # Up
            cur = (line + prev) % 256
        else:  # Average, Paeth: sequential along the row
            cur = line.copy()
            for x in range(w * bpp):
                a = int(cur[x - bpp]) if x >= bpp else 0
                b = int(prev[x])
                if f == 3:
                    cur[x] = (cur[x] + (a + b) // 2) % 256
                else:
                    c = int(prev[x - bpp]) if x >= bpp else 0
                    pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
                    pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                    cur[x] = (cur[x] + pred) % 256
        out[y] = cur
        prev = cur
    return out.reshape(h, w, bpp)


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    X, y = make_dictations(n_reports=1, style="rcg", random_state=3)
    tokens, gold = X[0], y[0]
    pred = np.array(gold, dtype=object, copy=True)
    secs = chains_to_segments(None, gold).children
    s = secs[1]  # the second section predicted with another type
    other = "Plan" if s.label != "Plan" else "Diagnosis"
    pred[s.start, 2], pred[s.start + 1:s.end, 2] = "Begin" + other, other
    dec = SequenceDecoding(labels=pred, status="converged", n_iter=7, log_prob=-12.5)
    d = tmp_path_factory.mktemp("viewer")
    html = render_comparison(tokens, gold, dec, chain_names=DICTATION_CHAINS, title="viewer test")
    path = d / "page.html"
    path.write_text(html, encoding="utf-8")
    probe = d / "probe.html"
    probe.write_text(html.replace("</body>", PROBE + "</body>"), encoding="utf-8")
    return path, probe, secs, int(np.sum(np.any(gold != pred, axis=1)))


def test_page_in_headless_chromium(page):
    path, probe, secs, n_diff = page
    res = _chromium("--window-size=1400,1000", "--dump-dom", probe.as_uri())
    assert res.returncode == 0, res.stderr[-2000:]
    console = [line for line in res.stderr.splitlines() if ":CONSOLE" in line]
    assert console == [], console  # no console.log/error, no uncaught exception
    dom = res.stdout
    assert f'data-ready="{n_diff}"' in dom  # the page's own script ran to its end
    probe_json = dom.split('<pre id="probe">')[1].split("</pre>")[0]
    info = json.loads(probe_json.replace("&quot;", '"').replace("&amp;", "&"))
    assert [s["type"] for s in info["sections"]] == [s.label for s in secs]
    for s in info["sections"]:
        assert s["shown"] and s["w"] > 200 and s["h"] > 20, s
        assert s["tag_w"] > 0 and s["tag_text"].startswith(s["type"]), s
    assert info["n_diff"] == 2 * n_diff
    assert info["diff_bg"] and info["diff_bg"] != info["plain_bg"], info
    assert info["n_hl"] == 2 and info["current_i"] == info["first_diff_i"], info


INDEX_PROBE = """<script>
(function () {
  var th = document.querySelectorAll('table.index th')[4];  // joint accuracy
  th.click();
  var rows = document.querySelectorAll('table.index tbody tr:not(.total)');
  var order = Array.prototype.map.call(rows, function (r) { return r.cells[0].textContent; });
  var pre = document.createElement('pre');
  pre.id = 'probe';
  pre.textContent = order.join(',');
  document.body.appendChild(pre);
})();
</script>
"""


def test_index_sorts_by_a_column(tmp_path):
    X, y = make_dictations(n_reports=4, style="rcg", random_state=5)
    preds = []
    for k, g in enumerate(y):  # reports 1..4 with 0, 3, 1, 2 sections mislabelled
        p = np.array(g, dtype=object, copy=True)
        for s in chains_to_segments(None, g).children[:(0, 3, 1, 2)[k]]:
            p[s.start:s.end, 2] = "O"
        preds.append(p)
    index = write_comparison_pages(tmp_path / "pages", X, y, preds)
    text = Path(index).read_text(encoding="utf-8")
    probe = tmp_path / "pages" / "probe.html"
    probe.write_text(text.replace("</body>", INDEX_PROBE + "</body>"), encoding="utf-8")
    res = _chromium("--window-size=1200,600", "--dump-dom", probe.as_uri())
    assert res.returncode == 0, res.stderr[-2000:]
    assert [line for line in res.stderr.splitlines() if ":CONSOLE" in line] == []
    order = res.stdout.split('<pre id="probe">')[1].split("</pre>")[0].split(",")
    from skfcrf.metrics import joint_accuracy

    expected = sorted(range(4), key=lambda k: joint_accuracy([y[k]], [preds[k]]))
    assert order == [str(k + 1) for k in expected]


def test_screenshot_is_not_blank(page, tmp_path):
    path, _, _, _ = page
    shot = os.environ.get("SKFCRF_VIEWER_SCREENSHOT") or str(tmp_path / "shot.png")
    res = _chromium("--window-size=1000,700", f"--screenshot={shot}", path.as_uri())
    assert res.returncode == 0 and os.path.isfile(shot), res.stderr[-2000:]
    img = read_png(shot)
    assert img.shape[:2] == (700, 1000)
    rgb = img[:, :, :3].reshape(-1, 3)
    colours = np.unique(rgb[:, 0].astype(np.int64) << 16 | rgb[:, 1].astype(np.int64) << 8 | rgb[:, 2])
    assert len(colours) > 200, len(colours)  # text, boxes of several hues, badges
    # the diff marking (#ffd3d8 background) is on screen
    assert np.any(np.all(np.abs(rgb.astype(int) - (0xff, 0xd3, 0xd8)) <= 2, axis=1))
