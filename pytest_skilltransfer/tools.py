"""The `search` tool the agent can call: keyword search over a seed's corpus folder.

Each Markdown page is a document whose slug is its path below the corpus folder without `.md`
(for example `topics/whether-to-raise-a-bridge-round-or-cut-burn`). Results are rows carrying that
slug, so the qrels judge reads real retrieved slugs and nothing can be fabricated.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from .models.base import ToolSpec

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


@lru_cache(maxsize=64)
def load_corpus(folder: Path) -> tuple[Page, ...]:
    """All Markdown pages under a folder, sorted by slug."""
    pages = []
    for path in sorted(folder.rglob("*.md")):
        text = path.read_text(encoding="utf-8")
        slug = path.relative_to(folder).with_suffix("").as_posix()
        title = next((line.lstrip("# ").strip() for line in text.splitlines() if line.strip()), slug)
        pages.append(Page(slug=slug, title=title, text=text))
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
