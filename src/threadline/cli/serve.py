"""``threadline serve``: the web viewer (the ``web`` extra) on 127.0.0.1, or elsewhere with a token.

It refuses to listen on anything but a loopback address without ``--token``: anyone who can reach the port could
otherwise read and continue every conversation in the store.
"""

from __future__ import annotations

import ipaddress
import os
import socket
from collections.abc import Iterable

import click

from ..toolboxes.pages import PAGES_URL_ENV
from ._errors import EXIT_USAGE, CommandError, friendly_errors
from .prompt import load_tools
from .store_option import open_cli_store, store_option

__all__ = ["serve"]


def is_loopback(host: str) -> bool:
    """Whether ``host`` names only this machine (``localhost``, 127.0.0.0/8, ``::1``)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def served_names(host: str) -> list[str]:
    """The host names a request may use for a bind to ``host``: the address itself and, for a wildcard bind, this
    machine's names and addresses (what a browser on the network types)."""
    names = [host.strip("[]")]
    if host in ("0.0.0.0", "::", ""):
        for name in {socket.gethostname(), socket.getfqdn()}:
            names.append(name)
            try:
                names.extend(str(info[4][0]) for info in socket.getaddrinfo(name, None))
            except OSError:
                pass
    return names


def _url(host: str, port: int, token: str | None) -> str:
    shown = "127.0.0.1" if host in ("0.0.0.0", "") else ("[::1]" if host == "::" else host)
    if ":" in shown and not shown.startswith("["):
        shown = f"[{shown}]"
    return f"http://{shown}:{port}/" + (f"?token={token}" if token else "")


@click.command()
@store_option
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=8765, show_default=True, type=click.IntRange(0, 65535), help="Port to listen on.")
@click.option(
    "--token",
    envvar="THREADLINE_SERVE_TOKEN",
    default=None,
    help="A secret every request must carry (required unless --host is loopback); also $THREADLINE_SERVE_TOKEN.",
)
@click.option("-m", "--model", default=None, help="Model for turns run from the browser (default: a menu).")
@click.option("-T", "--tool", "tools", multiple=True, metavar="MODULE:NAME", help="A tool offered in those turns.")
@click.option("--allow-host", "allow_hosts", multiple=True, metavar="NAME", help="Another host name requests may use.")
@click.option("--open", "open_browser", is_flag=True, help="Open the viewer in a browser.")
@click.option(
    "--dbos", "dbos_url", default=None, metavar="URL", help="DBOS's database, if the workers were given --dbos."
)
@friendly_errors
def serve(
    store_url: str | None,
    host: str,
    port: int,
    token: str | None,
    model: str | None,
    tools: Iterable[str],
    allow_hosts: Iterable[str],
    open_browser: bool,
    dbos_url: str | None,
) -> None:
    """Read, search, continue and fork the stored conversations in a browser."""
    if not is_loopback(host) and not token:
        raise CommandError(
            f"refusing to listen on {host} without --token: anyone who reaches it could read and continue your "
            "conversations (use --token SECRET, or --host 127.0.0.1)",
            EXIT_USAGE,
        )
    if token is not None and not token.strip():
        raise CommandError("--token must not be empty", EXIT_USAGE)
    try:
        import uvicorn

        from ..web import create_app
        from ..web.request_deadline import KEEP_ALIVE_SECONDS, RequestDeadlineProtocol
    except ImportError:
        raise CommandError(
            "threadline serve needs the 'web' extra: pip install 'threadline[web]'", EXIT_USAGE
        ) from None
    sock = _listen(host, port)
    try:
        store = open_cli_store(store_url, reading=True)
    except BaseException:
        sock.close()
        raise
    try:
        # Pages made by `-T pages` link to this viewer, wherever it listens (unless the user chose another address).
        os.environ.setdefault(PAGES_URL_ENV, _url(host, sock.getsockname()[1], None).rstrip("/"))
        loaded = load_tools(tools, store)
        app = create_app(
            store,
            model=model,
            tools=loaded,
            token=token,
            allowed_hosts=[*served_names(host), *allow_hosts],
            dbos_url=dbos_url,
            store_url=store_url,
        )
        # A request must arrive whole within seconds and an idle kept-alive connection closes (slow clients: see
        # threadline.web.request_deadline).
        config = uvicorn.Config(
            app,
            http=RequestDeadlineProtocol,
            timeout_keep_alive=KEEP_ALIVE_SECONDS,
            log_level="warning",
            timeout_graceful_shutdown=2,
            lifespan="on",
            ws="none",
            access_log=False,
        )
        server = uvicorn.Server(config)
        url = _url(host, sock.getsockname()[1], token)
        click.echo(f"threadline viewer on {url}  (store: {store.url}; Ctrl+C stops it)")
        if open_browser:
            import webbrowser

            webbrowser.open(url)
        server.run(sockets=[sock])
    finally:
        sock.close()
        store.close()


def _listen(host: str, port: int) -> socket.socket:
    """The listening socket, bound here so a taken port or a bad address is one clear line, not a server log."""
    try:
        infos = socket.getaddrinfo(host.strip("[]") or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except OSError as exc:
        raise CommandError(f"cannot listen on {host}: {exc.strerror or exc}", EXIT_USAGE) from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise CommandError(
            f"the viewer could not listen on {host}:{port}: {exc.strerror or exc} (is the port taken? try --port)"
        ) from None
    return sock
