"""How many xdist workers `-n auto` starts for a skill-transfer run: the cores other work leaves idle.

A worker pays pytest's start-up and a whole collection before its first item (about 0.8 s of CPU
for this project's main job, which itself takes about 4.5 s in one process). On idle cores that
is paid in parallel and the items then share the cores; on cores other processes keep busy, a
second process only adds its start-up to the queue, and `-n 2` takes longer than `-n 0` (1.3-1.6x
measured here under a load average of 8 on 2 cores). So `-n auto` counts the cores this process
may run on (its CPU affinity) less the 1-minute load average, rounded; with fewer than 2 left it
starts no workers and the run stays in this process. `PYTEST_XDIST_AUTO_NUM_WORKERS` still decides
when set, as xdist documents; `-n N` is never changed. Either way the results are the same.
"""

from __future__ import annotations

import os


def usable_cores() -> int:
    """The cores this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1


def idle_workers(cores: int | None = None, load: float | None = None) -> int:
    """Workers for `-n auto`: the idle cores (`cores` less the `load` average, rounded), 0 below 2."""
    cores = usable_cores() if cores is None else cores
    if load is None:
        try:
            load = os.getloadavg()[0]
        except OSError:  # not available here: count every core as idle
            load = 0.0
    idle = min(cores, round(cores - load))
    return idle if idle >= 2 else 0
