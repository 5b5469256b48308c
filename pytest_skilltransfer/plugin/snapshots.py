"""syrupy snapshots of transfer items: the learned skill and its scores, as readable Markdown.

Location: inside the seed folder, one file per pair,
`seeds/<seed>/__snapshots__/transfer[<source>_to_<target>].md` (next to the item's file node), so a seed and its reviewed results
travel together (hand-written tests keep syrupy's layout, `tests/__snapshots__/<file>/<test>.md`).
Only deterministic fields are written (scores, nights, the learned skill, the digest of the held-out
calls the scores were computed from), never dollars or call counts. Control, bidi and zero-width
characters are written as visible escapes (`guards.terminal.safe`), so a reviewer reading the diff
in a terminal or a web view sees them instead of their effect.
The transferred per-task scores are written on one line (`- transferred per task: `id=score ...``),
so the regression gate compares this run with the committed one task by task (`stats.regression`).

Unused-snapshot detection: this extension reports no snapshot as unused, so `-k`, seed selection,
a different model matrix or xdist can never flag or delete one. A deleted seed takes its snapshots
with it; a snapshot of a pair that left the matrix stays until removed by hand. (Inside the seed
folder the files are also out of reach of the default extension, which treats foreign files in
`<tests>/__snapshots__` as unused.)
"""

from __future__ import annotations

import difflib
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from syrupy.data import SnapshotCollections
from syrupy.extensions.base import AbstractSyrupyExtension
from syrupy.extensions.single_file import SingleFileSnapshotExtension, WriteMode

from ..evidence.item_record import ArmRecord, ItemRecord, SequentialRecord
from ..guards.redaction import redact_text
from ..guards.terminal import safe
from ..reports.report import (
    design_effect_text,
    gain_text,
    mdg_text,
    method_text,
    night_verdict,
    outcome_text,
    p_text,
    units_text,
)

from .state import SPEC, runner_of

if TYPE_CHECKING:
    import pytest
    from syrupy.assertion import SnapshotAssertion
    from syrupy.location import PyTestLocation
    from syrupy.types import SnapshotIndex

PER_TASK_LINE = re.compile(r"^- transferred per task: `([^`]*)`$", re.M)
REFERENCE_LINE = re.compile(r"^- transferred past the stop \(the regression gate's reference, not in the verdict\): "
                            r"`([^`]*)`\n", re.M)
SETTINGS_LINE = re.compile(r"^- protocol settings: `([^`]*)`$", re.M)
SETTINGS = ("nights", "edit_budget", "limit_replay", "limit_holdout", "limit_test", "samples", "restarts", "scoring",
            "min_delta", "direct", "direct_on_demand", "gate_weight", "design")  # ProtocolConfig fields that shape a result (not `workers`)
SCORE_ROW = re.compile(r"^\| (baseline|transferred|direct) \| ([0-9.]+|-) \|", re.M)
FENCE = "````"
SKILL_HEADING = "## Learned skill\n\n" + FENCE + "markdown\n"


class TransferSnapshotExtension(SingleFileSnapshotExtension):
    """One Markdown file per item; see the module docstring for layout and unused detection."""

    file_extension = "md"
    _write_mode = WriteMode.TEXT

    def serialize(self, data: Any, **_: Any) -> str:
        return str(data)

    @classmethod
    def get_snapshot_name(cls, *, test_location: "PyTestLocation", index: "SnapshotIndex" = 0) -> str:
        """`transfer[a->b]` -> `transfer[a_to_b]` (syrupy would drop the `>`), then syrupy's cleaning; a
        transfer item's file is named by the model ids its names resolve to, so an alias shares the snapshot
        of the model it names."""
        name = AbstractSyrupyExtension.get_snapshot_name(test_location=test_location, index=index)
        item = test_location.item
        spec = item.stash.get(SPEC, None) if getattr(item, "is_transfer_item", False) else None
        if spec is not None:
            runner = runner_of(item.config)
            ids = runner.ref(spec.source).model_id, runner.ref(spec.target).model_id
            name = name.replace(f"[{spec.source}->{spec.target}]", f"[{ids[0]}->{ids[1]}]")
        return cls._sanitize_filename(name.replace("->", "_to_"))[: cls._max_stem_length()]

    @classmethod
    def dirname(cls, *, test_location: "PyTestLocation") -> str:
        if getattr(test_location.item, "is_transfer_item", False):
            return str(Path(test_location.filepath).parent / Path(str(cls.snapshot_dirname)).name)
        return super().dirname(test_location=test_location)

    @classmethod
    def matches_test_location(cls, *, test_location: "PyTestLocation", snapshot_location: str) -> bool:
        return Path(snapshot_location) == Path(cls.get_location(test_location=test_location, index=0))

    def discover_snapshots(self, *, test_location: "PyTestLocation",
                           ignore_extensions: list[str] | None = None) -> SnapshotCollections:
        """Nothing: see the module docstring on unused detection."""
        return SnapshotCollections()


