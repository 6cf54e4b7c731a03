"""Every route of the viewer over real HTTP (uvicorn on 127.0.0.1, httpx): status codes, what each answers, and a
10,000-message conversation that opens with a small first part and gives older parts on demand."""

from __future__ import annotations

import json
import re
import threading
import time

import httpx

from tests.web._data import get_weather, page_conversation, simple_conversation, weather_conversation
from threadline import AssistantMessage, MessageList, ModelError, ToolCall, ToolMessage, UserMessage, llm
from threadline._text import MAX_NESTING
from threadline.testing import ScriptedModel
from threadline.web.security import PAGE_CSP

ARTICLE = re.compile(r'<article class="msg[^"]*" id="m-([^"]+)" data-seq="(\d+)"')


def client(served, **options) -> httpx.Client:
    return httpx.Client(base_url=served.url, timeout=20, **options)


def post(http: httpx.Client, path: str, data: dict, **headers: str) -> httpx.Response:
    return http.post(
        path, data=data, headers={"origin": http.base_url.scheme + "://" + http.base_url.netloc.decode(), **headers}
    )


def test_read_routes_answer_with_the_right_status(sqlite_store, serve) -> None:
    conv = weather_conversation(sqlite_store)
    _, page_id = page_conversation(sqlite_store, "document.getElementById('out').textContent = 'ran'")
    served = serve(sqlite_store, model=ScriptedModel([]))
    with client(served) as http:
        home = http.get("/")
        assert home.status_code == 200 and "Weather in Paris and Rome?" in home.text
        assert "1 failure" in home.text and "openai:gpt-4o-mini" in home.text
        assert http.get("/?q=sunny").status_code == 200
        assert http.get("/?offset=abc").status_code == 400

        timeline = http.get(f"/c/{conv.id}")
        assert timeline.status_code == 200
        assert timeline.headers["content-security-policy"].startswith("default-src 'none'; script-src 'self'")
        assert timeline.headers["x-frame-options"] == "DENY"
        assert http.get("/c/no-such-conversation").status_code == 404
        assert http.get(f"/c/{conv.id}?at=no-such-message").status_code == 404
        assert http.get(f"/c/{conv.id}?before=x").status_code == 400
        assert http.get(f"/c/{conv.id}?before=3").status_code == 200

        part = http.get(f"/c/{conv.id}/messages", params={"before": 4})
        assert part.status_code == 200 and part.json()["first_seq"] == 0
        assert http.get(f"/c/{conv.id}/messages").status_code == 400  # neither before= nor after=
        assert http.get("/c/no-such-conversation/messages", params={"before": 4}).status_code == 404

        assert http.get(f"/c/{conv.id}/context").status_code == 200
        assert http.get(f"/c/{conv.id}/context", params={"mode": "agent"}).status_code == 200
        assert http.get(f"/c/{conv.id}/context", params={"mode": "bogus"}).status_code == 400
        assert http.get("/c/no-such-conversation/context").status_code == 404

        exported = http.get(f"/c/{conv.id}/export.json")
        assert exported.status_code == 200 and "attachment" in exported.headers["content-disposition"]
        assert MessageList.from_json(exported.text) == sqlite_store.load(conv.id)
        html = http.get(f"/c/{conv.id}/export.html")
        assert html.status_code == 200 and "<script" not in html.text.lower()
        assert "Rome was founded in 753 BC and" in html.text and "<style>" in html.text  # one self-contained file
        assert http.get("/c/no-such-conversation/export.json").status_code == 404

        generated = http.get(f"/p/{page_id}")
        assert generated.status_code == 200
        assert generated.headers["content-security-policy"] == PAGE_CSP
        assert "document.getElementById('out')" in generated.text
        missing = http.get("/p/no-such-page")
        assert missing.status_code == 404 and "Traceback" not in missing.text

        assert http.get("/static/viewer.css").status_code == 200
        assert http.get("/static/viewer.js").status_code == 200
        assert http.get("/no/such/route").status_code == 404
        assert http.delete(f"/c/{conv.id}", headers={"origin": served.url}).status_code == 405


