"""Ready-made toolsets: ``read_artifact`` (full tool outputs saved by the context builder)."""

from __future__ import annotations

__all__: list[str] = []
