"""``RequestAssembly`` (issue 32, one word per idea): its old name
``threadline.conversation.context.ConversationContext`` works for one release, with a warning naming the new one."""

from __future__ import annotations

import pytest

from threadline.conversation.host import ConversationHost
from threadline.conversation.requests import RequestAssembly


def test_host_assembles_its_requests_with_the_mixin() -> None:
    assert issubclass(ConversationHost, RequestAssembly)


def test_old_name_warns_and_is_the_new_class() -> None:
    import threadline.conversation.context as old_module

    with pytest.warns(DeprecationWarning, match=r"threadline\.conversation\.requests\.RequestAssembly"):
        assert old_module.ConversationContext is RequestAssembly
