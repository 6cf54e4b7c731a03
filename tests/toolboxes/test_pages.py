"""`threadline.toolboxes.Pages`: the review loop (docs/architecture.md#toolboxes) (the model sees the code it published
and fixes it), the size limits, the instructions in the system prefix only while Pages is offered, and the tool-round
bound."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from threadline import AssistantMessage, Conversation, ToolCall, ToolMessage, Toolset, UserError, llm
from threadline.store import Store, open_store
from threadline.testing import ScriptedModel
from threadline.toolboxes import Pages
from threadline.toolboxes.pages import PAGE_LIMITS, PAGES_INSTRUCTIONS, page_url

BUGGY = {
    "title": "Lasagna",
    "html": '<button class="tab">Ingredients</button><button class="tab">Steps</button>'
    '<div id="ingredients">Pasta</div><div id="steps" hidden>Bake</div>',
    "css": ".tab { color: teal; }",
    "js": "function showTab(id) { document.getElementById(id).hidden = false; }",  # wired to nothing
}
FIXED = {
    "title": "Lasagna",
    "html": '<button class="tab" onclick="showTab(\'ingredients\')">Ingredients</button>'
    '<button class="tab" onclick="showTab(\'steps\')">Steps</button>'
    '<div id="ingredients">Pasta</div><div id="steps" hidden>Bake</div>',
    "css": ".tab { color: teal; }",
    "js": "function showTab(id) { for (const d of document.querySelectorAll('div')) d.hidden = d.id !== id; }",
}


@pytest.fixture
def store() -> Iterator[Store]:
    opened = open_store("memory://")
    yield opened
    opened.close()


def generate(arguments: dict[str, Any], id: str) -> AssistantMessage:
    return AssistantMessage(tool_calls=[ToolCall(id=id, name="Pages.generate_ui", arguments=arguments)])


def tool_results(messages: list[Any]) -> list[dict[str, Any]]:
    return [json.loads(m.content) for m in messages if isinstance(m, ToolMessage)]


def test_the_review_loop_sends_each_page_back_for_review(store: Store) -> None:
    model = ScriptedModel([generate(BUGGY, "c1"), generate(FIXED, "c2"), "Here is your page."])
    conversation = (
        llm.model(model)
        .store(store)
        .tools(Pages(store))
        .request("A lasagna recipe page with tabs")
        .prompt_conversation()
    )
    assert conversation.continuation.prompt() == "Here is your page."

    assert len(model.requests) == 3
    first_answer = tool_results(model.requests[1].messages)
    assert len(first_answer) == 1
    assert first_answer[0]["success"] is True
    assert first_answer[0]["generated_code"] == {k: BUGGY[k] for k in ("html", "css", "js")}
    # The third request carries both answers, the fixed page last.
    answers = tool_results(model.requests[2].messages)
    assert answers[0] == first_answer[0]
    assert answers[1]["generated_code"] == {k: FIXED[k] for k in ("html", "css", "js")}
    assert "onclick=\"showTab('steps')\"" in answers[1]["generated_code"]["html"]

    # Each answer names a saved page of this conversation, at the viewer's address.
    pages = store.list_pages(conversation.id)
    assert [page.id for page in pages] == [answers[0]["page_id"], answers[1]["page_id"]]
    assert pages[1].js == FIXED["js"] and pages[1].html == FIXED["html"]
    assert answers[1]["url"] == f"http://127.0.0.1:8765/p/{pages[1].id}"
    assert set(answers[1]) == {"success", "url", "page_id", "generated_code"}


def test_missing_css_and_js_come_back_as_empty_strings(store: Store) -> None:
    model = ScriptedModel([generate({"title": "Hi", "html": "<h1>Hi</h1>"}, "c1"), "Done."])
    llm.model(model).store(store).tools(Pages(store)).request("Say hi on a page").prompt()
    (answer,) = tool_results(model.requests[1].messages)
    assert answer["generated_code"] == {"html": "<h1>Hi</h1>", "css": "", "js": ""}


@pytest.mark.parametrize("part", ["html", "css", "js"])
def test_a_part_one_character_over_its_limit_is_refused_and_nothing_is_saved(store: Store, part: str) -> None:
    arguments = {"title": "Big", "html": "<p>ok</p>", part: "x" * (PAGE_LIMITS[part] + 1)}
    model = ScriptedModel([generate(arguments, "c1"), "Too big."])
    conversation = llm.model(model).store(store).tools(Pages(store)).request("A big page").prompt_conversation()
    conversation.continuation.prompt()

    (answer,) = tool_results(model.requests[1].messages)
    assert answer["success"] is False
    assert "generated_code" not in answer and "url" not in answer
    assert part in answer["error"] and f"{PAGE_LIMITS[part]:,}" in answer["error"]
    assert store.list_pages(conversation.id) == []


@pytest.mark.parametrize("part", ["html", "css", "js"])
def test_a_part_exactly_at_its_limit_is_saved(store: Store, part: str) -> None:
    pages = Pages(store)
    arguments = {"title": "Full", "html": "<p>ok</p>", part: "x" * PAGE_LIMITS[part]}
    answer = pages.generate_ui(**arguments, conversation_id="conv-1")
    assert answer["success"] is True
    assert len(store.get_page(answer["page_id"]).__getattribute__(part)) == PAGE_LIMITS[part]


def test_instructions_are_in_the_system_prefix_only_while_pages_is_offered(store: Store) -> None:
    model = ScriptedModel(["With pages.", "Without pages.", "Again with pages."])
    conversation = llm.model(model).store(store).tools(Pages(store)).request("Hello").prompt_conversation()
    conversation.continuation.prompt()
    conversation.apply_config_deltas({"tools": []})
    conversation.continuation.request("And now?").prompt()
    conversation.continuation.tools(Pages(store)).request("Once more").prompt()

    prefixes = [request.messages[0].content for request in model.requests]
    assert PAGES_INSTRUCTIONS in prefixes[0]
    assert "generated_code" in prefixes[0] and "every function you defined" in prefixes[0].lower()
    assert PAGES_INSTRUCTIONS not in prefixes[1]
    assert "generated_code" not in prefixes[1]
    assert PAGES_INSTRUCTIONS in prefixes[2]
    assert [request.tool_names for request in model.requests] == [["Pages.generate_ui"], [], ["Pages.generate_ui"]]


def test_max_tool_rounds_bounds_a_model_that_regenerates_forever(store: Store) -> None:
    def regenerate(request: Any) -> Any:
        if not request.tools:
            return "I give up polishing; here it is."
        return generate({"title": "Again", "html": f"<p>{len(request.messages)}</p>"}, f"c{len(request.messages)}")

    model = ScriptedModel([regenerate] * 10)
    conversation = (
        llm.model(model)
        .store(store)
        .tools(Pages(store))
        .max_tool_rounds(3)
        .request("Perfect page")
        .prompt_conversation()
    )
    assert conversation.continuation.prompt() == "I give up polishing; here it is."
    assert conversation.last_turn is not None and conversation.last_turn.stop_reason == "max_tool_rounds"
    assert len(model.requests) == 4
    assert model.requests[3].tools == []
    assert PAGES_INSTRUCTIONS not in model.requests[3].messages[0].content
    assert len(store.list_pages(conversation.id)) == 3


def test_pages_are_kept_per_conversation(store: Store) -> None:
    pages = Pages(store)
    ids = []
    for topic in ("cats", "dogs"):
        model = ScriptedModel([generate({"title": topic, "html": f"<h1>{topic}</h1>"}, "c1"), "ok"])
        conversation = llm.model(model).store(store).tools(pages).request(topic).prompt_conversation()
        conversation.continuation.prompt()
        ids.append(conversation.id)
    assert [page.title for page in store.list_pages(ids[0])] == ["cats"]
    assert [page.title for page in store.list_pages(ids[1])] == ["dogs"]


def test_a_reloaded_conversation_keeps_adding_to_its_pages(store: Store) -> None:
    pages = Pages(store)
    model = ScriptedModel([generate({"title": "v1", "html": "<p>1</p>"}, "c1"), "ok"])
    first = llm.model(model).store(store).tools(pages).request("page").prompt_conversation()
    first.continuation.prompt()
    again = Conversation.load(first.id, store)
    model2 = ScriptedModel([generate({"title": "v2", "html": "<p>2</p>"}, "c2"), "ok"])
    again.continuation.model(model2).tools(pages).request("better").prompt()
    assert [page.title for page in store.list_pages(first.id)] == ["v1", "v2"]


def test_the_url_base_comes_from_the_argument_or_the_environment(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    answer = Pages(store, base_url="https://pages.example/").generate_ui("T", "<p/>")
    assert answer["url"] == f"https://pages.example/p/{answer['page_id']}"
    monkeypatch.setenv("THREADLINE_PAGES_URL", "http://10.0.0.5:9000")
    answer = Pages(store).generate_ui("T", "<p/>")
    assert answer["url"] == f"http://10.0.0.5:9000/p/{answer['page_id']}"
    assert page_url("abc") == "http://10.0.0.5:9000/p/abc"


def test_pages_is_a_toolset_named_pages_with_one_described_tool(store: Store) -> None:
    pages = Pages(store)
    assert isinstance(pages, Toolset)
    assert pages.name == "Pages"
    assert pages.names() == ["Pages.generate_ui"]
    tool = pages["Pages.generate_ui"]
    assert "generated_code" in tool.description
    assert tool.parameters["required"] == ["title", "html"]
    assert set(tool.parameters["properties"]) == {"title", "html", "css", "js"}
    assert pages.instructions == PAGES_INSTRUCTIONS


def test_bad_arguments_are_an_error_result_and_save_nothing(store: Store) -> None:
    model = ScriptedModel(
        [AssistantMessage(tool_calls=[ToolCall(id="c1", name="Pages.generate_ui", arguments={"html": 5})]), "Sorry."]
    )
    conversation = llm.model(model).store(store).tools(Pages(store)).request("page").prompt_conversation()
    conversation.continuation.prompt()
    result = next(m for m in conversation.messages if isinstance(m, ToolMessage))
    assert result.is_error
    assert "title" in result.content and "html" in result.content
    assert store.list_pages(conversation.id) == []


def test_pages_needs_a_store() -> None:
    with pytest.raises(UserError, match="Pages needs a store"):
        Pages("sqlite:///x.db")  # type: ignore[arg-type]
