"""The viewer's security as a browser meets it (docs/failure-rules.md#viewer): hostile message text stays text, a
generated page's script cannot reach the viewer, and requests with a foreign Host, without the token, or posted from
another origin are refused."""

from __future__ import annotations

import httpx
from playwright.sync_api import expect
from starlette.applications import Starlette
from starlette.responses import HTMLResponse
from starlette.routing import Route

from tests.web._data import off_loop, page_conversation, simple_conversation
from tests.web.conftest import CHROMIUM, CHROMIUM_ARGS, Served
from threadline import AssistantMessage, LLMError, ToolCall, ToolMessage, UserMessage
from threadline.testing import ScriptedModel

TOKEN = "browser-t0ken"
HOSTILE = '<script>alert("script")</script><img src=x onerror="alert(\'img\')">'


@off_loop
def hostile_conversation(store):
    conv = store.create_conversation(title=f"Title {HOSTILE}")
    store.append(
        conv.id,
        [
            UserMessage(content=f"User says {HOSTILE}"),
            AssistantMessage(
                content=f"Assistant says {HOSTILE}",
                tool_calls=[ToolCall(id="x1", name="probe", arguments={"html": HOSTILE})],
            ),
            ToolMessage(tool_call_id="x1", tool_name="probe", content=f"Tool says {HOSTILE}"),
            AssistantMessage(content=f"Partial {HOSTILE}", error=LLMError(type="server", message=f"Error {HOSTILE}")),
        ],
    )
    return conv


def test_markup_in_messages_shows_as_text_and_never_runs(sqlite_store, serve, page) -> None:
    conv = hostile_conversation(sqlite_store)
    served = serve(sqlite_store, model=ScriptedModel([]))

    page.goto(f"{served.url}/")
    expect(page.locator(".conv-title")).to_have_text(f"Title {HOSTILE}")
    page.goto(f"{served.url}/?q=assistant+says")
    expect(page.locator(".snippet")).to_contain_text("<script>")
    page.goto(f"{served.url}/c/{conv.id}")
    expect(page.locator("h1")).to_have_text(f"Title {HOSTILE}")
    for text in ("User says", "Assistant says", "Partial", "Error"):
        expect(page.locator("#items")).to_contain_text(f"{text} {HOSTILE}")
    page.locator("#call-x1 summary").click()
    expect(page.locator("#call-x1 .tool-output")).to_contain_text(f"Tool says {HOSTILE}")
    page.goto(f"{served.url}/c/{conv.id}/context")
    expect(page.locator(".request")).to_contain_text(f"User says {HOSTILE}")

    # Arriving live, too.
    page.goto(f"{served.url}/c/{conv.id}")
    expect(page.locator("#live-state")).to_have_text("live")
    sqlite_store.append(conv.id, [UserMessage(content=f"Live {HOSTILE}")])
    expect(page.locator("#items .msg").last).to_contain_text(f"Live {HOSTILE}")

    # The exported file: the same, with no script of its own.
    exported = httpx.get(f"{served.url}/c/{conv.id}/export.html").text
    page.set_content(exported)
    expect(page.locator("body")).to_contain_text(f"Tool says {HOSTILE}")
    assert page.locator("script").count() == 0
    assert page.locator("img").count() == 0

    assert page.dialogs == []


PROBE = """
const out = document.getElementById('out');
const seen = [];
function attempt(name, fn) {
  try { seen.push(name + ':' + fn()); } catch (e) { seen.push(name + ':blocked'); }
}
attempt('parent-dom', () => parent.document.title);
attempt('parent-write', () => { parent.document.body.innerHTML = 'pwned'; return 'done'; });
attempt('cookie', () => document.cookie);
attempt('storage', () => localStorage.length);
attempt('top', () => top.location.href);
fetch('/c/CID/export.json', { credentials: 'include' })
  .then((r) => r.text()).then((t) => seen.push('fetch:' + t.slice(0, 20)))
  .catch(() => seen.push('fetch:blocked'))
  .finally(() => { out.textContent = seen.join(' '); });
"""


