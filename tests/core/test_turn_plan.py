"""The plan of a turn (issue 32): one pure function makes a turn's options from a config and a call's settings,
holds the only defaults, and checks each setting once, with an error that names it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from threadline import ConversationConfig, UserError
from threadline.engine import TurnOptions, plan_turn
from threadline.engine.plan import MAX_TOOL_ROUNDS, TOOL_TIMEOUT, CheckedSettings, check_settings
from threadline.messages import MessageMeta

SRC = Path(__file__).parents[2] / "src" / "threadline"


def test_the_defaults_are_the_plans() -> None:
    assert (TOOL_TIMEOUT, MAX_TOOL_ROUNDS) == (60.0, 10)
    for options in (plan_turn(), plan_turn(ConversationConfig()), TurnOptions()):
        assert (options.tool_timeout, options.max_tool_rounds) == (TOOL_TIMEOUT, MAX_TOOL_ROUNDS)
    config = ConversationConfig()
    assert (config.tool_timeout, config.max_tool_rounds) == (TOOL_TIMEOUT, MAX_TOOL_ROUNDS)


def test_the_defaults_are_written_once() -> None:
    """No other module writes the literal of a turn default: they name the plan's constants."""
    found = []
    for path in sorted(SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            # ``tool_timeout: float | None = 60.0`` and ``max_tool_rounds: int = 10`` (fields and parameters)
            if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
                pairs = [(node.target.id, node.value)]
            elif isinstance(node, ast.arguments):
                positional = [*node.posonlyargs, *node.args]
                defaulted = positional[len(positional) - len(node.defaults) :]
                pairs = [(a.arg, d) for a, d in zip(defaulted, node.defaults, strict=True)]
                pairs += [(a.arg, d) for a, d in zip(node.kwonlyargs, node.kw_defaults, strict=True) if d is not None]
            else:
                continue
            for name, value in pairs:
                if name in ("tool_timeout", "max_tool_rounds") and isinstance(value, ast.Constant):
                    found.append(f"{path.relative_to(SRC)}:{value.lineno} {name}")
    assert found == []


def test_the_call_settings_go_over_the_config() -> None:
    config = ConversationConfig(tool_timeout=5, max_tool_rounds=2, temperature=0.5, extras={"openai_seed": 1})
    options = plan_turn(config, {"tool_timeout": 9, "temperature": 0.1, "openai_user": "u"})
    assert (options.tool_timeout, options.max_tool_rounds) == (9, 2)
    assert options.settings.temperature == 0.1
    assert options.settings.extras == {"openai_seed": 1, "openai_user": "u"}
    assert config.extras == {"openai_seed": 1}  # pure: the config is not changed
    assert plan_turn(config).tool_timeout == 5


def test_the_mode_tags_the_turn_and_overrides_come_last() -> None:
    assert plan_turn(ConversationConfig()).meta is None
    assert plan_turn(ConversationConfig(mode="agent")).meta == MessageMeta(mode="agent")
    meta = MessageMeta(mode="run", run_id="r")
    assert plan_turn(ConversationConfig(mode="agent"), meta=meta).meta is meta


@pytest.mark.parametrize(
    ("settings", "named"),
    [
        ({"tool_timeout": -1}, "tool_timeout must be a number of seconds > 0"),
        ({"tool_timeout": float("nan")}, "tool_timeout"),
        ({"max_tokens": 0}, "max_tokens must be a positive integer"),
        ({"tool_timout": 5}, "unknown setting 'tool_timout'"),
    ],
)
def test_a_bad_setting_is_refused_naming_it(settings: dict[str, object], named: str) -> None:
    with pytest.raises(UserError, match=named):
        plan_turn(ConversationConfig(), settings)


def test_settings_checked_once_are_not_checked_again(monkeypatch: pytest.MonkeyPatch) -> None:
    from threadline.engine import plan

    checked = check_settings({"tool_timeout": 3})
    assert isinstance(checked, CheckedSettings) and check_settings(checked) is checked
    calls: list[str] = []
    original = plan.setting_problem
    monkeypatch.setattr(plan, "setting_problem", lambda key, value: calls.append(key) or original(key, value))
    assert plan_turn(ConversationConfig(), checked).tool_timeout == 3
    assert calls == []


def test_a_prompt_checks_its_settings_once(monkeypatch: pytest.MonkeyPatch) -> None:
    from threadline import llm
    from threadline.engine import plan
    from threadline.testing import ScriptedModel

    calls: list[str] = []
    original = plan.setting_problem
    monkeypatch.setattr(plan, "setting_problem", lambda key, value: calls.append(key) or original(key, value))
    assert llm.model(ScriptedModel(["hi"])).request("hello").prompt(tool_timeout=4) == "hi"
    conversation = llm.model(ScriptedModel(["hi"])).request("hello").prompt_conversation(tool_timeout=4)
    conversation.run_sync()
    assert calls == ["tool_timeout", "tool_timeout"]  # once per call


def test_overrides_may_replace_any_field_of_the_options() -> None:
    from threadline.models.base import ModelSettings

    settings = ModelSettings(stream=False)
    assert plan_turn(ConversationConfig(), {"tool_timeout": 2}, settings=settings).settings is settings
