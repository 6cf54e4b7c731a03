"""Settings refuse infinity and NaN where they are given (issue 31, item 2.11): a request is sent as JSON, which
has neither (``temperature=inf`` went out as ``"temperature": null``), and no timeout is infinitely many seconds
(None is "no limit"). The same check serves the command line's float options."""

from __future__ import annotations

import math
from typing import Any

import pytest

from threadline import Conversation, ConversationConfig, UserError, llm
from threadline.testing import ScriptedModel

NON_FINITE = [math.inf, -math.inf, math.nan, float("1e999")]


@pytest.mark.parametrize("value", NON_FINITE, ids=repr)
@pytest.mark.parametrize("setting", ["temperature", "timeout", "tool_timeout"])
def test_a_non_finite_setting_is_refused_before_anything_is_sent(setting: str, value: float) -> None:
    model = ScriptedModel(["never"])
    conversation = Conversation(config=ConversationConfig(model=model))
    with pytest.raises(UserError, match=f"{setting} must be a finite number"):
        conversation.continuation.request("x").prompt(**{setting: value})
    assert len(conversation.messages) == 0 and model.requests == []


@pytest.mark.parametrize("value", NON_FINITE, ids=repr)
@pytest.mark.parametrize("field", ["temperature", "timeout", "tool_timeout", "busy_timeout"])
def test_a_non_finite_config_value_is_refused_where_it_is_set(field: str, value: float) -> None:
    with pytest.raises(UserError, match=f"{field} must be a finite number"):
        ConversationConfig(**{field: value})
    conversation = Conversation()
    with pytest.raises(ValueError, match=f"{field} must be a finite number"):
        conversation.apply_config_deltas({field: value})


@pytest.mark.parametrize(
    "extras",
    [
        {"openai_top_p": math.inf},
        {"openai_frequency_penalty": math.nan},
        {"openai_logit_bias": {"50256": -math.inf}},
        {"local_top_p": [0.5, math.nan]},
    ],
    ids=repr,
)
def test_a_non_finite_number_in_a_provider_extra_is_refused(extras: dict[str, Any]) -> None:
    model = ScriptedModel(["never"])
    with pytest.raises(UserError, match="must be a finite number"):
        llm.model(model).request("x").prompt(**extras)
    assert model.requests == []


def test_finite_values_are_taken() -> None:
    model = ScriptedModel(["fine"])
    text = llm.model(model).request("x").prompt(temperature=0.0, timeout=1e9, openai_logit_bias={"1": -100.0})
    assert text == "fine"
    assert model.requests[0].settings.temperature == 0.0


@pytest.mark.parametrize("value", NON_FINITE, ids=repr)
def test_a_non_finite_wait_for_the_conversation_is_refused(value: float) -> None:
    """``threadline prompt --wait`` passes its value here; before, ``nan`` was taken."""
    conversation = Conversation()
    with pytest.raises(UserError, match="max_wait must be a finite number"):
        conversation.acquire(max_wait=value)
    conversation.acquire(max_wait=None)  # None waits as long as it takes: nothing was held by the refused call
    conversation.release()
