"""Structured output, images and capability checks through both adapters, and the family profiles."""

from __future__ import annotations

import base64

import pydantic
import pytest

from threadline import AssistantMessage, Attachment, llm
from threadline.errors import CapabilityError, UserError
from threadline.models import ModelCapabilities
from threadline.models.anthropic import AnthropicModel
from threadline.models.openai import OpenAIModel
from threadline.models.profiles import anthropic_profile, openai_profile

from .conftest import Provider, make_anthropic, make_openai
from .servers import Answer, FakeAnthropic, FakeOpenAI, ToolUse

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + b"\x00" * 13


class City(pydantic.BaseModel):
    name: str
    population: int


def get_weather(city: str) -> str:
    """The current weather in a city."""
    return f"22 C in {city}"


# -- structured output --------------------------------------------------------------------------------------------


async def test_prompt_for_type_uses_json_schema_on_openai(openai_server: FakeOpenAI, openai_model: OpenAIModel) -> None:
    openai_server.add(Answer('{"name": "Paris", "population": 2102650}'))
    city = await llm.model(openai_model).request("Largest city of France?").prompt_for_type_async(City)
    assert city == City(name="Paris", population=2102650)
    body = openai_server.bodies[0]
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["name"] == "City"
    assert body["response_format"]["json_schema"]["schema"]["properties"].keys() == {"name", "population"}
    assert "tools" not in body


async def test_prompt_for_type_uses_json_outputs_on_claude_4_5_and_later(
    anthropic_server: FakeAnthropic, anthropic_model: AnthropicModel
) -> None:
    anthropic_server.add(Answer('{"name": "Paris", "population": 2102650}'))
    conversation = llm.model(anthropic_model).request("Largest city of France?")  # claude-haiku-4-5
    city = await conversation.prompt_for_type_async(City)
    assert city == City(name="Paris", population=2102650)
    body = anthropic_server.bodies[0]
    assert "tools" not in body and "tool_choice" not in body
    output_format = body["output_config"]["format"]
    assert output_format["type"] == "json_schema"
    assert output_format["schema"]["properties"].keys() == {"name", "population"}
    assert output_format["schema"]["additionalProperties"] is False  # the API requires it on every object


async def test_prompt_for_type_uses_a_final_result_tool_on_older_claude(anthropic_server: FakeAnthropic) -> None:
    model = make_anthropic(anthropic_server, "claude-3-5-haiku-latest")
    anthropic_server.add(Answer(tool_calls=(ToolUse("final_result", '{"name": "Paris", "population": 2102650}'),)))
    try:
        city = await llm.model(model).request("Largest city of France?").prompt_for_type_async(City)
    finally:
        await model.aclose()
    assert city == City(name="Paris", population=2102650)
    body = anthropic_server.bodies[0]
    assert "output_config" not in body  # that family answers 400 to it
    assert body["tools"][0]["name"] == "final_result"
    assert body["tools"][0]["input_schema"]["properties"].keys() == {"name", "population"}
    assert body["tool_choice"] == {"type": "tool", "name": "final_result"}


async def test_structured_answer_is_logged_as_text_without_a_tool_call(anthropic_server: FakeAnthropic) -> None:
    model = make_anthropic(anthropic_server, "claude-3-5-haiku-latest")  # through the final-result tool
    anthropic_server.add(Answer(tool_calls=(ToolUse("final_result", '{"name": "Oslo", "population": 709037}'),)))
    from threadline import Conversation

    conversation = Conversation()
    try:
        city = await conversation.continuation.model(model).request("Capital of Norway?").prompt_for_type_async(City)
    finally:
        await model.aclose()
    assert city.name == "Oslo"
    answer = conversation.messages[-1]
    assert isinstance(answer, AssistantMessage)
    assert answer.tool_calls == []
    assert answer.content is not None and '"Oslo"' in answer.content
    conversation.messages.validate()


