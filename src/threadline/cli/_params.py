"""The types of the options that commands share beyond click's own."""

from __future__ import annotations

from typing import Any

import click

from .._numbers import finite_problem

__all__ = ["FiniteFloatRange"]


class FiniteFloatRange(click.FloatRange):
    """A float option within a range that refuses infinity and NaN, however they are spelt (``inf``, ``-Infinity``,
    ``nan``, ``1e999``): click takes them, then a temperature went out as ``null`` (JSON has neither) and a wait of
    ``nan`` seconds was taken. Every float option of the CLI has this type."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = click.FLOAT.convert(value, param, ctx)
        problem = finite_problem(number)
        if problem is not None:
            self.fail(problem, param, ctx)
        return super().convert(number, param, ctx)
