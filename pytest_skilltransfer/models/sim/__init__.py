"""SIMULATED models `sim-small` and `sim-large`: deterministic, in-process, free. NOT real models.

They exist for demos and tests of the transfer protocol without keys or cost. They answer a
`Request` only from its text (system, messages, tools); they never see judges or checks.

- As the agent, a sim model reads the skill (the system text) through wording recognizers
  (`skill_reader`), follows each directive with a probability set by its profile, lets later rules
  override earlier ones, and writes a plausible answer to the task (`answer`). It calls the
  `search` tool first when the skill, as it understood it, says to look things up.
- As the optimizer (a request whose user text has a "# Failing criteria (training tasks)"
  section) it proposes edits as a JSON array (`optimizer`; `regex_template` reads judge patterns it is shown).

Capacity differs so transfer is not trivial: sim-small follows literal, concrete rules (exact
headings, label lines with allowed values, templates, numeric limits, named tools) and rarely
abstract ones ("be concise", "close with your confidence level"); sim-large follows both. As
optimizers, sim-small writes literal rules and sim-large mostly terse abstract ones (now and then
with a concrete example, now and then literal), so skills learned on sim-small tend to transfer
to sim-large better than the reverse.

Capacities live in `profiles`. Noise (`noise`) is drawn from sha256 of (model id, request, sample id): the same request and sample id
always give the same reply in any process, and different sample ids give different samples.
"""

from .model import SimModel
from .profiles import PROFILES

__all__ = ["PROFILES", "SimModel"]
