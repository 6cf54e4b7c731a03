"""The viewer's guard (docs/failure-rules.md#viewer): which requests reach the app at all, and the headers every answer
carries.

- **Host**: a request whose ``Host`` is not one the server was bound to (or ``localhost``) is refused, so a web page
  on another site cannot reach the viewer through DNS rebinding.
- **Token**: when the viewer has one, every request must carry it: ``Authorization: Bearer …``, an
  ``X-Threadline-Token`` header, or the cookie set when the launch URL (``/?token=…``) is opened. That URL answers
  with a redirect to itself without the token (built from the raw path, always to this viewer), so the token leaves
  the address bar, Back never returns to it and no page's referrer holds it. The browser's list of visited
  addresses (its History) still records the launch URL: a browser records every address it opens, before any
  answer (a redirect, a page that replaces its own history entry) could prevent it. The cookie is ``SameSite=Lax``,
  so a link from another site into the viewer opens the page; cross-site requests that could change something
  carry no cookie, and the Origin rule below refuses them anyway.
- **Origin**: a request that changes something (any method but GET/HEAD/OPTIONS) must come from a page of the viewer
  itself (``Origin`` equal to the viewer's own), so another site, or a generated page in its sandbox (origin
  ``null``), cannot post in the user's name.
- **Headers**: a strict Content-Security-Policy (scripts and styles only from the viewer's own files: an injected
  ``<script>`` would not run even if escaping ever failed), no framing, no sniffing, and a referrer only within
  the viewer (``no-referrer`` would make browsers send ``Origin: null`` with its own forms).

It is plain ASGI, so it guards streamed answers (server-sent events) as well as pages.
"""

from __future__ import annotations

import hmac
from collections.abc import Iterable
from http.cookies import SimpleCookie
from urllib.parse import parse_qsl, quote, unquote_plus

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["LOOPBACK_NAMES", "PAGE_CSP", "VIEWER_CSP", "Guard", "host_name"]

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
TOKEN_HEADER = "x-threadline-token"
VIEWER_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "frame-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
# A generated page (``/p/<id>``): its own inline HTML, CSS and script run, in a sandbox (an opaque origin, apart from
# the viewer), and nothing in it reaches the network: no image, stylesheet, font, fetch, beacon or socket to any
# server, so a page cannot send what it shows (or that it was opened) anywhere. Only data: and blob: URLs load.
PAGE_CSP = (
    "sandbox allow-scripts; default-src 'none'; script-src 'unsafe-inline' 'unsafe-eval'; "
    "style-src 'unsafe-inline'; img-src data: blob:; font-src data:; media-src data: blob:; connect-src 'none'; "
    "frame-src 'none'; worker-src 'none'; object-src 'none'; manifest-src 'none'; form-action 'none'; "
    "base-uri 'none'; frame-ancestors 'self'"
)
_DEFAULT_HEADERS = (
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),
    (b"content-security-policy", VIEWER_CSP.encode()),
    (b"x-frame-options", b"DENY"),
)


