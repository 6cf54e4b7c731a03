"""Deciding tool calls that wait, over real HTTP: the decision route is guarded like every change (the token, a
same-origin request), refuses bad or stale decisions with nothing written, and approval entries never show as
messages of their own (pages of a long log, the outline, the export, a message's full text)."""

from __future__ import annotations

from typing import Any

import httpx

from tests.web.test_approvals_browser import pay_call, payments, waiting_conversation
from threadline import AssistantMessage, UserMessage
from threadline.message_list import call_waits
from threadline.store import whole_tool_groups as whole_groups
from threadline.testing import ScriptedModel
from threadline.web.timeline import build_items

TOKEN = "s3cret-t0ken-value"


def _waiting(store: Any, **served_options: Any) -> tuple[Any, Any, list[Any]]:
    ran: list[Any] = []
    pay = payments(ran)
    model = ScriptedModel([AssistantMessage(tool_calls=[pay_call()]), "never asked"], name="scripted")
    conv = waiting_conversation(store, model, [pay], pay_call())
    return conv, pay, ran


def test_a_decision_needs_the_token_and_a_same_origin_request(sqlite_store, serve) -> None:
    conv, pay, ran = _waiting(sqlite_store)
    served = serve(sqlite_store, model=ScriptedModel([], name="scripted"), tools=[pay], token=TOKEN)
    sha = call_waits(sqlite_store.load(conv.id)).waiting[0].arguments_sha256
    form = {"call": "pay-1", "action": "approve", "sha256": sha}
    before = sqlite_store.load(conv.id).to_json()
    with httpx.Client(base_url=served.url, timeout=10) as http:
        no_token = http.post(f"/c/{conv.id}/calls", data=form, headers={"origin": served.url})
        assert no_token.status_code == 401
        assert TOKEN not in no_token.text
        wrong_token = http.post(
            f"/c/{conv.id}/calls", data=form, headers={"origin": served.url, "x-threadline-token": "wrong"}
        )
        assert wrong_token.status_code == 401
        no_origin = http.post(f"/c/{conv.id}/calls", data=form, headers={"x-threadline-token": TOKEN})
        assert no_origin.status_code == 403
        assert "Cross-origin" in no_origin.text
        other_site = http.post(
            f"/c/{conv.id}/calls",
            data=form,
            headers={"x-threadline-token": TOKEN, "origin": "http://evil.example"},
        )
        assert other_site.status_code == 403
        sandboxed = http.post(f"/c/{conv.id}/calls", data=form, headers={"x-threadline-token": TOKEN, "origin": "null"})
        assert sandboxed.status_code == 403
    assert sqlite_store.load(conv.id).to_json() == before
    assert ran == []


def test_bad_and_stale_decisions_are_refused_with_nothing_written(sqlite_store, serve) -> None:
    conv, pay, ran = _waiting(sqlite_store)
    served = serve(sqlite_store, model=ScriptedModel([], name="scripted"), tools=[pay])
    before = sqlite_store.load(conv.id).to_json()
    headers = {"origin": served.url, "accept": "application/json"}
    with httpx.Client(base_url=served.url, timeout=10) as http:

        def post(**form: str) -> httpx.Response:
            return http.post(f"/c/{conv.id}/calls", data=form, headers=headers)

        changed = post(call="pay-1", action="approve", sha256="0" * 64)
        assert changed.status_code == 409
        assert "not the ones this decision was made on" in changed.json()["error"]
        unknown = post(call="nope", action="deny")
        assert unknown.status_code == 409
        assert "does not wait" in unknown.json()["error"]
        wrong_kind = post(call="pay-1", action="result", content="done")
        assert wrong_kind.status_code == 409
        assert "approve or deny" in wrong_kind.json()["error"]
        assert post(call="pay-1", action="delete").status_code == 400
        assert post(action="approve").status_code == 400
        assert post(call="pay-1", action="deny", reason="x" * 5_000).status_code == 400
        # Without the page's script, a refusal is a page that says why.
        page = http.post(f"/c/{conv.id}/calls", data={"call": "nope", "action": "deny"}, headers={"origin": served.url})
        assert page.status_code == 409 and "Nothing was recorded" in page.text
        assert (
            http.post("/c/missing/calls", data={"call": "pay-1", "action": "deny"}, headers=headers).status_code == 404
        )
        # The exported page shows the wait, without the forms (it is read away from the viewer).
        export = http.get(f"/c/{conv.id}/export.html").text
        assert "awaiting approval" in export and "<form" not in export
    assert sqlite_store.load(conv.id).to_json() == before
    assert ran == []


def test_approval_entries_fold_into_their_call_everywhere(sqlite_store, serve) -> None:
    conv, pay, ran = _waiting(sqlite_store)
    from tests.web._data import off_loop
    from threadline import Conversation, ConversationConfig

    @off_loop
    def deny() -> None:
        Conversation.load(conv.id, sqlite_store, ConversationConfig(tools=[pay])).deny(
            "pay-1", by="bob", reason="<i>no</i>"
        )

    deny()
    log = list(sqlite_store.load(conv.id))
    assert [m.role for m in log] == ["user", "assistant", "approval", "approval", "tool"]
    items = build_items(log, list(range(len(log))))
    assert [item.kind for item in items] == ["user", "assistant"]
    view = items[1].tools[0]
    assert view.decision is not None and view.decision.by == "bob" and view.state == "error"
    assert items[1].holds(log[2].id) and items[1].holds(log[3].id)

    # A part of the log that starts at an approval entry is read back to its call.
    part = sqlite_store.read_tail(conv.id, 2)
    assert isinstance(part.messages[0], type(log[3]))
    whole = whole_groups(sqlite_store, conv.id, part)
    assert whole.messages[0].id == log[1].id

    served = serve(sqlite_store, model=ScriptedModel([], name="scripted"), tools=[pay])
    with httpx.Client(base_url=served.url, timeout=10) as http:
        older = http.get(f"/c/{conv.id}/messages", params={"before": 4}).json()["html"]
        assert 'data-kind="approval"' not in older and "role-approval" not in older
        timeline = http.get(f"/c/{conv.id}", params={"at": log[3].id}).text
        assert "denied by bob" in timeline and "&lt;i&gt;no&lt;/i&gt;" in timeline and "<i>no</i>" not in timeline
        assert "role-approval" not in timeline
        outline = http.get(f"/c/{conv.id}/outline").text
        assert "pay waits for approval: pay needs approval" in outline and "pay denied by bob" in outline
        export = http.get(f"/c/{conv.id}/export.html").text
        assert "denied by bob" in export and "<form" not in export
        full = http.get(f"/c/{conv.id}/full/{log[3].id}")
        assert full.status_code == 200 and "pay denied by bob" in full.text
        assert http.get(f"/c/{conv.id}/export.json").json()["version"] == "2.2"
    assert ran == []


def test_a_tail_decides_what_waits_not_the_whole_log(sqlite_store) -> None:
    from threadline.store import stored_awaiting as waiting_calls

    conv, _, _ = _waiting(sqlite_store)
    assert [call.call.id for call in waiting_calls(sqlite_store, conv.id)] == ["pay-1"]
    sqlite_store.append(conv.id, [UserMessage(content="Something else")])
    assert waiting_calls(sqlite_store, conv.id) == []  # the latest call group is past: nothing waits there
    assert waiting_calls(sqlite_store, sqlite_store.create_conversation(title="empty").id) == []
