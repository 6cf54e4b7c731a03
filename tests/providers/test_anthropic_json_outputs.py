"""Structured output as Claude's JSON outputs (``output_config.format``, Claude 4.5 and later), over real HTTP
against a fake Messages API that keeps the rules of Anthropic's structured-outputs guide: only the families that have
JSON outputs, every object with ``additionalProperties: false``, no numeric bounds, string lengths or array bounds
beyond ``minItems`` 0 or 1. Schemas are fitted to that subset (bounds move into descriptions and are still checked on
the answer); a schema that cannot fit goes through the final-result tool."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from pydantic import BaseModel, Field

from threadline import OutputValidationError, llm
from threadline.models.anthropic import AnthropicModel
from threadline.models.anthropic._schema import native_format

from .conftest import make_anthropic
from .servers import Answer, FakeAnthropic, ToolUse


class Score(BaseModel):
    label: str = Field(max_length=20, description="A short label")
    value: int = Field(ge=0, le=100)


class Report(BaseModel):
    scores: list[Score] = Field(min_length=2)
    note: str | None = None


@pytest.fixture
async def haiku(anthropic_server: FakeAnthropic) -> AsyncIterator[AnthropicModel]:
    model = make_anthropic(anthropic_server, "claude-haiku-4-5")
    yield model
    await model.aclose()


# -- fitting a schema ---------------------------------------------------------------------------------------------


def test_objects_are_closed_and_bounds_move_into_descriptions() -> None:
    from pydantic import TypeAdapter

    fitted = native_format(TypeAdapter(Report).json_schema())
    assert fitted is not None and fitted["type"] == "json_schema"
    schema = fitted["schema"]
    assert schema["additionalProperties"] is False
    score = schema["$defs"]["Score"]
    assert score["additionalProperties"] is False
    assert score["properties"]["label"] == {
        "type": "string",
        "title": "Label",
        "description": "A short label (maxLength: 20)",
    }
    assert score["properties"]["value"] == {
        "type": "integer",
        "title": "Value",
        "description": "(maximum: 100, minimum: 0)",
    }
    scores = schema["properties"]["scores"]
    assert "minItems" not in scores and scores["description"] == "(minItems: 2)"
    assert native_format({"type": "array", "items": {"type": "string"}, "minItems": 1})["schema"]["minItems"] == 1  # type: ignore[index]


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "additionalProperties": {"type": "integer"}},  # dict[str, int]
        {"type": "object", "properties": {"tags": {"type": "object", "additionalProperties": True}}},
        {"type": "object", "patternProperties": {"^[a-z]+$": {"type": "integer"}}},  # dict[constr(pattern=…), int]
        {  # a tree: recursive
            "type": "object",
            "properties": {"root": {"$ref": "#/$defs/Node"}},
            "$defs": {"Node": {"type": "object", "properties": {"kids": {"items": {"$ref": "#/$defs/Node"}}}}},
        },
    ],
)
def test_what_json_outputs_cannot_express_is_left_to_the_final_tool(schema: dict[str, Any]) -> None:
    assert native_format(schema) is None


# -- over HTTP ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("stream", [True, False])
async def test_a_constrained_schema_is_accepted_and_its_bounds_still_hold(
    anthropic_server: FakeAnthropic, haiku: AnthropicModel, stream: bool
) -> None:
    too_high = '{"scores": [{"label": "a", "value": 150}, {"label": "b", "value": 3}]}'
    good = '{"scores": [{"label": "a", "value": 15}, {"label": "b", "value": 3}]}'
    anthropic_server.add(Answer(too_high), Answer(good))
    report = await llm.model(haiku).request("Score these.").prompt_for_type_async(Report, stream=stream)
    assert [score.value for score in report.scores] == [15, 3]
    first, second = anthropic_server.bodies  # the server took the fitted schema both times
    assert "less than or equal to 100" in second["messages"][-1]["content"][0]["text"]  # the bound, checked here
    assert first["output_config"] == second["output_config"] and "tools" not in first


async def test_an_answer_that_breaks_a_bound_twice_is_a_clear_error(
    anthropic_server: FakeAnthropic, haiku: AnthropicModel
) -> None:
    one = '{"scores": [{"label": "a", "value": 1}]}'
    anthropic_server.add(Answer(one), Answer(one))
    with pytest.raises(OutputValidationError, match="at least 2 items"):
        await llm.model(haiku).request("Score these.").prompt_for_type_async(Report)


async def test_a_schema_that_cannot_fit_goes_through_the_final_tool(
    anthropic_server: FakeAnthropic, haiku: AnthropicModel
) -> None:
    anthropic_server.add(Answer(tool_calls=(ToolUse("final_result", '{"Paris": 2102650, "Lyon": 522250}'),)))
    populations = await llm.model(haiku).request("Populations?").prompt_for_type_async(dict[str, int])
    assert populations == {"Paris": 2102650, "Lyon": 522250}
    body = anthropic_server.bodies[0]
    assert "output_config" not in body
    assert body["tool_choice"] == {"type": "tool", "name": "final_result"}


async def test_the_fake_keeps_anthropics_rules(anthropic_server: FakeAnthropic) -> None:
    """What fitting the schema and choosing the family spare the caller, straight from the fake."""
    closed = {"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": False}

    async def post(model: str, schema: dict[str, Any]) -> httpx.Response:
        body = {
            "model": model,
            "max_tokens": 100,
            "messages": [{"role": "user", "content": "q"}],
            "output_config": {"format": {"type": "json_schema", "schema": schema}},
        }
        async with httpx.AsyncClient() as client:
            return await client.post(f"{anthropic_server.base_url}/v1/messages", json=body)

    older = await post("claude-sonnet-4-20250514", closed)
    open_object = await post("claude-haiku-4-5", {"type": "object", "properties": {"a": {"type": "integer"}}})
    bounded = await post("claude-haiku-4-5", {**closed, "properties": {"a": {"type": "integer", "maximum": 9}}})
    assert older.status_code == open_object.status_code == bounded.status_code == 400
    assert "additionalProperties" in open_object.json()["error"]["message"]
    assert "'maximum' is not supported" in bounded.json()["error"]["message"]
