"""An MCP "server" that never answers: it reads whatever it is sent and says nothing, as a server stuck before its
first reply (a deadlock, a prompt waiting on a terminal, the wrong program) does.

Run as ``python silent_server.py MODE``: ``eof`` exits once its stdin closes; ``stubborn`` keeps running after
that; ``deaf`` also ignores SIGTERM (only SIGKILL stops it).
"""

from __future__ import annotations

import signal
import sys
import time

mode = sys.argv[1] if len(sys.argv) > 1 else "eof"
if mode == "deaf":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
for _ in sys.stdin:
    pass
if mode in ("stubborn", "deaf"):
    time.sleep(3600)
