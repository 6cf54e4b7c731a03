"""Secrets in recorded content (``include_content=True``): the value of a tool argument whose name says it is a secret
never reaches a span — not where the call is recorded (parsed arguments, or argument text that is not valid JSON),
not where anything else repeats it (the model's answer, another tool's arguments or result, a later request, the
turn's input and output, a sub-conversation's turn), not as a secret-named parameter's default in the tool
definitions — while ordinary content is recorded as written.

The spans are read from the SDK's in-memory exporter (conftest.py); the turns run on `ScriptedModel`."""

from __future__ import annotations

import json
from typing import Any

import pytest

from threadline import (
    AssistantMessage,
    Conversation,
    ConversationConfig,
    Tool,
    ToolCall,
    ToolMessage,
    UserMessage,
    agent_tool,
    llm,
    tool,
)
from threadline._text import MAX_NESTING
from threadline.generate import generate_text
from threadline.testing import ScriptedModel

from .conftest import Spans

SECRET = "hunter2-very-secret"


def attributes(span: Any) -> dict[str, Any]:
    return dict(span.attributes or {})


def login(user: str, password: str) -> str:
    """Log in."""
    return f"logged in as {user} with {password}"


def echo(text: str) -> str:
    """Echo a text."""
    return text


def call(id: str, name: str, **arguments: Any) -> ToolCall:
    return ToolCall(id=id, name=name, arguments=arguments)


def places(spans: Spans, needle: str) -> list[str]:
    """Every attribute, status description and event of every span that holds ``needle``."""
    found: list[str] = []
    for span in spans.all:
        found += [f"{span.name}: {key}" for key, value in attributes(span).items() if needle in str(value)]
        if needle in (span.status.description or ""):
            found.append(f"{span.name}: status")
        found += [f"{span.name}: {event.name}" for event in span.events if needle in str(dict(event.attributes or {}))]
    return found


@pytest.mark.parametrize(
    ("raw", "recorded"),
    [
        # cut off, as models sometimes send it
        ('{"user": "bob", "password": "' + SECRET + '"', '{"user": "bob", "password": "***"'),
        # cut off inside the value
        ('{"user": "bob", "password": "' + SECRET, '{"user": "bob", "password": "***'),
        # Python's quotes
        ("{'user': 'bob', 'password': '" + SECRET + "'}", "{'user': 'bob', 'password': '***'}"),
        # key=value
        (f"user=bob, password={SECRET}", "user=bob, password=***"),
        # an object under a secret-named key
        (
            '{"user": "bob", "credentials": {"kind": "basic", "value": "' + SECRET + '"}',
            '{"user": "bob", "credentials": ***',
        ),
    ],
    ids=["cut-after-value", "cut-inside-value", "python-quotes", "key-equals-value", "nested-object"],
)
def test_a_secret_in_arguments_that_are_not_json_is_masked_and_so_are_its_repeats(
    spans: Spans, raw: str, recorded: str
) -> None:
    spans.instrument(include_content=True)
    broken = AssistantMessage(tool_calls=[ToolCall(id="c1", name="login", arguments={}, raw_arguments=raw)])
    model = ScriptedModel([broken, AssistantMessage(tool_calls=[call("c2", "echo", text=f"pw={SECRET}")]), "Done."])
    llm.model(model).tools(login, echo).request("Log me in").prompt()

    assert places(spans, SECRET) == []
    tool = spans.one("execute_tool login")
    assert json.loads(attributes(tool)["gen_ai.tool.call.arguments"]) == recorded
    assert attributes(tool)["error.type"] == "invalid_arguments"
    assert "not valid JSON" in (tool.status.description or "")  # the failure says why, without the secret
    assert attributes(spans.one("execute_tool echo"))["gen_ai.tool.call.result"] == "pw=***"
    first = spans.named("chat scripted")[0]
    [part] = json.loads(attributes(first)["gen_ai.output.messages"])[0]["parts"]
    assert part["arguments"] == recorded
    assert "bob" in attributes(first)["gen_ai.output.messages"]  # the rest of the text is kept


