"""`--plan`: print what the collected items can cost at most and what the cassettes already hold, then stop.

Bounds come from `pytest_skilltransfer.planning.plan`, dollars from `planning.money`, and the expected figures
are calibrated by `planning.calibration` from the items that replay whole. Which calls are already recorded is found by
replaying: each seed with a provider model is run against its cassettes with recording off and the
network blocked (`record mode none`), counting the calls that replay until the first miss; nothing
is sent to a provider. In-process models (the simulator) need no cassette and cost nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import pytest

from ..engine.protocol import SeedSession
from ..models.base import Model, ModelCallError, Reply, Request
from ..planning.calibration import Calibration, calibrated
from ..planning.money import breakdown, configured_prices, held_out_scored, lane_prices, units_usd, verdict_floor
from ..planning.plan import Planner, Unit
from .aa_fixture import AA_MARKER
from .runner import Runner, concurrency, needs_recording
from .seed_walk import seeded_items
from .snapshots import writes_reference


@dataclass
class ItemPlan:
    """One item: its units, and what replaying its cassettes found."""

    nodeid: str
    units: list[Unit]
    needs_cassette: bool
    pair: str = ""  # "source->target" (model ids)
    replayed: int = 0
    miss_phase: str | None = None  # None: everything replayed (or no cassette needed)
    error: str = ""
    provider_ids: frozenset[str] = frozenset()  # the item's models that are called over a wire (and recorded)
    aa: bool = False  # a hand-written test with an A/A check (`transfer_aa`): its calls are replayed too
    aa_temperature: float | None = None  # that check's sampling temperature (`skilltransfer_aa` marker)

    @property
    def calls(self) -> int:
        """Calls to providers at most: what a recording run sends (and its progress line counts)."""
        return provider_calls(self.units, self.provider_ids)

    @property
    def in_process_calls(self) -> int:
        """Calls answered in this process (the simulator, its judge): never sent, never recorded, free."""
        return sum(u.calls for u in self.units) - self.calls


def provider_calls(units: list[Unit], provider_ids: frozenset[str] | set[str]) -> int:
    """The units' calls to the given provider models (shares of other models are in-process)."""
    return sum(s.calls for u in units for s in u.shares if s.model_id in provider_ids)


def _provider_ids(models: list[Model]) -> frozenset[str]:
    from ..models.providers import ProviderModel

    return frozenset(m.model_id for m in models if isinstance(m, ProviderModel))


@dataclass
class _Counting:
    """A model wrapper that counts the calls answered (here: replayed from the cassette)."""

    inner: Model
    counter: list[int] = field(default_factory=lambda: [0])

    def __post_init__(self) -> None:
        self.name, self.model_id = self.inner.name, self.inner.model_id
        self.max_concurrency = concurrency(self.inner)

    def complete(self, request: Request) -> Reply:
        reply = self.inner.complete(request)
        self.counter[0] += 1
        return reply


def _sum(units: list[Unit], attribute: str) -> int:
    return sum(getattr(s, attribute) for u in units for s in u.shares)


def _usd(units: list[Unit], kind: str = "bound") -> float | None:
    return units_usd(units, kind)


def _run_chance(on_demand: list[Unit]) -> float | None:
    """The share of the on-demand units' dollars the expected total counts (their chances to run, weighted by
    dollars); None when a model of them is unpriced or they cost nothing."""
    expected, if_all_run = _usd(on_demand, "expected"), _usd(on_demand, "on-demand")
    return None if expected is None or not if_all_run else round(expected / if_all_run, 6)


def _money(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.4f}"


