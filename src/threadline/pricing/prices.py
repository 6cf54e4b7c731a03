"""What model calls cost: a `Usage` priced in US dollars with the ``genai-prices`` table (the ``cost`` extra).

The table is the one bundled with the installed ``genai-prices`` (its version is recorded on every `Cost` as
``"genai-prices X.Y.Z"``); nothing is fetched at run time, even when an application runs genai-prices' own
``UpdatePrices`` (this module keeps its own snapshot of the bundled table). ``import threadline`` does not load it:
the first priced call does (about a second, once per process).

A model is found by its threadline name: the prefix names the provider (``openai:`` and ``openai-responses:`` are
OpenAI, ``anthropic:`` is Anthropic), the rest is the model id as the request sent it. A server reached under the
``openai:`` prefix (OpenRouter, a local llama.cpp) is priced at OpenAI's list price for that id where the table has
one. ``local:`` models cost nothing. A price is never guessed: what the table has no price for — the model, or a
token kind it does not list (cache reads or writes) — is named in `Cost.unknown` and left out of `Cost.usd`, and a
table that fails to load prices nothing and says why; pricing never raises into a turn.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from decimal import ROUND_HALF_UP, Decimal
from typing import TYPE_CHECKING, Any

import msgspec

from ..message_types import AssistantMessage, Message, Usage
from .cost import NOT_PRICED, Cost

if TYPE_CHECKING:
    from ..store import Store

__all__ = [
    "NOT_REPORTED",
    "Spending",
    "cost_text",
    "log_cost",
    "price",
    "priced",
    "prices_version",
    "stored_spending",
]

NOT_REPORTED = "usage not reported"
"""The unknown part of a model call that reported no usage."""

_PROVIDERS = {"openai": "openai", "openai-responses": "openai", "anthropic": "anthropic"}
_FREE_PREFIXES = frozenset({"local"})
_ZERO = Decimal(0)

# The loaded table, and each model name's match in it: (provider, model info) or the unknown part that says why
# there is none. Filled on first use; a name is looked up once per process.
_table: Any = None
_table_problem: str | None = None
_version: str | None = None
_matches: dict[str, tuple[Any, Any] | str] = {}
# The costs of the latest usages, by model name and counts: a tool loop's calls often repeat their counts.
_priced: dict[tuple[Any, ...], Cost] = {}
_PRICED_KEPT = 4096
_MILLION = Decimal(1_000_000)
_CENTS_PLACES = Decimal("0.0001")
_BELOW_CENT_PLACES = Decimal("0.000001")


def prices_version() -> str | None:
    """The price table's version (``"genai-prices 0.2.3"``), or None when it cannot be loaded."""
    _load()
    return _version


def price(usage: Usage, model: str | None) -> Cost:
    """What one model call cost.

    Args:
        usage: The call's usage (its counts are checked: one that is not a count prices nothing).
        model: The threadline name of the model that answered (``"openai:gpt-4o-mini"``).

    Returns:
        The `Cost`: ``usd`` the price of what has one, ``unknown`` what has none. Never raises.
    """
    try:
        return _price(usage, model)
    except Exception as exc:
        return Cost(unknown=(f"pricing failed: {type(exc).__name__}",), prices=_version)


def priced(usage: Usage | None, model: str | None) -> Usage | None:
    """``usage`` with its cost set (a usage that already has one keeps it; None stays None)."""
    if usage is None or usage.cost is not None:
        return usage
    return msgspec.structs.replace(usage, cost=price(usage, model))


def log_cost(messages: Iterable[Message]) -> Cost:
    """The summed cost of the model calls of a log: its assistant messages' costs, each unknown part named.

    A call that reported no usage is the unknown part ``"usage not reported"`` (a failed call that never reached the
    model is not counted), a usage without a cost (logged before calls were priced) is ``"usage not priced"``.
    """
    total = Cost()
    for message in messages:
        if type(message) is not AssistantMessage:
            continue
        usage = message.usage
        if usage is None:
            if message.error is None:
                total = total + Cost(unknown=(NOT_REPORTED,))
            continue
        cost = usage.cost
        if cost is None:
            cost = Cost(unknown=(NOT_PRICED,)) if usage.total_tokens else Cost()
        total = total + cost
    return total


