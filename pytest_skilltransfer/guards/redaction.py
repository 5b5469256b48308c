"""Secrets out of everything the run writes or prints: known key values, their echoes, token-shaped strings.

What is a secret:

- the value of every key variable the run knows: each registered wire's (`models.wire`) and every
  `api_key_env` of the models table (`register_key_variables`), and every value registered with
  `register_secret` (the password of a base URL's userinfo, its `user:password` pair);
- an echo of such a value, in any form derived from it (`derived_forms`): the value itself, its
  percent-encodings (as a URL carries it) and its base64 (standard and URL-safe, at each of the three
  alignments, so it is found inside a longer encoded string such as a `Basic` credential); any
  stretch of at least `MIN_SECRET_LENGTH` characters of a form is an echo (a provider that masks part
  of a key still echoes the rest; the base64 of any run of the value, cut short at any length of 8
  encoded characters or more, is such a stretch of its base64 at one alignment);
- a string of a known token family (`TOKEN_PATTERNS`, one row per family with the shape its issuer
  documents: Anthropic, OpenAI, GitHub, GitLab, Slack, AWS, Google, Stripe, npm, PyPI, Hugging Face,
  SendGrid, JWTs, PEM private-key blocks, bearer and HTTP Basic credentials), or a truncated one:
  its marker followed by at least `MIN_SECRET_LENGTH` characters of its shape (a reply that cuts a
  token short still leaks most of it);
- the userinfo of a URL (`scheme://user:password@host`): stripped, the URL kept.

A secret becomes `[redacted: <what>]`, so a reviewer sees that something was there and what it
was, never its value. The table is hand-kept rather than a scanner library's: redaction must
replace the exact span (a whole PEM block, only the credential after `Basic `), run on every request
in microseconds, and stay deterministic; `tests/guards/test_secrets.py` checks it against detect-secrets'
detectors so it finds at least what that scanner finds.

A body or a file is screened once: the detectors are looked for over all its strings (lines)
together, and each string is then scanned only for the detectors that occur somewhere in it
(`_screen`), which finds exactly what scanning every string for every detector finds.

`redact_text` and `redact_json` are deterministic and idempotent, so a reply redacted when it is
recorded equals the same reply redacted again when its cassette is replayed. `find_secrets` is the
scanner that refuses to write a file still holding one.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
import threading
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Callable
from urllib.parse import quote, quote_plus

MIN_SECRET_LENGTH = 8  # shorter values (placeholders, "x") would redact ordinary words; also the shortest echo


def _basic_credential(value: str) -> bool:
    """Whether `value` is the base64 of `user:password` (so "Basic understanding" is left alone)."""
    try:
        decoded = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return False
    return b":" in decoded and decoded.isascii()


@dataclass(frozen=True)
class TokenPattern:
    """One token family: its name, its shape, the literals every match contains, and an optional check.

    The pattern runs only on text holding one of `needles` (in lower case when `fold`), so the
    table costs a few substring searches on text without tokens: one per first character of the
    needles (those sharing it are looked for together, by one pattern that starts with it).
    """

    label: str
    pattern: re.Pattern[str]
    needles: tuple[str, ...]
    fold: bool = False
    valid: Callable[[str], bool] | None = None
    probes: tuple[Callable[[str], Any], ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        groups: dict[str, list[str]] = {}
        for needle in self.needles:
            groups.setdefault(needle[0], []).append(needle)
        object.__setattr__(self, "probes", tuple(re.compile("|".join(map(re.escape, group))).search
                                                 for group in groups.values()))

    def occurs_in(self, haystack: str) -> bool:
        """Whether one of `needles` occurs in `haystack` (text already lower-cased when `fold`)."""
        return any(probe(haystack) for probe in self.probes)

    def spans(self, text: str, lowered: str | None = None) -> list[tuple[int, int]]:
        """Where this family occurs in `text` (the `secret` group's span when the pattern has one)."""
        haystack = (lowered if lowered is not None else text.lower()) if self.fold else text
        if not self.occurs_in(haystack):
            return []
        group = "secret" if "secret" in self.pattern.groupindex else 0
        return [match.span(group) for match in self.pattern.finditer(text)
                if self.valid is None or self.valid(match.group(group))]


_NOT_WORD = r"(?<![A-Za-z0-9_\-])"
_AWS_PREFIXES = ("AKIA", "ASIA", "ABIA", "ACCA", "AGPA", "AIDA", "AROA", "AIPA", "ANPA", "ANVA")
_GITLAB_PREFIXES = ("glpat", "gldt", "glft", "glsoat", "glrt", "glcbt", "glimt", "glptt", "glagent", "gloas", "glffct",
                    "glsa")
TOKEN_PATTERNS: tuple[TokenPattern, ...] = (
    TokenPattern("private key", re.compile(
        r"-----BEGIN[A-Z0-9 ]{0,40} PRIVATE KEY(?: BLOCK)?-----"
        r"(?:(?:(?!-----)[\s\S]){0,20000}-----END[A-Z0-9 ]{0,40} PRIVATE KEY(?: BLOCK)?-----|[A-Za-z0-9+/=\s\\]*)"),
        ("PRIVATE KEY",)),
    TokenPattern("Anthropic API key", re.compile(r"sk-ant-[A-Za-z0-9_\-]{8,}"), ("sk-ant-",)),
    TokenPattern("OpenAI-style API key", re.compile(_NOT_WORD + r"sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{8,}"),
                 ("sk-",)),
    TokenPattern("GitHub token", re.compile(_NOT_WORD + r"(?:gh[pousr]_[A-Za-z0-9_]{8,255}|github_pat_[A-Za-z0-9_]{8,255})"),
                 ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_")),
    TokenPattern("GitLab token", re.compile(
        _NOT_WORD + r"(?:(?:" + "|".join(_GITLAB_PREFIXES) + r")-[A-Za-z0-9_\-]{8,}|GR1348941[A-Za-z0-9_\-]{8,})"),
        tuple(p + "-" for p in _GITLAB_PREFIXES) + ("GR1348941",)),
    TokenPattern("Slack token", re.compile(r"xox[abposrce]-[A-Za-z0-9\-]{8,}|xapp-\d-[A-Za-z0-9\-]{8,}"
                                           r"|https://hooks\.slack\.com/(?:services|workflows)/[A-Za-z0-9_/]{20,}"),
                 ("xox", "xapp-", "hooks.slack.com")),
    TokenPattern("AWS access key", re.compile(r"(?<![A-Z0-9])(?:" + "|".join(_AWS_PREFIXES) + r")[0-9A-Z]{8,16}(?![A-Z0-9])"),
                 _AWS_PREFIXES),
    TokenPattern("AWS secret key", re.compile(r"(?i)aws_?secret_?(?:access_?)?key[\"']?\s*[:=]\s*[\"']?"
                                              r"(?P<secret>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])"), ("secret",), True),
    TokenPattern("Google API key", re.compile(_NOT_WORD + r"AIza[0-9A-Za-z_\-]{8,35}"), ("AIza",)),
    TokenPattern("Stripe key", re.compile(_NOT_WORD + r"(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{8,}"), ("k_live_", "k_test_")),
    TokenPattern("npm token", re.compile(_NOT_WORD + r"npm_[A-Za-z0-9]{8,36}"), ("npm_",)),
    TokenPattern("PyPI token", re.compile(r"pypi-AgE[A-Za-z0-9_\-]{8,}"), ("pypi-AgE",)),
    TokenPattern("Hugging Face token", re.compile(_NOT_WORD + r"hf_[A-Za-z0-9]{8,}"), ("hf_",)),
    TokenPattern("SendGrid key", re.compile(r"SG\.[A-Za-z0-9_\-]{22}(?:\.[A-Za-z0-9_\-]{1,43})?|SG\.[A-Za-z0-9_\-]{8,22}"), ("SG.",)),
    TokenPattern("JWT", re.compile(_NOT_WORD + r"eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*"), ("eyJ",)),
    TokenPattern("bearer token", re.compile(r"(?i)(?<=bearer )[A-Za-z0-9._\-]{16,}"), ("bearer ",), True),
    TokenPattern("Basic credential", re.compile(r"(?i)(?<=basic )[A-Za-z0-9+/]{8,}={0,2}"), ("basic ",), True,
                 _basic_credential),
)
URL_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]{0,20}://)[^\s/?#@\"'<>\\]+@(?=[^\s/?#@\"'<>\\]+)")
_PLACEHOLDER = re.compile(r"\[redacted: [^\]]*\]")

_variables: set[str] = set()  # each wire's key variables (`models.wire.register_wire`), a models table's
_registered: dict[str, str] = {}  # secret value -> what it is
_lock = threading.Lock()


def register_key_variables(names: list[str] | tuple[str, ...] | set[str]) -> None:
    """Also treat the values of these environment variables as secrets (e.g. a models table's `api_key_env`)."""
    with _lock:
        _variables.update(n for n in names if n)


def register_secret(value: str, what: str) -> None:
    """Also treat `value` as a secret, shown as `[redacted: what]` (e.g. a base URL's password)."""
    if len(value) >= MIN_SECRET_LENGTH:
        with _lock:
            _registered[value] = what


def key_variables() -> tuple[str, ...]:
    """Every variable whose value is a secret, sorted."""
    with _lock:
        return tuple(sorted(_variables))


def known_values(environ: dict[str, str] | None = None) -> list[tuple[str, str]]:
    """(what, value) for every known secret long enough to be one: key variables' values and registered values."""
    env = os.environ if environ is None else environ
    found = [(v, env[v]) for v in key_variables() if len(env.get(v, "").strip()) >= MIN_SECRET_LENGTH]
    with _lock:
        found += [(what, value) for value, what in _registered.items()]
    return sorted(found, key=lambda pair: (-len(pair[1]), pair[0]))  # longest first: a key holding another goes whole


def strip_userinfo(text: str) -> str:
    """`text` with the `user:password@` part of every URL removed (`http://u:p@host/` -> `http://host/`)."""
    return URL_USERINFO.sub(r"\1", text) if "@" in text else text


def _base64_cores(value: str) -> list[str]:
    """The stretches of base64 (standard and URL-safe) that `value` always produces, at each of the 3
    alignments: the characters no bit outside the value touches. The base64 of any run of the value,
    alone or inside a longer encoded string, holds such a stretch of one of them, bar a character at
    each end."""
    raw = value.encode("utf-8")
    cores = []
    for shift in range(3):
        encoded = base64.b64encode(b"\0" * shift + raw).decode("ascii").rstrip("=")
        start = (shift * 8 + 5) // 6  # the first character no padding bit touches
        end = ((shift + len(raw)) * 8) // 6  # past the last character fully determined by the value's bits
        core = encoded[start:end]
        if len(core) >= MIN_SECRET_LENGTH:
            cores += [core, core.replace("+", "-").replace("/", "_")]
    return sorted(set(cores), key=len, reverse=True)


_USERINFO_SAFE = "!$&'()*+,;=:"  # what a URL's userinfo may carry unencoded (RFC 3986)


def _percent_encodings(value: str) -> list[str]:
    """The ways a URL carries `value` percent-encoded (every reserved character encoded, the userinfo's
    sub-delimiters left, a form's `+` for a space; upper- and lower-case hex) other than `value` itself."""
    forms = {quote(value, safe=""), quote(value, safe=_USERINFO_SAFE), quote_plus(value, safe="")}
    forms |= {re.sub(r"%[0-9A-F]{2}", lambda m: m.group(0).lower(), form) for form in forms}
    return sorted(forms - {value})


def derived_forms(what: str, value: str) -> list[tuple[str, str]]:
    """(label, text) for every form a secret is redacted in: itself, its percent-encodings, its base64."""
    forms = [(what, value)]
    forms += [(f"{what} (percent-encoded)", form) for form in _percent_encodings(value)]
    forms += [(f"{what} (base64)", core) for core in _base64_cores(value)]
    return forms


@dataclass(frozen=True)
class _Matcher:
    """Finds every stretch of at least `MIN_SECRET_LENGTH` characters of a known value's derived forms.

    Built once per set of known values. Such a stretch lies in a run of the forms' own characters at
    least `MIN_SECRET_LENGTH` long, so only such runs are looked at, each position against the set of
    the forms' `MIN_SECRET_LENGTH`-character windows (one set lookup), and a hit is widened to the
    longest stretch of a form through it.
    """

    runs: re.Pattern[str]
    windows: dict[str, tuple[int, ...]]  # window -> the forms holding it (indexes into `forms`)
    halves: frozenset[str]  # every stretch of half a window's length in a form
    forms: tuple[tuple[str, str], ...]  # (label, text)

    def spans(self, text: str) -> list[tuple[int, int, str]]:
        """The leftmost stretch first, the next looked for after it. Every window holds a half-window
        starting at one of each `half` consecutive positions, so probing every `half`-th position for
        a half and, on a hit, the windows that could hold it, finds what probing every position finds."""
        found: list[tuple[int, int, str]] = []
        width, half, windows, halves = MIN_SECRET_LENGTH, MIN_SECRET_LENGTH // 2, self.windows, self.halves
        for run in self.runs.finditer(text):
            first, end = run.span()
            probe = first
            while probe + half <= end:
                if text[probe:probe + half] in halves:
                    for position in range(max(first, probe - half + 1), min(probe, end - width) + 1):
                        holders = windows.get(text[position:position + width])
                        if holders is not None:
                            hit = self._extend(text, position, holders)
                            found.append(hit)
                            first = probe = max(hit[1], position + 1)
                            break
                    else:
                        probe += half
                else:
                    probe += half
        return found

    def _extend(self, text: str, start: int, holders: tuple[int, ...]) -> tuple[int, int, str]:
        """The longest stretch of a form through `start` (where one of its windows begins)."""
        best = (start, start, "")
        piece = text[start:start + MIN_SECRET_LENGTH]
        for index in holders:
            what, value = self.forms[index]
            offset = value.find(piece)
            while offset >= 0:
                left, right = start, start + MIN_SECRET_LENGTH
                i, j = offset, offset + MIN_SECRET_LENGTH
                while left > 0 and i > 0 and text[left - 1] == value[i - 1]:
                    left, i = left - 1, i - 1
                while right < len(text) and j < len(value) and text[right] == value[j]:
                    right, j = right + 1, j + 1
                if right - left > best[1] - best[0]:
                    best = (left, right, what if j - i == len(value) else _part(what))
                offset = value.find(piece, offset + 1)
        return best


def _part(what: str) -> str:
    """The label of a stretch of a form: `KEY (part)`, `KEY (base64, part)`."""
    return f"{what[:-1]}, part)" if what.endswith(")") else f"{what} (part)"


@lru_cache(maxsize=16)
def _matcher(values: tuple[tuple[str, str], ...]) -> _Matcher:
    forms: list[tuple[str, str]] = []
    for what, value in values:
        forms += [form for form in derived_forms(what, value) if form[1] not in {f for _, f in forms}]
    windows: dict[str, list[int]] = {}
    for index, (_, form) in enumerate(forms):
        for i in range(len(form) - MIN_SECRET_LENGTH + 1):
            holders = windows.setdefault(form[i:i + MIN_SECRET_LENGTH], [])
            if not holders or holders[-1] != index:
                holders.append(index)
    characters = "".join(sorted({c for _, form in forms for c in form}))
    runs = re.compile(f"[{re.escape(characters)}]{{{MIN_SECRET_LENGTH},}}")
    half = MIN_SECRET_LENGTH // 2
    halves = frozenset(form[i:i + half] for _, form in forms for i in range(len(form) - half + 1))
    return _Matcher(runs, {window: tuple(holders) for window, holders in windows.items()}, halves, tuple(forms))


@dataclass(frozen=True)
class _Screen:
    """What could match anywhere in a batch of texts: the token families whose literals occur in one of
    them, and whether the known values could. Detectors left out find nothing in any text of the
    batch, so scanning each text with the rest alone gives the same spans (one pass over the batch
    instead of every family's literals searched in every string of a body)."""

    tokens: tuple[TokenPattern, ...]
    values: tuple[tuple[str, str], ...]

    @property
    def clean(self) -> bool:
        return not self.tokens and not self.values


_SEPARATOR = "\0"  # no literal, value or window of a detector holds it (checked for values)


def _screen(texts: list[str], values: tuple[tuple[str, str], ...]) -> _Screen:
    """The detectors that could match in one of `texts` (see `_Screen`).

    The texts are joined by a character no literal or derived form contains, so a literal or a stretch
    of a form occurs in the joined text exactly when it occurs in one of them (lower-casing is per
    character for the ASCII literals)."""
    joined = _SEPARATOR.join(texts)
    lowered = joined.lower()
    tokens = tuple(token for token in TOKEN_PATTERNS if token.occurs_in(lowered if token.fold else joined))
    if values and not any(_SEPARATOR in value for _, value in values):  # no form holds it then either
        if not _matcher(values).spans(joined):
            values = ()  # no stretch of a derived form in any text (none spans two: the separator is in no form)
    return _Screen(tokens, values)


def _secret_spans(text: str, values: tuple[tuple[str, str], ...],
                  tokens: tuple[TokenPattern, ...] = TOKEN_PATTERNS) -> list[tuple[int, int, str]]:
    """Every secret in `text` as (start, end, what), overlapping spans merged (the first label kept);
    `tokens` narrows the families looked for (those a `_Screen` left)."""
    spans: list[tuple[int, int, str]] = []
    if values:
        spans += _matcher(values).spans(text)
    lowered = text.lower() if any(token.fold for token in tokens) else text
    for token in tokens:
        spans += [(start, end, token.label) for start, end in token.spans(text, lowered)]
    merged: list[tuple[int, int, str]] = []
    for start, end, what in sorted(spans, key=lambda s: (s[0], -s[1])):
        if merged and start < merged[-1][1]:
            last = merged[-1]
            merged[-1] = (last[0], max(last[1], end), last[2])
        else:
            merged.append((start, end, what))
    return merged


def redact_text(text: str, environ: dict[str, str] | None = None) -> str:
    """`text` with URL userinfo stripped and every secret replaced by `[redacted: ...]`."""
    return _redact(text, tuple(known_values(environ))) if text else text


def _redact(text: str, values: tuple[tuple[str, str], ...], tokens: tuple[TokenPattern, ...] = TOKEN_PATTERNS) -> str:
    if not text:
        return text
    text = strip_userinfo(text)
    spans = _secret_spans(text, values, tokens)
    if not spans:
        return text
    parts, position = [], 0
    for start, end, what in spans:
        parts += [text[position:start], f"[redacted: {what}]"]
        position = end
    return "".join(parts) + text[position:]


def redact_json(data: Any, environ: dict[str, str] | None = None) -> Any:
    """Parsed JSON with every string (keys too) redacted: a copy when one held a secret, else `data`
    itself (the key values looked up once, the detectors screened once over all the strings)."""
    values = tuple(known_values(environ))
    strings: list[str] = []
    _strings(data, strings)
    stripped = [strip_userinfo(text) for text in strings]
    screen = _screen(stripped, values)
    if screen.clean and stripped == strings:
        return data
    return _redact_json(data, screen.values, screen.tokens)


def _strings(data: Any, found: list[str]) -> None:
    """Every string in parsed JSON (keys too), appended to `found`."""
    if isinstance(data, str):
        found.append(data)
    elif isinstance(data, list):
        for item in data:
            _strings(item, found)
    elif isinstance(data, dict):
        for key, value in data.items():
            if isinstance(key, str):
                found.append(key)
            _strings(value, found)


def _redact_json(data: Any, values: tuple[tuple[str, str], ...], tokens: tuple[TokenPattern, ...]) -> Any:
    if isinstance(data, str):
        return _redact(data, values, tokens)
    if isinstance(data, list):
        return [_redact_json(item, values, tokens) for item in data]
    if isinstance(data, dict):
        return {_redact(k, values, tokens) if isinstance(k, str) else k: _redact_json(v, values, tokens)
                for k, v in data.items()}
    return data


def find_secrets(text: str, environ: dict[str, str] | None = None) -> list[tuple[int, str]]:
    """(line number, what) for every secret left in `text`; empty when it is clean."""
    findings: list[tuple[int, str]] = []
    values = tuple(known_values(environ))
    lines = text.splitlines()
    bares = [_PLACEHOLDER.sub("", line) if "[redacted: " in line else line for line in lines] \
        if "[redacted: " in text else lines
    screen = _screen(bares, values)
    if screen.clean and "@" not in text:
        return findings  # no detector can match and no line holds a URL's userinfo
    for number, bare in enumerate(bares, start=1):
        if "@" in bare and strip_userinfo(bare) != bare:
            findings.append((number, "URL credentials"))
        if not screen.clean:
            spans = _secret_spans(bare, screen.values, screen.tokens)
            findings.extend((number, _describe(what)) for _, _, what in spans)
    return findings


def _describe(what: str) -> str:
    if what.isupper() and " " not in what:  # a variable name
        return f"the value of {what}"
    return what
