"""A network guard: while active, leaving the machine (or, strictly, opening any socket) fails loudly.

`network_guard(allow_loopback=True)` blocks connects to non-loopback addresses and DNS lookups of
remote names; `allow_loopback=False` blocks every TCP/UDP connect. The patch is process-wide and
reference-counted, so nested or concurrent guards compose (the strictest active guard wins).
"""

from __future__ import annotations

import ipaddress
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

_LOCAL_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost", ""})


class NetworkBlocked(RuntimeError):
    """Raised by the guard when code tries to reach the network during a replay-only run."""


_lock = threading.Lock()
_active: list[bool] = []  # one entry per active guard: its allow_loopback flag
_originals: dict[str, Any] = {}


def _is_loopback(host: Any) -> bool:
    if isinstance(host, bytes):
        host = host.decode("ascii", "replace")
    if not isinstance(host, str):
        return False
    host = host.strip("[]").split("%", 1)[0].lower()
    if host in _LOCAL_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _allowed(address: Any, family: int) -> bool:
    with _lock:
        if not _active:
            return True
        loopback_ok = all(_active)
    if family == getattr(socket, "AF_UNIX", object()):
        return True
    host = address[0] if isinstance(address, tuple) and address else address
    return loopback_ok and _is_loopback(host)


def _message(what: str) -> str:
    with _lock:
        strict = not all(_active)
    scope = "any network connection" if strict else "connections that leave this machine"
    return (
        f"network guard: blocked {what}. This run replays recorded cassettes and forbids {scope}. "
        "A call that is not in the cassettes must be recorded first, e.g. "
        "`pytest --record-mode=new_episodes --snapshot-update -k <seed>` with ANTHROPIC_API_KEY or OPENAI_API_KEY "
        "set (the key of the model's provider)."
    )


def _guarded_connect(self: socket.socket, address: Any) -> Any:
    if not _allowed(address, self.family):
        raise NetworkBlocked(_message(f"a connection to {address!r}"))
    return _originals["connect"](self, address)


def _guarded_connect_ex(self: socket.socket, address: Any) -> Any:
    if not _allowed(address, self.family):
        raise NetworkBlocked(_message(f"a connection to {address!r}"))
    return _originals["connect_ex"](self, address)


def _guarded_getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
    with _lock:
        active = bool(_active)
    if active and host is not None and not _is_loopback(host):
        raise NetworkBlocked(_message(f"a DNS lookup of {host!r}"))
    return _originals["getaddrinfo"](host, *args, **kwargs)


def _install() -> None:
    _originals["connect"] = socket.socket.connect
    _originals["connect_ex"] = socket.socket.connect_ex
    _originals["getaddrinfo"] = socket.getaddrinfo
    socket.socket.connect = _guarded_connect  # type: ignore[method-assign]
    socket.socket.connect_ex = _guarded_connect_ex  # type: ignore[method-assign]
    socket.getaddrinfo = _guarded_getaddrinfo


def _uninstall() -> None:
    socket.socket.connect = _originals.pop("connect")  # type: ignore[method-assign]
    socket.socket.connect_ex = _originals.pop("connect_ex")  # type: ignore[method-assign]
    socket.getaddrinfo = _originals.pop("getaddrinfo")


@contextmanager
def network_guard(allow_loopback: bool = True) -> Iterator[None]:
    """Block network access for the duration (loopback stays reachable if `allow_loopback`)."""
    with _lock:
        if not _active:
            _install()
        _active.append(allow_loopback)
    try:
        yield
    finally:
        with _lock:
            _active.remove(allow_loopback)
            if not _active:
                _uninstall()
