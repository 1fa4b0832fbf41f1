"""A line chart as an SVG file, in plain Python (no plotting library).

``line_chart(series, path, ...)`` draws one polyline with point markers per
series, x and y axes with "nice" ticks (1, 2 or 5 times a power of ten), grid
lines, axis labels, a title and a legend.  Used for the learning curves of
``bench_active_learning.py`` (the figure of the partial-annotation tutorial).
"""
import math
from xml.sax.saxutils import escape

__all__ = ["nice_ticks", "line_chart"]

#: Colour-blind-safe line colours (Okabe & Ito), in series order.
COLOURS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442",
           "#000000")


def nice_ticks(lo, hi, n=6):
    """About ``n`` round tick values, the first at or below ``lo``, the last at or above
    ``hi``; and the step between them."""
    if hi <= lo:
        hi = lo + 1.0
    raw = (hi - lo) / max(1, n - 1)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)
    first = math.floor(lo / step + 1e-9) * step
    last = math.ceil(hi / step - 1e-9) * step
    count = int(round((last - first) / step))
    return [round(first + i * step, 12) for i in range(count + 1)], step


def _fmt(v, step):
    digits = max(0, -int(math.floor(math.log10(step)))) if step < 1 else 0
    return f"{v:,.{digits}f}"


def line_chart(series, path, *, title="", xlabel="", ylabel="", width=720, height=440,
               ylim=None):
    """Write ``series`` -- a list of ``(name, xs, ys)`` -- as an SVG line chart to ``path``."""
    left, right, top, bottom = 70, 170, 40 if title else 20, 55
    pw, ph = width - left - right, height - top - bottom
    xs_all = [x for _, xs, _ in series for x in xs]
    ys_all = [y for _, _, ys in series for y in ys if y == y]
    xticks, xstep = nice_ticks(min(xs_all), max(xs_all))
    lo, hi = ylim if ylim is not None else (min(ys_all), max(ys_all))
    yticks, ystep = nice_ticks(lo, hi)
    x0, x1 = min(xticks[0], min(xs_all)), max(xticks[-1], max(xs_all))
    y0, y1 = min(yticks[0], lo), max(yticks[-1], hi)

    def px(x):
        return left + (x - x0) / (x1 - x0) * pw

    def py(y):
        return top + ph - (y - y0) / (y1 - y0) * ph

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">',
           f'<rect width="{width}" height="{height}" fill="white"/>']
    if title:
        out.append(f'<text x="{left + pw / 2:.1f}" y="22" text-anchor="middle" '
                   f'font-size="14">{escape(title)}</text>')
    for t in xticks:
        out.append(f'<line x1="{px(t):.1f}" y1="{top}" x2="{px(t):.1f}" y2="{top + ph}" '
                   'stroke="#e5e5e5"/>')
        out.append(f'<text x="{px(t):.1f}" y="{top + ph + 18}" text-anchor="middle">'
                   f'{_fmt(t, xstep)}</text>')
    for t in yticks:
        out.append(f'<line x1="{left}" y1="{py(t):.1f}" x2="{left + pw}" y2="{py(t):.1f}" '
                   'stroke="#e5e5e5"/>')
        out.append(f'<text x="{left - 8}" y="{py(t) + 4:.1f}" text-anchor="end">'
                   f'{_fmt(t, ystep)}</text>')
    out.append(f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="none" '
               'stroke="#333"/>')
    out.append(f'<text x="{left + pw / 2:.1f}" y="{height - 12}" text-anchor="middle">'
               f'{escape(xlabel)}</text>')
    out.append(f'<text x="18" y="{top + ph / 2:.1f}" text-anchor="middle" '
               f'transform="rotate(-90 18 {top + ph / 2:.1f})">{escape(ylabel)}</text>')
    for i, (name, xs, ys) in enumerate(series):
        colour = COLOURS[i % len(COLOURS)]
        pts = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in zip(xs, ys) if y == y)
        out.append(f'<polyline points="{pts}" fill="none" stroke="{colour}" '
                   'stroke-width="2"/>')
        for x, y in zip(xs, ys):
            if y == y:
                out.append(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="3" '
                           f'fill="{colour}"/>')
        ly = top + 10 + 20 * i
        out.append(f'<line x1="{left + pw + 15}" y1="{ly}" x2="{left + pw + 40}" y2="{ly}" '
                   f'stroke="{colour}" stroke-width="2"/>')
        out.append(f'<text x="{left + pw + 46}" y="{ly + 4}">{escape(name)}</text>')
    out.append("</svg>")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("\n".join(out) + "\n")