def test_a_secret_repeated_in_the_answer_is_masked_in_the_chat_span_as_in_the_turn_span(spans: Spans) -> None:
    spans.instrument(include_content=True)
    model = ScriptedModel(
        [
            AssistantMessage(tool_calls=[call("c1", "login", user="bob", password=SECRET)]),
            f"Logged in as bob with password {SECRET}.",
        ]
    )
    llm.model(model).tools(login).request("Log me in").prompt()
    assert places(spans, SECRET) == []
    last = spans.named("chat scripted")[-1]
    assert json.loads(attributes(last)["gen_ai.output.messages"])[0]["parts"] == [
        {"type": "text", "content": "Logged in as bob with password ***."}
    ]
    turn = spans.one("invoke_agent threadline")
    assert json.loads(attributes(turn)["gen_ai.output.messages"])[0]["parts"] == [
        {"type": "text", "content": "Logged in as bob with password ***."}
    ]


def test_a_secret_repeated_by_another_call_of_the_same_answer_is_masked_everywhere(spans: Spans) -> None:
    spans.instrument(include_content=True)
    model = ScriptedModel(
        [
            AssistantMessage(
                tool_calls=[call("c1", "login", user="bob", password=SECRET), call("c2", "echo", text=f"pw={SECRET}")]
            ),
            "Done.",
        ]
    )
    llm.model(model).tools(login, echo).request("Log me in").prompt()
    assert places(spans, SECRET) == []
    tool = spans.one("execute_tool echo")
    assert json.loads(attributes(tool)["gen_ai.tool.call.arguments"]) == {"text": "pw=***"}
    assert attributes(tool)["gen_ai.tool.call.result"] == "pw=***"
    first, last = spans.named("chat scripted")
    answered = json.loads(attributes(first)["gen_ai.output.messages"])[0]["parts"]
    assert [part["arguments"] for part in answered] == [{"user": "bob", "password": "***"}, {"text": "pw=***"}]
    sent = json.loads(attributes(last)["gen_ai.input.messages"])
    assert [part["response"] for message in sent for part in message["parts"] if "response" in part] == [
        "logged in as bob with ***",
        "pw=***",
    ]


def test_a_secret_the_user_wrote_before_a_call_used_it_is_masked_in_the_spans_that_end_after(spans: Spans) -> None:
    spans.instrument(include_content=True)
    model = ScriptedModel([AssistantMessage(tool_calls=[call("c1", "login", user="bob", password=SECRET)]), "Done."])
    llm.model(model).tools(login).request(f"Log me in, my password is {SECRET}").prompt()
    assert places(spans, SECRET) == []
    first = spans.named("chat scripted")[0]
    assert json.loads(attributes(first)["gen_ai.input.messages"])[-1]["parts"] == [
        {"type": "text", "content": "Log me in, my password is ***"}
    ]
    turn = spans.one("invoke_agent threadline")
    assert json.loads(attributes(turn)["gen_ai.input.messages"])[-1]["parts"] == [
        {"type": "text", "content": "Log me in, my password is ***"}
    ]


