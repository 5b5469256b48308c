"""The package's layering (docs/architecture.md): import-linter's layers contract from pyproject.toml, and no
import circle between modules (lazy imports included; `if TYPE_CHECKING:` imports excluded)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "pytest_skilltransfer"
LAYERS = ("commands", "plugin", "reports", "planning", "engine", "evidence", "cassettes", "models", "pricing",
          "guards")


def test_layers_contract_is_kept() -> None:
    lint = Path(sys.executable).with_name("lint-imports")
    done = subprocess.run([str(lint), "--no-cache"], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 kept, 0 broken" in done.stdout


def test_the_contract_names_every_folder_of_the_package() -> None:
    folders = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    assert folders == set(LAYERS)
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    listed = [line.strip().strip('",').removeprefix("pytest_skilltransfer.") for line in text.splitlines()
              if line.strip().startswith('"pytest_skilltransfer.')]
    assert tuple(listed) == LAYERS


def test_at_most_twelve_modules_at_the_package_root() -> None:
    assert len(list(PACKAGE.glob("*.py"))) <= 12


def _circles(graph: grimp.ImportGraph) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for imported in graph.find_modules_directly_imported_by(module):
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in on_stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == module:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for module in sorted(graph.modules):
        if module not in index:
            visit(module)
    return found


def test_no_import_circle() -> None:
    graph = grimp.build_graph("pytest_skilltransfer", cache_dir=None, exclude_type_checking_imports=True)
    assert _circles(graph) == []


def test_a_lower_layer_importing_a_higher_one_breaks_the_contract(tmp_path: Path) -> None:
    """The check can fail: a copy of the package where a guard imports the plugin is refused."""
    import shutil

    copy = tmp_path / "pytest_skilltransfer"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "guards" / "bounds.py").write_text(
        (copy / "guards" / "bounds.py").read_text(encoding="utf-8") + "\nfrom ..plugin import state  # noqa\n",
        encoding="utf-8")
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    lint = Path(sys.executable).with_name("lint-imports")
    done = subprocess.run([str(lint), "--no-cache"], cwd=tmp_path, capture_output=True, text=True,
                          env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"})
    assert done.returncode != 0
    assert "pytest_skilltransfer.guards.bounds -> pytest_skilltransfer.plugin.state" in done.stdout.replace("\n", " ")


def test_a_statistic_has_one_import_path_outside_evidence() -> None:
    """Outside `evidence/`, the statistics `evidence.stats` re-exports are imported through it, never from the
    module that defines them (one name, one path)."""
    graph = grimp.build_graph("pytest_skilltransfer", cache_dir=None, exclude_type_checking_imports=True)
    defined = {f"pytest_skilltransfer.evidence.{m}"
               for m in ("score_intervals", "gain_tests", "power", "gains", "family")}
    around = [(importer, imported) for imported in defined
              for importer in graph.find_modules_that_directly_import(imported)
              if not importer.startswith("pytest_skilltransfer.evidence.")]
    assert around == []
