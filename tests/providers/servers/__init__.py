"""Fake OpenAI (Chat Completions and Responses) and Anthropic servers over real HTTP on 127.0.0.1, for the provider
tests and the benchmark."""

from __future__ import annotations

from ._base import Answer, Chunks, Close, Cut, Events, FakeServer, Hang, Recorded, Stall, Status, ToolUse, Trickle
from .anthropic import FakeAnthropic
from .openai import LLAMA_CPP_PYTHON, FakeOpenAI
from .responses import FakeResponses, Thought

__all__ = [
    "LLAMA_CPP_PYTHON",
    "Answer",
    "Chunks",
    "Close",
    "Cut",
    "Events",
    "FakeAnthropic",
    "FakeOpenAI",
    "FakeResponses",
    "FakeServer",
    "Hang",
    "Recorded",
    "Stall",
    "Status",
    "Thought",
    "ToolUse",
    "Trickle",
]
