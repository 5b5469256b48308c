"""What a gate is, defined once: its name (the seed.toml `[thresholds]` key, the marker keyword, the JSON gate
name), its command-line option, its help line, what reports call its estimate, whether passing it claims
something, where the page's gain chart draws its threshold, and whether it is tested at the run family's
level. Options, the seed loader, the marker, the gating, the terminal table and the page read this table.

The built-in gates are registered here; their checks live in `plugin.gating`. Another gate is one call to
`register_gate` with a `check(result, threshold, level)` that returns the gate's record (a plugin module or a
conftest, before the run engages): seed.toml and the marker accept it, the gating applies it, every report
shows it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from ..guards.run_scope import Scoped

if TYPE_CHECKING:
    from ..evidence.item_record import ItemRecord

Check = Callable[["ItemRecord", float, float], Any]  # (the item's record, threshold, level) -> plugin.gating.Gate


@dataclass(frozen=True)
class GateSpec:
    """One gate's declaration (see the module docstring)."""

    name: str
    help: str
    label: str  # what its estimate measures, in reports ("gain", "score", ...)
    claim: bool  # a pass claims something about the skill (the row's verdict says "pass", not "no gate")
    chart: int | None = None  # the gain chart: +1 draws the threshold at +t, -1 at -t; None: not on the gain axis
    family: bool = True  # tested at the run family's level (else at the item's own 95%)
    signed: bool = False  # its estimate is a difference, printed with its sign
    threshold: bool = True  # set by a threshold (seed.toml, marker, option); False: `expect`
    check: Check | None = None  # the test of a gate registered from outside; built-in checks are the plugin's

    @property
    def option(self) -> str:
        """The command-line option that sets it (`--transfer-min-gain`)."""
        return "transfer-" + self.name.replace("_", "-")


BUILT_IN: dict[str, GateSpec] = {}  # the package's gates (below)
_registered: Scoped[dict[str, GateSpec]] = Scoped("gates", dict)  # the gates this run's hook registered


def all_gates() -> dict[str, GateSpec]:
    """Every gate of the run: the built-in ones, then the registered ones."""
    return {**BUILT_IN, **_registered()}


def register_gate(spec: GateSpec) -> GateSpec:
    """Add a gate for this run; a name already taken is an error naming it."""
    if spec.name in all_gates():
        raise ValueError(f"gate {spec.name!r} is already defined; choose another name")
    if not spec.name.isidentifier():
        raise ValueError(f"gate name {spec.name!r} must be an identifier (a seed.toml key and a marker keyword)")
    _registered()[spec.name] = spec
    return spec


def option_gates() -> tuple[str, ...]:
    """The built-in gates a threshold sets: each has its command-line option and ini key (a registered gate is
    set in seed.toml and the marker only)."""
    return tuple(name for name, spec in BUILT_IN.items() if spec.threshold)


def threshold_gates() -> tuple[str, ...]:
    """The gates a threshold sets, in declaration order (seed.toml keys, marker keywords, option names)."""
    return tuple(name for name, spec in all_gates().items() if spec.threshold)


def claim_gates() -> tuple[str, ...]:
    """The gates whose pass is a claim."""
    return tuple(name for name, spec in all_gates().items() if spec.claim)


def family_gates() -> tuple[str, ...]:
    """The gates tested at the run family's level."""
    return tuple(name for name, spec in all_gates().items() if spec.family)


def chart_gates() -> dict[str, int]:
    """The gates the gain chart draws, each with the sign that puts its threshold on the gain axis."""
    return {name: spec.chart for name, spec in all_gates().items() if spec.chart is not None}


def label_of(name: str) -> str:
    """What a gate's estimate measures ("gain", "score", ...); the name itself for an unknown gate."""
    spec = all_gates().get(name)
    return spec.label if spec is not None else name


def is_signed(name: str) -> bool:
    """Whether a gate's estimate is a difference, printed with its sign."""
    spec = all_gates().get(name)
    return spec is not None and spec.signed


for _spec in (
    GateSpec("min_gain", "the transferred skill's gain over the baseline on the target is at least X",
             "gain", claim=True, chart=1, signed=True),
    GateSpec("min_score", "the transferred skill scores at least X on the target", "score", claim=True),
    GateSpec("min_efficiency", "(transferred - baseline) / (direct - baseline) is at least X", "efficiency",
             claim=True, family=False),
    GateSpec("regression_tolerance", "the transferred score drops at most X from the committed snapshot",
             "change vs snapshot", claim=False, signed=True),
    GateSpec("harm_tolerance", "fail when the whole gain interval lies below -X (on by default at 0)", "gain",
             claim=False, chart=-1, signed=True),
    GateSpec("noninferiority_margin", "pass only when the whole gain interval lies at or above -X", "gain",
             claim=True, chart=-1, signed=True),
    GateSpec("expect", "the outcome seed.toml declares for the pair (replaces the harm gate)", "outcome",
             claim=True, threshold=False),
):
    BUILT_IN[_spec.name] = _spec