def _planned(runner: Runner, items: list[pytest.Item], spec_of: Callable[[pytest.Item], Any],
             bounds_only: bool = False) -> Iterator[tuple[Any, list[tuple[pytest.Item, Any, list[Unit], list[Model]]]]]:
    """Per seed, in collection order: the seed, and each of its items with its spec, units and models (with
    `bounds_only`, units whose bounds alone are read: `Planner`)."""
    by_seed: dict[Any, list[tuple[pytest.Item, Any]]] = {}
    for item in items:
        spec = spec_of(item)
        if spec is not None:
            by_seed.setdefault(spec.seed_path, []).append((item, spec))
    # the run family's size (`item_hooks.family_size`): each item's alpha, which the design's looks spend
    family = len({(str(s.seed_path), s.source, s.target, s.optimizer or "")
                  for s in (spec_of(item) for item in items) if s is not None})
    alpha = 0.05 / max(family, 1) if runner.settings.correction == "bonferroni" else 0.05
    writes = bool(items) and writes_reference(items[0].config)
    for seed_path, members in by_seed.items():
        seed = runner.seed(seed_path)
        judge = runner.judge(seed)
        planner = Planner(seed, runner.settings.protocol, runner.settings.calls.prompt_cache,
                          (judge.model.model_id, judge.samples) if judge is not None else None, alpha, writes,
                          bounds_only)
        rows = []
        for item, spec in members:
            models = [runner.model(n) for n in (spec.source, spec.target) + ((spec.optimizer,) if spec.optimizer else ())]
            listed = [runner.model(n) for n in spec.validate_on]
            source, target = models[0].model_id, models[1].model_id
            optimizer = models[2].model_id if spec.optimizer else None
            units = planner.item(source, target, optimizer or source, optimizer or target,
                                 tuple(m.model_id for m in listed))
            if _has_aa(item):  # the A/A check scores the transferred skill again (sampled: twice)
                units.append(planner.aa_check(source, optimizer or source, target, _aa_temperature(item) is not None))
            rows.append((item, spec, units, models + listed))
        yield seed, rows


def build_plans(runner: Runner, items: list[pytest.Item], spec_of: Callable[[pytest.Item], Any],
                calibration: Calibration | None = None) -> list[ItemPlan]:
    """Bounds and replay findings for every transfer item, seeds in collection order. The calls that replay
    are observed into `calibration`, and the expected figures then come from what they showed."""
    plans: list[ItemPlan] = []
    for seed, rows in _planned(runner, items, spec_of):
        # one phase after another: the plan counts the calls that replay before the first miss
        session = SeedSession(seed, runner.settings.protocol, concurrency=concurrency, concurrent_phases=False)
        judge = runner.judge(seed)
        judged = [judge.model] if judge is not None else []
        seed_plans = [(ItemPlan(item.nodeid, units, needs_recording(models),
                                f"{models[0].model_id}->{models[1].model_id}",
                                provider_ids=_provider_ids(models + judged), aa=_has_aa(item),
                                aa_temperature=_aa_temperature(item)), models, spec)
                      for item, spec, units, models in rows]
        if any(plan.needs_cassette for plan, _, _ in seed_plans):
            _replay(runner, seed.name, session, seed_plans, calibration)
        plans += [plan for plan, _, _ in seed_plans]
    if calibration is not None and calibration.describe():
        for plan in plans:
            plan.units = calibrated(plan.units, calibration)
    return plans


def recording_bound(runner: Runner, items: list[pytest.Item], spec_of: Callable[[pytest.Item], Any]) -> tuple[int, int]:
    """(items that talk to a provider, calls to providers those items make at most, shared phases once). The
    bounds alone: the design's expected stop (exact operating characteristics, 0.3-0.9 s of CPU before the first
    item) is not computed for them."""
    units: dict[tuple[str, ...], Unit] = {}
    provider_ids: set[str] = set()
    count = 0
    for seed, rows in _planned(runner, items, spec_of, bounds_only=True):
        judge = runner.judge(seed)
        for _, _, item_units, models in rows:
            models = models + ([judge.model] if judge is not None else [])
            if needs_recording(models):
                count += 1
                units.update((u.key, u) for u in item_units)
                provider_ids |= _provider_ids(models)
    return count, provider_calls(list(units.values()), provider_ids)  # the plan's "calls ≤" total, as counted there


