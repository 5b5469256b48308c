"""Whole lines to the person watching a run, from any thread, never inside a test's captured output.

On the controller (or the only process) a line goes through the terminal reporter with capture
suspended; on an xdist worker it goes to stderr as `[gwN] line`. One lock per writer keeps lines whole.
"""

from __future__ import annotations

import sys
import threading
from contextlib import nullcontext
from typing import Callable

import pytest

from ..guards.terminal import safe


def line_writer(config: pytest.Config) -> Callable[[str], None]:
    """A function that writes one line (terminal escapes made visible) where the run's person sees it."""
    lock = threading.Lock()

    def write(line: str) -> None:
        line = safe(line)
        capman = config.pluginmanager.getplugin("capturemanager")
        reporter = config.pluginmanager.getplugin("terminalreporter")
        with lock, capman.global_and_fixture_disabled() if capman else nullcontext():
            worker = getattr(config, "workerinput", None)
            if worker is not None or reporter is None:
                sys.stderr.write(f"[{worker['workerid']}] {line}\n" if worker else f"{line}\n")
                sys.stderr.flush()
            else:
                if reporter._tw.width_of_current_line:  # after progress dots or `[100%]`: a line of its own
                    reporter._tw.line()
                    reporter.currentfspath = None
                reporter.write_line(line)

    return write
