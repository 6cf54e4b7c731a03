"""Durable turns on DBOS: a turn queued by a `Client` and run by a worker process (``threadline worker``), which
survives the worker being killed (see "Running on many workers" in the README).

The log is the checkpoint: a turn is one DBOS workflow of two steps, recording the user's message and continuing
the conversation from its log, so a restarted worker asks the model again only for the call that was in flight.
DBOS keeps only ids and short strings. Needs the ``durable`` extra (``pip install 'threadline[durable]'``);
``import threadline`` never imports DBOS.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .apps import UnknownApp
    from .client import Client, TurnHandle, TurnOutcome

__all__ = ["Client", "TurnHandle", "TurnOutcome", "UnknownApp"]


def __getattr__(name: str) -> Any:
    if name in ("Client", "TurnHandle", "TurnOutcome"):
        from . import client

        return getattr(client, name)
    if name == "UnknownApp":
        from . import apps

        return apps.UnknownApp
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