AGENT_TURNS_WITH_TOOLS = 2  # an ETA's assumption: a task with tools takes a search, then the answer


def critical_path(runner: Runner, items: list[pytest.Item], spec_of: Callable[[pytest.Item], Any]) -> int:
    """Round trips on the critical path of these items run one after another (as a process runs them): per
    item, the longest of its concurrent chains, every night run, each evaluation one round trip per agent
    turn (`AGENT_TURNS_WITH_TOOLS` with tools) plus one for a rubric judge, each night's reflection one; an
    optimization or baseline an earlier item of the seed computed costs none; the direct reference on
    demand is counted as run; under the group-sequential design every further wave of held-out tasks costs one
    evaluation more, counted as if every look were taken. For the progress line's ETA (`live_progress`)."""
    from ..evidence.sequential import DESIGNS

    protocol = runner.settings.protocol
    nights = protocol.nights
    direct, on_demand = protocol.direct, protocol.direct_on_demand
    design = DESIGNS[protocol.design]
    total = 0
    seen: set[tuple[Any, ...]] = set()
    for _, spec, seed in seeded_items(runner, items, spec_of):
        step = (AGENT_TURNS_WITH_TOOLS if seed.corpus_dir else 1) + (1 if seed.rubric_origin else 0)
        optimize = nights * (3 * step + 1)  # val, train, reflect, candidate

        def once(*key: Any) -> bool:
            fresh = key not in seen
            seen.add(key)
            return fresh

        baseline = step if once("baseline", spec.seed_path, spec.target) else 0
        transfer = (optimize if once("optimize", spec.seed_path, spec.source) else 0) + step
        reference = ((optimize if once("optimize", spec.seed_path, spec.target) else 0) + step) if direct else 0
        tasks = min(len(seed.test), protocol.limit_test or len(seed.test))
        waves = len(design.looks(tasks)) - 1 if protocol.restarts == 1 and not spec.validate_on else 0
        total += (max(baseline, transfer + reference) if on_demand else max(baseline, transfer, reference)) + waves * step
    return total


def _has_aa(item: pytest.Item) -> bool:
    return "transfer_aa" in getattr(item, "fixturenames", ())


def _aa_temperature(item: pytest.Item) -> float | None:
    """The A/A marker's temperature when it is a usable number (the test itself reports a bad one)."""
    marker = item.get_closest_marker(AA_MARKER)
    value = marker.kwargs.get("temperature") if marker is not None else None
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0 else None


def _replay(runner: Runner, seed: str, session: SeedSession, seed_plans: list[tuple[ItemPlan, list[Model], Any]],
            calibration: Calibration | None) -> None:
    from ..cassettes import recording

    counter = [0]
    with recording(runner.settings.cassette_dir, seed, "none"):
        for plan, models, spec in seed_plans:
            wrapped = [_Counting(m, counter) for m in models]
            before = counter[0]
            fixed = 3 if spec.optimizer else 2
            try:
                result = session.transfer(wrapped[0], wrapped[1], wrapped[2] if spec.optimizer else None,
                                          tuple(wrapped[fixed:]), spec.validate_tolerance)
                if plan.aa:  # the A/A check's second (or, sampled, both) scorings are calls of this item too
                    from ..engine.aa import aa_check

                    session.phase = "aa-check"
                    aa_check(session, wrapped[1], result.learned.learned_skill, temperature=plan.aa_temperature)
                    session.phase = ""
            except ModelCallError as exc:
                plan.miss_phase = session.phase or "?"
                plan.error = str(exc).splitlines()[0]
            else:
                if calibration is not None and result.bill is not None:
                    calibration.observe(plan.units, result.bill)
            plan.replayed = counter[0] - before


