"""A log whose assistant turns carry reasoning of every family (Anthropic's signed and redacted thinking, the
Responses API's encrypted item, a compatible server's plain thinking) continues on models that must be sent none
of it: the embedded ``local`` model (real, SmolLM2 through llama.cpp), whose prompt holds no trace of it, and an
``openai:`` model on OpenAI's own API (the fake), whose request carries no reasoning field by default. The log keeps
every piece, unchanged, through both turns and a save."""

from __future__ import annotations

from threadline import AssistantMessage, Conversation, MessageList, Reasoning, ToolCall, ToolMessage, user
from threadline.models import ModelRequest
from threadline.models.local import LocalModel
from threadline.models.local._prompt import LocalPrompt
from threadline.models.openai import OpenAIModel

from .servers import Answer, FakeOpenAI

SIGNED = Reasoning(
    text="ANTHROPIC-THOUGHT about Paris.", signature="U0lHTkFUVVJFLWFudGhyb3BpYw==", provider="anthropic"
)
REDACTED = Reasoning(redacted="UkVEQUNURUQtYW50aHJvcGlj", provider="anthropic")
ENCRYPTED = Reasoning(
    text="RESPONSES-SUMMARY of the plan.", redacted="gAAAAB-ENCRYPTED-responses", provider="openai-responses", id="rs_0"
)
PLAIN = Reasoning(text="COMPATIBLE-THINKING about Rome.", provider="openai")
TRACES = (
    "ANTHROPIC-THOUGHT",
    "U0lHTkFUVVJF",
    "UkVEQUNURUQ",
    "RESPONSES-SUMMARY",
    "ENCRYPTED-responses",
    "rs_0",
    "COMPATIBLE-THINKING",
)


def every_family_log() -> MessageList:
    return MessageList(
        [
            user("What is the weather in Paris?"),
            AssistantMessage(
                tool_calls=[ToolCall(id="toolu_01", name="weather", arguments={"city": "Paris"})],
                reasoning=[SIGNED, REDACTED],
                model="anthropic:claude-sonnet-4-5",
            ),
            ToolMessage(tool_call_id="toolu_01", tool_name="weather", content="22 C in Paris"),
            AssistantMessage(content="It is 22 C in Paris.", reasoning=[SIGNED], model="anthropic:claude-sonnet-4-5"),
            user("Plan a day there."),
            AssistantMessage(content="Louvre, then lunch.", reasoning=[ENCRYPTED], model="openai-responses:o4-mini"),
            user("And Rome?"),
            AssistantMessage(
                content="Rome is warm too.", reasoning=[PLAIN], model="openai:DeepSeek-R1-Distill-Qwen-1.5B"
            ),
        ]
    )


class RecordingLocal(LocalModel):
    """The embedded model, keeping the text of every prompt it renders (what llama.cpp is given)."""

    def __init__(self) -> None:
        super().__init__()
        self.prompts: list[str] = []

    def render(self, request: ModelRequest) -> LocalPrompt:
        prompt = super().render(request)
        self.prompts.append(prompt.text)
        return prompt


def assert_log_kept(log: MessageList, original: MessageList) -> None:
    log.validate()
    assert list(log)[: len(original)] == list(original)  # every piece, signatures and opaque data unchanged
    assert MessageList.from_json(log.to_json()) == log


def test_the_local_model_continues_with_no_trace_of_any_reasoning_in_its_prompt() -> None:
    original = every_family_log()
    conversation = Conversation(messages=MessageList.from_json(original.to_json()))
    model = RecordingLocal()
    answer = conversation.continuation.model(model).request("Say one word.").prompt(max_tokens=8, temperature=0.0)
    assert isinstance(answer, str) and answer
    (prompt,) = model.prompts
    # The conversation is in the prompt (answers, the tool result, the new question) ...
    for text in ("It is 22 C in Paris.", "22 C in Paris", "Louvre, then lunch.", "Rome is warm too.", "Say one word."):
        assert text in prompt
    # ... and no reasoning of any family, in any form.
    for trace in TRACES:
        assert trace not in prompt
    assert_log_kept(conversation.messages, original)
    assert conversation.messages[-1].model == "local:smollm2"


async def test_an_openai_model_is_sent_none_of_it_by_default(
    openai_server: FakeOpenAI, openai_model: OpenAIModel
) -> None:
    original = every_family_log()
    conversation = Conversation(messages=MessageList.from_json(original.to_json()))
    openai_server.add(Answer("Sunny."))
    text = await conversation.continuation.model(openai_model).request("Weather tomorrow?").prompt_async()
    assert text == "Sunny."
    body = openai_server.bodies[0]
    assistants = [message for message in body["messages"] if message["role"] == "assistant"]
    assert [set(message) for message in assistants] == [
        {"role", "content", "tool_calls"},
        {"role", "content"},
        {"role", "content"},
        {"role", "content"},
    ]  # no reasoning_content, no reasoning: OpenAI's API takes none
    sent = openai_server.requests[0].body.decode()
    for trace in TRACES:
        assert trace not in sent
    assert_log_kept(conversation.messages, original)
