"""Hostile input for the web viewer, each against a real ``threadline serve`` (a subprocess, over HTTP):

- nested Markdown: random documents nesting block quotes and lists 1 to 200 deep, with emphasis, link text, fenced
  code, tables with extra cells and link reference definitions inside (`tests.web._nested_markdown`); a case
  survives when every word of the message is in the rendered text of the viewer's page and of the HTML export;
- download names: tool outputs and exports under random names (Chinese, emoji, right-to-left overrides, zero-width
  and control characters, quotes, backslashes, line breaks, slashes, dots, hundreds of characters); a case survives
  when the download answers 200 with its content and a ``Content-Disposition`` that parses strictly (RFC 6266) to a
  safe file name (no path, control character or leading dot), its ``filename=`` ASCII;
- slow clients: connections that send nothing, or a request line, headers or a body one byte at a time (every 0.05
  to 1.5 s), some after a first complete request; a case survives when the server closes the connection within
  `CLOSED_WITHIN` seconds while a normal client is served throughout and the server writes no traceback.
"""

from __future__ import annotations

import random
import time
from pathlib import Path
from urllib.parse import quote

import httpx

from tests.web._disposition import parse, problems
from tests.web._nested_markdown import missing_words, nested_document
from tests.web._serve_process import DEADLINE, SlowClient, threadline_serve
from threadline import AssistantMessage, MessageList, ToolCall, ToolMessage, UserMessage
from threadline.store import Store, open_store

from .campaign import Row

# The server closes a request still incomplete after 10 s; a client trickling after a first request may wait up to
# 1.5 s before its first byte. Well under the clients' own `DEADLINE`.
CLOSED_WITHIN = 25.0

PIECES = [
    *("工具", "数据", "ファイル", "😀", "🚀", "Ünï", "café", "e\u0301", "a", "Z9", "-", "_"),
    *("\u202e", "\u202b", "\u2066", "\u200b", "\ufeff", "\x00", "\x07", "\x1b", "\x7f", "\r\n", "\t"),
    *('"', "\\", "'", "/", "..", ".", "%41", "%", ";", "filename*=", "\u00a0", "\u3000", "／", "‥", " "),
]


def _store(directory: Path, name: str) -> tuple[str, Store]:
    url = f"sqlite:///{directory / name}"
    return url, open_store(url)


def nested_markdown(cases: int, directory: Path, *, seed: int | None = None) -> Row:
    """``cases`` random nested documents, each an answer read in the viewer and in the HTML export; one row."""
    rng = random.Random(seed)
    row = Row("nested Markdown (viewer and HTML export)")
    url, store = _store(directory, "nested-markdown.db")
    try:
        with threadline_serve(url) as serving, httpx.Client(base_url=serving.url, timeout=20) as http:
            for number in range(cases):
                text, words = nested_document(rng)
                conv = store.create_conversation(f"nested {number}")
                store.append(conv.id, [UserMessage(content="Show me"), AssistantMessage(content=text, model="m")])
                try:
                    pages = {"viewer": http.get(f"/c/{conv.id}"), "export": http.get(f"/c/{conv.id}/export.html")}
                except httpx.HTTPError as exc:  # the server dropped the connection
                    row.case(crashed=f"{type(exc).__name__}: {exc}", note=f"case {number}")
                    continue
                failed = [f"{where} HTTP {page.status_code}" for where, page in pages.items() if page.is_error]
                hidden = {where: missing_words(words, page.text) for where, page in pages.items()}
                row.saw("shown as written" if "as-written-note" in pages["viewer"].text else "formatted")
                note = f"case {number} ({len(text):,} characters): hidden {hidden}"
                lost = sum(1 for missing in hidden.values() if missing)
                row.case(crashed=", ".join(failed) or None, lost=lost, note=note[:300])
    finally:
        store.close()
    return row


def _name(rng: random.Random) -> str:
    name = "".join(rng.choice(PIECES) for _ in range(rng.randint(1, 12)))
    return name * rng.randint(1, 40) if rng.random() < 0.2 else name