def _cassette_text(plan: ItemPlan) -> str:
    if not plan.needs_cassette:
        return "in-process models: nothing to record"
    if plan.miss_phase is None:
        return f"all recorded: {plan.replayed} call(s) replay"
    return (f"{plan.replayed} call(s) replay, then a miss in {plan.miss_phase}: "
            f"up to {max(0, plan.calls - plan.replayed)} to record")


def to_pay(plans: list[ItemPlan]) -> list[tuple[ItemPlan, list[Unit]]]:
    """The items with calls to record, each with the units it will pay for: its own units, less those an item
    that replays whole already holds and those an earlier item to record pays (shared phases once, on the first)."""
    held = {u.key for plan in plans if not (plan.needs_cassette and plan.miss_phase) for u in plan.units}
    paying: list[tuple[ItemPlan, list[Unit]]] = []
    for plan in plans:
        if plan.needs_cassette and plan.miss_phase:
            units = [u for u in plan.units if u.key not in held]
            held |= {u.key for u in units}
            paying.append((plan, units))
    return paying


def payment_lines(plans: list[ItemPlan]) -> list[str]:
    """Once the cassettes hold something: which items replay from them at $0, and which will be paid, with what
    (expected, and at most; the phases from the first miss on)."""
    if not any(plan.needs_cassette and plan.replayed for plan in plans):
        return []
    paying = to_pay(plans)
    replaying = [plan for plan in plans if plan.needs_cassette and not plan.miss_phase]
    units = [u for _, item_units in paying for u in item_units]
    lines = ["", f"to pay: {len(paying)} item(s), ${_money(_usd(units, 'expected'))} expected "
                 f"(≤ ${_money(_usd(units))}); {len(replaying)} item(s) replay from the cassettes at $0"]
    lines += [f"  pays {_money(_usd(item_units, 'expected'))} (≤ {_money(_usd(item_units))}): {plan.nodeid}, "
              f"from a miss in {plan.miss_phase}" for plan, item_units in paying]
    lines += [f"  replays at $0: {plan.nodeid}" for plan in replaying]
    return lines


def _table(rows: list[tuple[str, ...]], rule_before_last: bool = False) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    if rule_before_last:
        lines.insert(len(lines) - 1, lines[1])
    return lines


def lane_lines(units: list[Unit]) -> list[str]:
    """The planned run priced in every lane: at most, expected, and expected without cache reads."""
    rows = [("lane (whole run)", "$ ≤", "$ expected", "$ expected, no cache reads")]
    mine = configured_prices(units)
    rows.append(("as configured (each model in its lane)", _money(mine["bound"]), _money(mine["expected"]), ""))
    for lane, figures in lane_prices(units).items():
        label = "flex (where offered)" if lane == "flex" else lane
        rows.append((label, *(_money(figures[k]) for k in ("bound", "expected", "expected-no-cache"))))
    return _table(rows)


def breakdown_lines(plans: list[ItemPlan]) -> list[str]:
    """Where the money goes, each model in its lane: `$ expected (≤ bound)` by pair, phase, role and model."""
    tables = breakdown([(plan.pair, plan.units) for plan in plans])
    lines = ["where the money goes ($ expected, ≤ bound; shared phases once, on the first item using them):"]
    for title, key in (("pair", "by_pair"), ("phase", "by_phase"), ("role", "by_role"), ("model (lane)", "by_model")):
        cells = [f"{name} {_money(row['expected_usd'])} (≤ {_money(row['bound_usd'])})"
                 for name, row in tables[key].items()]
        lines.append(f"  by {title}: " + ", ".join(cells))
    return lines


