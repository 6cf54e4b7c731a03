"""The floor workflows of ``bench_durable.py``: DBOS workflows with the turn workflow's signature and output
(``(app, conversation_id, text) -> {"stop_reason", "last_message_id"}``) made of empty steps.

- ``bench_bare_turn_2``: 2 empty steps, as many as a threadline turn records (``record_request``,
  ``continue_turn``);
- ``bench_bare_turn_6``: 6, one step per model call and tool call of a 3-round tool turn.

Importing this module registers them with DBOS. The bench's app module imports it, so the real ``threadline worker``
(which imports its apps before it launches DBOS) serves them beside threadline's turns, on the same queue; DBOS's
application version is fixed (``WORKFLOWS_VERSION``), so registering them changes nothing else in the worker.
"""

from __future__ import annotations

from dbos import DBOS

__all__ = ["BARE_STEPS", "bare_turn_2", "bare_turn_6", "empty_step"]

BARE_STEPS = {"bench_bare_turn_2": 2, "bench_bare_turn_6": 6}
"""The floor workflows by name, and how many empty steps each runs."""


@DBOS.step(name="bench_empty_step")
def empty_step() -> None:
    """A step that does nothing: what DBOS's journaling of one step costs on its own."""


def _bare(steps: int) -> dict[str, str | None]:
    for _ in range(steps):
        empty_step()
    return {"stop_reason": "end", "last_message_id": None}


@DBOS.workflow(name="bench_bare_turn_2")
def bare_turn_2(app: str, conversation_id: str, text: str) -> dict[str, str | None]:
    """Two empty steps, as many as a threadline turn records."""
    return _bare(BARE_STEPS["bench_bare_turn_2"])


@DBOS.workflow(name="bench_bare_turn_6")
def bare_turn_6(app: str, conversation_id: str, text: str) -> dict[str, str | None]:
    """Six empty steps: one per model call and tool call of a 3-round tool turn."""
    return _bare(BARE_STEPS["bench_bare_turn_6"])
