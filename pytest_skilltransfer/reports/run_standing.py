"""A run's standing at one moment, and when it ends: one set of figures for the progress line and the page.

The live progress (`plugin.live_progress`) counts; `estimate` turns its counts into a `Standing`: the round
trips left on the critical path and the run's ETA from the turnaround observed so far, in both lanes, and how
long the run has been waiting on rate limits. The progress line (`when_text`) and the page of a running or
finished run (`html_section`) only write those figures down; neither computes one of its own.

The turnaround of one round trip: in the batch lane the median turnaround of the batches that came back (a
step of the protocol is one batch; the batch in flight is counted as the part of its round trip it has
waited), else the elapsed time per round trip covered. Before anything came back there is no ETA: the
standing says how long the first batch has waited instead.
"""

from __future__ import annotations

import html
import time
from dataclasses import dataclass
from typing import Any


WAITING_STYLE = "background:#fff8c5;border-left:4px solid #9a6700;padding:4px 10px"


@dataclass(frozen=True)
class Standing:
    """What a run has done and what is left, as of `updated_at` (wall clock, seconds since the epoch)."""

    state: str  # "running", "finished" or "stopped"
    started_at: float
    updated_at: float
    elapsed_s: float
    items_done: int
    items: int
    calls: int = 0  # answers recorded
    planned_calls: int = 0  # the plan's upper bound on them (0: no plan)
    usd: float = 0.0  # paid (the budget's settled charge under --max-cost)
    unpriced: int = 0
    budget_usd: float | None = None
    reserved_usd: float = 0.0  # reserved for calls in flight (never spend)
    batch_lane: bool = False
    path_total: int = 0  # round trips on the critical path, as planned (0: no plan)
    path_done: int = 0  # round trips covered
    path_longest: int = 0  # round trips the process furthest along its critical path has covered
    each_s: float | None = None  # the observed turnaround of one round trip
    per_batch: bool = False  # `each_s` is the batches' median turnaround
    eta_s: float | None = None  # time left
    batch_waited_s: float | None = None  # no batch back yet: the oldest in flight has waited this long
    throttled_s: float | None = None  # answered only with rate limits for this long
    retry_in_s: float | None = None  # the provider's retry-after still to run
    throttled_status: int = 429  # what it answers: 429 (rate limited), 529 (overloaded), 503 (unavailable)

    @property
    def running(self) -> bool:
        return self.state == "running"

    @property
    def left(self) -> int:
        """Round trips left on the critical path (`round_trips_left`)."""
        return round_trips_left(self.path_total, self.path_done, self.items_done, self.items)


def round_trips_left(path_total: int, path_done: int, items_done: int, items: int) -> int:
    """Round trips left on the critical path: one at least while items run; 0 once all are done or without a plan."""
    if not path_total or items_done >= items:
        return 0
    return max(1, path_total - path_done)


def estimate(counts: Any, elapsed_s: float, now: float, items_done: int, state: str = "running",
             batch_lane: bool = False, paid: tuple[float, float | None, float] | None = None) -> Standing:
    """The standing of a run from its counts (`live_progress.Counts`) at wall time `now`, `elapsed_s` after it
    started; `paid`: (dollars paid, the budget or None, dollars reserved), else the counts' priced answers."""
    usd, budget, reserved = paid if paid is not None else (counts.usd, None, 0.0)
    left = round_trips_left(counts.path_total, counts.path_done, items_done, counts.items)
    turnarounds = sorted(counts.batch_turnarounds)
    waited = max(0.0, now - counts.batch_waiting_since) if counts.batch_waiting_since else None
    each: float | None = None
    eta: float | None = None
    first_waited: float | None = None
    if turnarounds:  # the batch lane: what a batch took, median; the one in flight is that far along
        each = turnarounds[len(turnarounds) // 2]
        eta = left * each - min(waited or 0.0, each)
    elif waited is not None:
        first_waited = waited
    elif counts.path_done:
        each = elapsed_s / counts.path_done
        eta = left * each
    throttled = max(0.0, now - counts.throttled_since) if counts.throttled_since else None
    retry_in = max(0.0, counts.throttled_until - now) if throttled is not None and counts.throttled_until else None
    return Standing(state, now - elapsed_s, now, elapsed_s, items_done, counts.items, counts.calls,
                    counts.planned_calls, usd, counts.unpriced, budget, reserved, batch_lane, counts.path_total,
                    counts.path_done, max(counts.path_longest, counts.path_done), each, bool(turnarounds),
                    None if eta is None else max(0.0, eta), first_waited, throttled, retry_in,
                    counts.throttled_status or 429)


def duration(seconds: float) -> str:
    """`4m02s`, `1h05m`, `12s`: a duration as the progress line writes it."""
    seconds = int(seconds)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


def _each(standing: Standing) -> str:
    assert standing.each_s is not None
    text = duration(standing.each_s) if standing.each_s >= 1 else "<1s"
    return f"batches take ~{text}" if standing.per_batch else f"~{text} each"


def waiting_text(standing: Standing) -> str:
    """`waiting on rate limits (HTTP 429) for T, next try in ~R` (`HTTP 529 overloaded`, `HTTP 503 unavailable`), or ""
    when the run is not waiting on them."""
    if standing.throttled_s is None:
        return ""
    retry = standing.retry_in_s
    status = standing.throttled_status
    what = "" if status == 429 else {529: " overloaded", 503: " unavailable"}.get(status, "")
    return (f"waiting on rate limits (HTTP {status}{what}) for {duration(standing.throttled_s)}"
            + (f", next try in ~{duration(retry)}" if retry is not None and retry >= 1 else ""))


def when_text(standing: Standing) -> str:
    """The progress line's ` · waiting on rate limits ... · N round trip(s) left, ends in ~T (~E each)` (nothing
    once every item is done, or without a plan)."""
    parts = [waiting_text(standing)] if standing.throttled_s is not None else []
    left = standing.left
    if left:
        if standing.eta_s is not None:
            parts.append(f"{left:,} round trip(s) left, ends in ~{duration(standing.eta_s)} ({_each(standing)})")
        elif standing.batch_waited_s is not None:
            parts.append(f"{left:,} round trip(s) left, no batch back yet (waited {duration(standing.batch_waited_s)})")
        else:
            parts.append(f"{left:,} round trip(s) on the critical path")
    return "".join(f" · {part}" for part in parts)


def clock(wall: float) -> str:
    """A wall time as `2026-12-06 10:52:03 UTC`."""
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(wall))


