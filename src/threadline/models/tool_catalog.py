"""`ToolCatalog`: provider-safe wire names for the real tool names of one request, and back."""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["ToolCatalog"]


_WIRE_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_WIRE_BAD = re.compile(r"[^A-Za-z0-9_-]")


class ToolCatalog:
    """The per-request mapping between real tool names and provider-safe wire names (``[A-Za-z0-9_-]{1,64}``).

    Names that are already safe keep themselves. Others are sanitized (``Notes.add_note`` -> ``Notes_add_note``);
    over-long names and collisions get a short hash of the real name, so the mapping depends only on the names,
    never on their order.
    """

    __slots__ = ("_to_real", "_to_wire")

    def __init__(self, names: Iterable[str] = ()) -> None:
        self._to_wire: dict[str, str] = {}
        self._to_real: dict[str, str] = {}
        unique = sorted(set(names))
        for name in unique:
            if _WIRE_NAME.match(name):
                self._assign(name, name)
        for name in unique:
            if name not in self._to_wire:
                self.wire(name)

    def _assign(self, name: str, wire: str) -> str:
        self._to_wire[name] = wire
        self._to_real[wire] = name
        return wire

    def wire(self, name: str) -> str:
        """The wire name for a real name (assigned on first use)."""
        known = self._to_wire.get(name)
        if known is not None:
            return known
        if _WIRE_NAME.match(name) and name not in self._to_real:
            return self._assign(name, name)
        base = _WIRE_BAD.sub("_", name) or "tool"
        if len(base) <= 64 and base not in self._to_real:
            return self._assign(name, base)
        import hashlib  # here, not at the top: `import threadline` stays light (it loads OpenSSL)

        digest = hashlib.sha256(name.encode("utf-8")).hexdigest()
        candidate = f"{base[:55]}_{digest[:8]}"
        counter = 8
        while candidate in self._to_real:  # a hash collision on 32 bits: lengthen the hash
            counter += 1
            candidate = f"{base[: 63 - counter]}_{digest[:counter]}"
        return self._assign(name, candidate)

    def real(self, wire: str) -> str:
        """The real name for a wire name; an unknown wire name is returned unchanged."""
        return self._to_real.get(wire, wire)