async def test_prompt_for_type_with_tools_on_anthropic_lets_the_model_use_them_first(
    anthropic_server: FakeAnthropic,
) -> None:
    older = make_anthropic(anthropic_server, "claude-3-5-haiku-latest")
    anthropic_server.add(
        Answer(tool_calls=(ToolUse("get_weather", '{"city": "Oslo"}'),)),
        Answer(tool_calls=(ToolUse("final_result", '{"name": "Oslo", "population": 709037}'),)),
    )
    try:
        city = await llm.model(older).tools(get_weather).request("Oslo?").prompt_for_type_async(City)
    finally:
        await older.aclose()
    assert city.population == 709037
    first, second = anthropic_server.bodies
    assert first["tool_choice"] == {"type": "any"}
    assert [t["name"] for t in first["tools"]] == ["get_weather", "final_result"]
    assert second["messages"][-1]["content"][0]["type"] == "tool_result"


async def test_prompt_for_type_with_tools_in_json_outputs_leaves_the_tools_unforced(
    anthropic_server: FakeAnthropic, anthropic_model: AnthropicModel
) -> None:
    anthropic_server.add(
        Answer(tool_calls=(ToolUse("get_weather", '{"city": "Oslo"}'),)),
        Answer('{"name": "Oslo", "population": 709037}'),
    )
    city = await llm.model(anthropic_model).tools(get_weather).request("Oslo?").prompt_for_type_async(City)
    assert city.population == 709037
    first, second = anthropic_server.bodies
    assert "tool_choice" not in first and [t["name"] for t in first["tools"]] == ["get_weather"]
    assert first["output_config"] == second["output_config"]
    assert second["messages"][-1]["content"][0]["type"] == "tool_result"


async def test_prompt_for_type_on_an_unknown_compatible_model_uses_the_final_tool(openai_server: FakeOpenAI) -> None:
    model = make_openai(openai_server, model="llama3.2")
    openai_server.add(Answer(tool_calls=(ToolUse("final_result", '{"name": "Rome", "population": 2873000}'),)))
    try:
        city = await llm.model(model).request("Capital of Italy?").prompt_for_type_async(City, stream=False)
    finally:
        await model.aclose()
    assert city.name == "Rome"
    body = openai_server.bodies[0]
    assert "response_format" not in body
    assert body["tool_choice"] == {"type": "function", "function": {"name": "final_result"}}


# -- images -------------------------------------------------------------------------------------------------------


