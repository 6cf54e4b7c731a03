"""Ready-made toolsets: `Pages` (``Pages.generate_ui``: pages the model publishes and reviews) and
``read_artifact`` (full tool outputs saved by the context builder)."""

from __future__ import annotations

from .pages import Pages

__all__ = ["Pages"]
