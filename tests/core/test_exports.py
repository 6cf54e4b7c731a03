"""The public names (docs/architecture.md#public-names) exist at the package root and `__all__` is truthful."""

from __future__ import annotations

import subprocess
import sys

import threadline

DESIGN_NAMES = [
    "llm", "PromptBuilder", "Conversation", "ConversationConfig", "MessageList", "SystemMessage", "UserMessage",
    "AssistantMessage", "ToolMessage", "ToolCall", "LLMError", "Usage", "MessageMeta", "Attachment", "system", "user",
    "assistant", "tool", "Tool", "Toolset", "get_model", "ProtocolError", "MessageListDeserializationError",
    "ModelError", "CapabilityError", "ContextBuilder", "ContextSettings", "ModePrompts", "BuiltContext",
    "ContextReport", "open_store", "Store",
]  # fmt: skip


def test_every_name_in_all_resolves() -> None:
    assert len(threadline.__all__) == len(set(threadline.__all__))
    for name in threadline.__all__:
        assert getattr(threadline, name) is not None, name


def test_design_names_are_public() -> None:
    missing = [name for name in DESIGN_NAMES if name not in threadline.__all__]
    assert missing == []
    for name in DESIGN_NAMES:
        assert hasattr(threadline, name), name


def test_scripted_model_lives_in_threadline_testing() -> None:
    from threadline.testing import ScriptedModel

    assert issubclass(ScriptedModel, threadline.Model)


def test_public_classes_say_they_belong_to_threadline() -> None:
    for name in threadline.__all__:
        value = getattr(threadline, name)
        module = getattr(value, "__module__", None)
        if isinstance(value, type) or callable(value):
            assert module is not None and module.startswith("threadline"), (name, module)


def test_unknown_attribute_is_an_attribute_error() -> None:
    try:
        threadline.does_not_exist  # type: ignore[attr-defined]  # noqa: B018
    except AttributeError as exc:
        assert "does_not_exist" in str(exc)
    else:
        raise AssertionError("expected AttributeError")


def test_star_import_gives_exactly_all() -> None:
    code = (
        "from threadline import *\nimport threadline\n"
        "missing = [n for n in threadline.__all__ if n not in globals()]\nprint(missing)"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "[]"


def test_the_mcp_names_the_readme_uses_come_from_threadline_without_loading_mcp_at_import() -> None:
    """``except MCPConnectionError`` and the ``MCPToolset`` type were importable only from private-looking modules."""
    import subprocess
    import sys

    code = (
        "import sys, threadline; assert 'threadline.tools.mcp.toolset' not in sys.modules; "
        "from threadline import MCPConnectionError, MCPToolset, Toolset; "
        "assert issubclass(MCPConnectionError, threadline.ThreadlineError); "
        "assert MCPToolset.__name__ == 'MCPToolset'; assert 'mcp' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
