"""The anthropic and openai backends: names, wire formats, keys and errors, against the loopback fake."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from fake_provider import FakeProvider
from pytest_skilltransfer.cassettes import recording
from pytest_skilltransfer.models import aliases, sdk_common
from pytest_skilltransfer.models.aliases import Target, newest_claude_aliases, newest_gpt_aliases
from pytest_skilltransfer.models.base import Message, ModelCallError, ModelError, Request, ToolCall, ToolSpec
from pytest_skilltransfer.models.registry import resolve_model
from pytest_skilltransfer.models.providers import ProviderModel, build_model, configure_aliases, known_aliases
from pytest_skilltransfer.models.sdk_common import MissingAPIKey

SEARCH = ToolSpec("search", "Search the notes.", {"type": "object", "properties": {"query": {"type": "string"}}})


def ask(text: str, sample_id: int = 0, tools: tuple = ()) -> Request:
    return Request(system="Be brief.", messages=(Message("user", text),), tools=tools, max_tokens=50, sample_id=sample_id)


@pytest.fixture(autouse=True)
def _clean():
    yield
    configure_aliases({})


# --- names ---------------------------------------------------------------------------------------


def test_builtin_aliases_name_the_newest_ids_in_the_installed_sdks() -> None:
    table = known_aliases()
    assert table["haiku"] == "anthropic:claude-haiku-5-5"
    assert table["sonnet"] == "anthropic:claude-sonnet-5-5"
    assert table["opus"] == "anthropic:claude-opus-5-5"
    assert (table["luna"], table["sol"], table["astra"]) == ("openai:gpt-6-luna", "openai:gpt-6-sol", "openai:gpt-6-astra")
    model = build_model("sonnet")
    assert (model.name, model.model_id) == ("sonnet", "claude-sonnet-5-5")


def test_newest_rules() -> None:
    ids = ("claude-sonnet-5", "claude-sonnet-5-5", "claude-haiku-4-5-20251001", "claude-haiku-4-5", "claude-mythos-preview")
    assert newest_claude_aliases(ids) == {"haiku": "claude-haiku-4-5", "sonnet": "claude-sonnet-5-5"}
    gpt = ("gpt-5-mini", "gpt-6.2-sol", "gpt-6-sol", "gpt-6-luna", "gpt-4-turbo")
    assert newest_gpt_aliases(gpt) == {"luna": "gpt-6-luna", "sol": "gpt-6-sol"}


@pytest.mark.parametrize(
    ("name", "target"),
    [
        ("anthropic:claude-opus-4-5", Target("anthropic", "claude-opus-4-5")),
        ("openai:gpt-5.4", Target("openai", "gpt-5.4")),
        ("openai:smollm2-135m@http://127.0.0.1:8080/v1", Target("openai", "smollm2-135m", "http://127.0.0.1:8080/v1")),
        ("openai:llama3:8b@http://localhost:11434/v1", Target("openai", "llama3:8b", "http://localhost:11434/v1")),
        ("anthropic:local-claude@http://127.0.0.1:8080", Target("anthropic", "local-claude", "http://127.0.0.1:8080")),
        ("claude-haiku-4-5", Target("anthropic", "claude-haiku-4-5")),
        ("gpt-6.2-sol", Target("openai", "gpt-6.2-sol")),
    ],
)
def test_explicit_forms(name: str, target: Target) -> None:
    model = build_model(name)
    assert isinstance(model, ProviderModel) and model.target == target and model.model_id == target.model_id


def test_user_table_extends_and_overrides(fake_provider: FakeProvider) -> None:
    configure_aliases(
        {
            "haiku": "anthropic:claude-haiku-4-5",
            "cheap": f"openai:tiny@{fake_provider.openai_url}",
            "judge": {"provider": "anthropic", "model": "claude-opus-5", "api_key_env": "MY_JUDGE_KEY"},
            "fast": "haiku",
            "simulated": "sim-small",
        }
    )
    assert build_model("haiku").model_id == "claude-haiku-4-5"
    assert build_model("cheap").target.base_url == fake_provider.openai_url
    assert build_model("judge").target.key_variable == "MY_JUDGE_KEY"
    assert build_model("fast").model_id == "claude-haiku-4-5"
    assert resolve_model("simulated").model_id == resolve_model("sim-small").model_id
    assert build_model("cheap").complete(ask("hi")).text.startswith("fake answer")
    configure_aliases({})
    assert build_model("haiku").model_id == "claude-haiku-5-5"


def test_unknown_alias_lists_known_names() -> None:
    with pytest.raises(ModelError) as caught:
        resolve_model("hiaku")
    message = str(caught.value)
    assert "'hiaku'" in message and "haiku (claude-haiku-5-5)" in message and "openai:<model-id>" in message


def test_user_aliases_appear_in_the_known_list_and_bad_entries_are_rejected() -> None:
    configure_aliases({"mine": "openai:my-model@http://127.0.0.1:9/v1"})
    with pytest.raises(ModelError, match=r"mine \(my-model@http://127.0.0.1:9/v1\)"):
        resolve_model("nope")
    with pytest.raises(ModelError, match="use a name such as"):
        configure_aliases({"bad": 3})
    configure_aliases({"a": "b", "b": "a"})
    with pytest.raises(ModelError, match="alias loop"):
        build_model("a")
    configure_aliases({"dangling": "no-such-model"})
    with pytest.raises(ModelError, match="points to 'no-such-model'"):
        resolve_model("dangling")


def test_importing_providers_does_not_import_the_sdks() -> None:
    code = (
        "import sys; from pytest_skilltransfer.models.registry import resolve_model; "
        "m = resolve_model('haiku'); resolve_model('sol'); "
        "assert 'anthropic' not in sys.modules and 'openai' not in sys.modules and 'vcr' not in sys.modules, "
        "sorted(k for k in sys.modules if k.split('.')[0] in ('anthropic', 'openai', 'vcr'))"
    )
    root = Path(__file__).resolve().parents[2]
    subprocess.run([sys.executable, "-c", code], check=True, cwd=root)


FREEZE_CHECK = """
import gc, sys
from pytest_skilltransfer.models import sdk_common
{before}
sdk_common.make_client(("anthropic", "Anthropic"), "key-placeholder", "http://127.0.0.1:9", 0, 5.0)
frozen = gc.get_freeze_count()
young = gc.get_objects()
print(frozen, len(young))
"""


@pytest.mark.parametrize("imported_first", [False, True])
def test_the_objects_an_sdk_import_leaves_are_frozen_once(imported_first: bool) -> None:
    """Full collections would walk the SDK's long-lived objects again and again: its first import
    here moves them to the permanent generation; an SDK the process imported itself is left alone."""
    code = FREEZE_CHECK.format(before="import anthropic" if imported_first else "")
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", code], check=True, cwd=root, capture_output=True, text=True)
    frozen, tracked = map(int, done.stdout.split())
    if imported_first:
        assert frozen == 0
    else:
        assert frozen > 50_000 and tracked < frozen / 4, (frozen, tracked)


# --- wire formats --------------------------------------------------------------------------------


def test_sample_id_is_in_the_body_and_no_sampling_parameters_are_sent(fake_provider: FakeProvider) -> None:
    claude = build_model(f"anthropic:c@{fake_provider.anthropic_url}")
    gpt = build_model(f"openai:g@{fake_provider.openai_url}")
    a0, a1 = claude.complete(ask("x", 0)), claude.complete(ask("x", 1))
    g0, g1 = gpt.complete(ask("x", 0)), gpt.complete(ask("x", 1))
    assert a0.text != a1.text and g0.text != g1.text
    bodies = [r["body"] for r in fake_provider.received]
    assert [b["metadata"]["user_id"] for b in bodies[:2]] == ["skilltransfer-sample-0", "skilltransfer-sample-1"]
    assert [b["seed"] for b in bodies[2:]] == [0, 1]
    assert bodies[2]["max_tokens"] == 50 and "max_completion_tokens" not in bodies[2]  # compatible server
    for body in bodies:
        assert not {"temperature", "top_p", "top_k"} & body.keys()
    assert fake_provider.received[0]["headers"].get("Accept-Encoding") == "identity"


def test_official_endpoints_send_keys_and_openai_gets_max_completion_tokens(
    fake_provider: FakeProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "ant-test-key")
    monkeypatch.setenv("OPENAI_API_KEY", "oai-test-key")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_provider.anthropic_url)
    monkeypatch.setenv("OPENAI_BASE_URL", fake_provider.openai_url)
    fake_provider.accepted_keys = {"ant-test-key", "oai-test-key"}
    haiku, sol = build_model("haiku"), build_model("sol")
    assert haiku.complete(ask("hi")).model == "claude-haiku-5-5"
    assert sol.complete(ask("hi")).model == "gpt-6-sol"
    body = fake_provider.received[1]["body"]
    assert body["max_completion_tokens"] == 50 and "max_tokens" not in body


def test_tool_calls_round_trip_in_both_formats(fake_provider: FakeProvider) -> None:
    for spec in (f"anthropic:c@{fake_provider.anthropic_url}", f"openai:g@{fake_provider.openai_url}"):
        model = build_model(spec)
        first = model.complete(ask("bridge round advice", tools=(SEARCH,)))
        assert first.text == "" and len(first.tool_calls) == 1
        call = first.tool_calls[0]
        assert call.name == "search" and call.arguments == {"query": "bridge round advice"}
        follow = Request(
            system="Be brief.",
            messages=(
                Message("user", "bridge round advice"),
                Message("assistant", "", tool_calls=(call,)),
                Message("tool", '{"results": []}', tool_call_id=call.id),
            ),
            tools=(SEARCH,),
            max_tokens=50,
        )
        second = model.complete(follow)
        assert second.text.startswith("fake answer") and not second.tool_calls
    anthropic_body, openai_body = fake_provider.received[1]["body"], fake_provider.received[3]["body"]
    assert anthropic_body["tools"][0]["input_schema"] == SEARCH.parameters
    assert anthropic_body["messages"][1]["content"] == [
        {"type": "tool_use", "id": anthropic_body["messages"][1]["content"][0]["id"], "name": "search",
         "input": {"query": "bridge round advice"}}
    ]
    result = anthropic_body["messages"][2]
    assert result["role"] == "user" and result["content"][0]["type"] == "tool_result"
    assert result["content"][0]["tool_use_id"] == anthropic_body["messages"][1]["content"][0]["id"]
    assert openai_body["tools"][0]["function"]["parameters"] == SEARCH.parameters
    assert openai_body["messages"][2]["tool_calls"][0]["function"]["name"] == "search"
    assert openai_body["messages"][3] == {
        "role": "tool", "tool_call_id": openai_body["messages"][2]["tool_calls"][0]["id"], "content": '{"results": []}'
    }


def test_consecutive_tool_results_share_one_user_turn() -> None:
    from pytest_skilltransfer.models.anthropic_wire import wire_messages

    calls = (ToolCall("a", "search", {"query": "x"}), ToolCall("b", "search", {"query": "y"}))
    wire = wire_messages(
        (
            Message("user", "q"),
            Message("assistant", "thinking aloud", tool_calls=calls),
            Message("tool", "ra", tool_call_id="a"),
            Message("tool", "rb", tool_call_id="b"),
        )
    )
    assert [t["role"] for t in wire] == ["user", "assistant", "user"]
    assert [b["tool_use_id"] for b in wire[2]["content"]] == ["a", "b"]
    assert wire[1]["content"][0] == {"type": "text", "text": "thinking aloud"}


def test_usage_comes_from_the_provider(fake_provider: FakeProvider) -> None:
    reply = build_model(f"openai:g@{fake_provider.openai_url}").complete(ask("count me"))
    usage = fake_provider.received[0]["body"]
    assert reply.usage.input_tokens > 0 and reply.usage.output_tokens > 0 and usage["model"] == "g"
    assert reply.stop_reason == "stop"


# --- keys and errors -----------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "variable"), [("haiku", "ANTHROPIC_API_KEY"), ("sol", "OPENAI_API_KEY")])
def test_missing_key_while_recording_names_the_variable(tmp_path: Path, name: str, variable: str) -> None:
    model = build_model(name)
    started = time.monotonic()
    with recording(tmp_path, "seed", "once"):
        with pytest.raises(MissingAPIKey, match=variable) as caught:
            model.complete(ask("hi"))
    with pytest.raises(MissingAPIKey, match=f"{variable} is not set"):
        model.complete(ask("hi"))  # live call, no recording
    assert caught.value.variable == variable and "seed 'seed'" in str(caught.value)
    assert time.monotonic() - started < 5.0  # no request, no retry (a loaded machine still imports the SDK)


def test_local_servers_need_no_key(fake_provider: FakeProvider) -> None:
    assert build_model(f"openai:g@{fake_provider.openai_url}").complete(ask("hi")).text


def test_rejected_key_says_which_variable_to_check(fake_provider: FakeProvider, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_provider.accepted_keys = {"right"}
    monkeypatch.setenv("OPENAI_API_KEY", "wrong")
    with pytest.raises(ModelCallError, match=r"authentication failed .*HTTP 401.*check OPENAI_API_KEY"):
        build_model(f"openai:g@{fake_provider.openai_url}").complete(ask("hi"))


@pytest.mark.parametrize("spec_kind", ["anthropic", "openai"])
def test_retries_then_success_and_exhausted_rate_limits(fake_provider: FakeProvider, spec_kind: str) -> None:
    url = fake_provider.anthropic_url if spec_kind == "anthropic" else fake_provider.openai_url
    model = build_model(f"{spec_kind}:m@{url}")
    fake_provider.fail_next(529 if spec_kind == "anthropic" else 500, 429)
    assert model.complete(ask("eventually")).text.startswith("fake answer")
    fake_provider.fail_next(*[429] * 9)  # the default budget is 8 retries
    with pytest.raises(ModelCallError, match="rate limited .*HTTP 429.* after 8 retries"):
        model.complete(ask("never"))


def test_slow_reply_times_out_with_a_clear_error(fake_provider: FakeProvider) -> None:
    from pytest_skilltransfer.models.aliases import parse_explicit

    fake_provider.delay = 0.6
    target = parse_explicit(f"openai:slow@{fake_provider.openai_url}")
    model = ProviderModel("slow", target)
    sdk_common.configure_calls(sdk_common.CallPolicy(max_retries=1, backoff_s=0.001, timeout_s=0.2))
    with pytest.raises(ModelCallError, match="within 0.2s .*--provider-timeout"):
        model.complete(ask("slow"))


def test_unreachable_server_is_a_connection_error() -> None:
    with FakeProvider() as fake:
        url = fake.anthropic_url
    with pytest.raises(ModelCallError, match="could not connect to http://127.0.0.1"):
        build_model(f"anthropic:m@{url}").complete(ask("anyone?"))


def test_alias_module_reads_sdk_lists_without_importing_them() -> None:
    ids = aliases.sdk_model_ids()
    assert "claude-haiku-5-5" in ids["anthropic"] and "gpt-6-sol" in ids["openai"]
