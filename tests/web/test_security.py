"""The viewer's guard over real HTTP (docs/failure-rules.md#viewer): foreign Host headers, the token (header, cookie
from the launch URL), same-origin POSTs, and that no refusal or page ever shows the token."""

from __future__ import annotations

import httpx

from tests.web._data import simple_conversation
from threadline.testing import ScriptedModel

TOKEN = "s3cret-t0ken-value"


def test_foreign_host_headers_are_refused(sqlite_store, serve) -> None:
    served = serve(sqlite_store, model=ScriptedModel([]))
    with httpx.Client(base_url=served.url, timeout=10) as http:
        assert http.get("/").status_code == 200
        for host in ("evil.example", "evil.example:80", f"attacker.test:{served.port}", "127.0.0.1.evil.test"):
            refused = http.get("/", headers={"host": host})
            assert refused.status_code == 403, host
            assert "host" in refused.text.lower()
        assert http.get("/", headers={"host": f"localhost:{served.port}"}).status_code == 200
        assert http.get("/", headers={"host": f"[::1]:{served.port}"}).status_code == 200

    named = serve(sqlite_store, model=ScriptedModel([]), allowed_hosts=["viewer.internal"])
    with httpx.Client(base_url=named.url, timeout=10) as http:
        assert http.get("/", headers={"host": f"viewer.internal:{named.port}"}).status_code == 200


def test_with_a_token_every_request_needs_it(sqlite_store, serve) -> None:
    conv = simple_conversation(sqlite_store, "Private question", "Private answer")
    served = serve(sqlite_store, model=ScriptedModel([]), token=TOKEN)
    with httpx.Client(base_url=served.url, timeout=10) as http:
        for path in ("/", f"/c/{conv.id}", f"/c/{conv.id}/events", f"/c/{conv.id}/export.json", "/static/viewer.css"):
            refused = http.get(path)
            assert refused.status_code == 401, path
            assert "Private" not in refused.text and TOKEN not in refused.text
        assert http.get("/", headers={"authorization": "Bearer wrong"}).status_code == 401
        assert http.get("/", params={"token": "wrong"}).status_code == 401
        assert http.get("/", headers={"authorization": f"Bearer {TOKEN}"}).status_code == 200
        assert http.get(f"/c/{conv.id}", headers={"x-threadline-token": TOKEN}).status_code == 200

        # The launch URL sets an HttpOnly cookie and sends the browser on without the token in the address.
        launch = http.get(f"/c/{conv.id}", params={"token": TOKEN, "at": conv.messages[0].id})
        assert launch.status_code == 303
        assert launch.headers["location"] == f"/c/{conv.id}?at={conv.messages[0].id}"
        cookie = launch.headers["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=Lax" in cookie
        assert http.cookies.get(f"threadline_token_{served.port}") == TOKEN
        page = http.get(f"/c/{conv.id}")
        assert page.status_code == 200 and "Private answer" in page.text
        assert TOKEN not in page.text


def _launch(port: int, target: str) -> tuple[int, str | None]:
    """Open ``target`` exactly as written (httpx would normalize it) and return the status and Location."""
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.putrequest("GET", target, skip_accept_encoding=True)
        conn.endheaders()
        answer = conn.getresponse()
        answer.read()
        return answer.status, answer.getheader("location")
    finally:
        conn.close()


def test_the_launch_redirect_stays_on_the_viewer_and_keeps_the_path_as_sent(sqlite_store, serve) -> None:
    served = serve(sqlite_store, model=ScriptedModel([]), token=TOKEN)
    for target, location in [
        (f"//evil.example/?token={TOKEN}", "/evil.example/"),  # not "//evil.example/", another host
        (f"///evil.example?token={TOKEN}", "/evil.example"),
        (f"/%5C%5Cevil.example?token={TOKEN}", "/%5C%5Cevil.example"),  # not "/\\evil.example", read as another host
        (f"/c/abc%3Fat%3Dx?token={TOKEN}", "/c/abc%3Fat%3Dx"),  # a "?" of the path stays in the path
        (f"/c/%C3%A9?token={TOKEN}", "/c/%C3%A9"),  # not "/c/Ã©"
        (f"/c/x%0d%0aSet-Cookie:%20a=b?token={TOKEN}", "/c/x%0d%0aSet-Cookie:%20a=b"),  # no header break
        (f"/?q=a%26b&token={TOKEN}&q2=%E2%9C%93", "/?q=a%26b&q2=%E2%9C%93"),
        (f"/?to%6Ben={TOKEN}", "/"),
    ]:
        status, sent = _launch(served.port, target)
        assert (status, sent) == (303, location), target
        assert sent is not None and TOKEN not in sent


def test_changes_need_a_same_origin_request(sqlite_store, serve) -> None:
    conv = simple_conversation(sqlite_store, "Hello?", "Hi.")
    served = serve(sqlite_store, model=ScriptedModel(["should never run"]), token=TOKEN)
    auth = {"authorization": f"Bearer {TOKEN}"}
    with httpx.Client(base_url=served.url, timeout=10) as http:
        for origin in (None, "null", "http://evil.example", f"http://localhost:{served.port + 1}"):
            headers = {**auth, **({"origin": origin} if origin else {})}
            refused = http.post(f"/c/{conv.id}/messages", data={"text": "injected"}, headers=headers)
            assert refused.status_code == 403, origin
            assert "cross-origin" in refused.text.lower()
            assert http.post(f"/c/{conv.id}/fork", data={"at": conv.messages[0].id}, headers=headers).status_code == 403
        # Same origin but no token: refused too.
        no_token = http.post(f"/c/{conv.id}/messages", data={"text": "injected"}, headers={"origin": served.url})
        assert no_token.status_code == 401
    assert [m.content for m in sqlite_store.load(conv.id)] == ["Hello?", "Hi."]
    assert len(sqlite_store.list_conversations()) == 1


def test_pages_and_frames_are_locked_down(sqlite_store, serve) -> None:
    from tests.web._data import page_conversation

    conv, page_id = page_conversation(sqlite_store, "1")
    served = serve(sqlite_store, model=ScriptedModel([]))
    with httpx.Client(base_url=served.url, timeout=10) as http:
        timeline = http.get(f"/c/{conv.id}").text
        assert f'<iframe sandbox="allow-scripts" src="/p/{page_id}"' in timeline
        assert "allow-same-origin" not in timeline
        generated = http.get(f"/p/{page_id}")
        policy = generated.headers["content-security-policy"]
        assert policy.startswith("sandbox allow-scripts;") and "allow-same-origin" not in policy
        assert "default-src 'none'" in policy and "connect-src 'none'" in policy
        assert generated.headers["x-content-type-options"] == "nosniff"
