"""A fork's automatic name stays within the viewer's title limit on every backend: a long origin title is shortened
(ending with "…") before " (fork)", so the name can be saved again in the Rename box as it is."""

from __future__ import annotations

from tests.store._backends import any_store  # noqa: F401 - fixture (SQLite, PostgreSQL, memory)
from threadline import AssistantMessage, UserMessage
from threadline.store import Store
from threadline.store._common import fork_title
from threadline.web.branches import MAX_TITLE


def two_forks(store: Store, title: str) -> list[str]:
    conv = store.create_conversation(title)
    answer = AssistantMessage(content="hello")
    store.append(conv.id, [UserMessage(content="hi"), answer])
    return [store.fork_conversation(conv.id, answer.id).title or "" for _ in range(2)]


def test_a_long_title_is_shortened_before_the_fork_suffix(any_store: Store) -> None:  # noqa: F811
    # 193 characters and " (fork)" make exactly the limit: kept whole; " (fork 2)" is longer, so that one shortens.
    assert two_forks(any_store, "t" * 193) == ["t" * 193 + " (fork)", "t" * 190 + "… (fork 2)"]
    assert two_forks(any_store, "u" * 194) == ["u" * 192 + "… (fork)", "u" * 190 + "… (fork 2)"]
    names = two_forks(any_store, "v" * MAX_TITLE)
    assert names == ["v" * 192 + "… (fork)", "v" * 190 + "… (fork 2)"]
    assert all(len(name) == MAX_TITLE for name in names)


def test_shortened_names_are_numbered_past_each_other() -> None:
    names: list[str] = []
    for _ in range(12):
        names.append(fork_title("x" * 300 + " tail", names))
    assert len(set(names)) == 12
    assert all(len(name) <= MAX_TITLE for name in names)
    assert names[0].endswith("x… (fork)") and names[11].endswith("x… (fork 12)")
    assert fork_title("a b " * 60, []).endswith("b… (fork)")  # no space left before the ellipsis
