"""``threadline logs list`` and ``threadline logs show`` as a user runs them (subprocesses), on SQLite and
PostgreSQL."""

# The store fixtures are imported from tests.store._backends, so test parameters share their names.
# ruff: noqa: F811
from __future__ import annotations

import json
from pathlib import Path

from tests.store._backends import run_cli, store, store_url  # noqa: F401 - fixtures
from threadline import AssistantMessage, LLMError, MessageList, ModelError, Reasoning, ToolCall, UserMessage, llm, user
from threadline.store import Store, open_store
from threadline.testing import ScriptedModel


def get_weather(city: str) -> str:
    """Weather for a city."""
    return f"22 C in {city}"


def make_conversations(store: Store) -> tuple[str, str]:
    model = ScriptedModel(
        [
            AssistantMessage(tool_calls=[ToolCall(id="c1", name="get_weather", arguments={"city": "Paris"})]),
            "Sunny, 22 C.",
        ]
    )
    weather = llm.model(model).tools(get_weather).store(store).mode("agent").request("Weather in Paris?")
    first = weather.prompt_conversation()
    first.continuation.prompt()
    failing = ScriptedModel([ModelError("read timed out", type="timeout", partial="The capital of France is")])
    second = llm.model(failing).store(store).request("Capital of France? [not markup]").prompt_conversation()
    try:
        second.continuation.prompt()
    except ModelError:
        pass
    return first.id, second.id


def test_list_shows_a_table_of_conversations(store_url: str, store: Store) -> None:
    weather_id, capital_id = make_conversations(store)
    done = run_cli("logs", "list", "--store", store_url)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    for header in ("id", "title", "updated", "messages", "mode"):
        assert header in out
    rows = {
        line.split("│")[1].strip(): [c.strip() for c in line.split("│")[2:-1]]
        for line in out.splitlines()
        if line.count("│") >= 6
    }
    assert rows[weather_id][0] == "Weather in Paris?"
    # Tokens, cached tokens and cost: the scripted model reported no usage, so its cost is unknown, never $0.
    assert rows[weather_id][2:] == ["4", "agent", "0", "0", "unknown"]
    assert rows[capital_id][0] == "Capital of France? [not markup]"
    assert rows[capital_id][2:] == ["2", "", "", "", ""]  # a failed call that reported nothing spent nothing known
    # The most recently updated comes first.
    assert out.index(capital_id) < out.index(weather_id)


def test_list_json_and_paging(store_url: str, store: Store) -> None:
    weather_id, capital_id = make_conversations(store)
    done = run_cli("logs", "list", "--json", "--store", store_url)
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    assert [(r["id"], r["messages"], r["mode"]) for r in rows] == [(capital_id, 2, None), (weather_id, 4, "agent")]
    second = json.loads(run_cli("logs", "list", "--json", "-n", "1", "--offset", "1", "--store", store_url).stdout)
    assert [r["id"] for r in second] == [weather_id]


def test_show_groups_tool_calls_with_results_and_shows_failures(store_url: str, store: Store) -> None:
    weather_id, capital_id = make_conversations(store)
    done = run_cli("logs", "show", weather_id, "--store", store_url)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    call = next(i for i, line in enumerate(lines) if '→ get_weather({"city": "Paris"})' in line)
    assert "← 22 C in Paris" in lines[call + 1]  # the result sits right under its call, in the same box
    assert sum("22 C in Paris" in line for line in lines) == 1  # and is not shown a second time
    assert "Sunny, 22 C." in done.stdout
    assert "mode agent" in done.stdout

    failed = run_cli("logs", "show", capital_id, "--store", store_url)
    assert failed.returncode == 0, failed.stderr
    assert "The capital of France is" in failed.stdout  # the partial output
    assert "failed: timeout: read timed out" in failed.stdout
    assert "Capital of France? [not markup]" in failed.stdout


def test_show_json_is_the_stored_log(store_url: str, store: Store) -> None:
    weather_id, _ = make_conversations(store)
    done = run_cli("logs", "show", weather_id, "--json", "--store", store_url)
    assert done.returncode == 0, done.stderr
    assert MessageList.from_json(done.stdout) == store.load(weather_id)


def test_show_unknown_id_is_one_clear_line(store_url: str, store: Store) -> None:
    done = run_cli("logs", "show", "no-such-id", "--store", store_url)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [f"Error: no conversation 'no-such-id' in {store.url}"]
    assert "Traceback" not in done.stderr


def test_default_store_is_threadline_home(_isolated_home: Path) -> None:
    empty = run_cli("logs", "list")
    assert empty.returncode == 0, empty.stderr
    assert "No conversations" in empty.stdout
    with open_store() as default:
        info = default.create_conversation("In the default store")
    done = run_cli("logs", "list")
    assert info.id in done.stdout and "In the default store" in done.stdout
    assert (_isolated_home / "threadline.db").exists()


