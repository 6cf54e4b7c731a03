"""One writer of a race: continues a stored conversation with one tool turn once START_FILE exists (run by
``processes.py``, two at once).

Usage: python _race_child.py STORE_URL CONVERSATION_ID NAME START_FILE

Prints ``ok`` when its turn ran, or ``busy`` when it was refused with `ConversationBusy` (allowed: then it must
have written nothing).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

from threadline import AssistantMessage, Conversation, ConversationBusy, ConversationConfig, ToolCall, UserMessage
from threadline.store import open_store
from threadline.testing import ScriptedModel, ScriptedRequest

url, conversation_id, name, start = sys.argv[1], sys.argv[2], sys.argv[3], Path(sys.argv[4])


def pause(seconds: float) -> str:
    """Take a moment, long enough for the other writer to try to get in."""
    time.sleep(seconds)
    return f"rested {seconds}"


def answer(request: ScriptedRequest) -> Any:
    last = request.messages[-1]
    if isinstance(last, UserMessage):
        return AssistantMessage(tool_calls=[ToolCall(id="", name="pause", arguments={"seconds": 0.05})])
    return f"answer to {last.content}"


with open_store(url) as store:
    # Loaded before the other writer appends: the turn must read what it added once it holds the lease.
    conversation = Conversation.load(conversation_id, store, ConversationConfig(busy_timeout=60))
    print("loaded", flush=True)
    builder = conversation.continuation.model(ScriptedModel([answer] * 4)).tools(pause)
    deadline = time.monotonic() + 60
    while not start.exists():
        if time.monotonic() > deadline:
            sys.exit(4)
        time.sleep(0.002)
    try:
        text = builder.request(name).prompt()
    except ConversationBusy:
        print("busy", flush=True)
    else:
        print("ok" if text == "answer to rested 0.05" else f"wrong answer {text!r}", flush=True)
