"""``RequestAssembly`` (issue 32, one word per idea): the host's request assembly, no longer called a "context"."""

from __future__ import annotations

from threadline.conversation.host import ConversationHost
from threadline.conversation.requests import RequestAssembly


def test_host_assembles_its_requests_with_the_mixin() -> None:
    assert issubclass(ConversationHost, RequestAssembly)