def test_threadline_store_environment_variable_chooses_the_store(store_url: str, store: Store) -> None:
    info = store.create_conversation("Chosen by environment")
    done = run_cli("logs", "list", env={"THREADLINE_STORE": store_url})
    assert done.returncode == 0, done.stderr
    assert info.id in done.stdout


def test_bad_store_url_is_one_clear_line() -> None:
    done = run_cli("logs", "list", "--store", "mysql://x/y")
    assert done.returncode == 2
    assert done.stderr.strip().startswith("Error: unknown store URL scheme 'mysql'")
    assert len(done.stderr.strip().splitlines()) == 1


def test_failed_model_call_is_listed_with_its_error(store_url: str, store: Store) -> None:
    info = store.create_conversation("Only a failure")
    store.append(info.id, [AssistantMessage(content="", error=LLMError(type="auth", message="bad key"))])
    done = run_cli("logs", "show", info.id, "--store", store_url)
    assert "failed: auth: bad key" in done.stdout and "(no partial output)" in done.stdout


def test_show_context_reports_what_the_next_request_keeps_and_drops(store_url: str, store: Store) -> None:
    info = store.create_conversation("Long")
    log = []
    for index in range(50):
        log += [UserMessage(content=f"question {index}"), AssistantMessage(content=f"answer {index}")]
    log.append(AssistantMessage(tool_calls=[ToolCall(id="dangling", name="get_weather", arguments={})]))
    store.append(info.id, log)
    done = run_cli("logs", "show", info.id, "--context", "--store", store_url)
    assert done.returncode == 0, done.stderr
    request = done.stdout[done.stdout.index("REQUEST the next turn would send") : done.stdout.index("REPORT")]
    # The exact request: the generated prefix in full, then the window of the log, then the repaired call.
    assert "[0] system (made by the context builder)" in request
    assert "MODE\n    - active: chat" in request
    assert "question 49" in request and "question 0\n" not in request
    assert "-> get_weather({})  id=dangling" in request
    assert "tool result for get_weather (dangling) error" in request and "interrupted" in request
    report = done.stdout[done.stdout.index("REPORT") :]
    kept = int(report.split("kept ")[1].split(" of ")[0])
    assert 0 < kept <= 80 and "of 101 messages" in report  # the default window is 80 messages
    assert "window ended by max_messages" in report
    assert f"({101 - kept} messages): budget:max_messages" in report
    assert f"dropped {log[0].id} … {log[100 - kept].id}" in report
    assert "1 unanswered tool call(s) answered 'interrupted' in the request only" in report

    # Another mode changes only the prefix; --json gives the request and the report to tools.
    done = run_cli("logs", "show", info.id, "--mode", "agent", "--json", "--store", store_url)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["request"][0]["content"].endswith(
        "- active: agent\n- note: history may include other modes; follow current instructions."
    )
    assert len(data["report"]["kept"]) == kept
    assert {d["reason"] for d in data["report"]["dropped"]} == {"budget:max_messages"}
    assert len(data["log"]["messages"]) == 101
    assert len(store.load(info.id)) == 101  # reporting changes nothing in the log


def test_dates_before_the_year_1000_show_four_digit_years(store_url: str, store: Store) -> None:
    from datetime import UTC, datetime

    from threadline.store import ConversationInfo, ImportItem

    ancient = datetime(5, 3, 9, 14, 30, tzinfo=UTC)
    info = ConversationInfo(id="ancient", title="An old letter", created_at=ancient, updated_at=ancient)
    store.import_conversations([ImportItem(info, [UserMessage(content="Greetings", created_at=ancient)])])
    env = {"TZ": "UTC"}
    listed = run_cli("logs", "list", "--store", store_url, env=env)
    assert listed.returncode == 0, listed.stderr
    assert "0005-03-09 14:30" in listed.stdout
    shown = run_cli("logs", "show", "ancient", "--store", store_url, env=env)
    assert shown.returncode == 0, shown.stderr
    assert "updated 0005-03-09 14:30" in shown.stdout


def test_failed_model_call_that_kept_thinking_says_the_thinking_is_there(store_url: str, store: Store) -> None:
    info = store.create_conversation("A failure mid-thought")
    cut = LLMError(type="connection", message="the connection broke")
    store.append(
        info.id,
        [
            user("Cut me"),
            AssistantMessage(
                content="", error=cut, reasoning=[Reasoning(text="partial thinking", provider="anthropic")]
            ),
        ],
    )
    shown = run_cli("logs", "show", info.id, "--show-reasoning", "--store", store_url)
    assert shown.returncode == 0, shown.stderr
    out = shown.stdout
    assert out.index("thinking · anthropic: partial thinking") < out.index("failed: connection: the connection broke")
    assert "(no partial answer; its thinking is above)" in out and "no partial output" not in out

    hidden = run_cli("logs", "show", info.id, "--store", store_url)
    assert hidden.returncode == 0, hidden.stderr
    assert "partial thinking" not in hidden.stdout
    assert "(no partial answer; its thinking is kept: --show-reasoning shows it)" in hidden.stdout
