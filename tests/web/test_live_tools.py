"""A tool result that arrives live completes its call's group exactly as a reload shows it: the arguments with
their Copy button stay, and the output, status and duration join them."""

from __future__ import annotations

from playwright.sync_api import expect

from threadline import AssistantMessage, ToolCall, ToolMessage, UserMessage
from threadline.testing import ScriptedModel

GROUP = """(id) => {
  const group = document.getElementById('call-' + id);
  const slot = group.nextElementSibling;
  const data = Object.fromEntries(Object.entries(group.dataset).sort());
  data.ms = Number(data.ms);  // 42.0 in the page's HTML, 42 once the script has set it: one number
  return {
    cls: [...group.classList].sort().join(' '),
    data,
    summary: group.querySelector('summary').innerHTML,
    body: group.querySelector('.tool-body').outerHTML,
    slot: slot.innerHTML.trim(),
    end: group.closest('.msg').dataset.end,
  };
}"""


def test_a_live_tool_result_renders_as_after_a_reload(sqlite_store, serve, page) -> None:
    conv = sqlite_store.create_conversation(title="Weather")
    call = ToolCall(id="w1", name="get_weather", arguments={"city": "Paris", "unit": "celsius"})
    sqlite_store.append(conv.id, [UserMessage(content="Weather in Paris?"), AssistantMessage(tool_calls=[call])])
    served = serve(sqlite_store, model=ScriptedModel([]))

    page.goto(f"{served.url}/c/{conv.id}")
    expect(page.locator("#live-state")).to_have_text("live")
    expect(page.locator("#call-w1 .tool-status")).to_have_text("running…")
    sqlite_store.append(
        conv.id,
        [
            ToolMessage(tool_call_id="w1", tool_name="get_weather", content="18 °C, clear", duration_ms=42.0),
            AssistantMessage(content="It is 18 °C and clear."),
        ],
    )
    expect(page.locator("#items .msg").last).to_contain_text("It is 18 °C and clear.")
    group = page.locator("#call-w1")
    expect(group.locator(".tool-status")).to_have_text("ok")
    group.locator("summary").click()
    expect(group.locator("pre.arguments")).to_contain_text('"city": "Paris"')
    expect(group.locator(".label", has_text="Arguments").locator("button.copy")).to_be_visible()
    live = page.evaluate(GROUP, "w1")

    page.reload()
    expect(page.locator("#call-w1 .tool-status")).to_have_text("ok")
    assert page.evaluate(GROUP, "w1") == live
