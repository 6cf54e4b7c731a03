"""``documents=`` (issue 32, one word per idea): its old name ``context=`` works for one release, with a warning."""

from __future__ import annotations

import pytest

import threadline
import threadline.generate
from threadline import generate_text, request_hash
from threadline.generate.hashing import GenerateRequest, prepare_request
from threadline.testing import ScriptedModel

DOCS = {"profile": "Likes tea."}


async def test_old_context_keyword_warns_and_sends_the_same_prefix() -> None:
    new, old = ScriptedModel(["ok"]), ScriptedModel(["ok"])
    await generate_text(model=new, prompt="Hi", documents=DOCS)
    with pytest.warns(DeprecationWarning, match=r"generate_text\(documents=\)"):
        await generate_text(model=old, prompt="Hi", context=DOCS)
    assert old.requests[0].messages[0].content == new.requests[0].messages[0].content
    assert "## profile\nLikes tea." in new.requests[0].messages[0].content


async def test_both_keywords_are_refused() -> None:
    with pytest.raises(TypeError, match="both documents= and its deprecated old name context="):
        await generate_text(model=ScriptedModel(["ok"]), prompt="Hi", documents=DOCS, context=DOCS)


def test_request_hash_and_prepare_request_accept_the_old_keyword() -> None:
    with pytest.warns(DeprecationWarning, match=r"request_hash\(documents=\)"):
        old = request_hash(model="openai:gpt-4o-mini", prompt="Hi", context=DOCS)
    assert old == request_hash(model="openai:gpt-4o-mini", prompt="Hi", documents=DOCS)
    with pytest.warns(DeprecationWarning, match=r"prepare_request\(documents=\)"):
        request = prepare_request(model="openai:gpt-4o-mini", prompt="Hi", context=DOCS)
    assert request.documents == [("profile", "Likes tea.")]
    with pytest.warns(DeprecationWarning, match=r"GenerateRequest.documents"):
        assert request.context == request.documents


def test_generate_request_is_internal_so_its_constructor_takes_documents_only() -> None:
    """`GenerateRequest` is made by `prepare_request` (which takes ``context=`` for one release, above); it is not
    exported, so its constructor carries no old keyword, and ``context`` is only a read alias that warns."""
    assert "GenerateRequest" not in threadline.__all__ and "GenerateRequest" not in threadline.generate.__all__
    request = prepare_request(model="openai:gpt-4o-mini", prompt="Hi", documents=DOCS)
    fields = {name: getattr(request, name) for name in GenerateRequest.__struct_fields__}
    assert GenerateRequest(**fields) == request
    fields["context"] = fields.pop("documents")
    with pytest.raises(TypeError, match="context"):
        GenerateRequest(**fields)
