"""Helpers for the plugin tests: tiny seeds and a toy model family written into a pytester folder.

Toy models (`toy-<name>`) are deterministic and instant. As the optimizer every toy proposes the
same edit, a rule containing OWNER-LINE. As the agent a toy writes "Owner: @team" when the skill
holds that rule, unless it is `toy-stubborn` (never) or `toy-half` (only on even-numbered tasks).
`toy-contrary` writes the owner line without the rule, and with it pads the answer past the length
check. So `toy-a -> toy-b` gains 1.0, `toy-a -> toy-half` gains 0.5, `toy-a -> toy-stubborn` gains 0
and `toy-a -> toy-contrary` loses 1.0 (the learned skill hurts it).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from pytest_skilltransfer.evidence.item_record import ItemRecord

TOY_CONFTEST = '''
from pytest_skilltransfer.models.base import Reply, Usage, register_family

EDIT = '[{"op": "add", "content": "OWNER-LINE: end every answer with `Owner: @team`."}]'


class Toy:
    def __init__(self, name):
        self.name = self.model_id = name

    def complete(self, request):
        user = request.messages[0].content
        if "# Failing criteria (training tasks)" in user:
            text = EDIT
        else:
            text = "Routed: " + user.split()[-1]
            number = int(user.split()[-1])
            obeys = "OWNER-LINE" in request.system and self.name != "toy-stubborn"
            if self.name == "toy-contrary":
                text += " Owner: @team" + (" (see the owner line rule)" * 3 if obeys else "")
            elif obeys and (self.name != "toy-half" or number % 2 == 0):
                text += " Owner: @team"
        return Reply(text=text, usage=Usage(len(user) // 4, len(text) // 4), model=self.name)


register_family("toy", lambda name: name.startswith("toy-"), Toy, "toy-<name>: a test model")
'''

CHECKS = {"kind": "rule", "checks": [{"op": "contains", "arg": "Owner:"}, {"op": "max_chars", "arg": 80}]}


def make_seed(root: Path, name: str, thresholds: dict[str, float | str] | None = None, tasks: int = 4,
              expect: str | dict[str, str] | None = None, cluster_size: int = 0) -> Path:
    """A valid seed: 8 training tasks, `tasks` held-out tasks, optional [thresholds] and expect; with
    `cluster_size` k, held-out tasks 0..k-1 form cluster `topic-0`, the next k `topic-1`, and so on."""
    seed = root / name
    seed.mkdir(parents=True)
    (seed / "SKILL.md").write_text(f"# {name}\n\nRoute the ticket to a team.\n")
    line = lambda prefix, i, extra={}: json.dumps(  # noqa: E731
        {"task_id": f"{prefix}-{i:02d}", "task": f"Route ticket {i}", **extra, "judge": CHECKS})
    cluster = lambda i: {"cluster": f"topic-{i // cluster_size}"} if cluster_size else {}  # noqa: E731
    (seed / "benchmark.jsonl").write_text("\n".join(line("bm", i) for i in range(8)) + "\n")
    (seed / "held-out.jsonl").write_text("\n".join(line("hd", i, cluster(i)) for i in range(tasks)) + "\n")
    config = ""
    if isinstance(expect, str):
        config += f"expect = {json.dumps(expect)}\n"
    if thresholds:
        config += "[thresholds]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in thresholds.items())
    if isinstance(expect, dict):
        config += "[expect]\n" + "".join(f"{json.dumps(k)} = {json.dumps(v)}\n" for k, v in expect.items())
    if config:
        (seed / "seed.toml").write_text(config)
    return seed


def break_seed(root: Path, name: str) -> Path:
    """A seed whose held-out file has a malformed line 2."""
    seed = make_seed(root, name)
    with (seed / "held-out.jsonl").open("a") as handle:
        handle.write("{not json\n")
    return seed


DEFAULT_DESIGN = "skilltransfer_design = group-sequential\n"  # an ini line: the default held-out design, in `project`


def project(pytester: pytest.Pytester, ini: str = "", seeds: tuple[str, ...] = ("alpha", "beta")) -> Path:
    """A pytester project: toy conftest, an ini with the limits off, and seeds under seeds/.

    Its items are judged each alone at 95% (`skilltransfer_correction = none`) unless `ini` sets the
    correction: these projects test one item's gates; the run family's tests set `bonferroni`. Likewise they
    score every held-out task at once (`skilltransfer_design = fixed`) unless `ini` sets the design: the
    group-sequential design's tests set it."""
    pytester.makeconftest(TOY_CONFTEST)
    correction = "" if "skilltransfer_correction" in ini else "skilltransfer_correction = none\n"
    correction += "" if "skilltransfer_design" in ini else "skilltransfer_design = fixed\n"
    pytester.makeini("[pytest]\nskilltransfer_limit_replay = 0\nskilltransfer_limit_holdout = 0\n" + correction + ini)
    root = pytester.path / "seeds"
    for name in seeds:
        make_seed(root, name)
    return root


def outcomes(result: pytest.RunResult) -> dict[str, int]:
    return result.parseoutcomes()


PROJECT_SEEDS = Path(__file__).resolve().parent.parent / "seeds"


def copy_project_seed(root: Path, name: str) -> Path:
    """This repository's seed `name` copied under `root` (without its snapshots)."""
    return Path(shutil.copytree(PROJECT_SEEDS / name, root / name, ignore=shutil.ignore_patterns("__snapshots__")))


def loopback_project(pytester: pytest.Pytester, fake: Any, prices: str, **openai_models: str) -> None:
    """A project of toy models plus `small` (Anthropic wire, fake-small) and `large` (OpenAI wire, fake-large)
    served by the loopback `fake`, more OpenAI-wire models by name -> model id, and a prices table. Every held-out
    task is scored (the fixed design), as in `project`: these projects check calls and dollars."""
    pytester.makeconftest(TOY_CONFTEST)
    pytester.makeini("[pytest]\nskilltransfer_design = fixed\n")
    extra = "\n".join(f'{name} = "openai:{model}@{fake.openai_url}"' for name, model in openai_models.items())
    pytester.makepyprojecttoml(f'''
        [tool.skilltransfer.models]
        small = "anthropic:fake-small@{fake.anthropic_url}"
        large = "openai:fake-large@{fake.openai_url}"
        {extra}
        [tool.skilltransfer.prices]
        {prices}
    ''')


NO_GAIN = {"mean": 0.0, "ci_low": -1.0, "ci_high": 1.0, "n": 1, "p_value": 1.0}


def item_record(**fields: Any) -> "ItemRecord":
    """An item's record from the JSON keys a test cares about; the keys every record has (seed, pair, scores,
    gain) default to a neutral item."""
    from pytest_skilltransfer.evidence.item_record import ItemRecord

    return ItemRecord.from_json({"seed": "alpha", "source": "s", "target": "t", "baseline_target": 0.0,
                                 "transferred": 0.0, "gain": NO_GAIN, **fields})
