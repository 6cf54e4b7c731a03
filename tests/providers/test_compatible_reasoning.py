"""Reasoning models behind OpenAI-compatible servers, over real HTTP: the thinking a server sends (vLLM, DeepSeek,
llama.cpp, Ollama) reaches ``on_reasoning`` and the log but never the answer text, is not sent back unless the
server option says so, and DeepSeek's two documented rules (400 when it is sent; 400 when a tool-calling turn's is
not) are each met by the setting meant for them. Last, llama-cpp-python's real server, which sends no reasoning
fields at all, still answers a log that carries thinking."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from threadline import AssistantMessage, CapabilityError, Conversation, MessageList, ModelError, Reasoning, llm, user
from threadline.models.openai import OpenAIModel

from .conftest import make_openai
from .llama_server import LLAMA_CPP_MODEL
from .servers import Cut, ToolUse
from .servers.compatible import REFUSED, REQUIRED, FakeCompatible, Thinking

R1 = "DeepSeek-R1-Distill-Qwen-1.5B"  # the fallback profile: thinking is read, nothing is sent back
THOUGHT = "The user compares 9.11 and 9.8. The tenths digit decides: 1 < 8."


def weather(city: str) -> str:
    """The current weather in a city."""
    return f"22 C in {city}"


@pytest.fixture
def server() -> Iterator[FakeCompatible]:
    with FakeCompatible() as fake:
        yield fake  # type: ignore[misc]


async def run(conversation: Conversation, **options: Any) -> list[object]:
    return [message async for message in conversation.run(**options)]


def sent_reasoning(body: dict[str, Any]) -> list[object]:
    """Every reasoning field on the messages of a request body."""
    return [
        message[name] for message in body["messages"] for name in ("reasoning_content", "reasoning") if name in message
    ]


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning", "both"])
@pytest.mark.parametrize("stream", [True, False])
async def test_thinking_reaches_on_reasoning_and_the_log_and_never_the_text(field: str, stream: bool) -> None:
    with FakeCompatible(field) as server:  # type: ignore[arg-type]
        model = make_openai(server, R1)  # type: ignore[arg-type]
        server.add(Thinking("9.8 is greater.", reasoning=THOUGHT, output_tokens=40, reasoning_tokens=31))
        conversation = llm.model(model).request("9.11 or 9.8?").prompt_conversation(stream=stream)
        thoughts: list[str] = []
        texts: list[str] = []
        await run(conversation, on_reasoning=thoughts.append, on_text=texts.append)
        log = conversation.messages
        log.validate()
        reply = log[1]
        assert isinstance(reply, AssistantMessage)
        assert reply.content == "9.8 is greater."
        assert reply.reasoning == [Reasoning(text=THOUGHT, provider="openai")]  # once, even when sent under both names
        assert reply.usage is not None and reply.usage.reasoning_tokens == 31 and reply.usage.output_tokens == 40
        assert "".join(thoughts) == THOUGHT
        assert "".join(texts) == "9.8 is greater."
        if stream:
            assert len(thoughts) > 1 and server.bodies[0]["stream"] is True  # it came in pieces, as it streamed

        # The next turn: `.stream()` yields the answer only, and the earlier thinking is not sent back.
        server.add(Thinking("Yes.", reasoning="Still 9.8."))
        pieces = [piece async for piece in conversation.continuation.request("Sure?").stream(stream=stream)]
        assert "".join(pieces) == "Yes."
        assert sent_reasoning(server.bodies[1]) == []
        assert [m["content"] for m in server.bodies[1]["messages"] if m["role"] == "assistant"] == ["9.8 is greater."]
        assert MessageList.from_json(log.to_json()) == log  # saved and read back with its thinking
        await model.aclose()


async def tool_loop(model: OpenAIModel, server: FakeCompatible) -> Conversation:
    server.add(
        Thinking(tool_calls=(ToolUse("weather", '{"city": "Paris"}'),), reasoning="I need the weather tool."),
        Thinking("22 C in Paris.", reasoning="The tool answered."),
    )
    conversation = llm.model(model).tools(weather).request("Weather in Paris?").prompt_conversation()
    await run(conversation)
    return conversation


async def test_a_server_that_refuses_thinking_sent_back_gets_none_by_default() -> None:
    with FakeCompatible(rule="refuse") as server:
        model = make_openai(server, R1)  # type: ignore[arg-type]
        conversation = await tool_loop(model, server)  # type: ignore[arg-type]
        assert conversation.text == "22 C in Paris."
        assert [sent_reasoning(body) for body in server.bodies] == [[], []]
        assert conversation.messages[1].reasoning == [Reasoning(text="I need the weather tool.", provider="openai")]

        # The rule is real: with the option on, the same server answers with DeepSeek's documented 400.
        sending = make_openai(server, R1, server="reasoning_content=send")  # type: ignore[arg-type]
        server.reply("unused")
        with pytest.raises(ModelError, match="intermediate result for display purposes only") as caught:
            await run(conversation.continuation.model(sending).request("Again?").prompt_conversation())
        assert caught.value.status == 400 and REFUSED.rstrip(".") in str(caught.value)
        assert sent_reasoning(server.bodies[-1]) == ["I need the weather tool.", "The tool answered."]
        await model.aclose()
        await sending.aclose()


async def test_deepseek_gets_the_thinking_of_tool_calling_turns_back_as_its_thinking_mode_requires() -> None:
    with FakeCompatible(rule="require") as server:
        model = make_openai(server, "deepseek-reasoner")  # type: ignore[arg-type]
        conversation = await tool_loop(model, server)  # type: ignore[arg-type]
        assert conversation.text == "22 C in Paris."
        second = server.bodies[1]["messages"]
        calling = next(message for message in second if message.get("tool_calls"))
        assert calling["reasoning_content"] == "I need the weather tool."
        assert calling["content"] == ""

        # Without it (the option set to drop), that API refuses the loop with its documented 400.
        dropping = make_openai(server, "deepseek-reasoner", server="reasoning_content=drop")  # type: ignore[arg-type]
        server.reply("unused")
        with pytest.raises(ModelError, match="must be passed back to the API") as caught:
            await run(conversation.continuation.model(dropping).request("And now?").prompt_conversation())
        assert caught.value.status == 400 and REQUIRED.rstrip(".") in str(caught.value)
        await model.aclose()
        await dropping.aclose()


async def test_a_log_from_another_model_continues_on_deepseeks_thinking_mode() -> None:
    """Before, a tool-calling turn that came from another model (or one that thought nothing) was sent without
    reasoning_content, and DeepSeek's thinking mode refused every later request with its 400: such a conversation
    could never continue there. It is sent a blank one (DeepSeek V4 Pro refuses an empty string too)."""
    from threadline import ToolCall
    from threadline.testing import ScriptedModel

    calling_turn = AssistantMessage(tool_calls=[ToolCall(id="w1", name="weather", arguments={"city": "Paris"})])
    first = ScriptedModel([calling_turn, "22 C in Paris."])
    conversation = llm.model(first).tools(weather).request("Weather in Paris?").prompt_conversation()
    await run(conversation)
    with FakeCompatible(rule="require") as server:
        model = make_openai(server, "deepseek-v4-flash")  # type: ignore[arg-type]
        server.add(Thinking("Sunny there too.", reasoning="Another look."))
        answer = await conversation.continuation.model(model).request("And Rome?").prompt_async()
        await model.aclose()
    assert answer == "Sunny there too."
    [calling] = [message for message in server.bodies[0]["messages"] if message.get("tool_calls")]
    assert calling["reasoning_content"] == " "
    assert conversation.messages[1].reasoning == []  # the log is unchanged


async def test_thinking_a_cut_stream_had_sent_is_never_sent_back(server: FakeCompatible) -> None:
    """A failed call's thinking stays in the log only, even for a server whose profile sends thinking back. Before,
    the context window turned the failure into its ``[LLM_ERROR …]`` text without the error, so the adapter could
    no longer tell it had failed, and deepseek-reasoner got the cut-off thought as ``reasoning_content``."""
    model = make_openai(server, "deepseek-reasoner", max_retries=0)
    server.add(Cut(Thinking("9.8 is greater.", reasoning=THOUGHT), after=4))  # the role chunk, then some thinking
    conversation = llm.model(model).request("9.11 or 9.8?").prompt_conversation(stream=True)
    with pytest.raises(ModelError):
        await run(conversation)
    failed = conversation.messages[-1]
    assert isinstance(failed, AssistantMessage) and failed.error is not None
    [partial] = failed.reasoning
    assert partial.text and THOUGHT.startswith(partial.text) and partial.text != THOUGHT

    server.add(Thinking("9.8.", reasoning="Again: 1 < 8."))
    await run(conversation.continuation.request("Go on.").prompt_conversation())
    await model.aclose()
    body = server.bodies[-1]
    assert sent_reasoning(body) == []
    assert partial.text not in str(body)
    [replayed] = [message for message in body["messages"] if message["role"] == "assistant"]
    assert replayed["content"].startswith("[LLM_ERROR type=")  # the failure itself is still sent, as text
    conversation.messages.validate()


async def test_thinking_of_other_families_is_never_sent_even_with_the_option_on(server: FakeCompatible) -> None:
    log = MessageList(
        [
            user("Plan a trip."),
            AssistantMessage(
                content="Paris, then Rome.",
                reasoning=[
                    Reasoning(text="Anthropic's signed thought.", signature="c2ln", provider="anthropic"),
                    Reasoning(redacted="cmVkYWN0ZWQ=", provider="anthropic"),
                ],
                model="anthropic:claude-sonnet-4-5",
            ),
            user("Why?"),
            AssistantMessage(
                content="Both are close.",
                reasoning=[Reasoning(text="A summary.", redacted="gAAAAB", provider="openai-responses", id="rs_1")],
                model="openai-responses:o4-mini",
            ),
        ]
    )
    model = make_openai(server, "deepseek-reasoner")  # sends its own family's thinking back
    server.add(Thinking("Fine.", reasoning="Continue."))
    conversation = Conversation(messages=log)
    await run(conversation.continuation.model(model).request("OK.").prompt_conversation())
    body = server.bodies[0]
    assert sent_reasoning(body) == []
    text = str(body)
    for secret in ("Anthropic's signed thought.", "c2ln", "cmVkYWN0ZWQ=", "A summary.", "gAAAAB"):
        assert secret not in text
    assert [m["content"] for m in body["messages"] if m["role"] == "assistant"] == [
        "Paris, then Rome.",
        "Both are close.",
    ]
    await model.aclose()


async def test_reasoning_effort_is_sent_to_a_family_that_takes_one_and_refused_before_any_request_elsewhere(
    server: FakeCompatible,
) -> None:
    model = make_openai(server, "gpt-oss-20b")
    server.add(Thinking("4.", reasoning="2+2."))
    assert await llm.model(model).reasoning(effort="low").request("2+2?").prompt_async() == "4."
    assert server.bodies[0]["reasoning_effort"] == "low"
    r1 = make_openai(server, R1)
    with pytest.raises(CapabilityError):
        await llm.model(r1).reasoning(effort="high").request("2+2?").prompt_async()
    assert server.count == 1  # nothing was sent for it
    await model.aclose()
    await r1.aclose()


# -- llama-cpp-python's real server -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("stream", "option"),
    [(False, "llama-cpp-python"), (True, "llama-cpp-python"), (False, "llama-cpp-python,reasoning_content=send")],
)
async def test_the_real_server_answers_a_log_with_thinking_and_sends_none_itself(
    llama_cpp_server: str, stream: bool, option: str
) -> None:
    model = OpenAIModel(LLAMA_CPP_MODEL, base_url=llama_cpp_server, server=option, timeout=120)
    log = MessageList(
        [
            user("Say hi."),
            AssistantMessage(content="Hi.", reasoning=[Reasoning(text="A greeting is due.", provider="openai")]),
        ]
    )
    conversation = Conversation(messages=log)
    thoughts: list[str] = []
    builder = conversation.continuation.model(model).request("Say hello to Ada.")
    # min_tokens (llama-cpp-python's extension) holds back the end of the answer: some text, whatever the model says.
    settings = {"temperature": 0.0, "max_tokens": 24, "openai_min_tokens": 8}
    await run(builder.prompt_conversation(stream=stream, **settings), on_reasoning=thoughts.append)
    await model.aclose()
    conversation.messages.validate()
    reply = conversation.messages[-1]
    # Accepted whether or not the earlier thinking was sent (that server ignores a reasoning_content it is given).
    assert isinstance(reply, AssistantMessage) and reply.error is None and reply.content
    assert reply.reasoning == [] and thoughts == []  # this server sends no reasoning fields
    if not stream:
        assert reply.usage is not None and reply.usage.output_tokens > 0 and reply.usage.reasoning_tokens == 0
    assert conversation.messages[1].reasoning == log[1].reasoning  # the log still has the earlier thinking
