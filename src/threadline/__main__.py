"""``python -m threadline``: the ``threadline`` command (needs the ``cli`` extra)."""

from __future__ import annotations

from .cli import main

if __name__ == "__main__":
    main()
