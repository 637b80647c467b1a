"""Bar charts as SVG, drawn on the server: one bar per period, labelled, with the axis maximum written out."""

from __future__ import annotations

from html import escape

WIDTH = 860
HEIGHT = 240
MARGIN_LEFT = 70
MARGIN_BOTTOM = 46
MARGIN_TOP = 16


def bar_chart(labels: list[str], values: list[int], *, title: str, unit: str) -> str:
    """An SVG with one bar per value (negative values drawn below the axis in red), the axis at zero."""
    if not values:
        return f'<p class="muted">Nothing to chart: {escape(title)}.</p>'
    top = max(max(values), 0) or 1
    bottom = min(min(values), 0)
    span = top - bottom or 1
    plot_height = HEIGHT - MARGIN_TOP - MARGIN_BOTTOM
    zero_y = MARGIN_TOP + plot_height * top / span
    slot = (WIDTH - MARGIN_LEFT - 10) / len(values)
    bar_width = max(2.0, min(48.0, slot * 0.7))
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" '
             f'height="{HEIGHT}" role="img" aria-label="{escape(title)}">',
             f"<title>{escape(title)}</title>",
             f'<line x1="{MARGIN_LEFT}" y1="{zero_y:.1f}" x2="{WIDTH - 10}" y2="{zero_y:.1f}" stroke="#98a2b3"/>',
             f'<text x="{MARGIN_LEFT - 6}" y="{MARGIN_TOP + 10}" text-anchor="end" font-size="11" '
             f'fill="#667085">{top:,}</text>',
             f'<text x="{MARGIN_LEFT - 6}" y="{zero_y + 4:.1f}" text-anchor="end" font-size="11" '
             'fill="#667085">0</text>',
             f'<text x="8" y="{MARGIN_TOP + plot_height / 2:.1f}" font-size="11" fill="#667085" '
             f'transform="rotate(-90 8 {MARGIN_TOP + plot_height / 2:.1f})" text-anchor="middle" '
             f'dominant-baseline="hanging">{escape(unit)}</text>']
    every = max(1, round(len(values) / 12))  # at most about a dozen labels under the bars
    for index, (label, value) in enumerate(zip(labels, values, strict=True)):
        x = MARGIN_LEFT + slot * index + (slot - bar_width) / 2
        height = plot_height * abs(value) / span
        y = zero_y - height if value >= 0 else zero_y
        colour = "#2f6fde" if value >= 0 else "#d92d20"
        parts.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{bar_width:.1f}" height="{max(height, 0.5):.1f}" '
                     f'fill="{colour}"><title>{escape(label)}: {value:,} {escape(unit)}</title></rect>')
        if index % every == 0:
            parts.append(f'<text x="{x + bar_width / 2:.1f}" y="{HEIGHT - MARGIN_BOTTOM + 16}" font-size="11" '
                         f'text-anchor="middle" fill="#344054">{escape(label)}</text>')
    parts.append("</svg>")
    return "".join(parts)