async def test_images_reach_both_providers(provider: Provider) -> None:
    provider.server.reply("A tiny black square.")
    image = Attachment.image(PNG)
    text = await llm.model(provider.model).request("What is this?", attachments=[image]).prompt_async()
    assert text == "A tiny black square."
    content = provider.server.bodies[0]["messages"][-1]["content"]
    encoded = base64.b64encode(PNG).decode()
    if provider.name == "openai":
        assert content == [
            {"type": "text", "text": "What is this?"},
            {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{encoded}"}},
        ]
    else:
        assert content == [
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": encoded}},
            {"type": "text", "text": "What is this?"},
        ]


async def test_an_image_file_path_is_read_into_the_request(tmp_path: object, provider: Provider) -> None:
    from pathlib import Path

    path = Path(str(tmp_path)) / "dot.png"
    path.write_bytes(PNG)
    provider.server.reply("ok")
    await llm.model(provider.model).request("see", attachments=[Attachment.image(path)]).prompt_async()
    assert base64.b64encode(PNG).decode() in str(provider.server.bodies[0])


async def test_an_image_of_unknown_type_is_refused_before_sending(provider: Provider) -> None:
    conversation = llm.model(provider.model).request("see", attachments=[Attachment.image(b"not an image")])
    with pytest.raises(UserError, match="unknown media type"):
        await conversation.prompt_async()
    assert provider.server.count == 0


# -- capability errors, before any request ------------------------------------------------------------------------


async def test_a_model_without_images_refuses_them_before_any_request(openai_server: FakeOpenAI) -> None:
    model = make_openai(openai_server, model="gpt-3.5-turbo")
    try:
        with pytest.raises(CapabilityError, match="does not accept images"):
            await llm.model(model).request("see", attachments=[Attachment.image(PNG)]).prompt_async()
    finally:
        await model.aclose()
    assert openai_server.count == 0


async def test_a_model_without_tools_refuses_them_before_any_request(openai_server: FakeOpenAI) -> None:
    model = make_openai(openai_server, model="o1-mini")
    try:
        with pytest.raises(CapabilityError, match="does not support tools"):
            await llm.model(model).tools(get_weather).request("weather?").prompt_async()
    finally:
        await model.aclose()
    assert openai_server.count == 0


async def test_capabilities_can_be_overridden_per_model(anthropic_server: FakeAnthropic) -> None:
    model = make_anthropic(anthropic_server, capabilities=ModelCapabilities(images=False))
    try:
        with pytest.raises(CapabilityError):
            await llm.model(model).request("see", attachments=[Attachment.image(PNG)]).prompt_async()
    finally:
        await model.aclose()
    assert anthropic_server.count == 0
    vision = OpenAIModel("llava", base_url="http://127.0.0.1:9/v1", capabilities=ModelCapabilities(images=True))
    assert vision.capabilities.images


async def test_tool_choice_naming_a_tool_that_is_not_offered_is_refused(provider: Provider) -> None:
    with pytest.raises(UserError, match="not offered"):
        await llm.model(provider.model).tools(get_weather).tool_choice("get_time").request("x").prompt_async()
    assert provider.server.count == 0


def test_the_official_endpoints_need_a_key_and_say_so_before_sending() -> None:
    for model in (OpenAIModel("gpt-4o-mini"), AnthropicModel("claude-haiku-4-5")):
        with pytest.raises(UserError, match="no API key") as info:
            llm.model(model).request("hi").prompt()
        assert "_API_KEY" in str(info.value)


def test_empty_model_names_are_refused() -> None:
    with pytest.raises(UserError, match="model name"):
        OpenAIModel(" ")
    with pytest.raises(UserError, match="model name"):
        AnthropicModel("")


# -- profiles -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "family", "tools", "structured", "images"),
    [
        ("gpt-4o-mini", "gpt-4o-mini", True, True, True),
        ("gpt-4o-2024-08-06", "gpt-4o", True, True, True),
        ("openai/gpt-4.1-mini", "gpt-4.1", True, True, True),  # OpenRouter's vendor prefix
        ("gpt-3.5-turbo-0125", "gpt-3.5-turbo", True, False, False),
        ("o1-mini", "o1-mini", False, False, False),
        ("o3-mini-2025-01-31", "o3-mini", True, True, False),
        ("llama3.2:3b", "", True, False, False),
        ("gpt-5-mini", "gpt-5", True, True, True),
        ("gpt-5-chat-latest", "gpt-5-chat", True, True, True),  # not a reasoning model, despite the prefix
        ("gpt-5.1-chat-latest", "gpt-5-chat", True, True, True),
    ],
)
def test_openai_families(name: str, family: str, tools: bool, structured: bool, images: bool) -> None:
    profile = openai_profile(name)
    assert profile.family == family
    caps = profile.capabilities
    assert (caps.tools, caps.structured_output, caps.images) == (tools, structured, images)


def test_reasoning_families_differ_on_the_wire() -> None:
    assert openai_profile("o4-mini").system_role == "developer"
    assert openai_profile("o4-mini").max_tokens_field == "max_completion_tokens"
    assert openai_profile("gpt-4o").system_role == "system"
    assert openai_profile("gpt-5.1").capabilities.reasoning and not openai_profile("gpt-5.1").temperature
    chat = openai_profile("gpt-5.1-chat-latest")
    assert not chat.capabilities.reasoning and chat.temperature and chat.system_role == "system"


@pytest.mark.parametrize(
    ("name", "max_tokens"),
    [("claude-3-haiku-20240307", 4096), ("claude-3-5-sonnet-latest", 8192), ("claude-sonnet-4-5", 8192)],
)
def test_anthropic_families_have_a_default_max_tokens_within_the_family_limit(name: str, max_tokens: int) -> None:
    profile = anthropic_profile(name)
    assert profile.max_output_tokens == max_tokens
    assert profile.capabilities.images and profile.capabilities.tools
    assert profile.capabilities.context_length == 200_000
