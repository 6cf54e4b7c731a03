"""Conversations the viewer tests show, made the way users make them: turns run on `ScriptedModel` with a store."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import wraps
from typing import Any, TypeVar

from threadline import AssistantMessage, Conversation, ModelError, ToolCall, ToolMessage, Usage, llm
from threadline.store import Store
from threadline.testing import ScriptedModel

F = TypeVar("F", bound=Callable[..., Any])


def off_loop(fn: F) -> F:
    """Run in a thread of its own: Playwright's sync API keeps an event loop running in the test's thread, where
    ``prompt()`` would hand back an awaitable instead of running the turn."""

    @wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with ThreadPoolExecutor(1) as pool:
            return pool.submit(fn, *args, **kwargs).result()

    return wrapper  # type: ignore[return-value]


def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"22 C and sunny in {city}"


def slow_lookup(topic: str) -> str:
    """Look a topic up (takes a moment, so a person watching sees the call before its result)."""
    time.sleep(0.6)
    return f"Notes on {topic}: it is old and well loved."


def gated_lookup(gate: threading.Event) -> Callable[[str], str]:
    """A lookup that answers once the test opens ``gate``, so the page is seen showing the call while it runs however
    slow the machine is; it gives up after 30 s, so a test that never opens the gate fails instead of hanging."""

    def slow_lookup(topic: str) -> str:
        """Look a topic up (takes a moment, so a person watching sees the call before its result)."""
        if not gate.wait(30):
            raise TimeoutError("the test never let the lookup finish")
        return f"Notes on {topic}: it is old and well loved."

    return slow_lookup


@off_loop
def weather_conversation(store: Store) -> Conversation:
    """A question, two tool calls with their results, an answer; then a failed call with partial output."""
    model = ScriptedModel(
        [
            AssistantMessage(
                tool_calls=[
                    ToolCall(id="w-paris", name="get_weather", arguments={"city": "Paris"}),
                    ToolCall(id="w-rome", name="get_weather", arguments={"city": "Rome"}),
                ],
                usage=Usage(input_tokens=412, output_tokens=38),
            ),
            AssistantMessage(
                content="Sunny in both Paris and Rome today.", usage=Usage(input_tokens=530, output_tokens=9)
            ),
            ModelError(
                "read timed out after 30 s", type="timeout", partial="Rome was founded in 753 BC and", retryable=True
            ),
        ],
        name="openai:gpt-4o-mini",
    )
    conv = llm.model(model).tools(get_weather).store(store).request("Weather in Paris and Rome?").prompt_conversation()
    conv.continuation.prompt()
    try:
        conv.continuation.request("And the history of Rome?").prompt()
    except ModelError:
        pass
    return conv


@off_loop
def simple_conversation(store: Store, question: str, answer: str, model: str = "scripted") -> Conversation:
    conv = llm.model(ScriptedModel([answer], name=model)).store(store).request(question).prompt_conversation()
    conv.continuation.prompt()
    return conv


@off_loop
def page_conversation(store: Store, js: str, html: str = "<p id=out>waiting</p>") -> tuple[Conversation, str]:
    """A conversation whose tool call made a generated page (as ``Pages.generate_ui`` answers)."""
    conv = simple_conversation(store, "Make me a page", "Here it is.")
    page = store.save_page("Probe", html, "body { font-family: sans-serif }", js, conversation_id=conv.id)
    result = {"success": True, "url": f"/p/{page.id}", "page_id": page.id, "generated_code": {"html": html}}
    conv.add(
        AssistantMessage(
            tool_calls=[ToolCall(id="ui-1", name="Pages.generate_ui", arguments={"title": "Probe", "html": html})]
        ),
        ToolMessage(tool_call_id="ui-1", tool_name="Pages.generate_ui", content=json.dumps(result), duration_ms=3.0),
    )
    return conv, page.id
