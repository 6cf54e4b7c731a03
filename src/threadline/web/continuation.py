"""Which model the composer continues a conversation on, and whether to say it is not the one that made it.

The composer used to say only "on local" under a conversation made on ``openai:gpt-4o``, so a reader could not tell
that the next answer would come from another model. Now it preselects the conversation's own model when the viewer
offers it, and otherwise says which model made the conversation.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ..message_types import AssistantMessage, Message
from ..models import DEFAULT_MODELS

__all__ = ["composer_choice", "made_on"]


def made_on(messages: Iterable[Message]) -> str | None:
    """The model of the newest assistant message among ``messages`` (None when none names one)."""
    for message in reversed(list(messages)):
        if isinstance(message, AssistantMessage) and message.model:
            return message.model
    return None


def _canonical(name: str) -> str:
    """A model name as the registry resolves a bare provider name (``local`` -> ``local:smollm2``)."""
    return DEFAULT_MODELS.get(name, name)


def composer_choice(offered: Sequence[str], conversation_model: str | None) -> tuple[str | None, str | None]:
    """The composer's model for a conversation made on ``conversation_model``.

    Args:
        offered: The names of the models the viewer offers (the first is its default).
        conversation_model: The model of the conversation's newest assistant message, if any.

    Returns:
        The offered name to preselect (None: the first), and the conversation's model when the composer would
        continue on another one (None when it continues on the same, or the conversation names none).
    """
    if not conversation_model or not offered:
        return None, None
    wanted = _canonical(conversation_model)
    for name in offered:
        if _canonical(name) == wanted:
            return name, None
    return None, conversation_model
