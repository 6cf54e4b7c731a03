"""`redact_url`: a store URL as the CLI and the viewer show it never holds a password, wherever the URL carries one
(libpq takes ``user:password@`` and ``?password=`` / ``?sslpassword=`` alike)."""

from __future__ import annotations

import pytest

from threadline.store._common import redact_url


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgresql://u:SEKRET@host:5432/db", "postgresql://u:***@host:5432/db"),
        ("postgresql://u@host/db?password=SEKRET", "postgresql://u@host/db?password=***"),
        (
            "postgresql://u@host/db?sslmode=require&sslpassword=SEKRET",
            "postgresql://u@host/db?sslmode=require&sslpassword=***",
        ),
        ("postgresql://u@host/db?PASSWORD=SEKRET&schema=s", "postgresql://u@host/db?PASSWORD=***&schema=s"),
        ("postgresql://u@host/db?pass%77ord=SEKRET", "postgresql://u@host/db?pass%77ord=***"),
        (
            "postgresql://u@host/db?api_key=SEKRET&auth_token=SEKRET",
            "postgresql://u@host/db?api_key=***&auth_token=***",
        ),
        (
            "postgresql://u@host/db?application_name=sk-proj-SEKRET123456789",
            "postgresql://u@host/db?application_name=sk-***",
        ),
        ("postgresql://u:SEKRET@host/db?password=SEKRET", "postgresql://u:***@host/db?password=***"),
        ("postgresql://[::1/db?password=SEKRET", "postgresql://[::1/db?password=***"),  # too malformed to parse
    ],
)
def test_passwords_are_hidden_wherever_the_url_carries_them(url: str, shown: str) -> None:
    assert redact_url(url) == shown
    assert "SEKRET" not in redact_url(url)


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://u@host:5432/db?schema=tl&sslmode=require&application_name=viewer",
        "sqlite:///tmp/store.db?synchronous=full",
        "/home/me/threadline.db",
        "memory://",
    ],
)
def test_urls_without_a_secret_are_shown_as_given(url: str) -> None:
    assert redact_url(url) == url
