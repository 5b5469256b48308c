"""A seed x pair's gain across the commits that changed its snapshot: parsed from the committed snapshot
texts (`plugin.snapshots.render`: the `# seed: source -> target` heading, the `- gain:` and `- outcome:`
lines) and shown as a table and a small chart per seed, as text and as HTML. Pure: the git reading is
`commands.history`'s."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterable

from ..guards.terminal import safe

HEADING = re.compile(r"^# (?P<seed>.+?): (?P<source>.+?) -> (?P<target>.+)$", re.M)
GAIN = re.compile(r"^- gain: (?P<mean>[+-]?\d+\.\d+) \[(?P<low>[+-]?\d+\.\d+), (?P<high>[+-]?\d+\.\d+)\]", re.M)
OUTCOME = re.compile(r"^- outcome: (?P<outcome>.+)$", re.M)
PLOT_WIDTH = 21  # cells for gains -1 .. +1, 0.1 each


@dataclass(frozen=True)
class Point:
    """One committed snapshot of a seed x pair: the commit, its date and subject, and the gain it recorded."""

    seed: str
    source: str
    target: str
    path: str
    commit: str
    date: str
    subject: str
    mean: float
    low: float
    high: float
    outcome: str

    @property
    def key(self) -> tuple[str, str, str, str]:
        return self.seed, self.source, self.target, self.path

    def gain_text(self) -> str:
        return f"{self.mean:+.2f} [{self.low:+.2f}, {self.high:+.2f}]"


def parse(text: str, path: str, commit: str, date: str, subject: str) -> Point | None:
    """The point a committed snapshot records; None when it is not a transfer snapshot with a gain line."""
    heading, gain, outcome = HEADING.search(text), GAIN.search(text), OUTCOME.search(text)
    if heading is None or gain is None:
        return None
    mean, low, high = float(gain["mean"]), float(gain["low"]), float(gain["high"])
    word = outcome["outcome"].strip() if outcome else (  # a snapshot older than the outcome line: its interval's
        "transfers" if low > 0 else "hurts" if high < 0 else "no effect shown")
    return Point(heading["seed"], heading["source"], heading["target"], path, commit, date, subject,
                 mean, low, high, word)


def series(points: Iterable[Point]) -> dict[tuple[str, str, str, str], list[Point]]:
    """Points per seed x pair (and snapshot file), oldest commit first (`points` come newest first, as git
    log lists them)."""
    grouped: dict[tuple[str, str, str, str], list[Point]] = {}
    for point in points:
        grouped.setdefault(point.key, []).append(point)
    return {key: list(reversed(grouped[key])) for key in sorted(grouped)}


def _cell(value: float) -> int:
    return round((max(-1.0, min(1.0, value)) + 1) / 2 * (PLOT_WIDTH - 1))


def bar(point: Point) -> str:
    """The gain (●) and its interval (─) on -1 .. +1 with zero (│), as the Markdown chart draws it."""
    cells = [" "] * PLOT_WIDTH
    for i in range(_cell(point.low), _cell(point.high) + 1):
        cells[i] = "─"
    zero = _cell(0.0)
    cells[zero] = "┼" if cells[zero] == "─" else "│"
    cells[_cell(point.mean)] = "●"
    return "".join(cells)


def moved(previous: Point | None, point: Point) -> str:
    """`appeared`, `broke`, `changed` or '' against the commit before (by outcome word)."""
    if previous is None or previous.outcome == point.outcome:
        return "" if previous is None or abs(previous.mean - point.mean) < 0.005 else "gain moved"
    if point.outcome == "transfers":
        return "transfer appeared"
    if previous.outcome == "transfers":
        return "transfer broke"
    return f"{previous.outcome} -> {point.outcome}"


def text_lines(history: dict[tuple[str, str, str, str], list[Point]]) -> list[str]:
    """Per seed: each pair's commits, oldest first, with the gain, its interval drawn, and what moved."""
    if not history:
        return ["no committed snapshot found (a snapshot is committed with its seed: seeds/*/__snapshots__/*.md)"]
    lines: list[str] = []
    seed = None
    for (name, source, target, path), points in history.items():
        if name != seed:
            lines += ([""] if lines else []) + [f"{name}"]
            seed = name
        lines.append(f"  {source} -> {target} ({len(points)} commit(s), {path})")
        previous = None
        for point in points:
            note = moved(previous, point)
            lines.append(f"    {point.date} {point.commit[:7]}  {point.gain_text():<21}  {bar(point)}  "
                         f"{point.outcome:<15} {note}".rstrip())
            previous = point
    return [safe(line) for line in lines]