def verdict_lines(units: list[Unit]) -> list[str]:
    """The expected figure beside the verdict floor: what the held-out design is expected to score, and what a fixed
    design's verdict (baseline and transferred on every held-out task) is expected to cost."""
    scored, floor, expected = held_out_scored(units), verdict_floor(units), _usd(units, "expected")
    if scored is None or floor is None or expected is None:
        return []
    design = ("the fixed design: every held-out task" if scored >= 1 else
              f"the group-sequential design: held-out answers expected at {scored:.0%} of the fixed design's "
              "(sequential.EXPECTED_MIXTURE, at each item's share of the run family's alpha); the bound counts "
              "every look")
    return [f"expected ${_money(expected)} under {design}; verdict floor ${_money(floor)} expected: the fixed "
            "design's verdict alone (baseline and transferred on every held-out task)"]


def plan_json(plans: list[ItemPlan], price_date: str, calibration: Calibration | None = None) -> dict[str, Any]:
    """The plan as JSON (`--plan --skilltransfer-json PATH`): items, the total, the lanes and the breakdown."""
    unique = list({u.key: u for plan in plans for u in plan.units}.values())

    providers = frozenset().union(*(plan.provider_ids for plan in plans))

    def figures(units: list[Unit]) -> dict[str, Any]:
        calls = sum(u.calls for u in units)
        sent = provider_calls(units, providers)
        return {"calls": calls, "provider_calls": sent, "in_process_calls": calls - sent,
                "input_tokens": _sum(units, "input_tokens"),
                "output_tokens": _sum(units, "output_tokens"), "bound_usd": _usd(units),
                "expected_usd": _usd(units, "expected")}

    on_demand = [u for u in unique if u.on_demand]
    paying = {plan.nodeid: units for plan, units in to_pay(plans)}

    def pays(plan: ItemPlan) -> dict[str, float | None]:
        units = paying.get(plan.nodeid, [])
        return {"expected_usd": _usd(units, "expected") if units else 0.0, "bound_usd": _usd(units) if units else 0.0}

    return {"prices_effective": price_date,
            "calibration": calibration.as_dict() if calibration is not None else {},
            "on_demand": {"calls": sum(u.calls for u in on_demand), "bound_usd": _usd(on_demand),
                          "expected_usd_if_all_run": _usd(on_demand, "on-demand"),
                          "expected_usd": _usd(on_demand, "expected"),
                          "chance_to_run": _run_chance(on_demand)},
            "items": [{"item": plan.nodeid, "pair": plan.pair, **figures(plan.units), "replayed": plan.replayed,
                       "miss_phase": plan.miss_phase, "to_pay": pays(plan)} for plan in plans],
            "total": figures(unique), "verdict_floor_usd": verdict_floor(unique),
            "held_out_scored": held_out_scored(unique), "lanes": {"as_configured": configured_prices(unique), **lane_prices(unique)},
            "breakdown": breakdown([(plan.pair, plan.units) for plan in plans])}


PORTABLE_PHASES = ("optimize-portable", "portable")


def validation_lines(units: list[Unit]) -> list[str]:
    """With --validate-on: the portable arm's calls and dollars at most, per model (shared phases once; calls an
    earlier phase already made are answered from the cache, so the run sends fewer)."""
    shares: dict[str, list[Any]] = {}
    for unit in units:
        if unit.phase in PORTABLE_PHASES:
            for share in unit.shares:
                shares.setdefault(share.model_id, []).append(share)
    if not shares:
        return []
    rows = [("--validate-on arm, per model", "calls ≤", "input tok ≤", "output tok ≤", "$ ≤")]
    for model_id, parts in sorted(shares.items()):
        usd = [p.bound_usd() for p in parts]
        rows.append((model_id, str(sum(p.calls for p in parts)), str(sum(p.input_tokens for p in parts)),
                     str(sum(p.output_tokens for p in parts)),
                     _money(None if any(u is None for u in usd) else sum(usd))))  # type: ignore[arg-type]
    return ["", *_table(rows)]


def calibration_lines(calibration: Calibration | None) -> list[str]:
    """What the expected figures took from the recorded calls, if anything."""
    lines = calibration.describe() if calibration is not None else []
    if not lines:
        return []
    return ["", f"expected figures calibrated from {calibration.items} recorded item(s): what they paid against "
                "what the plan expected of them, applied to the same phase, model and role (bounds unchanged):",
            *(f"  {line}" for line in lines)]


