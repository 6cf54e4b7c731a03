"""A writer or a reader of one conversation, run by test_concurrency.py as one of several processes.

Usage:
  python _concurrency_child.py writer URL CONVERSATION NAME COUNT START_FILE
  python _concurrency_child.py reader URL CONVERSATION NAME STOP_FILE START_FILE
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from threadline import UserMessage
from threadline.store import open_store

role, url, conversation_id, name = sys.argv[1:5]
start = Path(sys.argv[-1])
deadline = time.monotonic() + 60
while not start.exists():  # Start together, so the writers overlap.
    if time.monotonic() > deadline:
        sys.exit(4)
    time.sleep(0.005)

with open_store(url) as store:
    if role == "writer":
        count = int(sys.argv[5])
        previous = None
        for index in range(count):
            message = UserMessage(content=f"{name} #{index}", id=f"{name}-{index:04d}")
            store.append(conversation_id, [message])
            if previous is not None and index % 7 == 0:
                store.append(conversation_id, [previous, message])  # a retry: both already stored, both skipped
            previous = message
        # One append of three messages: atomic, so they stay together in the order.
        store.append(
            conversation_id, [UserMessage(content=f"{name} batch {k}", id=f"{name}-batch-{k}") for k in range(3)]
        )
    else:
        stop = Path(sys.argv[5])
        last: list[str] = []
        while time.monotonic() < deadline:
            finished = stop.exists()
            ids = [message.id for message in store.load(conversation_id)]
            if ids != last:
                print(json.dumps(ids), flush=True)
                last = ids
            if finished:
                break