def download_names(cases: int, directory: Path, *, seed: int | None = None) -> Row:
    """``cases`` downloads under random names (a tool output, or a JSON or HTML export); one row."""
    rng = random.Random(seed)
    row = Row("download names (Content-Disposition)")
    url, store = _store(directory, "download-names.db")
    try:
        with threadline_serve(url) as serving, httpx.Client(base_url=serving.url, timeout=20) as http:
            for number in range(cases):
                kind = rng.choice(["txt", "json", "html"])
                name = _name(rng)
                # A conversation id names its exports; "/" cannot be in a path segment, and a bare "." or ".."
                # would be read as one, so an id keeps a prefix.
                cid = f"id-{number}-" + name.replace("/", "") if kind != "txt" else None
                conv = store.create_conversation("Downloads", id=cid)
                call = ToolCall(id=_name(rng), name=name if kind == "txt" else "tool", arguments={})
                output = f"output {number} 出力"
                store.append(
                    conv.id,
                    [
                        UserMessage(content="Run it"),
                        AssistantMessage(tool_calls=[call], model="m"),
                        ToolMessage(tool_call_id=call.id, tool_name=call.name, content=output),
                        AssistantMessage(content=f"answer {number}", model="m"),
                    ],
                )
                path = f"/c/{quote(conv.id, safe='')}"
                if kind == "txt":
                    path += f"/full/{quote(store.load(conv.id)[2].id, safe='')}?download=1"
                else:
                    path += f"/export.{kind}"
                try:
                    problem = _download_problem(http.get(path), kind, output, number)
                except httpx.HTTPError as exc:  # the server dropped the connection
                    problem = f"{type(exc).__name__}: {exc}"
                row.saw(kind)
                row.case(crashed=problem, note=f"{kind} named {name[:60]!r}")
    finally:
        store.close()
    return row


def _download_problem(answer: httpx.Response, kind: str, output: str, number: int) -> str | None:
    """What is wrong with a download, or None."""
    if answer.status_code != 200:
        return f"HTTP {answer.status_code}"
    if kind == "txt" and answer.text != output:
        return "the output differs"
    if kind == "json" and (len(MessageList.from_json(answer.text)) != 4 or f"answer {number}" not in answer.text):
        return "the export differs"
    if kind == "html" and f"answer {number}" not in answer.text:
        return "the export lacks the answer"
    try:
        disposition = parse(answer.headers["content-disposition"])
    except (KeyError, ValueError) as exc:
        return f"unreadable Content-Disposition: {exc}"
    for saved in (disposition.saved_as, disposition.filename):
        if saved is None or not saved.endswith(f".{kind}") or problems(saved):
            return f"bad file name {saved!r}: {problems(saved or '')}"
    if not (disposition.filename or "").isascii():
        return "filename= is not ASCII"
    return None


def _slow_request(rng: random.Random, port: int) -> tuple[str, bytes, bytes]:
    """A kind of slow client: its name, what it sends at once and what it then trickles (never a whole request)."""
    host = b"Host: 127.0.0.1\r\n"
    endless = b"X-Slow: " + b"a" * 10_000
    kinds = {
        "sends nothing": (b"", b""),
        "a request line byte by byte": (b"G", b"ET /" + b"a" * 10_000),
        "headers byte by byte": (b"GET / HTTP/1.1\r\n" + host, endless),
        "a body byte by byte": (
            b"POST /c/x/title HTTP/1.1\r\n"
            + host
            + f"Origin: http://127.0.0.1:{port}\r\n".encode()
            + b"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 100000\r\n\r\ntitle=",
            b"x",
        ),
        "kept alive, then headers byte by byte": (
            b"GET / HTTP/1.1\r\n" + host + b"\r\n",
            b"GET / HTTP/1.1\r\n" + endless,
        ),
    }
    name = rng.choice(sorted(kinds))
    return (name, *kinds[name])


def slow_clients(cases: int, directory: Path, *, seed: int | None = None) -> Row:
    """``cases`` slow clients at once against one ``threadline serve``, a normal client served meanwhile; one row."""
    rng = random.Random(seed)
    row = Row("slow clients (threadline serve)")
    url = f"sqlite:///{directory / 'slow-clients.db'}"
    open_store(url).close()  # serve only reads: it opens a store that exists
    refused: list[str] = []
    with threadline_serve(url) as serving:
        clients = []
        for _ in range(cases):
            name, first, then = _slow_request(rng, serving.port)
            row.saw(name)
            interval = rng.uniform(0.05, 1.5)
            clients.append((f"{name}, a byte every {interval:.2f} s", SlowClient(serving.port, first, then, interval)))
        for _, client in clients:
            client.start()
        with httpx.Client(base_url=serving.url, timeout=20) as http:
            while any(client.is_alive() for _, client in clients):
                try:
                    status = http.get("/").status_code
                except httpx.HTTPError as exc:
                    status = type(exc).__name__
                if status != 200:
                    refused.append(str(status))
                time.sleep(0.5)
    traceback = "Traceback" in serving.errors
    for note, client in clients:
        closed = client.closed_after
        seen = [] if closed is not None and closed <= CLOSED_WITHIN else [f"open after {closed or DEADLINE:.0f} s"]
        seen += [f"a normal client was refused: {refused[:3]}"] if refused else []
        seen += ["a traceback on stderr"] if traceback else []
        row.case(crashed="; ".join(seen) or None, note=note)
    return row
