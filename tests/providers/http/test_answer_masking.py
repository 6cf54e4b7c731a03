"""The masking of answers in pieces (`threadline.models.http._answer_masking`), on its own: however a text is split into
deltas, the pieces shown add up to the whole text masked at once, no form of the key can be read from them, and
nothing is held back that could not be the start of one."""

from __future__ import annotations

import base64
import random

import pytest

from threadline._masking import secret_forms
from threadline.models.http._answer_masking import MASK, MIN_CUT, Forms, HeldText

from ..key_forms import echoes, readable

KEYS = ['hunt3r"SECRET/+=x9Q', "sk-proj-abcDEF0123456789ghiJKL", "sk-ant-api03-" + "Zz9_" * 10, "k" * 12]


def streamed(forms: Forms, text: str, cuts: list[int]) -> list[str]:
    held = HeldText(forms)
    pieces = [held.feed(text[start:end]) for start, end in zip([0, *cuts], [*cuts, len(text)], strict=True)]
    return [*pieces, held.flush()]


def hostile_text(key: str, rng: random.Random) -> str:
    """Ordinary words around the key in its forms (raw, base64 of it or of a header holding it), and starts of
    them cut short."""
    forms = [key, *echoes(key).values()]
    words = ["Once", "upon", "a", "time", "sk-", "s", "Q", "QmVh", "the", "key", "is", key[: len(key) // 2]]
    parts = [rng.choice(forms) if rng.random() < 0.3 else rng.choice(words) for _ in range(rng.randint(1, 12))]
    return rng.choice(["", " ", "\n"]).join(parts)


@pytest.mark.parametrize("key", KEYS)
def test_pieces_add_up_to_the_whole_text_masked_and_no_key_is_left(key: str) -> None:
    forms = Forms(secret_forms([key]))
    rng = random.Random(key)
    for _ in range(300):
        text = hostile_text(key, rng)
        cuts = sorted(rng.sample(range(1, len(text)), min(len(text) - 1, rng.randint(0, 20)))) if len(text) > 1 else []
        whole = forms.whole(text)
        assert "".join(streamed(forms, text, cuts)) == whole, (text, cuts)
        assert readable(whole, key) == [], (text, whole)


def test_text_that_cannot_start_a_form_is_given_on_at_once() -> None:
    forms = Forms(secret_forms(["sk-proj-abcDEF0123456789ghiJKL"]))
    held = HeldText(forms)
    assert [held.feed(piece) for piece in ("Once up", "on a ti", "me. ")] == ["Once up", "on a ti", "me. "]
    # A piece ending in what may begin the key waits for the next piece, and only that part of it waits.
    assert held.feed("My key: sk-pr") == "My key: "
    assert held.feed("oj-abcDEF0123456789ghiJKL, done") == MASK + ", done"
    assert held.flush() == ""


def test_a_key_cut_off_by_the_end_is_masked_once_long_enough() -> None:
    key = "sk-proj-abcDEF0123456789ghiJKL"
    forms = Forms(secret_forms([key]))
    assert forms.whole("The key is " + key[: MIN_CUT - 1]) == "The key is " + key[: MIN_CUT - 1]
    assert forms.whole("The key is " + key[:MIN_CUT]) == "The key is " + MASK
    encoded = base64.b64encode(f"Bearer {key}".encode()).decode()
    assert forms.whole("sent " + encoded[:-4]) == "sent " + MASK
