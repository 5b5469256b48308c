"""Replaying a recorded call without importing its SDK, and the check that keeps that exact.

The path of record for a provider call is the official SDK building the request and vcrpy matching
its bytes against the cassette. Importing the SDKs costs more CPU than replaying every recorded call
of the project's main job, so a call that can only be replayed may skip them when, and only when,
that changes nothing the path of record would decide:

- The request body is built by this package's wire code (`request_params`) in both paths; the SDK
  only serializes it. `verified_fingerprint` proves, for a model file, that the installed SDK turns
  every recorded body back into the same method, path and canonical body (it builds each request
  through a real client and stops it before it is sent) and returns the `fingerprint`
  of the versions that did so: the SDK's distribution and every distribution it requires. A body
  this process's SDK has just sent exactly as the wire gave it (`sent_bodies`, a recording) needs no
  second build: rebuilding it is the same call through the same SDK.
- The cassette index stores that fingerprint beside the rows it was checked against (`cassettes.index`).
  A replay answers a call without the SDK only when the model file's fingerprint is the installed
  one; the key it looks up is the canonical digest of the same body (`request_key`). So under that
  fingerprint the SDK would send exactly what is looked up, and the two paths find the same answer.
- Any other case (no fingerprint, another SDK or dependency version, a body the index lacks) takes
  the path of record, where a request the upgraded SDK builds differently is a cassette miss.

Only importlib.metadata is read here until a check runs; the SDKs are imported by `verified_fingerprint`.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from functools import lru_cache
from importlib import metadata
from typing import Any, Iterable
from urllib.parse import urlparse

from . import sent_bodies
from .aliases import Target
from .base import Request
from .wire import wire_named, wire_of_path

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*")


def provider_of_path(path: str) -> str | None:
    """The provider whose synchronous call goes to `path` (a recorded request's path), or None."""
    wire = wire_of_path(path)
    return wire.name if wire is not None else None


def request_path(provider: str, base_url: str | None, model_id: str = "") -> str:
    """The URL path of a call to `provider` at `base_url` (as the SDK joins them; see the tests)."""
    wire = wire_named(provider)
    return wire.call_path(urlparse(base_url or wire.default_base_url).path.rstrip("/"), model_id)


def fingerprint(provider: str) -> str | None:
    """The installed versions that decide the bytes `provider`'s wire sends: its SDK's distribution and the
    distributions it requires (not its extras), as `name==version` words; None when it is not installed or
    the wire has no SDK (its calls then always take the path of record)."""
    wire = wire_named(provider)
    return _sdk_fingerprint(wire.sdk) if wire.sdk else None


@lru_cache(maxsize=None)
def _sdk_fingerprint(sdk: str) -> str | None:
    try:
        dist = metadata.distribution(sdk)
    except metadata.PackageNotFoundError:
        return None
    words = [f"{sdk}=={dist.version}"]
    for requirement in dist.requires or []:
        if "extra" in requirement.partition(";")[2]:
            continue  # an optional extra: not what a plain install runs
        found = _NAME.match(requirement)
        if found is None:
            continue
        try:
            words.append(f"{found.group(0).lower()}=={metadata.version(found.group(0))}")
        except metadata.PackageNotFoundError:
            continue
    return " ".join([words[0], *sorted(set(words[1:]))])


def body_digest(body: Any) -> str:
    """SHA-256 of a JSON body's canonical text (the digest cassette matching compares)."""
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def request_body(target: Target, request: Request) -> dict[str, Any]:
    """The body the wire hands the SDK for `request` (under the current call policy)."""
    from .sdk_common import call_policy

    return wire_named(target.provider).request_params(target, request, call_policy())


def request_key(target: Target, request: Request) -> tuple[str, str, str]:
    """What the path of record would match for this call: (POST, path, canonical body digest)."""
    path = request_path(target.provider, target.base_url, target.model_id)
    return "POST", path, body_digest(request_body(target, request))


def verified_fingerprint(recorded: Iterable[tuple[str, bytes | dict[str, Any], str | None]]) -> str | None:
    """The fingerprint under which the installed SDK rebuilds every recorded request exactly, or None.

    `recorded` holds (URI, body bytes or parsed JSON, its `body_digest` or None when not known) of one
    model file's requests, all to one provider's synchronous
    endpoint. Each body goes through the wire's own route into a real SDK client, whose first request
    hook stops the request it built before any transport or recorder sees it; its method, path and
    canonical body must be the recorded ones, and the path must be `request_path` of the recorded base URL."""
    providers: set[str] = set()
    for uri, raw, digest in recorded:
        provider = _rebuilds(uri, raw, digest)
        if provider is None:
            return None
        providers.add(provider)
    return fingerprint(providers.pop()) if len(providers) == 1 else None


_CLIENTS: dict[tuple[str, str], Any] = {}  # capturing clients by (provider, base URL), made once
_CLIENTS_LOCK = threading.Lock()


def _rebuilds(uri: str, raw: bytes | dict[str, Any], digest: str | None = None) -> str | None:
    """The provider, when the SDK rebuilds this recorded request exactly; else None (`digest`: the body's
    `body_digest`, when known)."""
    from .sdk_common import REPLAY_KEY

    path = "/" + uri.split("://", 1)[-1].partition("/")[2].split("?")[0]
    wire = wire_of_path(path)
    if wire is None or wire.sdk is None:
        return None
    provider = wire.name
    try:
        body = raw if isinstance(raw, dict) else json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(body, dict):
        return None
    model_id = wire.model_of(path, body) or ""
    base = uri.split("?")[0][: -len(wire.call_path("", model_id))]
    if request_path(provider, base, model_id) != path:
        return None
    digest = digest or body_digest(body)
    if (provider, path, digest, fingerprint(provider)) in sent_bodies.NOTED:
        return provider
    with _CLIENTS_LOCK:
        client = _CLIENTS.get((provider, base))
        if client is None:
            client = _CLIENTS[(provider, base)] = _capturing_client(provider, base, REPLAY_KEY)
    sent = _build(client, provider, model_id, body)
    if sent is None or sent.method != "POST" or sent.url.path != path:
        return None
    try:
        return provider if body_digest(json.loads(sent.content)) == digest else None
    except (ValueError, UnicodeDecodeError):
        return None


class _Captured(Exception):
    """Raised by the request hook with the request the SDK built (so nothing is sent or retried)."""

    def __init__(self, request: Any) -> None:
        super().__init__("captured")
        self.request = request


def _capturing_client(provider: str, base: str, key: str) -> Any:
    from .sdk_common import call_policy

    def capture(request: Any) -> None:
        raise _Captured(request)

    return wire_named(provider).make_client(key, base, 0, 600.0, call_policy(), on_request=capture)


def _build(client: Any, provider: str, model_id: str, body: dict[str, Any]) -> Any:
    """The httpx request the wire's route makes the SDK build for `body`, or None."""
    from .sdk_common import call_policy

    try:
        wire_named(provider).send_body(client, model_id, body, call_policy())
    except Exception as err:  # noqa: BLE001 - the SDK wraps transport errors; the capture is in the chain
        seen: set[int] = set()
        while err is not None and id(err) not in seen:
            if isinstance(err, _Captured):
                return err.request
            seen.add(id(err))
            err = err.__cause__ or err.__context__  # type: ignore[assignment]
    return None


sent_bodies.register(lambda body: body_digest(body), lambda provider: fingerprint(provider))