def host_name(host: str) -> str:
    """The name part of a ``Host`` header value: no port, no IPv6 brackets, lowercased."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1 : host.find("]")] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


class Guard:
    """ASGI middleware enforcing the rules of the module docstring.

    Args:
        app: The app it guards.
        token: The secret every request must carry, or None for none (loopback only: `threadline serve` refuses
            another bind without one).
        allowed_hosts: Host names (without port) a request may name, besides the loopback names.
    """

    def __init__(self, app: ASGIApp, *, token: str | None, allowed_hosts: Iterable[str] = ()) -> None:
        self.app = app
        self.token = token
        self.allowed = LOOPBACK_NAMES | {host_name(name) for name in allowed_hosts}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        host = headers.get("host", "")
        if host_name(host) not in self.allowed:
            await _refuse(send, 403, "This viewer does not answer for that host name (DNS rebinding protection).")
            return
        if self.token is not None:
            query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True))
            supplied = query.get("token")
            if supplied is not None and self._valid(supplied) and scope["method"] in SAFE_METHODS:
                await self._adopt_token(scope, send, host)
                return
            if not self._valid(_token_of(headers, scope)):
                await _refuse(send, 401, "This viewer needs its token: open the URL that `threadline serve` printed.")
                return
        if scope["method"] not in SAFE_METHODS:
            scheme = scope.get("scheme", "http")
            if headers.get("origin") != f"{scheme}://{host}":
                await _refuse(send, 403, "Cross-origin request refused: changes can only be made from the viewer.")
                return
        await self.app(scope, receive, _with_headers(send))

    def _valid(self, supplied: str | None) -> bool:
        assert self.token is not None
        return supplied is not None and hmac.compare_digest(supplied.encode(), self.token.encode())

    async def _adopt_token(self, scope: Scope, send: Send, host: str) -> None:
        """Answer the launch URL: set the cookie, and send the browser to the same page without the token."""
        assert self.token is not None
        # Lax, not Strict: a link into the viewer from another site (a chat, a ticket) must open the page, and
        # Lax still keeps the cookie off every cross-site request but a top-level GET, which changes nothing.
        cookie = f"{cookie_name(host)}={self.token}; Path=/; HttpOnly; SameSite=Lax"
        await send(
            {
                "type": "http.response.start",
                "status": 303,
                "headers": [
                    (b"location", launch_target(scope).encode("ascii")),
                    (b"set-cookie", cookie.encode()),
                    (b"cache-control", b"no-store"),
                    *_DEFAULT_HEADERS,
                ],
            }
        )
        await send({"type": "http.response.body", "body": b""})


# What may stay as it is in a path or query the redirect repeats: RFC 3986's unreserved and sub-delims, ":", "@",
# "/" and "%" (the request's own escapes are kept, so %3F stays a character of the path and %2F a character of a
# segment); everything else (spaces, quotes, controls, backslashes, bytes past ASCII) is percent-encoded.
_PATH_SAFE = "/%:@!$&'()*+,;=-._~"
_QUERY_SAFE = _PATH_SAFE + "?"


def launch_target(scope: Scope) -> str:
    """Where the launch URL redirects: the same path and query, without ``token``, built from the raw bytes the
    browser sent (not the decoded path: that would turn ``%3F`` into a query and ``%0A`` into a header break), and
    always a path of this viewer: ``//evil.example`` (which a browser reads as another host) becomes ``/evil.example``.
    """
    raw = scope.get("raw_path") or scope.get("path", "/").encode("utf-8")
    path = "/" + quote(raw, safe=_PATH_SAFE).lstrip("/")
    kept = [
        part
        for part in scope.get("query_string", b"").split(b"&")
        if part and unquote_plus(part.split(b"=", 1)[0].decode("latin-1")) != "token"
    ]
    return path + ("?" + quote(b"&".join(kept), safe=_QUERY_SAFE) if kept else "")


def cookie_name(host: str) -> str:
    """The token cookie's name: per port, because browsers share cookies between the ports of one host, and two
    viewers on one machine must not overwrite each other's token."""
    rest = host.strip()
    if rest.startswith("["):
        rest = rest.rsplit("]", 1)[-1]  # "[::1]:8765" -> ":8765"
    port = rest.rsplit(":", 1)[1] if rest.count(":") == 1 else ""
    return f"threadline_token_{port}" if port.isdigit() else "threadline_token"


def _token_of(headers: Headers, scope: Scope) -> str | None:
    bearer = headers.get("authorization", "")
    if bearer.lower().startswith("bearer "):
        return bearer[7:].strip()
    if TOKEN_HEADER in headers:
        return headers[TOKEN_HEADER]
    raw = headers.get("cookie")
    if not raw:
        return None
    cookies: SimpleCookie = SimpleCookie()
    try:
        cookies.load(raw)
    except Exception:  # a malformed Cookie header is no token, not a server error
        return None
    morsel = cookies.get(cookie_name(headers.get("host", "")))
    return morsel.value if morsel is not None else None


def _with_headers(send: Send) -> Send:
    """A ``send`` that adds the default security headers to a response that has not set them itself."""

    async def wrapped(message: Message) -> None:
        if message["type"] == "http.response.start":
            present = {name.lower() for name, _ in message.get("headers", [])}
            extra = [(name, value) for name, value in _DEFAULT_HEADERS if name not in present]
            message = {**message, "headers": [*message.get("headers", []), *extra]}
        await send(message)

    return wrapped


async def _refuse(send: Send, status: int, text: str) -> None:
    """A refusal in one line, as a small page (the text says what to do; it never holds a secret)."""
    from html import escape

    body = (
        "<!doctype html><html lang=en><meta charset=utf-8><title>threadline: refused</title>"
        f"<body><p>{escape(text)}</p></body></html>"
    ).encode()
    headers: list[tuple[bytes, bytes]] = [
        (b"content-type", b"text/html; charset=utf-8"),
        (b"content-length", str(len(body)).encode()),
        (b"cache-control", b"no-store"),
        *_DEFAULT_HEADERS,
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
