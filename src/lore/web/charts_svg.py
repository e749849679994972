"""Bar charts as inline SVG drawn on the server (no script): one or two series per label, each
bar with its value as a tooltip, a title and a description for screen readers, and the same
numbers in a table beside it on the page."""

from __future__ import annotations

from collections.abc import Sequence

from markupsafe import Markup, escape

WIDTH, HEIGHT = 640, 220
LEFT, RIGHT, TOP, BOTTOM = 34, 8, 12, 44
COLOURS = ("#1f5fbf", "#e08a00")


def bars(title: str, labels: Sequence[str], series: Sequence[tuple[str, Sequence[float]]],
         *, short: int = 8) -> Markup:
    """Grouped bars: ``series`` is (name, one value per label); labels are cut to ``short``."""
    n = max(len(labels), 1)
    top = max([v for _, values in series for v in values] + [1])
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    slot = plot_w / n
    bar = max(2.0, slot * 0.8 / max(len(series), 1))
    parts = [f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
             f'aria-labelledby="{_id(title)}-t {_id(title)}-d" xmlns="http://www.w3.org/2000/svg">',
             f'<title id="{_id(title)}-t">{escape(title)}</title>',
             f'<desc id="{_id(title)}-d">{escape(_describe(labels, series))}</desc>']
    for tick in (0, top / 2, top):
        y = TOP + plot_h - plot_h * tick / top
        parts.append(f'<line class="grid" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y:.1f}" y2="{y:.1f}"/>'
                     f'<text class="axis" x="{LEFT - 4}" y="{y + 4:.1f}">{_num(tick)}</text>')
    for i, label in enumerate(labels):
        x0 = LEFT + i * slot + slot * 0.1
        for j, (name, values) in enumerate(series):
            v = values[i] if i < len(values) else 0
            h = plot_h * v / top
            parts.append(f'<rect x="{x0 + j * bar:.1f}" y="{TOP + plot_h - h:.1f}" width="{bar - 1:.1f}" '
                         f'height="{h:.1f}" fill="{COLOURS[j % len(COLOURS)]}">'
                         f'<title>{escape(label)}: {escape(name)} {_num(v)}</title></rect>')
        if n <= 16 or i % 2 == 0:
            parts.append(f'<text class="label" x="{LEFT + (i + 0.5) * slot:.1f}" y="{HEIGHT - BOTTOM + 14}">'
                         f'{escape(str(label)[-short:])}</text>')
    for j, (name, _) in enumerate(series):
        x = LEFT + j * 170
        parts.append(f'<rect x="{x}" y="{HEIGHT - 16}" width="10" height="10" '
                     f'fill="{COLOURS[j % len(COLOURS)]}"/><text class="legend" x="{x + 14}" '
                     f'y="{HEIGHT - 7}">{escape(name)}</text>')
    parts.append("</svg>")
    return Markup("".join(parts))


def _describe(labels: Sequence[str], series: Sequence[tuple[str, Sequence[float]]]) -> str:
    return "; ".join(f"{name}: " + ", ".join(f"{lab} {_num(v)}"
                                             for lab, v in zip(labels, values, strict=False))
                     for name, values in series)


def _num(v: float) -> str:
    return f"{v:.0f}" if float(v).is_integer() else f"{v:.1f}"


def _id(title: str) -> str:
    return "c-" + "".join(ch if ch.isalnum() else "-" for ch in title.lower())[:40]