def test_events_stream_messages_appended_by_another_writer(sqlite_store, serve, tmp_path) -> None:
    from threadline.store import open_store

    conv = simple_conversation(sqlite_store, "Hello?", "Hi.")
    served = serve(sqlite_store, model=ScriptedModel([]))
    last = sqlite_store.read_tail(conv.id, 1).last_seq
    other = open_store(f"sqlite:///{tmp_path / 'viewer.db'}")  # another connection, as another process has

    def append_later() -> None:
        time.sleep(0.5)
        other.append(conv.id, [UserMessage(content="written elsewhere")])

    writer = threading.Thread(target=append_later)
    with client(served) as http:
        assert http.get("/c/no-such-conversation/events").status_code == 404
        with http.stream("GET", f"/c/{conv.id}/events", params={"after": last}) as stream:
            assert stream.status_code == 200
            assert stream.headers["content-type"].startswith("text/event-stream")
            writer.start()
            started = time.monotonic()
            event = None
            for line in stream.iter_lines():
                if line.startswith("data:") and "written elsewhere" in line:
                    event = json.loads(line[5:])
                    break
                assert time.monotonic() - started < 10, "no event"
    writer.join()
    other.close()
    assert event is not None and event["role"] == "user" and event["seq"] == last + 1
    assert "written elsewhere" in event["html"]


def test_continue_runs_a_turn_and_refuses_bad_input(sqlite_store, serve) -> None:
    conv = simple_conversation(sqlite_store, "Hello?", "Hi.")
    release = threading.Event()

    async def slow_answer(request):
        import asyncio

        for _ in range(200):  # the turn runs in the server's event loop: wait without blocking it
            if release.is_set():
                break
            await asyncio.sleep(0.05)
        return "Done thinking."

    model = ScriptedModel([slow_answer], name="scripted")
    served = serve(sqlite_store, model=model)
    with client(served) as http:
        assert post(http, f"/c/{conv.id}/messages", {"text": "  "}).status_code == 400
        assert post(http, f"/c/{conv.id}/messages", {"text": "hi", "model": "other"}).status_code == 400
        assert post(http, "/c/no-such-conversation/messages", {"text": "hi"}).status_code == 404

        started = post(http, f"/c/{conv.id}/messages", {"text": "Think hard"}, accept="application/json")
        assert started.status_code == 202
        busy = post(http, f"/c/{conv.id}/messages", {"text": "Again"}, accept="application/json")
        assert busy.status_code == 409 and "busy" in busy.json()["error"]
        release.set()
        deadline = time.monotonic() + 10
        while sqlite_store.load(conv.id)[-1].content != "Done thinking.":
            assert time.monotonic() < deadline, "the turn did not finish"
            time.sleep(0.05)
        assert [m.content for m in sqlite_store.load(conv.id)] == ["Hello?", "Hi.", "Think hard", "Done thinking."]

        # A form post without script: the browser is sent back to the timeline.
        model.add("Second answer.")
        redirect = post(http, f"/c/{conv.id}/messages", {"text": "More"})
        assert redirect.status_code == 303 and redirect.headers["location"] == f"/c/{conv.id}"


def test_new_conversation_and_fork_redirect_to_what_they_made(sqlite_store, serve) -> None:
    conv = weather_conversation(sqlite_store)
    served = serve(sqlite_store, model=ScriptedModel(["A new answer."]))
    with client(served) as http:
        made = post(http, "/c", {"text": "A brand new question"})
        assert made.status_code == 303
        new_id = made.headers["location"].rsplit("/", 1)[1]
        assert sqlite_store.get_conversation(new_id).title == "A brand new question"

        at = sqlite_store.load(conv.id)[0].id
        forked = post(http, f"/c/{conv.id}/fork", {"at": at})
        assert forked.status_code == 303
        fork_id = forked.headers["location"].rsplit("/", 1)[1]
        assert [m.id for m in sqlite_store.load(fork_id)] == [at]
        assert post(http, f"/c/{conv.id}/fork", {"at": "no-such-message"}).status_code == 404
        assert post(http, f"/c/{conv.id}/fork", {}).status_code == 400
        assert f'href="/c/{fork_id}"' in http.get(f"/c/{conv.id}").text  # the origin links its fork
        assert f'href="/c/{conv.id}?at={at}"' in http.get(f"/c/{fork_id}").text  # and the fork its origin


