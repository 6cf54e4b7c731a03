"""OpenAI's two APIs: Chat Completions (`OpenAIModel`, ``openai:<model>``, also every compatible server) and the
Responses API (`threadline.models.openai_responses.OpenAIResponsesModel`, ``openai-responses:<model>``).

Each model class says only how its API differs (`_chat`, `_responses`); the translation to and from the wire is pure
and kept apart by direction: the request (`_chat_request`, `_responses_request`), the complete answer
(`_chat_response`, `_responses_response`) and the stream (`_chat_stream`, `_responses_stream`); `_files` says which
file attachments each API takes. What all HTTP providers share is in `threadline.models.http`.

`OpenAIModel` loads on first use, so a program that only uses the Responses API never loads the Chat Completions
translation (importing any module of this package runs this one); the HTTP base both models share, and httpx with
it, load with the package, as they did with the module this package replaces.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..http import _model  # noqa: F401 (see above)

if TYPE_CHECKING:
    from ._chat import COMPATIBLE_MAX_TOKENS, DEFAULT_BASE_URL, OpenAIModel

__all__ = ["COMPATIBLE_MAX_TOKENS", "DEFAULT_BASE_URL", "OpenAIModel"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from . import _chat

        value = getattr(_chat, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
