"""``python -m threadline.cli``: the ``threadline`` command."""

from __future__ import annotations

from . import main

if __name__ == "__main__":
    main()