def _score_row(name: str, evaluation: ArmRecord | None) -> str:
    if evaluation is None:
        return f"| {name} | - | - | - |"
    hard, soft = evaluation.hard, evaluation.soft
    return f"| {name} | {hard.mean:.3f} | [{hard.ci_low:.3f}, {hard.ci_high:.3f}] | {soft.mean:.3f} |"


def _night_lines(optimization: dict[str, Any] | None, label: str) -> list[str]:
    if optimization is None:
        return []
    lines = [f"### {label}: agent {optimization['agent']}, optimizer {optimization['optimizer']}", ""]
    for night in optimization["nights"]:
        after = "-" if night["val_after"] is None else f"{night['val_after']:.3f}"
        lines.append(f"- night {night['night']}: val {night['val_before']:.3f} -> {after}, {night_verdict(night)}"
                     + (f" ({night['note']})" if night["note"] else ""))
        lines += [f"  - {e['op']}: {' '.join(e['content'].split())[:160]}" for e in night["applied"]]
    return lines + [""]


FAMILY_LINE = re.compile(r"^- judged in: (\w+) over (\d+) item\(s\)", re.M)
DIGEST_LINE = re.compile(r"evidence digest ([0-9a-f]+)$", re.M)


def _family_line(result: ItemRecord) -> list[str]:
    """The family the outcome and gates were judged in (`evidence.run_family`): read back when the evidence is
    unchanged, so a replay keeps its verdict and words whatever else the run holds."""
    family = result.family
    if not family:
        return []
    return [f"- judged in: {family.method} over {family.size} item(s) of its run, level "
            f"{family.level * 100:.6g}% (family-wise error {family.alpha:g})"]


def design_text(record: SequentialRecord | None) -> str | None:
    """`looks at 6/12/18/24 task(s) ...; stopped at look 2 of 4 (12 of 24 tasks): decided, interval at 99.6%`: the
    held-out design and its stop (`result_json.sequential_record`); None for a record without one."""
    if record is None:
        return None
    looks = record.looks
    if len(looks) == 1:
        text = f"fixed, one look at {record.of} task(s)"
    else:
        futility = ("predictive probability below " + f"{record.futility_below:g} or no task moved"
                    if record.futility == "predictive" else record.futility)
        text = (f"{record.design}, looks at {'/'.join(map(str, looks))} task(s), alpha shares "
                f"{'/'.join(f'{s:g}' for s in record.alpha_shares)}, futility: {futility}; stopped at look "
                f"{record.look} of {len(looks)} "
                f"({record.tasks} of {record.of} tasks): {record.reason}, interval at "
                f"{record.level * 100:.6g}%")
    return text + (f" (not sequential: {record.note})" if record.note else "")


def _design_line(result: ItemRecord) -> list[str]:
    text = design_text(result.sequential)
    return [] if text is None else [f"- held-out design: {text}"]


def recorded_family(snapshot: "SnapshotAssertion", result: ItemRecord) -> tuple[str, int] | None:
    """(method, size) of the family the committed snapshot was judged in, when this run's evidence digest equals
    the one it records (the evidence is unchanged); None otherwise."""
    path = location(snapshot)
    if not path.is_file() or result.evidence is None or result.evidence.digest is None:
        return None
    text = path.read_text(encoding="utf-8")
    digest, family = DIGEST_LINE.search(text), FAMILY_LINE.search(text)
    if digest is None or family is None or not result.evidence.digest.startswith(digest.group(1)):
        return None
    if settings_changes(text, render(result)):
        return None
    return family.group(1), int(family.group(2))


def writes_reference(config: "pytest.Config") -> bool:
    """Whether this run (re)makes the regression gate's reference: it writes snapshots (`--snapshot-update`) and
    compares them, so each item scores the transferred skill on every held-out task (the plan expects it too)."""
    return bool(getattr(config.option, "update_snapshots", False)) and runner_of(config).settings.compare_snapshots


def recorded_size(snapshot: "SnapshotAssertion") -> int | None:
    """The family size the item's committed snapshot was judged in, whatever its evidence (None without one)."""
    path = location(snapshot.use_extension(TransferSnapshotExtension))
    if not path.is_file():
        return None
    family = FAMILY_LINE.search(path.read_text(encoding="utf-8"))
    return int(family.group(2)) if family is not None else None


def _evidence_line(result: ItemRecord) -> list[str]:
    """Which answers the result was computed from: a tampered cassette changes this line."""
    evidence = result.evidence
    if not evidence:
        return []
    return [f"- scored from {evidence.calls} distinct call(s), evidence digest {(evidence.digest or '')[:16]}"]


