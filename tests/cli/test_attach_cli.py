"""``threadline prompt -a FILE``: images and other files go with the prompt, as the provider's wire format carries
them, and the stored log holds them; a file that cannot be attached is refused before anything is stored.

The provider is the fake OpenAI server on 127.0.0.1; it records each request's body."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.providers.servers import Answer, FakeOpenAI
from threadline import UserMessage
from threadline.store import open_store

from ._run import run_cli

KEY = "sk-test-ATTACH-0123456789abcdef"
# A 1x1 PNG.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake  # type: ignore[misc]


@pytest.fixture
def store_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'store.db'}"


def test_attached_image_and_file_reach_the_model_and_the_log(
    server: FakeOpenAI, store_url: str, tmp_path: Path
) -> None:
    picture = tmp_path / "dot.png"
    picture.write_bytes(PNG)
    report = tmp_path / "report.pdf"
    report.write_bytes(b"%PDF-1.4 a tiny report")
    server.add(Answer("a dot and a report"))
    env = {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": KEY}
    done = run_cli(
        "prompt",
        "-m",
        "openai:gpt-4o",
        "-a",
        str(picture),
        "--attach",
        str(report),
        "What are these?",
        store_url=store_url,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    (body,) = server.bodies
    parts = body["messages"][-1]["content"]
    kinds = [part["type"] for part in parts]
    assert kinds.count("image_url") == 1 and kinds.count("file") == 1
    (image,) = [part for part in parts if part["type"] == "image_url"]
    assert image["image_url"]["url"] == "data:image/png;base64," + base64.b64encode(PNG).decode()
    (sent_file,) = [part for part in parts if part["type"] == "file"]
    assert sent_file["file"]["filename"] == "report.pdf"

    with open_store(store_url) as store:
        (info,) = store.list_conversations()
        question = store.load(info.id)[0]
    assert isinstance(question, UserMessage)
    assert [(a.kind, a.name, a.read_bytes()) for a in question.attachments] == [
        ("image", "dot.png", PNG),
        ("file", "report.pdf", b"%PDF-1.4 a tiny report"),
    ]


def test_a_missing_attachment_is_refused_before_anything_is_stored(
    server: FakeOpenAI, store_url: str, tmp_path: Path
) -> None:
    env = {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": KEY}
    missing = tmp_path / "nowhere.png"
    done = run_cli("prompt", "-m", "openai:gpt-4o", "-a", str(missing), "hi", store_url=store_url, env=env)
    assert done.returncode == 2
    assert "nowhere.png" in done.stderr and "does not exist" in done.stderr
    assert server.requests == []
    with open_store(store_url) as store:
        assert store.list_conversations() == []


def test_an_image_for_a_model_that_cannot_see_is_refused_before_anything_is_stored(
    server: FakeOpenAI, store_url: str, tmp_path: Path
) -> None:
    picture = tmp_path / "dot.png"
    picture.write_bytes(PNG)
    env = {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": KEY}
    done = run_cli("prompt", "-m", "openai:gpt-3.5-turbo", "-a", str(picture), "hi", store_url=store_url, env=env)
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("Error: ") and "image" in line
    assert server.requests == []
    with open_store(store_url) as store:
        assert store.list_conversations() == []