async def test_a_turn_whose_input_answers_a_call_with_a_secret_masks_it_in_its_input(spans: Spans) -> None:
    spans.instrument(include_content=True)
    messages = [
        UserMessage(content="Log me in"),
        AssistantMessage(tool_calls=[call("c1", "login", user="bob", password=SECRET)]),
        ToolMessage(tool_call_id="c1", tool_name="login", content=f"logged in as bob with {SECRET}"),
    ]
    result = await generate_text(model=ScriptedModel(["Done."]), messages=messages, tools=[login])
    assert result.text == "Done."
    assert places(spans, SECRET) == []
    turn = spans.one("invoke_agent threadline")
    assert json.loads(attributes(turn)["gen_ai.input.messages"]) == [
        {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1", "response": "logged in as bob with ***"}]}
    ]


def test_a_later_turn_masks_a_secret_of_an_earlier_turns_call(spans: Spans) -> None:
    spans.instrument(include_content=True)
    model = ScriptedModel(
        [
            AssistantMessage(tool_calls=[call("c1", "login", user="bob", password=SECRET)]),
            "Logged in.",
            f"Your password was {SECRET}.",
        ]
    )
    conversation = Conversation(config=ConversationConfig(model=model, tools=[login]))
    conversation.add(UserMessage(content="Log me in"))
    conversation.run_sync()
    conversation.add(UserMessage(content=f"Was my password {SECRET}?"))
    conversation.run_sync()
    assert places(spans, SECRET) == []
    _, second = spans.named("invoke_agent threadline")
    assert json.loads(attributes(second)["gen_ai.input.messages"])[-1]["parts"] == [
        {"type": "text", "content": "Was my password ***?"}
    ]
    assert json.loads(attributes(second)["gen_ai.output.messages"])[0]["parts"] == [
        {"type": "text", "content": "Your password was ***."}
    ]


def test_a_sub_conversation_masks_the_secrets_of_the_turn_that_called_it(spans: Spans) -> None:
    spans.instrument(include_content=True)
    helper = llm.model(ScriptedModel([f"Checked the account of bob ({SECRET})."]))
    check = agent_tool(helper, "check_account", "Check an account.")
    parent = ScriptedModel(
        [
            AssistantMessage(tool_calls=[call("p1", "login", user="bob", password=SECRET)]),
            AssistantMessage(tool_calls=[call("p2", "check_account", task=f"Check bob, password {SECRET}")]),
            "All good.",
        ]
    )
    llm.model(parent).tools(login, check).request("Log in and check my account").prompt()
    assert places(spans, SECRET) == []
    sub_turn = spans.children(spans.one("execute_tool check_account"))[0]
    assert "password ***" in attributes(sub_turn)["gen_ai.input.messages"]
    assert "(***)" in attributes(sub_turn)["gen_ai.output.messages"]


@pytest.mark.parametrize(
    "name",
    [
        "pwd",
        "db_pwd",
        "userPwd",
        "passphrase",
        "passcode",
        "auth",
        "basic_auth",
        "x-auth",
        "authHeader",
        "authorization",
        "bearer",
        "credential",
        "credentials",
        "private_key",
        "privateKey",
        "password",
        "client_secret",
        "apiKey",
    ],
)
def test_arguments_named_as_secrets_are_masked(spans: Spans, name: str) -> None:
    spans.instrument(include_content=True)
    store = Tool.from_schema(
        lambda **arguments: "stored",
        name="store_credential",
        description="Store a credential.",
        parameters={"type": "object", "properties": {name: {"type": "string"}}},
    )
    model = ScriptedModel(
        [AssistantMessage(tool_calls=[ToolCall(id="c1", name="store_credential", arguments={name: SECRET})]), "Stored."]
    )
    llm.model(model).tools(store).request("Store it").prompt()
    assert places(spans, SECRET) == []
    assert json.loads(attributes(spans.one("execute_tool store_credential"))["gen_ai.tool.call.arguments"]) == {
        name: "***"
    }


@pytest.mark.parametrize("name", ["author", "authority", "authored_by", "keyboard", "keyword"])
def test_arguments_whose_names_merely_contain_a_short_secret_word_are_recorded(spans: Spans, name: str) -> None:
    spans.instrument(include_content=True)
    note = Tool.from_schema(
        lambda **arguments: "noted",
        name="note",
        description="Take a note.",
        parameters={"type": "object", "properties": {name: {"type": "string"}}},
    )
    model = ScriptedModel(
        [AssistantMessage(tool_calls=[ToolCall(id="c1", name="note", arguments={name: "Jane Austen"})]), "Noted."]
    )
    llm.model(model).tools(note).request("Note it").prompt()
    assert json.loads(attributes(spans.one("execute_tool note"))["gen_ai.tool.call.arguments"]) == {name: "Jane Austen"}


def test_the_default_of_a_secret_named_parameter_is_masked_in_the_tool_definitions(spans: Spans) -> None:
    spans.instrument(include_content=True)
    key = "svc-live-1234567890abcdef"

    @tool
    def connect(host: str = "db.internal", api_key: str = key) -> str:
        """Connect to a service."""
        return f"connected to {host} with {api_key}"

    model = ScriptedModel([AssistantMessage(tool_calls=[call("c1", "connect")]), "Connected."])
    llm.model(model).tools(connect).request("Connect").prompt()
    assert places(spans, key) == []
    first = spans.named("chat scripted")[0]
    [definition] = json.loads(attributes(first)["gen_ai.tool.definitions"])
    properties = definition["parameters"]["properties"]
    assert properties["api_key"]["default"] == "***"
    assert properties["host"]["default"] == "db.internal"  # an ordinary default is recorded as written
    # The tool ran with the default, and its result repeats it: masked there too.
    assert (
        attributes(spans.one("execute_tool connect"))["gen_ai.tool.call.result"] == "connected to db.internal with ***"
    )
    # What the provider is sent is not changed.
    assert model.requests[0].tools[0].parameters["properties"]["api_key"]["default"] == key


@pytest.mark.parametrize("raw", [False, True])
def test_a_number_under_a_secret_sounding_name_is_masked_where_it_stands_and_nowhere_else(
    spans: Spans, raw: bool
) -> None:
    """``max_tokens`` sounds like a secret ("token"): its value is masked in the call, but the same number elsewhere
    (the question, the answer) is ordinary content and stays."""
    spans.instrument(include_content=True)

    def summarize(text: str, max_tokens: int) -> str:
        """Summarize a text."""
        return f"summary of {len(text)} characters"

    arguments = {"text": "the 4000 word report", "max_tokens": 4000}
    made = (
        ToolCall(
            id="c1", name="summarize", arguments={}, raw_arguments='{"text": "the 4000 word report", "max_tokens": 4000'
        )
        if raw
        else ToolCall(id="c1", name="summarize", arguments=arguments)
    )
    answer = "The 4000 word report is summarized."
    model = ScriptedModel([AssistantMessage(tool_calls=[made]), answer])
    assert llm.model(model).tools(summarize).request("Summarize the 4000 word report.").prompt() == answer
    turn = attributes(spans.one("invoke_agent threadline"))
    assert "Summarize the 4000 word report." in turn["gen_ai.input.messages"]
    assert answer in turn["gen_ai.output.messages"]
    recorded = attributes(spans.one("execute_tool summarize"))["gen_ai.tool.call.arguments"]
    assert "4000 word report" in recorded and "max_tokens" in recorded and "4000," not in recorded
    assert not recorded.rstrip("}").endswith("4000")


def test_arguments_at_the_nesting_limit_and_deeper_text_are_masked_without_a_crash(spans: Spans) -> None:
    """Masking walks the arguments (issue 31): a secret 127 levels down in arguments as deep as the log keeps, and in
    argument text 100,000 levels deep (kept as text), is masked, and the turn goes on."""
    spans.instrument(include_content=True)
    deep: dict[str, Any] = {"password": SECRET}
    for _ in range(MAX_NESTING - 2):
        deep = {"layer": deep}
    text = '{"password": "' + SECRET + '", "x": ' + "[" * 100_000 + "]" * 100_000 + "}"
    calls = [
        ToolCall(id="c1", name="echo", arguments={"text": deep}),
        ToolCall(id="c2", name="echo", raw_arguments=text),
    ]
    model = ScriptedModel([AssistantMessage(tool_calls=calls), "Done."])
    assert llm.model(model).tools(echo).request("Go").prompt() == "Done."
    assert places(spans, SECRET) == []
    first, second = spans.named("execute_tool echo")
    assert attributes(first)["error.type"] == "invalid_arguments"  # a dict is not a text
    assert "nested more than 128 levels deep" in (second.status.description or "")


# -- the adapter's own key, echoed by a server ------------------------------------------------------------------------

ADAPTER_KEY = 'hunt3r"SECRET/+=x9Q'  # not shaped like an API key: only the adapter's own masking can hide it


@pytest.mark.parametrize("stream", [True, False])
async def test_the_adapters_key_echoed_by_the_server_reaches_no_span(spans: Spans, stream: bool) -> None:
    """Before, a key echoed in the answer (text, tool arguments) was recorded as content, and base64 of ``Bearer
    <key>`` in an error body reached the failed call's status and the retry event."""
    from tests.providers.key_forms import echoes, readable
    from tests.providers.servers import Answer, FakeOpenAI, Status, ToolUse
    from threadline.errors import ModelError
    from threadline.models.openai import OpenAIModel

    spans.instrument(include_content=True)
    encoded = echoes(ADAPTER_KEY)["base64 standard of Bearer key"]
    echo = f"Your key is {ADAPTER_KEY} ({encoded})."
    with FakeOpenAI() as server:
        model = OpenAIModel("gpt-4o-mini", base_url=server.base_url, api_key=ADAPTER_KEY, retry_base_delay=0.01)  # type: ignore[attr-defined]
        server.add(
            Answer(echo, tool_calls=(ToolUse("echo", json.dumps({"text": echo})),)),
            Answer(echo),
            Status(500, {"error": {"message": f"bad header {encoded}", "type": "server_error"}}),
            Status(400, {"error": {"message": f"bad header {encoded}", "type": "invalid_request_error"}}),
        )
        conversation = Conversation()
        try:
            await conversation.continuation.model(model).tools(echo_tool).request("hi").prompt_async(stream=stream)
            with pytest.raises(ModelError):
                await conversation.continuation.request("again").prompt_async(stream=stream, max_retries=1)
        finally:
            await model.aclose()
    assert readable(spans.text(), ADAPTER_KEY) == []
    assert "Your key is ***" in spans.text()  # the answer is recorded, with the key masked
    assert "bad header ***" in spans.text()


@tool(name="echo")
def echo_tool(text: str) -> str:
    """Echo a text."""
    return text
