"""Local files are read only by the caller's own call: an attachment made from a path holds the file's bytes from
then on, and one read back from a log (an imported file, a store) with a path and no data is refused with a clear
error before anything is sent; its file is never read, so a log from elsewhere cannot upload a local file."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from threadline import Attachment, Conversation, MessageList, llm, open_store
from threadline.errors import UserError

from .conftest import Provider

PRIVATE = b"\x89PNG\r\n\x1a\n" + b"private bytes of the user's own file"


def imported_log(path: Path) -> dict[str, object]:
    """A messages.json from elsewhere: an image attachment that names a local file and carries no data."""
    return {
        "version": "2.0",
        "messages": [
            {
                "role": "user",
                "id": "01J00000000000000000000000",
                "created_at": "2025-01-01T00:00:00Z",
                "content": "Look at this.",
                "attachments": [{"kind": "image", "path": str(path), "media_type": "image/png", "name": "id.png"}],
            },
            {
                "role": "assistant",
                "id": "01J00000000000000000000001",
                "created_at": "2025-01-01T00:00:01Z",
                "content": "I see it.",
            },
        ],
    }


async def test_an_imported_attachment_with_only_a_path_is_refused_and_its_file_never_read(
    provider: Provider, tmp_path: Path
) -> None:
    secret_file = tmp_path / "id.png"
    secret_file.write_bytes(PRIVATE)
    conversation = Conversation(messages=MessageList.from_dict(imported_log(secret_file)))
    provider.server.reply("never sent")
    with pytest.raises(UserError, match="never read") as info:
        await conversation.continuation.model(provider.model).request("And now?").prompt_async()
    assert "Attachment.image(path)" in str(info.value)  # what to do instead
    assert provider.server.count == 0
    encoded = base64.b64encode(PRIVATE).decode()
    assert all(encoded not in str(body) for body in provider.server.bodies)


async def test_an_attachment_made_from_a_path_holds_the_bytes_from_then_on(provider: Provider, tmp_path: Path) -> None:
    path = tmp_path / "dot.png"
    path.write_bytes(PRIVATE)
    attachment = Attachment("image", path=str(path))
    path.unlink()  # read when made: the file is not needed any more
    assert attachment.data == PRIVATE and attachment.media_type == "image/png"
    provider.server.reply("A dot.")
    assert await llm.model(provider.model).request("see", attachments=[attachment]).prompt_async() == "A dot."
    assert base64.b64encode(PRIVATE).decode() in str(provider.server.bodies[0])


async def test_a_stored_attachment_keeps_its_bytes_and_a_stored_path_is_never_read(
    provider: Provider, tmp_path: Path
) -> None:
    path = tmp_path / "dot.png"
    path.write_bytes(PRIVATE)
    store = open_store(f"sqlite:///{tmp_path / 'store.db'}")
    try:
        provider.server.reply("A dot.", "Still a dot.")
        conversation = (
            llm.model(provider.model)
            .store(store)
            .request("see", attachments=[Attachment.image(path)])
            .prompt_conversation()
        )
        async for _ in conversation:
            pass
        path.write_bytes(b"\x89PNG\r\n\x1a\n changed after the fact")
        reloaded = Conversation.load(conversation.id, store)
        await reloaded.continuation.model(provider.model).request("again").prompt_async()
    finally:
        store.close()
    second = str(provider.server.bodies[-1])
    assert base64.b64encode(PRIVATE).decode() in second  # the bytes stored with the log, not the file as it is now


def test_from_dict_never_touches_the_disk(tmp_path: Path) -> None:
    missing = tmp_path / "does-not-exist.png"
    attachment = Attachment.from_dict({"kind": "image", "path": str(missing)})
    assert attachment.data is None and attachment.read_bytes() is None
    with pytest.raises(FileNotFoundError):
        Attachment("image", path=str(missing))  # the caller's own call reads, and says when it cannot
