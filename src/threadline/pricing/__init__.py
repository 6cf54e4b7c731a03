"""What model calls cost.

- `cost.py`: `Cost`, the value a `Usage` carries and every sum of usages keeps (a leaf: the log holds it).
- `prices.py`: pricing a usage with the ``genai-prices`` table (`price`, `priced`), summing a log's costs
  (`log_cost`, `Spending`) and showing them (`cost_text`). It imports the log, so this package root imports only the
  leaf: ``from threadline.pricing.prices import price``.
"""

from __future__ import annotations

from .cost import NOT_PRICED, Cost, cost_of

__all__ = ["NOT_PRICED", "Cost", "cost_of"]
