"""Shared pieces of the embedded-model tests: the tool object the tests call, and the model itself.

The model is the real SmolLM2-135M-Instruct run by llama.cpp, with greedy decoding (``temperature=0``).
"""

from __future__ import annotations

import pytest

from threadline import get_model
from threadline.models.local import LocalModel


class Units:
    """A unit converter whose methods become the tools ``Units.<method>``; it records every call it gets."""

    name = "Units"

    def __init__(self) -> None:
        self.calls: list[float] = []

    def celsius_to_fahrenheit(self, celsius: float) -> str:
        """Convert a temperature from degrees Celsius to degrees Fahrenheit."""
        self.calls.append(celsius)
        return converted(celsius)


def converted(celsius: float) -> str:
    """What `Units.celsius_to_fahrenheit` answers, computed independently of the object."""
    return f"{celsius:g} °C = {celsius * 9 / 5 + 32:g} °F"


@pytest.fixture
def local() -> LocalModel:
    model = get_model("local")
    assert isinstance(model, LocalModel)
    return model
