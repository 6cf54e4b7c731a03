"""The web viewer (``threadline serve``; the ``web`` extra): read, search, follow live, continue and fork stored
conversations in a browser.

    from threadline.web import create_app
    app = create_app(open_store(), model="openai:gpt-4o-mini", token="s3cret")   # an ASGI app

Server-rendered HTML (Starlette, Jinja2 with autoescaping) with one small script and one stylesheet shipped in the
package: no build step, no CDN, it works offline. See `threadline.web.app` for the routes and
`threadline.web.security` for what every request must satisfy.
"""

from __future__ import annotations

try:
    import jinja2  # noqa: F401
    import starlette  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the install
    from ..errors import UserError

    raise UserError("the web viewer needs the 'web' extra: pip install 'threadline[web]'") from exc

from .app import create_app

__all__ = ["create_app"]
