"""A horizontal bar chart as an SVG file: the benchmark's plot without a plotting library in the engine."""

from __future__ import annotations

from html import escape
from pathlib import Path

BAR_HEIGHT, GAP, LABEL_WIDTH, CHART_WIDTH, MARGIN = 22, 8, 230, 420, 16
COLOURS = ("#4C78A8", "#F58518", "#54A24B", "#B279A2", "#E45756", "#72B7B2", "#9D755D", "#BAB0AC")


def bar_chart(title: str, groups: dict[str, dict[str, float]], reference: float | None, path: Path, unit: str = "x") -> Path:
    """One block of bars per group (e.g. a prompt category), one bar per series (e.g. a mode).

    Args:
        title: the chart's heading.
        groups: {group: {series: value}}.
        reference: draw a dashed line at this value (1.0 for "as fast as standard"), or None.
        path: where to write the SVG.
        unit: appended to each value label.
    """
    series = list(dict.fromkeys(name for values in groups.values() for name in values))
    peak = max([v for values in groups.values() for v in values.values()] + [reference or 0.0]) or 1.0
    scale = CHART_WIDTH / (peak * 1.15)
    rows, y = [], 40
    for group, values in groups.items():
        rows.append(f'<text x="{MARGIN}" y="{y + 12}" font-weight="bold">{escape(group)}</text>')
        y += 20
        for name, value in values.items():
            colour = COLOURS[series.index(name) % len(COLOURS)]
            width = max(value * scale, 1)
            rows.append(f'<text x="{LABEL_WIDTH - 8}" y="{y + 15}" text-anchor="end">{escape(name)}</text>')
            rows.append(f'<rect x="{LABEL_WIDTH}" y="{y}" width="{width:.1f}" height="{BAR_HEIGHT}" fill="{colour}"/>')
            rows.append(f'<text x="{LABEL_WIDTH + width + 6:.1f}" y="{y + 15}">{value:.2f}{unit}</text>')
            y += BAR_HEIGHT + GAP
        y += GAP
    if reference is not None:
        x = LABEL_WIDTH + reference * scale
        rows.append(f'<line x1="{x:.1f}" y1="30" x2="{x:.1f}" y2="{y}" stroke="#333" stroke-dasharray="4 3"/>')
    width = LABEL_WIDTH + CHART_WIDTH + 2 * MARGIN + 40
    svg = (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{y + MARGIN}" '
        f'font-family="Helvetica, Arial, sans-serif" font-size="13">'
        f'<rect width="100%" height="100%" fill="white"/>'
        f'<text x="{MARGIN}" y="22" font-size="15" font-weight="bold">{escape(title)}</text>'
        + "".join(rows)
        + "</svg>"
    )
    path.write_text(svg, encoding="utf-8")
    return path
