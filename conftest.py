"""This repository's own extensions, through the plugin's hook (the worked example of the README's
"Extending it"): aliases for the default matrix, one extra judge op, one cassette scrubber."""

from __future__ import annotations

import json
from typing import Any


def starts_with(text: str, arg: str) -> bool:
    """The answer's first non-blank text begins with `arg`."""
    return text.lstrip().startswith(arg)


def drop_end_user_id(request: Any) -> Any:
    """Keep an end-user identifier (OpenAI's `user` field) out of recorded request bodies."""
    try:
        body = json.loads(request.body or b"")
    except (TypeError, ValueError):
        return request
    if isinstance(body, dict) and "user" in body:
        body.pop("user")
        request.body = json.dumps(body).encode()
    return request


def pytest_skilltransfer_configure(config, registry) -> None:
    registry.add_alias("cheap", "sim-small")  # pytest --source cheap --target expensive
    registry.add_alias("expensive", "sim-large")
    registry.add_judge_op("starts_with", starts_with, arg="string", description='starts with "{arg}"')
    registry.add_scrubbers(request=drop_end_user_id)
