"""Argument types a model cannot be told about give a `UserError` naming the tool and the argument, never a raw
pydantic exception (``PydanticUserError`` for a ``typing.TypedDict`` before Python 3.12,
``PydanticInvalidForJsonSchema`` for a ``Callable``, which pydantic validates but cannot describe)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TypedDict

import pytest

from threadline import Attachment, Toolset, UserError, llm, tool
from threadline.testing import ScriptedModel


class Options(TypedDict):
    depth: int


class Opaque:
    """A class pydantic knows nothing about."""


def configure(name: str, options: Options) -> str:
    return name


def transform(value: int, callback: Callable[[int], int] | None = None) -> int:
    return value


def store(item: Opaque) -> None:
    pass


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="pydantic takes typing.TypedDict from Python 3.12")
def test_a_typing_typed_dict_argument_is_a_user_error_naming_it() -> None:
    with pytest.raises(UserError) as raised:
        tool(configure)
    message = str(raised.value)
    assert message.startswith("tool 'configure': the type of its argument 'options' cannot be described")
    assert "typing_extensions.TypedDict" in message  # pydantic's advice, which is the fix


@pytest.mark.parametrize(("function", "argument"), [(transform, "callback"), (store, "item")])
def test_an_undescribable_argument_is_a_user_error_naming_it(function: Callable[..., object], argument: str) -> None:
    with pytest.raises(UserError) as raised:
        tool(function)
    assert str(raised.value).startswith(
        f"tool {function.__name__!r}: the type of its argument {argument!r} cannot be described as JSON schema: "
    )


def test_from_object_raises_the_user_error_and_a_mention_leaves_the_method_out() -> None:
    class Pipeline:
        def run(self, value: int) -> int:
            return value

        def each(self, callback: Callable[[int], None]) -> None:
            pass

    with pytest.raises(UserError, match=r"'Pipeline\.each': the type of its argument 'callback'"):
        Toolset.from_object(Pipeline())
    model = ScriptedModel(["ok"])
    mention = Attachment.mention("p", Pipeline())
    assert llm.model(model).request("@p", attachments=[mention]).prompt() == "ok"
    assert model.requests[0].tool_names == ["Pipeline.run"]