class Spending:
    """What the model calls among some messages spent, summed: calls, tokens (cached ones apart) and cost.

    Attributes:
        calls: Model calls (a failed call that reported no usage is not counted: nothing says it was billed).
        tokens: Input and output tokens.
        cached: The input tokens read from a prompt cache.
        written: The input tokens written to a prompt cache.
        cost: Their summed `Cost`.
    """

    __slots__ = ("cached", "calls", "cost", "tokens", "written")

    def __init__(self, messages: Iterable[Message] = ()) -> None:
        self.calls = 0
        self.tokens = 0
        self.cached = 0
        self.written = 0
        self.cost = Cost()
        self.add(messages)

    def add(self, messages: Iterable[Message]) -> None:
        """Count the model calls among ``messages`` (other messages are passed over)."""
        for message in messages:
            if type(message) is not AssistantMessage:
                continue
            usage = message.usage
            if usage is None and message.error is not None:
                continue
            self.calls += 1
            if usage is not None:
                self.tokens += usage.total_tokens
                self.cached += usage.cache_read_tokens
                self.written += usage.cache_write_tokens
            self.cost = self.cost + log_cost((message,))

    def text(self) -> str:
        """``"3 calls · 4,512 tokens (1,024 cached) · $0.0123"``, the unknown parts of the cost named after it."""
        calls = f"{self.calls} call{'' if self.calls == 1 else 's'}"
        cache = []
        if self.cached:
            cache.append(f"{self.cached:,} cached")
        if self.written:
            cache.append(f"{self.written:,} written to cache")
        tokens = f"{self.tokens:,} tokens" + (f" ({', '.join(cache)})" if cache else "")
        unknown = f" (unknown: {'; '.join(self.cost.unknown)})" if self.cost.unknown else ""
        return f"{calls} · {tokens} · {cost_text(self.cost)}{unknown}"

    def to_dict(self) -> dict[str, Any]:
        """The sums as JSON values (the cost in USD as a string, exact; None when nothing had a price)."""
        usd = self.cost.usd
        return {
            "calls": self.calls,
            "tokens": self.tokens,
            "cached_tokens": self.cached,
            "cache_write_tokens": self.written,
            "cost_usd": None if usd is None else str(usd),
            "cost_unknown": list(self.cost.unknown),
            "cost_text": cost_text(self.cost),
        }


def stored_spending(store: Store, conversation_id: str, page: int = 500) -> Spending:
    """What a stored conversation's model calls spent, read ``page`` messages at a time (memory stays bounded).

    Raises:
        StoreError: if the store has no such conversation.
    """
    store.get_conversation(conversation_id)  # an unknown conversation is an error, not an empty sum
    spending = Spending()
    after = -1
    while True:
        found = store.read_after(conversation_id, after, page)
        if not found.messages:
            return spending
        spending.add(found.messages)
        after = found.seqs[-1]


def cost_text(cost: Cost | None) -> str:
    """A cost as people read it: ``"$0.0123"`` (to the cent's hundredth, or six places below a cent),
    ``"$0.0123 + unknown"`` when some part has no price, ``"unknown"`` when none has, ``"$0"`` when nothing was
    spent."""
    if cost is None:
        return "unknown"
    usd = cost.usd
    if usd is None:
        return "unknown" if cost.unknown else "$0"
    if usd == 0:
        shown = "$0"
    else:
        # Half up, as the viewer rounds its sums (static/viewer.js, costText).
        places = _CENTS_PLACES if usd >= Decimal("0.01") else _BELOW_CENT_PLACES
        rounded = usd.quantize(places, rounding=ROUND_HALF_UP)
        shown = f"${rounded:,}" if rounded else "<$0.000001"  # spent, if very little: never shown as nothing
    return f"{shown} + unknown" if cost.unknown else shown


