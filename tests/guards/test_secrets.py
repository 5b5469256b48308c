"""No secret reaches a file or the terminal: token families, base-URL credentials, partial and base64 echoes.

Each finding is reproduced end to end where it was found: a recording through the real SDKs against
a loopback provider that echoes what it was sent, then a grep over every file the run wrote and
everything it printed.
"""

from __future__ import annotations

import base64
import random
import re
import string
from urllib.parse import quote
from pathlib import Path

import pytest
from faulty_provider import FaultyProvider
from plugin_support import project

from pytest_skilltransfer.cassettes import recording, scan_for_secrets
from pytest_skilltransfer.cassettes import store as cassette_store
from pytest_skilltransfer.models.base import Message, Request
from pytest_skilltransfer.models.providers import build_model
from pytest_skilltransfer.guards.redaction import find_secrets, redact_json, redact_text, strip_userinfo

PASSWORD = "Pw-" + "q8Z" * 6  # not token-shaped: only the URL makes it a secret
SAMPLES = {
    "GitHub token": ["ghp_" + "a1B2" * 9, "ghs_" + "Z9y8" * 9, "github_pat_11ABCDEFG0" + "x_Y7" * 15],
    "GitLab token": ["glpat-" + "Ab3_" * 5, "glrt-" + "k9" * 12, "GR1348941" + "z" * 20],
    "Slack token": ["xoxb-1234567890-0987654321-" + "aB3" * 8, "xoxp-12345-67890-abcdef12345",
                    "https://hooks.slack.com/services/T0000000/B0000000/" + "X" * 24],
    "AWS access key": ["AKIA" + "Q" * 16, "ASIA" + "7Z" * 8],
    "Google API key": ["AIza" + "Sy" * 17 + "A"],
    "JWT": ["eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"],
    "private key": ["-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA" + "x" * 64 + "\n-----END RSA PRIVATE KEY-----",
                    "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA"],
    "Stripe key": ["sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc"],
    "Hugging Face token": ["hf_" + "AbCdEfGhIjKlMnOpQrStUvWxYz01234567"],
    "Basic credential": ["Basic " + base64.b64encode(b"deploy:" + PASSWORD.encode()).decode()],
}
CASES = [(label, value) for label, values in SAMPLES.items() for value in values]


def ask(text: str) -> Request:
    return Request(system="You are terse.", messages=(Message("user", text),), max_tokens=64)


@pytest.mark.parametrize(("label", "value"), CASES, ids=[f"{label}-{i}" for i, (label, _) in enumerate(CASES)])
def test_every_token_family_is_redacted_and_found_by_the_scan(label: str, value: str) -> None:
    text = f"the provider said: {value} (end)"
    clean = redact_text(text)
    assert f"[redacted: {label}]" in clean and clean.endswith("(end)")
    assert value not in clean and value.split("\n")[0] not in clean
    assert redact_text(clean) == clean
    assert [what for _, what in find_secrets(text)] and find_secrets(clean) == []


def test_ordinary_words_are_left_alone() -> None:
    text = ("A basic understanding of the bearer instruments; the sk-learn docs; task-oriented summaries; "
            "contact ops@example.com or see https://example.com/a@b.")
    assert redact_text(text) == text


def test_detect_secrets_finds_nothing_the_table_misses() -> None:
    """The hand-kept table finds at least what the detect-secrets scanner's regex detectors find."""
    plugins = pytest.importorskip("detect_secrets.core.plugins.util")
    detectors = [cls() for name, cls in plugins.get_mapping_from_secret_type_to_class().items()
                 if "Entropy" not in cls.__name__ and "Keyword" not in cls.__name__ and "IP" not in name]
    for _, value in CASES:
        for line in value.splitlines()[:1]:
            flagged = [d.secret_type for d in detectors if list(d.analyze_string(line))]
            if flagged:
                assert find_secrets(line), (line, flagged)


@pytest.mark.parametrize("kept", [22, 12, 8])
def test_a_partial_echo_of_a_known_key_is_redacted(kept: int, monkeypatch: pytest.MonkeyPatch) -> None:
    key = "team-gw-" + "R4nd0mK3y" * 2 + "zQ"  # 28 characters, no provider's shape
    monkeypatch.setenv("OPENAI_API_KEY", key)
    echo = f"your key {key[3:3 + kept]}... is invalid"
    assert key[3:3 + kept] not in redact_text(echo)
    assert "[redacted: OPENAI_API_KEY (part)]" in redact_text(echo)


