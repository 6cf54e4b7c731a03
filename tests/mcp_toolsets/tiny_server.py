"""An MCP stdio server written by hand, without the SDK, so it starts at once even on a busy machine: it answers
``initialize`` and ``tools/list`` (one tool, ``crash``, which exits the process), and nothing else.

Run as ``python tiny_server.py FLAG``: the first start (``FLAG`` does not exist yet) creates ``FLAG`` and serves;
every later start says nothing, as a server that hangs on a lock its killed predecessor held.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

flag = Path(sys.argv[1])
if flag.exists():
    for _ in sys.stdin:  # silent: reads everything, answers nothing
        pass
    sys.exit(0)
flag.touch()


def answer(ident: object, result: dict[str, object]) -> None:
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": ident, "result": result}) + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    request = json.loads(line)
    method = request.get("method")
    if method == "initialize":
        answer(
            request["id"],
            {
                "protocolVersion": request["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "Tiny", "version": "1.0"},
            },
        )
    elif method == "tools/list":
        answer(request["id"], {"tools": [{"name": "crash", "description": "Exit.", "inputSchema": {"type": "object"}}]})
    elif method == "tools/call":
        os._exit(1)
    elif "id" in request:
        sys.stdout.write(
            json.dumps({"jsonrpc": "2.0", "id": request["id"], "error": {"code": -32601, "message": "no"}}) + "\n"
        )
        sys.stdout.flush()
