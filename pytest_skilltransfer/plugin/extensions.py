"""The registry `pytest_skilltransfer_configure(config, registry)` receives (see `hookspecs`).

Each method feeds the layer that owns the thing it registers: model families, wire formats and aliases
(`models`), judge ops (`judges`, so seeds using them load), cassette scrubbers (`cassettes.scrub`,
run after the built-in header and secret filters, on recording and on replay matching).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

import pytest

if TYPE_CHECKING:
    from ..evidence.item_record import ItemRecord


class Registry:
    """What a conftest may add; errors name the hook and what was wrong."""

    def __init__(self, project_aliases: dict[str, Any] | None = None):
        self._project_aliases = dict(project_aliases or {})  # pyproject's [tool.skilltransfer.models]
        self._aliases: dict[str, Any] = {}

    def add_model_family(self, name: str, matches: Callable[[str], bool], factory: Callable[[str], Any],
                         help_text: str) -> None:
        """A backend: `factory(name)` builds a model (an object with `name`, `model_id`, `complete(request)`)
        for every name `matches` accepts; `help_text` appears in the unknown-model error."""
        from ..models.base import register_family

        register_family(name, matches, factory, help_text, for_run=True)

    def add_alias(self, alias: str, spec: str | dict[str, Any]) -> None:
        """An alias, as in `[tool.skilltransfer.models]` (a spec string or a {provider, model, ...} table);
        it extends that table and wins on a clash."""
        from ..models.base import ModelError
        from ..models.providers import configure_aliases

        self._aliases[alias] = spec
        try:
            configure_aliases({**self._project_aliases, **self._aliases})
        except ModelError as exc:
            raise pytest.UsageError(f"pytest_skilltransfer_configure: {exc}") from None

    def add_wire(self, wire: Any) -> None:
        """A wire format (`pytest_skilltransfer.models.wire.Wire`), for this run: models named
        `<wire.name>:<model-id>@<base-url>`, or with `provider = "<wire.name>"` in an alias, speak it."""
        from ..models.wire import register_wire

        register_wire(wire, for_run=True)

    def add_judge_op(self, name: str, passes: Callable[[str, Any], bool], arg: str = "string",
                     description: str = "") -> None:
        """A rule op usable in task files: `passes(answer_text, arg)`, `arg` one of string/integer/none."""
        from ..engine.judges import register_op

        try:
            register_op(name, passes, arg, description)
        except ValueError as exc:
            raise pytest.UsageError(f"pytest_skilltransfer_configure: {exc}") from None

    def add_gate(self, name: str, check: Callable[["ItemRecord", float, float], Any], help: str,
                 label: str = "gain", claim: bool = True, chart: int | None = None, family: bool = True,
                 signed: bool = True) -> None:
        """A gate set like the built-in ones (seed.toml `[thresholds]`, the marker): `check(result, threshold,
        level)` returns a `pytest_skilltransfer.plugin.gating.Gate` for the item's record, at `level` (the
        run family's, or 0.95 with `family=False`); `claim`: a pass claims something; `chart`: +1 or -1 to draw
        its threshold on the page's gain axis at +t or -t (see `engine.gate_specs.GateSpec`)."""
        from ..engine.gate_specs import GateSpec, register_gate

        try:
            register_gate(GateSpec(name, help, label, claim, chart, family, signed, True, check))
        except ValueError as exc:
            raise pytest.UsageError(f"pytest_skilltransfer_configure: {exc}") from None

    def add_scrubbers(self, request: Callable[[Any], Any] | None = None,
                      response: Callable[[Any], Any] | None = None) -> None:
        """vcrpy `before_record_request` / `before_record_response` functions run after the built-in ones."""
        from ..cassettes.scrub import add_scrubbers

        add_scrubbers(request=request, response=response)