def table_rows(history: dict[tuple[str, str, str, str], list[Point]]) -> list[dict[str, Any]]:
    """The table behind the charts: one row per seed x pair x commit (the JSON `history --json` prints)."""
    return [{"seed": p.seed, "source": p.source, "target": p.target, "snapshot": p.path, "commit": p.commit,
             "date": p.date, "subject": p.subject, "gain": p.mean, "ci_low": p.low, "ci_high": p.high,
             "outcome": p.outcome} for points in history.values() for p in points]


def html_section(history: dict[tuple[str, str, str, str], list[Point]]) -> str:
    """One small chart per seed (a row of points per pair: each commit's gain and interval, oldest left) and
    the table of every commit."""
    from .html_parts import esc

    if not history:
        return "<p>No committed snapshot found.</p>"
    seeds: dict[str, list[tuple[tuple[str, str, str, str], list[Point]]]] = {}
    for key, points in history.items():
        seeds.setdefault(key[0], []).append((key, points))
    parts = ['<p class="muted">each seed x pair\'s gain with its 95% interval at every commit that changed its '
             "snapshot, oldest left; from git (the committed snapshots), no other store</p>"]
    for seed, rows in seeds.items():
        parts.append(f"<h3>{esc(seed)}</h3>{_seed_chart(rows)}")
    body = "".join(
        f"<tr><td>{esc(p.seed)}</td><td>{esc(p.source)} -&gt; {esc(p.target)}</td><td>{esc(p.date)}</td>"
        f"<td><code>{esc(p.commit[:7])}</code></td><td>{esc(p.subject[:90])}</td>"
        f'<td class="num">{esc(p.gain_text())}</td><td>{esc(p.outcome)}</td><td>{esc(moved(prev, p))}</td></tr>'
        for points in history.values() for prev, p in zip([None, *points[:-1]], points))
    parts.append("<details><summary>every commit (table)</summary><table><tr><th>seed</th><th>pair</th><th>date</th>"
                 "<th>commit</th><th>subject</th><th>gain [95% CI]</th><th>outcome</th><th>moved</th></tr>"
                 f"{body}</table></details>")
    return "".join(parts)


def _seed_chart(rows: list[tuple[tuple[str, str, str, str], list[Point]]]) -> str:
    """A small SVG: per pair, a panel of gain (-1 .. +1, zero marked) over the commits, oldest left."""
    from .html_parts import esc

    panel_w, panel_h, label_h, step = 260, 90, 18, 22
    width = len(rows) * (panel_w + 16)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="history" width="{width}" height="{panel_h + label_h + 4}" '
             f'viewBox="0 0 {width} {panel_h + label_h + 4}" role="img" aria-label="gain over commits">']
    for i, ((_, source, target, _path), points) in enumerate(rows):
        left = i * (panel_w + 16)

        def y(value: float) -> float:
            return label_h + 6 + (1 - (max(-1.0, min(1.0, value)) + 1) / 2) * (panel_h - 12)

        parts.append(f'<text x="{left}" y="11">{esc(source)} -&gt; {esc(target)}</text>')
        parts.append(f'<line x1="{left}" y1="{y(0):.1f}" x2="{left + panel_w}" y2="{y(0):.1f}" stroke="#57606a"/>')
        parts.append(f'<rect x="{left}" y="{label_h}" width="{panel_w}" height="{panel_h}" fill="none" stroke="#d0d7de"/>')
        parts += [f'<text x="{left + panel_w - 2}" y="{y(v) + 4:.1f}" text-anchor="end" fill="#57606a">{tick}</text>'
                  for v, tick in ((1, "+1"), (0, "0"), (-1, "-1"))]
        gap = min(step, (panel_w - 40) / max(1, len(points) - 1)) if len(points) > 1 else 0
        for n, point in enumerate(points):
            x = left + 10 + n * gap  # the +1 / 0 / -1 labels sit at the panel's right end
            color = {"transfers": "#1a7f37", "hurts": "#cf222e"}.get(point.outcome, "#9a6700")
            parts.append(f'<line x1="{x:.1f}" y1="{y(point.low):.1f}" x2="{x:.1f}" y2="{y(point.high):.1f}" '
                         f'stroke="{color}" stroke-width="3"/><circle cx="{x:.1f}" cy="{y(point.mean):.1f}" r="4" '
                         f'fill="{color}"><title>{esc(point.date)} {esc(point.commit[:7])} {esc(point.subject[:80])}: '
                         f"gain {esc(point.gain_text())}, {esc(point.outcome)}</title></circle>")
    parts.append("</svg>")
    return "".join(parts)
