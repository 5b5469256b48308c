"""The `search` tool the agent can call: keyword search over a seed's corpus folder.

The corpus is confined: pages are the `.md` files under the corpus folder, found without following
symlinked folders; every page must be a regular file resolving inside `inside` (the seed folder,
`confined`), and UTF-8. `corpus_pages` reports each problem instead of stopping at the first.

Each Markdown page is a document whose slug is its path below the corpus folder without `.md`
(for example `topics/whether-to-raise-a-bridge-round-or-cut-burn`). Results are rows carrying that
slug, so the qrels judge reads real retrieved slugs and nothing can be fabricated.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from ..guards.confined import ConfinementError, read_confined
from ..models.base import ToolSpec

SEARCH_TOOL = ToolSpec(
    name="search",
    description="Search the team's notes. Returns the best matching pages with their slugs and a snippet.",
    parameters={
        "type": "object",
        "properties": {"query": {"type": "string", "description": "keywords to look for"}},
        "required": ["query"],
    },
)
MAX_RESULTS = 5
_WORD = re.compile(r"[a-z0-9]+")
_STOPWORDS = frozenset("a an and are as at be by for from if in is it of on or should the to we whether with".split())


def _terms(text: str) -> list[str]:
    return [w for w in _WORD.findall(text.lower()) if w not in _STOPWORDS]


@dataclass(frozen=True)
class Page:
    """One corpus page."""

    slug: str
    title: str
    text: str


class CorpusError(ValueError):
    """The corpus breaks a rule; `problems` holds every (path, message)."""

    def __init__(self, problems: list[tuple[Path, str]]) -> None:
        self.problems = problems
        super().__init__("; ".join(f"{path}: {message}" for path, message in problems))


def is_inside(path: Path, folder: Path) -> bool:
    """Whether `path`, symlinks resolved, lies within `folder` (also resolved)."""
    try:
        path.resolve().relative_to(folder.resolve())
    except ValueError:
        return False
    return True


def decode_utf8(data: bytes) -> tuple[str | None, str]:
    """(text, "") or (None, why): the byte offset and line of the first byte that is not UTF-8."""
    try:
        return data.decode("utf-8"), ""
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        return None, f"is not UTF-8: byte 0x{data[err.start]:02x} at byte offset {err.start} (line {line}); save it as UTF-8"


def _markdown_files(folder: Path) -> list[Path]:
    found = []
    for current, dirs, files in os.walk(folder, followlinks=False):
        dirs.sort()
        found.extend(Path(current) / name for name in files if name.endswith(".md"))
    return sorted(found)


def corpus_pages(folder: Path, inside: Path, max_bytes: int | None = None) -> tuple[list[Page], list[tuple[Path, str]]]:
    """The pages of a corpus folder and every problem found (symlinks out, non-UTF-8, over `max_bytes` in all)."""
    pages: list[Page] = []
    problems: list[tuple[Path, str]] = []
    total = 0
    for path in _markdown_files(folder):
        try:
            data = read_confined(path, inside)
        except ConfinementError as err:
            problems.append((path, str(err)))
            continue
        except OSError as err:
            problems.append((path, f"cannot be read ({err.strerror or err})"))
            continue
        total += len(data)
        text, why = decode_utf8(data)
        if text is None:
            problems.append((path, why))
            continue
        slug = path.relative_to(folder).with_suffix("").as_posix()
        title = next((line.lstrip("# ").strip() for line in text.splitlines() if line.strip()), slug)
        pages.append(Page(slug=slug, title=title, text=text))
    if max_bytes is not None and total > max_bytes:
        problems.append((folder, f"the corpus holds {total} bytes of pages, over the limit of {max_bytes}"))
    return pages, problems


@lru_cache(maxsize=64)
def load_corpus(folder: Path, inside: Path | None = None) -> tuple[Page, ...]:
    """All Markdown pages under a folder, sorted by slug; CorpusError when any breaks the rules above."""
    pages, problems = corpus_pages(folder, inside or folder)
    if problems:
        raise CorpusError(problems)
    return tuple(pages)


def search(pages: tuple[Page, ...], query: str, limit: int = MAX_RESULTS) -> list[dict[str, str]]:
    """Rank pages by query-term overlap (title terms count double); ties break by slug."""
    wanted = set(_terms(query))
    scored = []
    for page in pages:
        title_terms, body_terms = set(_terms(page.title + " " + page.slug)), set(_terms(page.text))
        score = 2 * len(wanted & title_terms) + len(wanted & body_terms)
        if score:
            scored.append((-score, page.slug, page))
    scored.sort(key=lambda row: (row[0], row[1]))
    return [{"slug": p.slug, "title": p.title, "snippet": p.text.strip()[:200]} for _, _, p in scored[:limit]]


def run_tool(pages: tuple[Page, ...], name: str, arguments: dict) -> tuple[str, list[str], bool]:
    """Execute a tool call. Returns (result text for the model, slugs returned, success)."""
    if name != SEARCH_TOOL.name:
        return json.dumps({"error": f"unknown tool {name!r}; the only tool is 'search'"}), [], False
    query = arguments.get("query")
    if not isinstance(query, str) or not query.strip():
        return json.dumps({"error": "search needs a non-empty 'query' string"}), [], False
    rows = search(pages, query)
    return json.dumps({"results": rows}), [r["slug"] for r in rows], True