@pytest.mark.parametrize("prefix", ["", "a", "ab", "token="])
def test_a_base64_echo_of_a_known_key_is_redacted_at_every_alignment(prefix: str, monkeypatch: pytest.MonkeyPatch) -> None:
    key = "team-gw-" + "R4nd0mK3y" * 2 + "zQ"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    for encode in (base64.b64encode, base64.urlsafe_b64encode):
        encoded = encode((prefix + key).encode()).decode()
        clean = redact_text(f"echo {encoded} done")
        assert "(base64)]" in clean
        assert not re.search(r"[A-Za-z0-9+/_\-]{12,}", clean.replace("OPENAI_API_KEY", "")), clean


KEY_CHARACTERS = string.ascii_letters + string.digits + "-_.~+/:@%!$&="


def _encodings(run: str, rng: random.Random) -> str:
    """`run` in one of the forms a key travels in, seeded: raw, percent-encoded, or base64 (standard or
    URL-safe) after 0-6 characters of prefix (`user:` before a password), so at any of the 3 alignments."""
    form = rng.choice(("raw", "percent", "base64", "urlsafe"))
    if form == "raw":
        return run
    if form == "percent":
        return quote(run, safe="")
    prefix = "".join(rng.choice(string.ascii_lowercase + ":") for _ in range(rng.randrange(7)))
    encode = base64.b64encode if form == "base64" else base64.urlsafe_b64encode
    lead = -(-len(prefix.encode()) * 8 // 6)  # the characters the prefix's bits touch
    return encode((prefix + run).encode()).decode()[lead:]


def test_no_stretch_of_a_key_in_any_derived_form_survives_redaction_over_1000_random_keys() -> None:
    """1,000 seeded random keys, each with a random run of at least 16 of its characters at a random
    offset, written raw, percent-encoded or in base64 at a random alignment, cut short at a random
    length of at least 8 characters, amid words: no 8 characters of what was written survive."""
    rng = random.Random(20261206)
    for _ in range(1000):
        key = "".join(rng.choice(KEY_CHARACTERS) for _ in range(rng.randint(24, 64)))
        start = rng.randrange(len(key) - 15)
        run = key[start:rng.randint(start + 16, len(key))]
        written = _encodings(run, rng)
        written = written[:rng.randint(8, len(written))]
        text = f"the gateway said {written}= (and more) while a Basic {written[:12]} header echoed"
        clean = redact_text(text, environ={"OPENAI_API_KEY": key})
        survivors = [written[i:i + 8] for i in range(len(written) - 7) if written[i:i + 8] in clean]
        assert survivors == [], (key, run, written, clean)


@pytest.fixture
def own_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    """Secrets registered by the test are forgotten after it."""
    from pytest_skilltransfer.guards import redaction

    monkeypatch.setattr(redaction, "_registered", dict(redaction._registered))


@pytest.mark.parametrize("cut", [8, 11, 16, 23])
@pytest.mark.usefixtures("own_secrets")
def test_a_truncated_basic_credential_of_a_base_url_is_redacted(cut: int) -> None:
    from pytest_skilltransfer.models.aliases import register_url_credentials

    register_url_credentials(f"http://deploy:{PASSWORD}@127.0.0.1:9/v1")
    basic = base64.b64encode(f"deploy:{PASSWORD}".encode()).decode()[:cut]
    clean = redact_text(f"authorization: Basic {basic}")
    assert basic not in clean and "[redacted: base URL credentials (base64" in clean


def test_the_base64_of_a_key_stretch_at_an_unaligned_offset_is_redacted(monkeypatch: pytest.MonkeyPatch) -> None:
    key = "sk-proj-03-AUDITKEY1234567890abcdefXYZ"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    stretch = key[key.index("03-"):][:24]
    encoded = base64.b64encode(stretch.encode()).decode()
    assert key.index("03-") % 3 != 0
    for shown in (encoded, encoded[:10], base64.urlsafe_b64encode(stretch.encode()).decode()):
        assert shown not in redact_text(f"note: {shown}"), shown
    assert find_secrets(f"note: {encoded}") == [(1, "OPENAI_API_KEY (base64, part)")]


@pytest.mark.usefixtures("own_secrets")
def test_a_percent_encoded_password_is_redacted() -> None:
    from pytest_skilltransfer.models.aliases import register_url_credentials

    password = "p@ss/w0rd:Z+" + "x7" * 4
    register_url_credentials(f"http://deploy:{quote(password, safe='')}@127.0.0.1:9/v1")
    for shown in (quote(password, safe=""), quote(password, safe="").lower(), quote(password, safe="")[:14]):
        assert shown not in redact_text(f"?password={shown}&next"), shown


def test_a_body_is_screened_once_yet_redacted_as_each_string_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """Redacting a body and scanning a file look for each detector once over all their strings; what
    they find is what each string (each line) alone gives: a literal split across two strings is not
    joined, and a secret among many plain strings is still found."""
    key = "team-gw-" + "R4nd0mK3y" * 2 + "zQ"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    strings = ["plain words", "sk-an", "t-" + "a" * 30, "the key " + key[2:14], "Bearer", " abcdefghij0123456789",
               f"see http://deploy:{PASSWORD}@127.0.0.1/v1", SAMPLES["GitHub token"][0], "task-oriented", "ghp_", ""]
    body = {"messages": [{"content": text} for text in strings], strings[1]: {strings[3]: strings[7]}, "n": 3}
    expected = {"messages": [{"content": redact_text(text)} for text in strings],
                redact_text(strings[1]): {redact_text(strings[3]): redact_text(strings[7])}, "n": 3}
    assert redact_json(body) == expected
    assert redact_json(body) != body and redact_json(expected) == expected
    plain = {"messages": [{"role": "user", "content": "plain words, nothing else"}], "max_tokens": 64}
    assert redact_json(plain) is plain  # nothing to redact: no copy
    text = "\n".join(strings)
    assert find_secrets(text) == [(number, what) for number, line in enumerate(strings, start=1)
                                  for _, what in find_secrets(line)]
    assert {what for _, what in find_secrets(text)} == {"OPENAI_API_KEY (part)", "URL credentials",
                                                         "GitHub token"}


def test_url_userinfo_is_stripped_everywhere_text_goes() -> None:
    url = f"http://deploy:{PASSWORD}@127.0.0.1:8080/v1"
    assert strip_userinfo(f"openai:m@{url}") == "openai:m@http://127.0.0.1:8080/v1"
    assert redact_text(f"calling {url}/chat") == "calling http://127.0.0.1:8080/v1/chat"
    assert [what for _, what in find_secrets(f"uri: {url}")] == ["URL credentials"]


@pytest.mark.parametrize("protocol", ["openai", "anthropic"])
def test_a_base_url_password_and_its_basic_echo_never_reach_the_cassette(
        tmp_path: Path, faulty_provider: FaultyProvider, protocol: str) -> None:
    url = faulty_provider.openai_url if protocol == "openai" else faulty_provider.anthropic_url
    url = url.replace("http://", f"http://deploy:{PASSWORD}@")
    model = build_model(f"{protocol}:fp-url@{url}")
    faulty_provider.inject("echo-body", "echo-body")
    with recording(tmp_path, "seed", "once"):
        reply = model.complete(ask("Who am I?"))
    written = "".join(p.read_text() for p in tmp_path.rglob("*") if p.is_file())
    basic = base64.b64encode(f"deploy:{PASSWORD}".encode()).decode()
    assert PASSWORD not in written and basic not in written and PASSWORD not in reply.text
    assert "uri: http://127.0.0.1:" in written
    assert scan_for_secrets(tmp_path) == []
    with recording(tmp_path, "seed", "none"):
        assert model.complete(ask("Who am I?")) == reply


def test_a_written_file_holding_a_github_token_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "seed" / "m.yaml"
    with pytest.raises(cassette_store.SecretInCassette, match="line 2: GitHub token"):
        cassette_store.write_atomically(path, f"version: 2\nnote: {SAMPLES['GitHub token'][0]}\n")


def test_a_recording_run_writes_and_prints_no_secret(pytester: pytest.Pytester, faulty_provider: FaultyProvider,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The whole plugin: a base URL with a password, a provider echoing its Basic header and a partial key,
    a skill quoting the base64 of a stretch of the key at an unaligned offset and a cut-short Basic credential."""
    url = faulty_provider.openai_url.replace("http://", f"http://deploy:{PASSWORD}@")
    key = "sk-proj-03-AUDITKEY1234567890abcdefXYZ"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    project(pytester, ini="skilltransfer_nights = 1\nskilltransfer_no_direct = true\n", seeds=("alpha",))
    stretch = base64.b64encode(key[8:32].encode()).decode()
    cut_basic = base64.b64encode(f"deploy:{PASSWORD}".encode()).decode()[:14]
    skill = pytester.path / "seeds" / "alpha" / "SKILL.md"
    skill.write_text(skill.read_text() + f"Gateway notes: {stretch} and Basic {cut_basic}\n")
    faulty_provider.inject(*["echo-body"] * 400)
    pair = f"toy-a->openai:fp-url@{url}"
    result = pytester.runpytest_subprocess("--pair", pair, "--record-mode=once", "--snapshot-update", "-v",
                                           "--skilltransfer-json=r.json", "--skilltransfer-md=r.md",
                                           "--skilltransfer-html=r.html", "--junitxml=junit.xml", "-p", "no:randomly")
    assert faulty_provider.answered > 0
    printed = result.stdout.str() + result.stderr.str()
    basic = base64.b64encode(f"deploy:{PASSWORD}".encode()).decode()
    files = {p: p.read_bytes().decode("utf-8", "replace") for p in pytester.path.rglob("*") if p.is_file()}
    needles = (PASSWORD, basic, stretch, cut_basic, key[8:24])
    leaks = [(str(p), [n for n in needles if n in text]) for p, text in files.items()
             if any(needle in text for needle in needles) and p != skill]
    assert leaks == [] and not any(needle in printed for needle in needles)
    assert "transfer[toy-a->openai:fp-url@http://127.0.0.1:" in printed
    assert scan_for_secrets(pytester.path / "cassettes") == []
    assert any("uri: http://127.0.0.1:" in text for p, text in files.items() if p.suffix == ".yaml")


def test_no_file_a_recording_writes_holds_a_secret_of_any_listed_kind(
        pytester: pytest.Pytester, faulty_provider: FaultyProvider) -> None:
    """A seed whose skill and tasks hold one secret of every family, recorded against a provider that
    echoes its credential: a grep of every file the run wrote finds none of them."""
    url = faulty_provider.openai_url.replace("http://", f"http://deploy:{PASSWORD}@")
    project(pytester, ini="skilltransfer_nights = 1\nskilltransfer_no_direct = true\n", seeds=("alpha",))
    skill = pytester.path / "seeds" / "alpha" / "SKILL.md"
    leaked = [value.replace("\n", " ") for _, value in CASES if "PRIVATE KEY" not in value]
    skill.write_text(skill.read_text() + "Credentials for the deploy:\n" + "\n".join(leaked) + "\n"
                     + SAMPLES["private key"][0] + "\n")
    inputs = {p: p.stat().st_mtime_ns for p in pytester.path.rglob("*") if p.is_file()}
    faulty_provider.inject(*["echo-body"] * 400)
    result = pytester.runpytest_subprocess("--pair", f"toy-a->openai:fp-url@{url}", "--record-mode=once",
                                           "--snapshot-update", "--skilltransfer-json=r.json",
                                           "--skilltransfer-md=r.md", "--junitxml=junit.xml")
    written = [p for p in pytester.path.rglob("*") if p.is_file() and inputs.get(p) != p.stat().st_mtime_ns]
    assert any(p.suffix == ".yaml" and "cassettes" in p.parts for p in written), result.stdout.str()
    findings = {str(p.relative_to(pytester.path)): find_secrets(p.read_bytes().decode("utf-8", "replace"))
                for p in written}
    assert {p: f for p, f in findings.items() if f} == {}
    printed = result.stdout.str() + result.stderr.str()
    assert find_secrets(printed) == []
