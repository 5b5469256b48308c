"""Where a user's recording spends its wall, item by item (a benchmark, not a test).

    .venv/bin/python benchmarks/recording_timeline.py --cap 64 [--warm] [--answers realistic]

Records the user-recording workload (`user_recording.py`: 2 seeds x 2 pairs, `pytest -n 0` in a process
of its own against the loopback server, 300 ms) once with `timeline_probe`, then splits each item's wall:

- the calls in flight: the union of the intervals in which some call is in the transport (sent, not yet
  received), set against the item's floor (the critical path x latency, or the busiest model's share);
- no call in flight: before the first call is sent, between calls (the gaps between dependent steps:
  engine work between looks, a fan-out's start, a chain's start), after the last answer (the rest of
  the transfer), then the call phase (gates, snapshot) and the teardown (a seed's cassette saved);
- per call: the time from `complete` to the transport's send (SDK request building, the limiter, the
  client) and from the receipt to `complete`'s end (reading the reply), and the transport's own time
  beyond the latency (the response read under the GIL);
- the CPU of the looks' statistics (`sequential.judge_look`, `gates_look`), in the items and before them;
- per fan-out: the spread of its sends (first to last) and its answers' receipt (first to last);
- the dependent steps in whole rounds of the cap (`_steps_bound`): what the calls in flight come to when each
  step waits for the one before it, beside the floor, which lets the calls of successive steps share rounds.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import user_recording as ur  # noqa: E402


def _union(intervals: list[tuple[float, float]]) -> list[tuple[float, float]]:
    merged: list[tuple[float, float]] = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def _steps_bound(calls: list[Any], cap: int, latency: float) -> float:
    """The item's dependent steps in whole rounds of the cap: the calls grouped by their place on the path clock
    when sent (a step: the calls that wait for the same answers), each step lasting ceil(its calls to its busiest
    model / cap) latencies: what the calls take when each step waits for every answer of the one before (a look
    waits for every arm's wave); where a step's calls to a model are not a multiple of the cap, this exceeds the
    floor. A wave sent ahead of its look (`engine/waves_ahead`) shares the last round of the wave before it, so a
    recording can go below it."""
    by_step: dict[int, Counter] = {}
    for c in calls:
        by_step.setdefault(c[7], Counter())[c[5]] += 1
    return sum(max(-(-n // cap) for n in models.values()) for models in by_step.values()) * latency


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms"


def report(job: ur.Job, timeline: dict[str, Any], latency: float, cap: int) -> list[str]:
    lines = []
    calls = [c for c in timeline["calls"] if c[1] > 0]
    fans = {f[7]: f for f in timeline["fans"]}
    totals: Counter = Counter()
    for mark, item in zip(timeline["items"], job.items):
        mine = [c for c in calls if mark["start"] <= c[0] <= mark["end"]]
        flight = _union([(c[1], c[2]) for c in mine])
        in_flight = sum(end - start for start, end in flight)
        transfer_end = mark.get("setup_end", mark["end"])
        before = flight[0][0] - mark["start"] if flight else 0.0
        after = transfer_end - flight[-1][1] if flight else 0.0
        gaps = [(flight[i + 1][0] - flight[i][1], flight[i][1]) for i in range(len(flight) - 1)]
        call_phase = mark.get("call_end", transfer_end) - mark.get("call_start", transfer_end)
        teardown = mark["end"] - mark.get("call_end", transfer_end)
        pre = [c[1] - c[0] for c in mine]
        post = [c[3] - c[2] for c in mine]
        transport = [c[2] - c[1] - latency for c in mine]
        cpu = mark["cpu_end"] - mark["cpu_start"]
        wall = mark["end"] - mark["start"]
        steps = _steps_bound(mine, cap, latency)
        lines.append(f"{mark['nodeid']}: wall {wall:.2f} s, floor {item.floor:.2f} s ({wall / item.floor:.2f}x; "
                     f"path {item.path / latency:.0f} calls), {len(mine)} calls, steps in whole rounds {steps:.2f} s, "
                     f"process CPU {cpu:.2f} s, full collections {_ms(mark.get('gc_full', 0.0))}")
        lines.append(f"  calls in flight {in_flight:.2f} s ({len(flight)} stretches; {in_flight - item.floor:+.2f} s "
                     f"against the floor)")
        lines.append(f"  no call in flight: before the first send {_ms(before)}, between calls "
                     f"{_ms(sum(g for g, _ in gaps))} ({len(gaps)} gaps), after the last answer {_ms(after)}; "
                     f"call phase {_ms(call_phase)}, teardown {_ms(teardown)}")
        if mine:
            lines.append(f"  per call: complete -> send median {_ms(statistics.median(pre))} (max {_ms(max(pre))}), "
                         f"transport beyond latency median {_ms(statistics.median(transport))} "
                         f"(max {_ms(max(transport))}), receipt -> end median {_ms(statistics.median(post))} "
                         f"(max {_ms(max(post))})")
        by_fan: dict[int, list[Any]] = {}
        for c in mine:
            by_fan.setdefault(c[8], []).append(c)
        spreads = []
        for fan_id, members in sorted(by_fan.items(), key=lambda kv: min(c[1] for c in kv[1])):
            fan = fans.get(fan_id)
            sends = sorted(c[1] for c in members)
            receipts = sorted(c[2] for c in members)
            ends = sorted(c[3] for c in members)
            start = fan[0] if fan else sends[0]
            end = fan[1] if fan else ends[-1]
            spreads.append((sends[-1] - sends[0], receipts[-1] - receipts[0]))
            lines.append(f"    fan {fan[2] if fan else '?'} x{len(members)} (path {fan[6] if fan else '?'}) "
                         f"@{start - mark['start']:6.2f} s: start -> first send {_ms(sends[0] - start)}, sends "
                         f"spread {_ms(sends[-1] - sends[0])}, receipts spread {_ms(receipts[-1] - receipts[0])}, "
                         f"last end -> fan end {_ms(end - ends[-1])}, fan {end - start:.2f} s")
        for gap, at in sorted(gaps, reverse=True)[:6]:
            ended = [c for c in mine if abs(c[2] - at) < 1e-6]
            lines.append(f"    gap {_ms(gap)} at {at - mark['start']:.2f} s after a {ended[0][6] if ended else '?'} call")
        totals.update({"wall": wall, "floor": item.floor, "steps": steps, "in flight": in_flight, "before": before,
                       "between": sum(g for g, _ in gaps), "after": after, "call phase": call_phase,
                       "teardown": teardown, "cpu": cpu, "calls": len(mine), "gc": mark.get("gc_full", 0.0)})
    lines.append(f"all items: wall {totals['wall']:.2f} s vs floor {totals['floor']:.2f} s "
                 f"({totals['wall'] / totals['floor']:.2f}x), steps in whole rounds {totals['steps']:.2f} s; in flight "
                 f"{totals['in flight']:.2f} s; no call in flight: "
                 f"before {totals['before']:.2f} s, between {totals['between']:.2f} s, after {totals['after']:.2f} s, "
                 f"call phases {totals['call phase']:.2f} s, teardowns {totals['teardown']:.2f} s; process CPU "
                 f"{totals['cpu']:.2f} s ({totals['cpu'] * 1000 / max(totals['calls'], 1):.1f} ms per call; full collections "
                 f"{totals['gc']:.2f} s)")
    first = timeline["items"][0]["start"] if timeline["items"] else 0.0
    looks = timeline.get("looks", [])
    lines.append(f"the looks' statistics (judge_look, gates_look): {sum(cpu for at, cpu in looks if at >= first):.2f} s of "
                 f"thread CPU in the items, {sum(cpu for at, cpu in looks if at < first):.2f} s before them")
    for start, end, what in timeline["imports"]:
        lines.append(f"SDK import {what}: {end - start:.2f} s")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cap", type=int, default=64)
    parser.add_argument("--warm", action="store_true", help="the SDKs imported at start-up (the probe's warm-up)")
    parser.add_argument("--answers", default="realistic", choices=("easy", "realistic"))
    parser.add_argument("--latency", type=float, default=ur.LATENCY_S)
    parser.add_argument("--package", type=Path, help="a folder holding another pytest_skilltransfer, put first")
    parser.add_argument("--keep", type=Path, help="write the timeline JSON here too")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="skilltransfer-timeline-") as tmp, \
            ur.ProviderProcess(args.latency, args.answers) as provider:
        work = Path(tmp)
        job = ur.run_job(work / "job", provider, args.cap, args.warm, args.latency, package=args.package,
                         timeline=work / "timeline.json")
        timeline = json.loads((work / "timeline.json").read_text())
        if args.keep:
            args.keep.write_text(json.dumps(timeline))
    print("\n".join(report(job, timeline, args.latency, args.cap)))


if __name__ == "__main__":
    main()