def html_section(standing: Standing, refresh_s: float | None = None) -> str:
    """The page's section on the run itself: while it runs, the items done and left, the round trips left, the
    ETA, a rate-limit wait, when it started and when the page was written; once it ended, the wall time and the
    round trips it took."""
    esc = html.escape
    s = standing
    started, updated = clock(s.started_at), clock(s.updated_at)
    calls = f"{s.calls:,} call(s) recorded" + (f" (plan ≤ {s.planned_calls:,})" if s.planned_calls else "")
    dollars = f"${s.usd:,.4f} paid" + (f" of ${s.budget_usd:,.2f} budget" if s.budget_usd is not None else "") + (
        f" (${s.reserved_usd:,.4f} reserved for calls in flight)" if s.reserved_usd else "") + (
        f" + {s.unpriced:,} unpriced answer(s)" if s.unpriced else "")
    lane = " · batch lane" if s.batch_lane else ""
    if not s.running:
        ended = "Finished" if s.state == "finished" else "Stopped"
        path = (f"{s.path_longest:,} round trip(s) on the critical path"
                + (f" (planned {s.path_total:,})" if s.path_total else ""))
        return (f'<section class="standing ended" id="run"><h2>Run</h2><p><b>{ended}</b> at {esc(updated)} after '
                f'<b>{esc(duration(s.elapsed_s))}</b> (wall time), started at {esc(started)}; {esc(path)}; '
                f'{s.items_done} of {s.items} item(s) done; {esc(calls)}; {esc(dollars)}{esc(lane)}</p></section>')
    rows = [f"<b>{s.items_done} of {s.items}</b> item(s) done, <b>{max(0, s.items - s.items_done)}</b> left"]
    left = s.left
    if left:
        rows.append(f"<b>{left:,}</b> round trip(s) left on the critical path"
                    + (f" (of {s.path_total:,}; {s.path_done:,} covered)" if s.path_total else ""))
    if s.eta_s is not None and left:
        rows.append(f"ends in <b>~{esc(duration(s.eta_s))}</b> (about {esc(clock(s.updated_at + s.eta_s))}), at the "
                    f"turnaround observed so far: {esc(_each(s))}")
    elif s.batch_waited_s is not None and left:
        rows.append(f"no batch has come back yet (the first has waited {esc(duration(s.batch_waited_s))}): the ETA "
                    "comes with the first turnaround")
    elif left:
        rows.append("no round trip has come back yet: the ETA comes with the first")
    rows.append(f"{esc(calls)} · {esc(dollars)}{esc(lane)}")
    waiting = waiting_text(s)
    notice = (f'<p class="waiting" style="{WAITING_STYLE}"><b>{esc(waiting[0].upper() + waiting[1:])}</b>: no answer '
              'comes back until the provider lets calls through again</p>' if waiting else "")
    reload = (f"; this page reloads every {refresh_s:g} s while the run goes" if refresh_s else "")
    return (f'<section class="standing running" id="run"><h2>Running</h2>{notice}<ul>'
            + "".join(f"<li>{row}</li>" for row in rows)
            + f'</ul><p class="muted">started at {esc(started)}, {esc(duration(s.elapsed_s))} ago; updated at '
              f'{esc(updated)}{esc(reload)}</p></section>')
