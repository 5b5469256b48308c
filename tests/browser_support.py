"""Pages opened in a real headless browser: Debian's chromium, driven by Playwright, from file://."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any, Iterator

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
VIEWPORT = {"width": 1280, "height": 900}


def launched_browser() -> Iterator[Any]:
    """The browser for a module-scoped fixture; skips when chromium or Playwright is missing."""
    if CHROMIUM is None:  # .ci/run installs it, so CI always runs these
        pytest.skip("the browser tests need Debian's chromium: apt-get install chromium")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


def open_page(browser: Any, path: Path, javascript: bool) -> tuple[Any, Any, list[str]]:
    """The page loaded from file:// with every request it made recorded."""
    context = browser.new_context(java_script_enabled=javascript, viewport=VIEWPORT)
    page = context.new_page()
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    page.goto(path.as_uri())
    return context, page, requests