def test_a_generated_page_cannot_reach_the_viewer(sqlite_store, serve, page) -> None:
    conv = simple_conversation(sqlite_store, "Private question", "Private answer")
    _, page_id = page_conversation(sqlite_store, PROBE.replace("CID", conv.id))
    served = serve(sqlite_store, model=ScriptedModel([]), token=TOKEN)
    with_page = next(s for s in sqlite_store.list_summaries() if s.info.id != conv.id).info.id

    page.goto(f"{served.url}/c/{with_page}?token={TOKEN}")  # the launch URL: sets the token cookie
    frame_element = page.locator(f'iframe[src="/p/{page_id}"]')
    expect(frame_element).to_have_attribute("sandbox", "allow-scripts")
    frame_element.scroll_into_view_if_needed()
    frame = page.frame_locator(f'iframe[src="/p/{page_id}"]')
    result = frame.locator("#out")
    expect(result).to_contain_text("fetch:", timeout=10_000)
    text = result.inner_text()
    for probe in ("parent-dom", "parent-write", "cookie", "storage", "fetch"):
        assert f"{probe}:blocked" in text, text
    assert "Private" not in text
    expect(page.locator("h1")).to_have_text("Make me a page")  # the viewer's page is untouched
    assert "pwned" not in page.content()
    assert page.evaluate("document.cookie") == ""  # the token cookie is HttpOnly
    assert page.dialogs == []


def test_a_password_in_the_store_url_is_never_shown(page) -> None:
    from tests.store._backends import postgres_url
    from threadline.store import open_store
    from threadline.web import create_app

    with postgres_url() as url, open_store(f"{url}&password=SEKRETPW&sslpassword=SEKRET2") as store:
        conv = simple_conversation(store, "Hello?", "Hi.")
        served = Served(create_app(store, model=ScriptedModel([])))
        try:
            for path in ("/", f"/c/{conv.id}", "/c/no-such-conversation", "/nowhere"):
                page.goto(served.url + path)
                shown = page.locator(".topbar .store").inner_text()
                assert "password=***" in shown and "sslpassword=***" in shown, shown
                assert "SEKRET" not in page.content(), path
        finally:
            served.stop()


def test_a_foreign_host_name_is_refused_in_the_browser(sqlite_store, serve) -> None:
    from playwright.sync_api import sync_playwright

    simple_conversation(sqlite_store, "Secret plans", "Keep them.")
    served = serve(sqlite_store, model=ScriptedModel([]))

    # DNS rebinding: a name the attacker controls now resolves to this machine.
    @off_loop
    def visit() -> tuple[int, str]:
        with sync_playwright() as playwright:
            chromium = playwright.chromium.launch(
                executable_path=CHROMIUM, args=[*CHROMIUM_ARGS, "--host-resolver-rules=MAP rebind.test 127.0.0.1"]
            )
            try:
                tab = chromium.new_page()
                response = tab.goto(f"http://rebind.test:{served.port}/")
                assert response is not None
                return response.status, tab.inner_text("body")
            finally:
                chromium.close()

    status, body = visit()
    assert status == 403
    assert "host name" in body and "Secret plans" not in body


def test_without_the_token_the_browser_gets_nothing(sqlite_store, serve, page) -> None:
    simple_conversation(sqlite_store, "Secret plans", "Keep them.")
    served = serve(sqlite_store, model=ScriptedModel([]), token=TOKEN)
    response = page.goto(f"{served.url}/")
    assert response is not None and response.status == 401
    expect(page.locator("body")).to_contain_text("needs its token")
    assert "Secret plans" not in page.content()

    page.goto(f"{served.url}/?token={TOKEN}")
    expect(page).to_have_url(f"{served.url}/")  # the token left the address bar
    expect(page.locator(".conv-title")).to_have_text("Secret plans")


def test_a_post_from_another_origin_is_refused(sqlite_store, serve, page) -> None:
    conv = simple_conversation(sqlite_store, "Hello?", "Hi.")
    served = serve(sqlite_store, model=ScriptedModel(["must not run"]), token=TOKEN)
    page.goto(f"{served.url}/?token={TOKEN}")  # the user is signed in (cookie set)

    attack = f"""<!doctype html><form id=f method=post action="{served.url}/c/{conv.id}/messages">
      <input name=text value="injected by another site"></form><script>document.getElementById('f').submit()</script>"""

    async def attacker_page(request):
        return HTMLResponse(attack)

    attacker = Served(Starlette(routes=[Route("/", attacker_page)]))
    try:
        page.goto(attacker.url + "/")
        expect(page.locator("body")).to_contain_text("Cross-origin request refused")
    finally:
        attacker.stop()
    assert [m.content for m in sqlite_store.load(conv.id)] == ["Hello?", "Hi."]