def _reference_line(result: ItemRecord) -> list[str]:
    """The transferred scores past the stop, when this run scored them (it writes the snapshot): with the per-task
    line above, the regression gate's reference holds every held-out task."""
    looks = result.sequential
    past = looks.reference if looks is not None else None
    if not past or looks is None or looks.tasks + len(past) < looks.of:
        return []  # the regression gate's own looks only: not a reference
    text = " ".join(f"{task}={score:.4g}" for task, score in past.items())
    return [f"- transferred past the stop (the regression gate's reference, not in the verdict): `{text}`"]


def render(result: ItemRecord) -> str:
    """The snapshot text of one result."""
    scores = result.scores
    ci = result.efficiency_ci
    efficiency = "-" if ci is None else f"{ci.mean:.3f} [{ci.ci_low:.3f}, {ci.ci_high:.3f}]"
    lines = [
        f"# {result.seed}: {result.source} -> {result.target}", "",
        "| held-out on target | hard | 95% CI | soft |", "|---|---|---|---|",
        _score_row("baseline", scores.baseline),
        _score_row("transferred", scores.transferred),
        _score_row("direct", scores.direct), "",
        f"- gain: {gain_text(result)} over {units_text(result.gain)}{design_effect_text(result.gain)}, "
        f"p = {p_text(result.gain.p_value)} "
        f"({method_text(result)}), minimal detectable gain {mdg_text(result)}",
        f"- outcome: {outcome_text(result)}", *_family_line(result), *_design_line(result),
        f"- efficiency: {efficiency}",
        f"- transferred per task: `{per_task_text(scores.transferred)}`", *_reference_line(result),
        *_evidence_line(result),
        *_settings_line(result),
        *_restart_lines(result), "",
        "## Optimization", "",
        *_night_lines(result.optimization["source"], "On the source"),
        *_night_lines(result.optimization["direct"], "Direct, on the target"),
        "## Learned skill", "", FENCE + "markdown", result.learned_skill.rstrip("\n"), FENCE, "",
    ]
    return safe(redact_text("\n".join(lines)))  # a committed file read as diffs: no secret, no control acting


def settings_of(result: ItemRecord) -> dict[str, str]:
    """The protocol settings that shaped a result, as text: the protocol's, the optimizer, the prompt cache."""
    config = result.config or {}
    values = {name: config[name] for name in SETTINGS if name in config}
    if not values.get("direct_on_demand"):
        values.pop("direct_on_demand", None)  # off: the settings line as before the setting existed
    source = (result.optimization or {}).get("source") or {}
    values["optimizer"] = source.get("optimizer") or result.optimizer
    values["prompt_cache"] = result.prompt_cache
    return {name: _setting_text(value) for name, value in values.items() if value is not None or name == "min_delta"}


