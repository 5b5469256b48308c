"""`python -m pytest_skilltransfer doctor`: check a project before its first run, and say what to do.

Run from the project root. Each check prints `ok` or `problem` with the fix: option conflicts with
other pytest plugins, the configured models of the pairs, optimizer and judges (they resolve, they have
prices or are declared free), the API key variables
recording needs, the cassettes and their indexes, the models pinned in `models.lock`, the committed
snapshots of the configured matrix, and the local model server when a local model is configured.
Exit 0 when every check is ok, 1 otherwise.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any, Callable

Report = Callable[[bool | None, str], None]  # ok, a problem, or (None) a warning


def _ini(pyproject: Path) -> dict[str, Any]:
    if not pyproject.is_file():
        return {}
    return tomllib.loads(pyproject.read_text(encoding="utf-8")).get("tool", {})


def _names(value: Any) -> list[str]:
    items = value if isinstance(value, list) else str(value or "").split()
    return [name.strip() for item in items for name in str(item).split(",") if name.strip()]


def configured_pairs(tool: dict[str, Any]) -> list[tuple[str, str]]:
    """The ini matrix: source x target plus pairs, from [tool.pytest.ini_options]."""
    from ..engine.seed_data import split_pair

    ini = tool.get("pytest", {}).get("ini_options", {})
    sources, targets = _names(ini.get("skilltransfer_source")), _names(ini.get("skilltransfer_target"))
    pairs = {(s, t) for s in sources for t in targets}
    pairs |= {p for p in (split_pair(text) for text in _names(ini.get("skilltransfer_pair"))) if p}
    return sorted(pairs)


def seed_pairs(seeds_root: Path) -> dict[str, list[tuple[str, str]]]:
    """Each seed's own `pairs` (seed.toml) and the optimizer it names, as (model, model) pairs, by seed name."""
    from ..engine.seeds import discover_seeds
    from ..engine.seed_data import split_pair

    found: dict[str, list[tuple[str, str]]] = {}
    for seed in discover_seeds(seeds_root):
        try:
            config = tomllib.loads((seed / "seed.toml").read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
            continue  # no seed.toml, or a broken one: the run itself names the problem
        pairs = [p for p in (split_pair(t) for t in config.get("pairs", []) if isinstance(t, str)) if p]
        optimizer = config.get("optimizer")
        if isinstance(optimizer, str) and optimizer.strip():
            pairs += [(optimizer.strip(), optimizer.strip())]
        if pairs:
            found[seed.name] = pairs
    return found


# Plugins known to coexist with this one: their options take the short spellings, the `--transfer-` ones stay
COEXISTING = {"--shard-id": "pytest-shard", "--num-shards": "pytest-shard", "--record-mode": "pytest-recording"}


def check_plugins(report: Report) -> None:
    done = subprocess.run([sys.executable, "-m", "pytest", "--help", "-p", "no:cacheprovider"], capture_output=True,
                          text=True, timeout=120)
    taken = re.findall(r"(--[a-z-]+) is another plugin's here", " ".join(done.stdout.split()))
    known = [t for t in taken if t in COEXISTING]
    unknown = [t for t in taken if t not in COEXISTING]
    if done.returncode != 0:
        report(False, f"`pytest --help` fails: {(done.stderr or done.stdout).strip().splitlines()[-1:]}")
    elif taken:
        if known:
            owners = ", ".join(sorted({COEXISTING[t] for t in known}))
            report(None, f"{', '.join(known)} belong to {owners}, which coexists with this plugin: use this plugin's "
                   f"{', '.join('--transfer-' + t[2:] for t in known)} (the short spelling reaches {owners})")
        if unknown:
            report(False, f"{', '.join(unknown)} belong to another installed plugin: use this plugin's "
                   f"{', '.join('--transfer-' + t[2:] for t in unknown)} (the short spelling reaches the other plugin)")
    else:
        report(True, "options: every short spelling (--source, --shard-id, ...) is this plugin's here")


def configured_roles(tool: dict[str, Any], seeds: Path) -> dict[str, str]:
    """The optimizer and judges a run would call besides the pairs: name -> where it is configured
    ([tool.pytest.ini_options] skilltransfer_optimizer / skilltransfer_judge, each seed's [judge] model)."""
    ini = tool.get("pytest", {}).get("ini_options", {})
    roles = {str(ini[key]).strip(): key for key in ("skilltransfer_optimizer", "skilltransfer_judge")
             if str(ini.get(key) or "").strip()}
    for path in sorted(seeds.glob("*/seed.toml")) if seeds.is_dir() else []:
        try:
            model = tomllib.loads(path.read_text(encoding="utf-8")).get("judge", {}).get("model")
        except (OSError, tomllib.TOMLDecodeError, AttributeError):
            continue  # the seed's own check reports it
        if isinstance(model, str) and model.strip():
            roles.setdefault(model.strip(), f"{path} [judge] model")
    return roles


def check_models(pairs: list[tuple[str, str]], report: Report, roles: dict[str, str] | None = None) -> list[Any]:
    """Each model a configured pair, optimizer or judge would call resolves and has a price (or is
    declared free): an unpriced one cannot be counted by --plan and is refused by --max-cost."""
    from ..models.base import ModelError
    from ..models.registry import resolve_model
    from ..pricing.prices import price_fix, rates_of

    models = []
    if not pairs:
        report(False, "no model matrix: set skilltransfer_source / skilltransfer_target (or skilltransfer_pair) in "
               "[tool.pytest.ini_options], or pass --source and --target")
    where = {n: "" for pair in pairs for n in pair} | {n: f" ({w})" for n, w in (roles or {}).items()}
    for name in sorted(where):
        try:
            model = resolve_model(name)
        except ModelError as exc:
            report(False, f"model {name!r}{where[name]}: {str(exc).splitlines()[0]} "
                   "(python -m pytest_skilltransfer models lists them)")
            continue
        models.append(model)
        if rates_of(model.model_id) is None:
            report(False, f"model {name} ({model.model_id}){where[name]} has no price: --plan cannot count it and "
                   f"--max-cost refuses it; add {price_fix(model.model_id, 'standard')} to pyproject.toml (or, if it really "
                   "costs nothing, declare it `free = true` in [tool.skilltransfer.models])")
        else:
            report(True, f"model {name} -> {model.model_id}{where[name]}")
    return models


def check_keys(models: list[Any], report: Report) -> None:
    from ..models.providers import is_loopback_url

    needed: dict[str, list[str]] = {}
    for model in models:
        target = getattr(model, "target", None)
        if target is not None and not is_loopback_url(target.base_url or ""):
            needed.setdefault(target.key_variable, []).append(model.name)
    for variable, names in sorted(needed.items()):
        if os.environ.get(variable):
            report(True, f"{variable} is set (recording {', '.join(names)} can call the provider)")
        else:
            report(False, f"{variable} is not set: replay (CI=true) works without it; to record {', '.join(names)}, "
                   f"export {variable}=...")


def check_cassettes(cassette_dir: Path, report: Report) -> None:
    from ..cassettes.reindex import run as reindex

    if not cassette_dir.is_dir():
        report(True, f"no cassettes yet ({cassette_dir}/ appears on the first recording)")
        return
    output = io.StringIO()
    with contextlib.redirect_stdout(output), contextlib.redirect_stderr(output):
        code = reindex([cassette_dir], check=True, batches=False)
    summary = output.getvalue().strip().splitlines()
    if code == 0:
        report(True, f"cassettes: {summary[-1] if summary else 'readable'}")
    else:
        report(False, f"cassettes: {'; '.join(summary[-3:])} -> python -m pytest_skilltransfer index {cassette_dir}")
    from ..models.aliases import sdk_aliases
    from ..cassettes.model_lock import read_lock

    try:
        pins = read_lock(cassette_dir)
    except ValueError as exc:
        report(False, str(exc))
        return
    for alias, spec in sorted(pins.items()):
        newest = sdk_aliases().get(alias)
        if newest and newest != spec:
            report(True, f"{alias} is pinned to {spec} by {cassette_dir}/models.lock (the SDK's newest is {newest}; "
                   "delete the line and re-record to move)")


def check_batches(cassette_dir: Path, report: Report) -> None:
    """Batches of the manifest no run collected: they hold paid requests the next recording run collects."""
    from ..models.batch.manifest import FILE_NAME, Manifest, ManifestError, pending_text

    if not (cassette_dir / FILE_NAME).is_file():
        return
    try:
        text = pending_text(Manifest.open(cassette_dir))
    except ManifestError as exc:
        report(False, str(exc))
        return
    if text is not None:
        report(False, text)


def check_snapshots(seeds_root: Path, pairs: list[tuple[str, str]], report: Report) -> None:
    from ..engine.seeds import discover_seeds

    if not discover_seeds(seeds_root):
        report(False, f"no seeds under {seeds_root}/: python -m pytest_skilltransfer init {seeds_root}/my-skill writes one")
        return
    missing = [f"{seed.name}/__snapshots__/transfer[{s}_to_{t}].md" for seed in discover_seeds(seeds_root)
               for s, t in pairs if not (seed / "__snapshots__" / f"transfer[{s}_to_{t}].md").is_file()]
    if missing:
        report(False, f"{len(missing)} snapshot(s) missing, e.g. {missing[0]}: run pytest --snapshot-update once "
               "and commit them (the regression gate compares with them)")
    else:
        report(True, f"snapshots: every seed under {seeds_root} has one per configured pair")


def check_local(models: list[Any], report: Report) -> None:
    from ..models import local
    from ..models.aliases import local_aliases

    names = sorted({model.name for model in models if model.name in local_aliases()})
    if not names:
        return
    external = local.env_base_url()
    if external:
        status = local.health(external)
        report(status == "ok", f"{local.URL_ENV}={external} serves {', '.join(names)}" if status == "ok" else
               f"{local.URL_ENV}={external} does not answer /health ({status!r}): start that server, or unset "
               "the variable so --local-server=auto starts one")
    elif local.server_available():
        report(True, f"the local model server for {', '.join(names)} is installed (--local-server=auto starts it "
               "when a recording needs it)")
    else:
        report(False, f"{', '.join(names)} is configured but its server is not installed: replay (CI=true) works "
               f"without it; to record, run `{local.BUILD_HINT}` once (it compiles llama.cpp: {local.build_estimate()})")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m pytest_skilltransfer doctor", description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="seeds", help="the seeds folder (default: seeds)")
    parser.add_argument("--cassette-dir", default="cassettes", help="the cassette folder (default: cassettes)")
    args = parser.parse_args(argv)
    problems = 0

    def report(ok: bool | None, text: str) -> None:
        nonlocal problems
        problems += ok is False
        print(f"{'warning' if ok is None else 'ok     ' if ok else 'problem'}  {text}")

    try:
        tool = _ini(Path("pyproject.toml"))
    except tomllib.TOMLDecodeError as exc:
        print(f"problem  pyproject.toml: invalid TOML: {exc}")
        return 1
    from ..models.providers import configure_aliases
    from ..pricing.prices import configure_prices
    from ..cassettes.model_lock import apply_lock

    project = tool.get("skilltransfer", {})
    try:
        if project.get("prices"):
            configure_prices(project["prices"])
        configure_aliases(project.get("models") or {})
        apply_lock(Path(args.cassette_dir), project.get("models") or {})
    except ValueError as exc:
        report(False, str(exc))
    pairs = configured_pairs(tool)
    own = sorted({pair for seed in seed_pairs(Path(args.seeds)).values() for pair in seed})
    check_plugins(report)
    models = check_models(sorted(set(pairs) | set(own)) if pairs else pairs, report,
                          configured_roles(tool, Path(args.seeds)))
    check_keys(models, report)
    check_local(models, report)
    check_cassettes(Path(args.cassette_dir), report)
    check_batches(Path(args.cassette_dir), report)
    check_snapshots(Path(args.seeds), pairs, report)
    print(f"{problems} problem(s)" if problems else "everything is ready")
    return 1 if problems else 0
