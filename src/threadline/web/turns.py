"""Turns run from the browser: one at a time per conversation, through the public `Conversation` API.

``POST /c/<id>/messages`` starts a turn and returns at once; the turn runs as a task of the server's event loop. Its
messages are written through to the store by the conversation itself (so every open page, in any process, sees
them); the text the model streams and the turn's state are published as `TurnEvents`. A second turn on a
conversation whose turn is still running here is refused (`TurnBusy`); a turn refused because another process holds
the conversation (`ConversationBusy`, after waiting ``busy_timeout`` for it) is reported as ``busy``, not as a failure.
A turn that ends with tool calls waiting for a decision or an outside result is reported as ``awaiting``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Any

from anyio import to_thread

from .._exception_text import describe_exception, readable_message
from ..conversation import Conversation, ConversationConfig
from ..errors import ConversationBusy, ModelError, ThreadlineError
from ..models import Model
from ..store import Store
from .live import TurnEvents

__all__ = ["TurnBusy", "TurnRunner"]

log = logging.getLogger("threadline.web")


class TurnBusy(Exception):
    """A turn of this conversation is already running in this server."""


class TurnRunner:
    """Starts turns and remembers which conversations are running one.

    Args:
        store: The store the conversations live in.
        tools: Tools offered in every turn (``-T``).
        events: Where turn events go.
    """

    def __init__(self, store: Store, tools: Sequence[Any], events: TurnEvents) -> None:
        self.store = store
        self.tools = list(tools)
        self.events = events
        self._running: dict[str, asyncio.Task[None]] = {}

    def is_running(self, conversation_id: str) -> bool:
        """Whether this server is running a turn of the conversation."""
        return conversation_id in self._running

    def start(self, conversation_id: str, text: str | None, model: str | Model) -> None:
        """Start a turn that adds ``text`` as a user message and answers it; with ``text`` None, a turn that goes on
        after tool calls were decided (`Conversation.resume`: the approved calls run, then the model answers).

        Raises:
            TurnBusy: if a turn of this conversation is running here.
        """
        if conversation_id in self._running:
            raise TurnBusy(conversation_id)
        self.events.publish(conversation_id, "turn", {"state": "running"})
        task = asyncio.ensure_future(self._run(conversation_id, text, model))
        self._running[conversation_id] = task
        task.add_done_callback(lambda _: self._running.pop(conversation_id, None))

    async def _run(self, conversation_id: str, text: str | None, model: str | Model) -> None:
        publish = self.events.publish
        try:
            config = ConversationConfig(tools=list(self.tools))
            conversation = await to_thread.run_sync(Conversation.load, conversation_id, self.store, config)
            builder = conversation.continuation.model(model)
            if text is not None:
                builder = builder.request(text)
            async for piece in builder.stream():
                publish(conversation_id, "delta", {"text": piece})
        except ConversationBusy as exc:
            publish(conversation_id, "turn", {"state": "busy", "detail": _one_line(readable_message(exc))})
        except ModelError as exc:
            # The failure is in the log already (with its partial output); the page shows it as a failure. (A
            # custom model's own ModelError may have a __str__ that raises: its message is read safely.)
            publish(conversation_id, "turn", {"state": "failed", "detail": _one_line(readable_message(exc))})
        except Exception as exc:
            if isinstance(exc, ThreadlineError):
                publish(conversation_id, "turn", {"state": "error", "detail": _one_line(readable_message(exc))})
            else:
                log.exception("turn of conversation %s failed", conversation_id)
                publish(conversation_id, "turn", {"state": "error", "detail": _one_line(describe_exception(exc))})
        else:
            last = conversation.last_turn
            waits = last is not None and last.stop_reason == "awaiting"
            publish(conversation_id, "turn", {"state": "awaiting" if waits else "done"})

    async def close(self) -> None:
        """Cancel running turns (the server is stopping); each records what it had, as an interrupted turn does."""
        tasks = list(self._running.values())
        for task in tasks:
            task.cancel()
        for task in tasks:
            try:
                await task
            except BaseException:  # a cancelled turn has nothing more to report
                pass


def _one_line(text: str) -> str:
    first = text.strip().splitlines()[0] if text.strip() else "failed"
    return first[:500]