def test_a_link_from_another_site_opens_the_viewer_but_its_posts_are_refused(sqlite_store, serve, page) -> None:
    conv = simple_conversation(sqlite_store, "Secret plans", "Keep them.")
    served = serve(sqlite_store, model=ScriptedModel(["must not run"]), token=TOKEN)
    page.goto(f"{served.url}/?token={TOKEN}")  # the user opened the viewer once

    # Another site: localhost is a different site from 127.0.0.1, so the cookie's SameSite rule applies.
    other = f"""<!doctype html><a id=link href="{served.url}/c/{conv.id}">the conversation</a>
      <form id=f method=post action="{served.url}/c/{conv.id}/messages"><input name=text value="injected"></form>"""

    async def other_page(request):
        return HTMLResponse(other)

    site = Served(Starlette(routes=[Route("/", other_page)]))
    try:
        page.goto(f"http://localhost:{site.port}/")
        with page.expect_navigation():
            page.click("#link")
        expect(page).to_have_url(f"{served.url}/c/{conv.id}")
        expect(page.locator("#items")).to_contain_text("Keep them.")  # not the "needs its token" page

        page.goto(f"http://localhost:{site.port}/")
        with page.expect_navigation() as posted:
            page.evaluate("document.getElementById('f').submit()")
        response = posted.value
        assert response is not None and response.status in (401, 403)
        expect(page.locator("body")).to_contain_text("refused" if response.status == 403 else "needs its token")
    finally:
        site.stop()
    assert [m.content for m in sqlite_store.load(conv.id)] == ["Secret plans", "Keep them."]


def test_the_launch_url_leaves_the_address_bar_the_back_button_and_the_referrer(sqlite_store, serve, page) -> None:
    conv = simple_conversation(sqlite_store, "Secret plans", "Keep them.")
    served = serve(sqlite_store, model=ScriptedModel([]), token=TOKEN)
    page.goto(f"{served.url}/c/{conv.id}?token={TOKEN}")
    expect(page).to_have_url(f"{served.url}/c/{conv.id}")
    expect(page.locator("#items")).to_contain_text("Keep them.")
    assert TOKEN not in page.evaluate("document.referrer")
    length = page.evaluate("history.length")
    page.goto(f"{served.url}/")
    page.go_back()
    expect(page).to_have_url(f"{served.url}/c/{conv.id}")
    page.go_back()  # before the viewer: the blank tab, never the launch URL
    assert TOKEN not in page.url
    assert page.evaluate("history.length") == length + 1


def test_a_generated_page_runs_its_own_code_but_reaches_no_other_server(sqlite_store, serve, page) -> None:
    import http.server
    import threading

    hits: list[str] = []

    class Recorder(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            hits.append(self.path)
            self.send_response(204)
            self.end_headers()

        def do_POST(self) -> None:
            self.do_GET()

        def log_message(self, *args: object) -> None:
            pass

    outside = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    threading.Thread(target=outside.serve_forever, daemon=True).start()
    far = f"http://127.0.0.1:{outside.server_port}"
    html = (
        f'<p id=out>waiting</p><p id=styled>styled</p><img id=pixel src="{far}/img">'
        f'<link rel=stylesheet href="{far}/css">'
        f'<link rel=prefetch href="{far}/prefetch"><div style="background:url({far}/inline-bg)"></div>'
        '<img id=local src="data:image/gif;base64,R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7">'
        f'<video src="{far}/video"></video><iframe src="{far}/frame"></iframe>'
    )
    js = f"""
    document.getElementById('styled').style.color = 'rgb(1, 2, 3)';
    fetch('{far}/fetch').catch(() => {{}});
    new Image().src = '{far}/js-img';
    navigator.sendBeacon('{far}/beacon', 'x');
    try {{ new WebSocket('ws://127.0.0.1:{outside.server_port}/ws'); }} catch (e) {{}}
    const x = new XMLHttpRequest(); x.open('GET', '{far}/xhr'); try {{ x.send(); }} catch (e) {{}}
    const style = '<style>@import url({far}/import); #out {{ font-weight: 700 }}</style>';
    document.head.insertAdjacentHTML('beforeend', style);
    document.getElementById('out').textContent = 'script ran';
    """
    try:
        conv, page_id = page_conversation(sqlite_store, js, html)
        served = serve(sqlite_store, model=ScriptedModel([]))

        page.goto(f"{served.url}/c/{conv.id}")
        frame = page.frame_locator(f'iframe[src="/p/{page_id}"]')
        page.locator(f'iframe[src="/p/{page_id}"]').scroll_into_view_if_needed()
        expect(frame.locator("#out")).to_have_text("script ran")  # the page's own script runs
        expect(frame.locator("#styled")).to_have_css("color", "rgb(1, 2, 3)")
        expect(frame.locator("#out")).to_have_css("font-weight", "700")  # its own styles apply
        expect(frame.locator("body")).to_have_css("font-family", "sans-serif")
        expect(frame.locator("#local")).to_have_js_property("naturalWidth", 1)  # data: images load

        page.goto(f"{served.url}/p/{page_id}")  # opened on its own, too
        expect(page.locator("#out")).to_have_text("script ran")
        page.wait_for_timeout(1_000)
    finally:
        outside.shutdown()
        outside.server_close()
    assert hits == []