def test_a_10000_message_conversation_opens_with_a_small_part_and_older_parts_on_demand(sqlite_store, serve) -> None:
    conv = sqlite_store.create_conversation("Very long")
    log = []
    for i in range(2_500):
        call = ToolCall(id=f"c{i}", name="lookup", arguments={"i": i})
        log += [
            UserMessage(content=f"question {i}"),
            AssistantMessage(tool_calls=[call]),
            ToolMessage(tool_call_id=f"c{i}", tool_name="lookup", content=f"result {i}"),
            AssistantMessage(content=f"answer {i}"),
        ]
    sqlite_store.append(conv.id, log)
    served = serve(sqlite_store, model=ScriptedModel([]))
    with client(served) as http:
        first = http.get(f"/c/{conv.id}")
        assert first.status_code == 200
        shown = ARTICLE.findall(first.text)
        assert 10 <= len(shown) <= 45  # the newest part only (tool results sit inside their call's item)
        assert shown[-1][0] == log[-1].id
        assert "answer 2499" in first.text and "answer 2400" not in first.text
        assert 'data-has-older="true"' in first.text
        assert len(first.content) < 100_000

        # Older parts, each on demand, continue exactly where the previous one began, down to the first message.
        seen_ids = [message_id for message_id, _ in shown]
        before = int(shown[0][1])
        for _ in range(3):
            part = http.get(f"/c/{conv.id}/messages", params={"before": before}).json()
            older = ARTICLE.findall(part["html"])
            assert older and int(older[-1][1]) < before and part["has_older"]
            seen_ids[:0] = [message_id for message_id, _ in older]
            before = part["first_seq"]
        shown_log = [m.id for m in log if not isinstance(m, ToolMessage)]
        assert seen_ids == shown_log[-len(seen_ids) :]

        # A message deep in the log opens around it (a search hit links there).
        deep = http.get(f"/c/{conv.id}", params={"at": log[4_000].id})
        assert deep.status_code == 200 and f'id="m-{log[4_000].id}"' in deep.text
        assert 'data-at-end="false"' in deep.text


def test_a_deleted_conversations_pages_are_no_longer_served(sqlite_store, serve) -> None:
    conv, page_id = page_conversation(sqlite_store, "document.getElementById('out').textContent = 'ran'")
    served = serve(sqlite_store, model=ScriptedModel([]))
    with client(served) as http:
        assert http.get(f"/p/{page_id}").status_code == 200
        sqlite_store.delete_conversation(conv.id)
        assert http.get(f"/p/{page_id}").status_code == 404
        assert http.get(f"/c/{conv.id}").status_code == 404


def test_dates_before_the_year_1000_show_four_digit_years(sqlite_store, serve) -> None:
    from datetime import UTC, datetime

    from threadline.store import ConversationInfo, ImportItem

    ancient = datetime(5, 3, 9, 14, 30, tzinfo=UTC)
    info = ConversationInfo(id="ancient", title="An old letter", created_at=ancient, updated_at=ancient)
    sqlite_store.import_conversations([ImportItem(info, [UserMessage(content="Greetings", created_at=ancient)])])
    served = serve(sqlite_store, model=ScriptedModel([]))
    shown = re.compile(r'<time [^>]*datetime="0005-03-09T14:30:00Z"[^>]*>0005-03-09 14:30 UTC</time>')
    with client(served) as http:
        assert len(shown.findall(http.get("/").text)) == 1  # the list's last activity
        timeline = http.get("/c/ancient").text
        assert len(shown.findall(timeline)) == 2  # the conversation's update and its message
        assert len(shown.findall(http.get("/c/ancient/export.html").text)) == 1


