"""The next held-out wave, sent before the look ahead of it has every answer, when no answer still due can make that
look stop.

Under the group-sequential design each look waits for every arm's wave and the next wave waits for the look. When
a wave holds more calls than the target takes at once (18 calls at a cap of 8 take three rounds where the cap's share
is 2.25), the wave's last round leaves slots free that the next wave could use. A `WaveWatch` follows a wave's
answers as they are judged; once at most `OPEN_LIMIT` (skill, task) scores are still due and every value they can
take leaves the look going on, it starts the next wave. That wave is sent whatever those answers are, so no call is
made that the look's stop would have spared; the look itself still waits for, and decides on, every answer. Results,
cassettes and bills are those of a run that waits. (When the wave ahead of it fails, a wave already started runs to
its end: its answers are journaled like any other, and a rerun replays them.)
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Sequence

from .phases import Place

OPEN_LIMIT = 4  # (skill, task) scores still due when the look is tried ahead of them (12 calls at a cap of 8 leave 4)
OUTCOME_LIMIT = 64  # the most completions of those scores tried (each a look)

Scores = dict[str, list[float]]  # arm -> its tasks' hard scores in the wave's task order


class WaveWatch:
    """One wave's answers as they are judged, and the start of the next wave once its look is sure to go on.

    `skills`: each arm's skill (None until known: an arm whose optimization still runs); `continues(scores)`: does
    the look go on with these per-arm scores of this wave; `start(skills)`: send the next wave of each arm's skill
    (it registers that wave and returns at once). The looks are tried in a thread of the watch's own, so no call of
    the wave waits for them; `close` (the wave is done) ends the watch, after which nothing starts.
    """

    def __init__(self, model_id: str, tasks: Sequence[str], samples: int, skills: dict[str, str | None],
                 continues: Callable[[Scores], bool], start: Callable[[dict[str, str]], None]) -> None:
        self.model_id = model_id
        self._tasks = list(tasks)
        self._samples = samples
        self._skills = dict(skills)
        self._scores: dict[tuple[str, str], list[float]] = {}  # (skill, task id) -> its samples' hard scores so far
        self._continues = continues
        self._start = start
        self._lock = threading.Lock()
        self._news = threading.Event()  # a score or a skill came since the last try
        self._trier: threading.Thread | None = None
        self.closed = False
        self.started = False
        self.place = Place()  # the furthest answer judged so far, on the path clock

    def bind(self, arm: str, skill: str) -> None:
        """`arm`'s skill is known now (its optimization ended)."""
        with self._lock:
            self._skills[arm] = skill
        self._wake()

    def scored(self, skill: str, task_id: str, hard: float, place: Place) -> None:
        """One sample of `task_id` under `skill` was judged `hard`, its answer at `place` on the path clock."""
        with self._lock:
            self._scores.setdefault((skill, task_id), []).append(hard)
            self.place = Place(max(self.place.calls, place.calls), max(self.place.rounds, place.rounds))
        self._wake()

    def close(self) -> bool:
        """The wave is done: try no more; whether the next wave was started."""
        with self._lock:
            self.closed = True
            started = self.started
        self._news.set()
        return started

    def _wake(self) -> None:
        with self._lock:
            if self.closed or self.started:
                return
            self._news.set()
            if self._trier is None:
                self._trier = threading.Thread(target=self._tries, name="skilltransfer-wave-watch", daemon=True)
                self._trier.start()

    def _tries(self) -> None:
        while True:
            self._news.wait()
            self._news.clear()
            with self._lock:
                if self.closed or self.started:
                    return
                skills = dict(self._skills)
                scores = {key: list(values) for key, values in self._scores.items()}
            outcomes = completions(self._tasks, self._samples, skills, scores)
            if outcomes is None or not all(not self.closed and self._continues(o) for o in outcomes):
                continue
            with self._lock:  # started here or not at all: `close` sees either
                if self.closed:
                    return
                self.started = True
                self._start({arm: skill for arm, skill in skills.items() if skill is not None})
                return


def completions(tasks: Sequence[str], samples: int, skills: dict[str, str | None],
                scores: dict[tuple[str, str], list[float]]) -> list[Scores] | None:
    """Every per-arm score table the wave can still end with, or None when it cannot be tried ahead: an arm's skill
    is unknown, nothing is due (the look runs as it always does), or more is due than `OPEN_LIMIT` and
    `OUTCOME_LIMIT` allow. A task's score is the mean of its samples' hard scores (each 0 or 1); arms of one skill
    share one evaluation, so they share its scores."""
    if any(skill is None for skill in skills.values()):
        return None
    if any(value not in (0.0, 1.0) for values in scores.values() for value in values):
        return None  # a judge of another scale: its completions are not these
    due: list[tuple[str, str]] = []
    choices: list[list[float]] = []
    for skill in dict.fromkeys(skills.values()):
        for task in tasks:
            known = scores.get((skill, task), [])  # type: ignore[arg-type]
            missing = samples - len(known)
            if missing > 0:
                due.append((skill, task))  # type: ignore[arg-type]
                choices.append([(sum(known) + extra) / samples for extra in range(missing + 1)])
    outcomes = 1
    for values in choices:
        outcomes *= len(values)
    if not due or len(due) > OPEN_LIMIT or outcomes > OUTCOME_LIMIT:
        return None
    known = {key: sum(values) / samples for key, values in scores.items() if len(values) == samples}
    tables = []
    for values in itertools.product(*choices):
        filled = {**known, **dict(zip(due, values))}
        tables.append({arm: [filled[(skill, task)] for task in tasks]  # type: ignore[index]
                       for arm, skill in skills.items()})
    return tables