def plan_lines(plans: list[ItemPlan], price_date: str, calibration: Calibration | None = None) -> list[str]:
    """The table the plan option prints."""
    header = ("item", "calls ≤", "input tok ≤", "output tok ≤", "$ ≤", "$ expected", "cassettes", "in-process")
    rows = [header]
    for plan in plans:
        rows.append((plan.nodeid, str(plan.calls), str(_sum(plan.units, "input_tokens")),
                     str(_sum(plan.units, "output_tokens")), _money(_usd(plan.units)),
                     _money(_usd(plan.units, "expected")), _cassette_text(plan), str(plan.in_process_calls)))
    unique = list({u.key: u for plan in plans for u in plan.units}.values())
    providers = frozenset().union(*(plan.provider_ids for plan in plans))
    sent = provider_calls(unique, providers)
    pending = [u for _, units in to_pay(plans) for u in units]
    recorded = sum(plan.replayed for plan in plans)
    rows.append(("total (shared phases once)", str(sent), str(_sum(unique, "input_tokens")),
                 str(_sum(unique, "output_tokens")), _money(_usd(unique)), _money(_usd(unique, "expected")),
                 f"{recorded} call(s) recorded; to record: ≤ ${_money(_usd(pending))}",
                 str(sum(u.calls for u in unique) - sent)))
    on_demand = [u for u in unique if u.on_demand]
    if on_demand:
        chance = _run_chance(on_demand)
        on_demand_sent = provider_calls(on_demand, providers)
        rows.append(("direct references on demand (if all run)", str(on_demand_sent),
                     str(_sum(on_demand, "input_tokens")), str(_sum(on_demand, "output_tokens")),
                     "in total", _money(_usd(on_demand, "on-demand")),
                     f"in the expected total at {'its chance to run' if chance is None else f'{chance:.3g}'} of "
                     "this: the chance a transfer shows no gain", str(sum(u.calls for u in on_demand) - on_demand_sent)))
    unpriced = sorted({s.model_id for plan in plans for u in plan.units for s in u.shares if s.usd is None})
    priced = ([f"$ n/a: no price for {', '.join(unpriced)}; add it to pyproject.toml as [tool.skilltransfer.prices] "
               f'"{unpriced[0]}" = {{ input = USD_PER_MTOK, output = USD_PER_MTOK }}'] if unpriced else [])
    return [
        f"skill-transfer plan: no model was called; upper bounds at prices.toml of {price_date}",
        *_table(rows, rule_before_last=not on_demand),
        *priced,
        *payment_lines(plans),
        *verdict_lines(unique),
        *validation_lines(unique),
        *calibration_lines(calibration),
        "",
        *breakdown_lines(plans),
        "",
        *lane_lines(unique),
        "",
        "How: calls ≤ counts the calls sent to providers (recorded in cassettes, what a recording run's progress "
        "line counts); in-process: the calls the simulator and its judge answer here (never sent, free). Calls "
        "follow the protocol at its longest (all held-out tasks unless --limit-* caps them, every "
        "sample, restart, night and tool step, every rubric vote with its retry, the optimizer's retry, the judge's "
        "calibration); a prompt counts at most one token per UTF-8 byte plus the providers' overheads, text a model "
        "wrote at its max_tokens + 10%, every reply at its max_tokens, every prompt token at the highest prompt "
        "rate. Expected: typical reply lengths, 4 characters a token, no retries, and prompt-cache reads after the "
        "first call of a shared prefix where the model caches (never in the batch lane: the requests of one batch do "
        "not read each other's cache writes). Lanes: batch and flex at the dated [lanes] rates of "
        "prices.toml (n/a where a model is not offered). Recorded calls were found by replaying the cassettes with "
        "the network blocked.",
    ]