def _price(usage: Usage, model: str | None) -> Cost:
    counts = (usage.input_tokens, usage.output_tokens, usage.cache_read_tokens, usage.cache_write_tokens)
    if not all(type(count) is int and count >= 0 for count in counts):
        return Cost(unknown=(f"token counts that are not counts: {counts!r:.80}",), prices=_version)
    key = (model, *counts)
    known = _priced.get(key)
    if known is not None:
        return known  # a Cost is frozen: one is shared by every call of the same model and counts
    cost = _price_anew(usage, model)
    if len(_priced) >= _PRICED_KEPT:
        _priced.clear()
    _priced[key] = cost
    return cost


def _price_anew(usage: Usage, model: str | None) -> Cost:
    name = model or ""
    prefix, _, model_id = name.partition(":")
    if prefix in _FREE_PREFIXES and model_id:
        return Cost(usd=_ZERO, prices="local model")
    if not _load():
        return Cost(unknown=(f"price table: {_table_problem}",))
    match = _matches.get(name)
    if match is None:
        match = _matches[name] = _find(name)
    if isinstance(match, str):
        return Cost(unknown=(match,), prices=_version)
    provider, info = match
    model_price = info.get_prices(datetime.now(UTC))  # the prices in force now (some change on a date)
    unknown: list[str] = []
    read, written = usage.cache_read_tokens, usage.cache_write_tokens
    inputs = usage.input_tokens
    if read and getattr(model_price, "cache_read_mtok", None) is None:
        unknown.append("cache_read_tokens")
        inputs -= read
        read = 0
    if written and getattr(model_price, "cache_write_mtok", None) is None:
        unknown.append("cache_write_tokens")
        inputs -= written
        written = 0
    counts = (max(inputs, 0), usage.output_tokens, read, written)
    usd = _flat_price(model_price, *counts)
    if usd is None:
        from genai_prices.types import Usage as TableUsage

        table_usage = TableUsage(
            input_tokens=counts[0], output_tokens=counts[1], cache_read_tokens=read, cache_write_tokens=written
        )
        usd = Decimal(info.calc_price(table_usage, provider).total_price)
    return Cost(usd=usd, unknown=tuple(unknown), prices=_version)


def _flat_price(model_price: Any, inputs: int, outputs: int, read: int, written: int) -> Decimal | None:
    """The price of a model whose prices are flat per million tokens (no tiers, no price per request), as
    genai-prices computes it; None for any other model (genai-prices then computes it, about 0.3 ms)."""
    prices = model_price.__dict__
    flat = (
        prices.get("input_mtok"),
        prices.get("output_mtok"),
        prices.get("cache_read_mtok"),
        prices.get("cache_write_mtok"),
    )
    if prices.get("requests_kcount") is not None or not all(p is None or type(p) is Decimal for p in flat):
        return None
    uncached = inputs - read - written
    total = Decimal(0)
    for count, per_million in zip((uncached, outputs, read, written), flat, strict=True):
        if count and per_million is not None:
            total += per_million * count
    return total / _MILLION


def _find(name: str) -> tuple[Any, Any] | str:
    """The table's provider and model for a threadline model name, or the unknown part that says it has none."""
    prefix, colon, model_id = name.partition(":")
    # A known prefix names the provider; any other name is looked up as it is, the table guessing its provider.
    provider_id = _PROVIDERS.get(prefix) if colon else None
    ref = model_id if provider_id is not None else name
    if not ref:
        return "model (none named)"
    try:
        return _table.find_provider_model(ref, None, provider_id, None)  # type: ignore[no-any-return]
    except LookupError:
        return f"model {name}"


def _load() -> bool:
    """Load the bundled price table once; False (and `_table_problem` says why) when it cannot be loaded."""
    global _table, _table_problem, _version
    if _table is not None:
        return True
    if _table_problem is not None:
        return False
    try:
        import genai_prices
        from genai_prices.data import providers
        from genai_prices.data_snapshot import DataSnapshot

        _table = DataSnapshot(providers=providers, from_auto_update=False)
        _version = f"genai-prices {genai_prices.__version__}"
    except Exception as exc:
        if isinstance(exc, ImportError):
            _table_problem = "genai-prices is not installed (pip install 'threadline[cost]')"
        else:
            _table_problem = f"it could not be loaded ({type(exc).__name__})"
        return False
    return True
