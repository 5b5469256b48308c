"""Request bodies this process's SDK has just sent exactly as the wire gave them.

A recording call notes its body here (`note_sent`) when the request the SDK built carries `params`
unchanged; `fidelity.verified_fingerprint` then takes it as verified without building it again,
since rebuilding it is the same call through the same SDK. A note holds the SDK fingerprint it was
made under (`fidelity` registers how to compute it and the body digest), so another version never
finds it. Until `fidelity` is imported nothing is noted, and every body is built again.
"""

from __future__ import annotations

import json
from typing import Any, Callable

NOTED: set[tuple[str, str, str, str | None]] = set()  # (provider, path, body digest, SDK fingerprint)
_measures: list[tuple[Callable[[Any], str], Callable[[str], str | None]]] = []  # (body digest, fingerprint)


def register(digest: Callable[[Any], str], fingerprint: Callable[[str], str | None]) -> None:
    """How a body is digested and an SDK fingerprinted (`fidelity` calls this when imported)."""
    _measures[:] = [(digest, fingerprint)]


def note_sent(provider: str, params: dict[str, Any], response: Any) -> Any:
    """Note a call the installed SDK just sent (`response` is its httpx response) when the body it built is
    `params` exactly, and return `response`."""
    request = getattr(response, "request", None)
    if not _measures or request is None:
        return response
    digest, fingerprint = _measures[0]
    try:
        if request.method == "POST" and json.loads(request.content) == params:
            NOTED.add((provider, request.url.path, digest(params), fingerprint(provider)))
    except (TypeError, ValueError, UnicodeDecodeError, AttributeError):
        pass
    return response