def _setting_text(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    return "profile" if value is None else f"{value:g}" if isinstance(value, float) else str(value)


def _settings_line(result: ItemRecord) -> list[str]:
    if not result.config:
        return []
    return ["- protocol settings: `" + " ".join(f"{k}={v}" for k, v in settings_of(result).items()) + "`"]


def parse_settings(text: str) -> dict[str, str] | None:
    """The protocol settings a snapshot was made with, or None when it does not record them."""
    match = SETTINGS_LINE.search(text)
    if match is None:
        return None
    return dict(item.partition("=")[::2] for item in match.group(1).split())


def settings_changes(before: str, after: str) -> list[str]:
    """`nights 2 -> 1` for each setting that differs between two snapshot texts (none when either
    does not record its settings)."""
    old, new = parse_settings(before), parse_settings(after)
    if old is None or new is None:
        return []
    return [f"{name} {old.get(name, '-')} -> {new.get(name, '-')}" for name in [*old, *(n for n in new if n not in old)]
            if old.get(name) != new.get(name)]


def _restart_lines(result: ItemRecord) -> list[str]:
    """With restarts: each restart's split seed and gain, and their spread (nothing for one restart)."""
    runs = result.restarts
    if not runs:
        return []
    spread = result.gain.restarts or {}
    gains = ", ".join(f"{r['restart']} (split seed {r['split_seed']}) {r['gain']:+.3f}" for r in runs)
    return [f"- restarts: {gains}; sd {spread['sd']:.3f}, range [{spread['min']:+.3f}, {spread['max']:+.3f}]"]


def location(snapshot: "SnapshotAssertion") -> Path:
    """The snapshot file of this assertion."""
    return Path(snapshot.extension.get_location(test_location=snapshot.test_location, index=snapshot.index))


def per_task_text(evaluation: ArmRecord | None) -> str:
    """`id=1 id=0.667`: each task's hard score, compactly."""
    return " ".join(f"{t.task_id}={t.hard:.4g}" for t in (evaluation.tasks if evaluation is not None else ()))


def parse_per_task(text: str) -> dict[str, float] | None:
    """The transferred per-task scores of a snapshot's text, those past the stop included (the regression gate's
    reference), or None when it has no such line."""
    match = PER_TASK_LINE.search(text)
    if match is None:
        return None
    past = REFERENCE_LINE.search(text)
    items = match.group(1).split() + (past.group(1).split() if past is not None else [])
    pairs = [item.rpartition("=") for item in items]
    return {task: float(value) for task, _, value in pairs}


def _carried(text: str, snapshot: "SnapshotAssertion") -> str:
    """This run's snapshot text as compared when it does not write snapshots: the reference line past the stop is
    the committed one (or none), whatever this run scored past its stop. That line is the reference a snapshot
    keeps for later runs, not evidence of this run's verdict; every other line is still compared."""
    if snapshot.update_snapshots:
        return text
    text = REFERENCE_LINE.sub("", text)
    path = location(snapshot)
    committed = path.read_text(encoding="utf-8") if path.is_file() else ""
    past, line = REFERENCE_LINE.search(committed), PER_TASK_LINE.search(text)
    if past is None or line is None:
        return text
    return text[:line.end() + 1] + past.group(0) + text[line.end() + 1:]


def committed_per_task(snapshot: "SnapshotAssertion", result: ItemRecord | None = None) -> dict[str, float] | None:
    """The transferred per-task scores in the snapshot on disk, or None when there is none or, given
    this run's `result`, when it was made with other protocol settings (then it measures another thing)."""
    path = location(snapshot)
    if not path.is_file():
        return None
    text = path.read_text(encoding="utf-8")
    if result is not None and settings_changes(text, render(result)):
        return None
    return parse_per_task(text)


def compare(snapshot: "SnapshotAssertion", result: ItemRecord) -> list[str]:
    """Assert the rendered result against the snapshot: [] when it matches (or was written), else why not."""
    text = _carried(render(result), snapshot)
    if snapshot == text:
        return []
    location = Path(snapshot.extension.get_location(test_location=snapshot.test_location, index=snapshot.index - 1))
    root = snapshot.test_location.item.config.rootpath
    location = location.relative_to(root) if location.is_relative_to(root) else location
    committed = snapshot.executions[snapshot.num_executions - 1].recalled_data
    if committed is None:
        return [f"no snapshot at {location}; run with --snapshot-update to write it"]
    diff = difflib.unified_diff(str(committed).splitlines(), text.splitlines(), "committed snapshot", "this run",
                                lineterm="", n=1)
    return [f"{location} differs: {change_summary(str(committed), text)}", *diff]


def parse_scores(text: str) -> dict[str, float | None]:
    """The hard means of a snapshot's score table: {baseline|transferred|direct: mean or None}."""
    return {name: None if value == "-" else float(value) for name, value in SCORE_ROW.findall(text)}


def parse_skill(text: str) -> str:
    """The learned skill of a snapshot's text ("" when it has none)."""
    start = text.find(SKILL_HEADING)
    if start < 0:
        return ""
    body = text[start + len(SKILL_HEADING):]
    return body[: body.rfind("\n" + FENCE)] if ("\n" + FENCE) in body else body


def change_summary(before: str, after: str) -> str:
    """What changed between two snapshot texts, in one line: held-out scores before -> after, the
    learned skill's diff size, and whether the transferred score got better (an improvement) or
    worse (a regression); e.g. `improvement: transferred 0.500 -> 0.750; skill +2/-1 lines`."""
    changed = settings_changes(before, after)
    old, new = parse_scores(before), parse_scores(after)
    moved = [f"{name} {_score(old.get(name))} -> {_score(new.get(name))}"
             for name in ("baseline", "transferred", "direct") if old.get(name) != new.get(name)]
    delta = (new.get("transferred") or 0.0) - (old.get("transferred") or 0.0)
    kind = "improvement: " if delta > 0 else "regression: " if delta < 0 else "transferred unchanged: " if moved else ""
    if changed:  # another measurement, not a better or worse one
        kind = f"protocol settings changed ({', '.join(changed)}), so the result is not comparable: "
    added = removed = 0
    for line in difflib.unified_diff(parse_skill(before).splitlines(), parse_skill(after).splitlines(), lineterm="", n=0):
        if line.startswith(("+++", "---")):
            continue
        added += line.startswith("+")
        removed += line.startswith("-")
    skill = f"skill +{added}/-{removed} lines" if added or removed else "skill unchanged"
    scores = ", ".join(moved) if moved else "scores unchanged"
    return f"{kind}{scores}; {skill}"


def _score(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"
