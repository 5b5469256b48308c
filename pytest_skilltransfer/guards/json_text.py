"""JSON values embedded in model text (prose, code fences and all): what reply parsers look for."""

from __future__ import annotations

import json
import re
from typing import Any


def embedded_json(text: str, kind: type) -> list[Any]:
    """Every JSON array (`kind=list`) or object (`kind=dict`) that starts somewhere in `text`, in order."""
    decoder = json.JSONDecoder()
    opener = r"\[" if kind is list else r"\{"
    found = []
    for match in re.finditer(opener, text):
        try:
            value, _ = decoder.raw_decode(text, match.start())
        except json.JSONDecodeError:
            continue
        if isinstance(value, kind):
            found.append(value)
    return found
