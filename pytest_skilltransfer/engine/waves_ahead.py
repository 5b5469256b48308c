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
    the look go on with these per-arm scores of this wave; `start(skills)`: send the next wave of each arm's skill.
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
        self._trying = threading.Lock()  # one try at a time; a score that comes meanwhile asks for another
        self._again = False
        self.started = False
        self.place = Place()  # the furthest answer judged so far, on the path clock

    def bind(self, arm: str, skill: str) -> None:
        """`arm`'s skill is known now (its optimization ended)."""
        with self._lock:
            self._skills[arm] = skill
        self._try()

    def scored(self, skill: str, task_id: str, hard: float, place: Place) -> None:
        """One sample of `task_id` under `skill` was judged `hard`, its answer at `place` on the path clock."""
        with self._lock:
            self._scores.setdefault((skill, task_id), []).append(hard)
            self.place = Place(max(self.place.calls, place.calls), max(self.place.rounds, place.rounds))
        self._try()

    def _try(self) -> None:
        if not self._trying.acquire(blocking=False):
            self._again = True
            return
        ready: dict[str, str] | None = None
        try:
            while True:
                self._again = False
                with self._lock:
                    if self.started:
                        return
                    skills = dict(self._skills)
                    scores = {key: list(values) for key, values in self._scores.items()}
                outcomes = completions(self._tasks, self._samples, skills, scores)
                if outcomes is not None and all(self._continues(outcome) for outcome in outcomes):
                    with self._lock:
                        self.started = True
                    ready = {arm: skill for arm, skill in skills.items() if skill is not None}
                    break
                if not self._again:
                    break
        finally:
            self._trying.release()
        if ready is not None:
            self._start(ready)


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