def test_out_of_range_numbers_in_the_query_are_a_clear_400(sqlite_store, serve) -> None:
    conv = simple_conversation(sqlite_store, "Hello?", "Hi.")
    served = serve(sqlite_store, model=ScriptedModel([]))
    huge = "9" * 25
    with httpx.Client(base_url=served.url, timeout=10) as http:
        for path, name in [
            ("/?offset=-1", "offset"),
            (f"/?offset={huge}", "offset"),
            (f"/?offset={2**63}", "offset"),
            (f"/c/{conv.id}?before={huge}", "before"),
            (f"/c/{conv.id}?before=-2", "before"),
            (f"/c/{conv.id}/messages?after={huge}", "after"),
            (f"/c/{conv.id}/messages?before={huge}", "before"),
            (f"/c/{conv.id}/events?after={huge}", "after"),
            (f"/c/{conv.id}/full/{conv.messages[0].id}?part={huge}", "part"),
        ]:
            answer = http.get(path)
            assert answer.status_code == 400, path
            assert f"{name} must be an integer from" in answer.text, path
            assert "failed" not in answer.text, path
        # The largest allowed values are read as such: nothing there, not a failure.
        assert http.get(f"/?offset={2**53 - 1}").status_code == 200
        assert http.get(f"/c/{conv.id}/messages?after={2**53 - 1}").json()["html"] == ""
        # A browser resuming a stream with an impossible Last-Event-ID starts from its after= instead of failing.
        with http.stream("GET", f"/c/{conv.id}/events?after=-1", headers={"last-event-id": huge}) as stream:
            assert stream.status_code == 200
            for line in stream.iter_lines():
                if line.startswith("data:"):
                    assert json.loads(line[5:])["seq"] >= 0
                    break


def test_arguments_at_the_nesting_limit_and_deeper_text_show_and_export(sqlite_store, serve) -> None:
    """A call whose arguments nest as deep as the log keeps (128 levels), and one whose argument text nests 100,000
    levels (kept as text), open in the viewer and export, whose rendering, search text and masking walk them."""
    deep: dict = {"leaf": "deepest-value"}
    for _ in range(MAX_NESTING - 2):
        deep = {"password": deep}
    text = '{"a":' * 100_000 + "1" + "}" * 100_000
    calls = [
        ToolCall(id="c1", name="get_weather", arguments={"city": deep}),
        ToolCall(id="c2", name="get_weather", raw_arguments=text),
    ]
    model = ScriptedModel([AssistantMessage(tool_calls=calls), "Which city, plainly?"])
    conversation = llm.model(model).tools(get_weather).store(sqlite_store).request("Weather?").prompt_conversation()
    assert conversation.continuation.prompt() == "Which city, plainly?"
    served = serve(sqlite_store, model=ScriptedModel([]))
    with client(served) as http:
        timeline = http.get(f"/c/{conversation.id}")
        assert timeline.status_code == 200 and "nested more than 128 levels deep" in timeline.text
        assert http.get("/", params={"q": "deepest-value"}).status_code == 200
        exported = http.get(f"/c/{conversation.id}/export.json")
        assert exported.status_code == 200
        assert MessageList.from_json(exported.text) == sqlite_store.load(conversation.id)
        assert http.get(f"/c/{conversation.id}/export.html").status_code == 200


class _UnreadableModelError(ModelError):
    """A custom model's own ModelError, whose message cannot be read: its __str__ raises SystemExit (issue 31)."""

    def __str__(self) -> str:
        raise SystemExit("from __str__")


def test_a_turn_failing_with_an_unreadable_error_says_so_on_the_page(sqlite_store, serve) -> None:
    conv = simple_conversation(sqlite_store, "Hello?", "Hi.")
    served = serve(sqlite_store, model=ScriptedModel([_UnreadableModelError("hidden")], name="scripted"))
    last = sqlite_store.read_tail(conv.id, 1).last_seq
    with client(served) as http, http.stream("GET", f"/c/{conv.id}/events", params={"after": last}) as stream:
        assert stream.status_code == 200
        started = post(http, f"/c/{conv.id}/messages", {"text": "Go"}, accept="application/json")
        assert started.status_code == 202
        ended = None
        kind = ""
        began = time.monotonic()
        for line in stream.iter_lines():
            if line.startswith("event:"):
                kind = line[6:].strip()
            elif line.startswith("data:") and kind == "turn" and json.loads(line[5:])["state"] != "running":
                ended = json.loads(line[5:])
                break
            assert time.monotonic() - began < 10, "the turn's end was never published"
    assert ended == {
        "state": "failed",
        "detail": "_UnreadableModelError (its message could not be read)",
    }
    failure = sqlite_store.load(conv.id)[-1]
    assert isinstance(failure, AssistantMessage) and failure.error is not None
