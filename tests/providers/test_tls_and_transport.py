"""``verify=`` and ``transport=`` on the HTTP models: a server whose certificate comes from a corporate CA (a real
HTTPS fake server on 127.0.0.1, with a CA made here), and a transport of the caller's own (``httpx.MockTransport``
answering in OpenAI's wire format, and a real ``httpx.AsyncHTTPTransport``)."""

from __future__ import annotations

import datetime
import ipaddress
import json
import re
import ssl
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from threadline import llm
from threadline.errors import ModelError, UserError
from threadline.models.anthropic import AnthropicModel
from threadline.models.openai import OpenAIModel
from threadline.models.openai_responses import OpenAIResponsesModel

from .conftest import SECRET, make_anthropic, make_openai
from .servers import Answer, FakeAnthropic, FakeOpenAI


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


@pytest.fixture(scope="module")
def certificates(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """A CA of our own (as a company's), and a certificate it signed for 127.0.0.1: (CA bundle, cert, key)."""
    folder = tmp_path_factory.mktemp("tls")
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (
        x509.CertificateBuilder()
        .subject_name(_name("threadline test CA"))
        .issuer_name(_name("threadline test CA"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(True, False, False, False, False, True, True, False, False), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name("127.0.0.1"))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]),
            critical=False,
        )
        .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    ca_path, cert_path, key_path = folder / "ca.pem", folder / "server.pem", folder / "server.key"
    ca_path.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return ca_path, cert_path, key_path


def _server_context(certificates: tuple[Path, Path, Path]) -> ssl.SSLContext:
    _, cert_path, key_path = certificates
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert_path, key_path)
    return context


@pytest.fixture
def https_openai(certificates: tuple[Path, Path, Path]) -> Iterator[FakeOpenAI]:
    server = FakeOpenAI()
    server.tls = _server_context(certificates)
    with server:
        yield server  # type: ignore[misc]


async def test_a_server_of_a_corporate_ca_is_reached_with_verify_set_to_its_bundle(
    https_openai: FakeOpenAI, certificates: tuple[Path, Path, Path]
) -> None:
    assert https_openai.base_url.startswith("https://127.0.0.1:")
    https_openai.add(Answer("Hello over TLS."), Answer("And again."))
    model = make_openai(https_openai, verify=certificates[0])
    try:
        assert await llm.model(model).request("Hi").prompt_async(stream=False) == "Hello over TLS."
        assert await llm.model(model).request("Hi").prompt_async() == "And again."  # streamed
    finally:
        await model.aclose()
    assert len(https_openai.requests) == 2


async def test_without_the_bundle_the_certificate_is_refused_at_once_with_a_clear_error(
    https_openai: FakeOpenAI,
) -> None:
    model = make_openai(https_openai, max_retries=3)
    try:
        with pytest.raises(ModelError) as caught:
            await llm.model(model).request("Hi").prompt_async()
    finally:
        await model.aclose()
    error = caught.value
    assert "could not verify the TLS certificate" in error.message
    assert "verify=" in error.message and "CA bundle" in error.message
    assert "attempts" not in error.message  # refused at once: a retry would meet the same certificate
    assert error.type == "connection" and not error.retryable
    assert SECRET not in str(error) and SECRET[8:] not in str(error)
    assert https_openai.requests == []  # nothing was sent: the handshake failed


async def test_an_ssl_context_is_taken_as_it_is(certificates: tuple[Path, Path, Path]) -> None:
    server = FakeAnthropic()
    server.tls = _server_context(certificates)
    with server:
        server.add(Answer("Claude over TLS."))
        model = make_anthropic(server, verify=ssl.create_default_context(cafile=str(certificates[0])))
        try:
            assert await llm.model(model).request("Hi").prompt_async() == "Claude over TLS."
        finally:
            await model.aclose()


def test_a_bundle_that_is_not_there_is_refused_when_the_model_is_made(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-ca.pem"
    with pytest.raises(UserError, match="verify= given to OpenAIModel names no readable CA bundle") as caught:
        OpenAIModel("gpt-4o-mini", api_key=SECRET, verify=missing)
    assert str(missing) in str(caught.value) and SECRET not in str(caught.value)
    with pytest.raises(UserError, match=re.escape("must be True, False, the path of a CA bundle or an ssl.SSLContext")):
        AnthropicModel("claude-haiku-4-5", api_key=SECRET, verify=42)  # type: ignore[arg-type]
    with pytest.raises(UserError, match="verify= or transport=, not both"):
        OpenAIResponsesModel("o4-mini", api_key=SECRET, verify=False, transport=httpx.MockTransport(_unused))


def _unused(request: httpx.Request) -> httpx.Response:
    raise AssertionError("no request is sent")


def _chunk(delta: dict[str, object], finish: str | None = None) -> str:
    body = {
        "id": "chatcmpl-mock",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": "gpt-4o-mini-2024-07-18",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return f"data: {json.dumps(body)}\n\n"


def _openai_handler(seen: list[httpx.Request]) -> httpx.MockTransport:
    """An in-process OpenAI: Chat Completions answers in the real wire format, a JSON body or an SSE stream."""

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        body = json.loads(request.content)
        if body.get("stream"):
            events = (
                _chunk({"role": "assistant", "content": ""})
                + _chunk({"content": "Mocked "})
                + _chunk({"content": "stream."})
                + _chunk({}, "stop")
                + "data: [DONE]\n\n"
            )
            return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=events.encode())
        return httpx.Response(
            200,
            json={
                "id": "chatcmpl-mock",
                "object": "chat.completion",
                "created": 1_700_000_000,
                "model": "gpt-4o-mini-2024-07-18",
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": "Mocked answer.", "refusal": None},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 9, "completion_tokens": 3, "total_tokens": 12},
            },
        )

    return httpx.MockTransport(handle)


async def test_a_mock_transport_answers_in_openais_wire_format() -> None:
    seen: list[httpx.Request] = []
    model = OpenAIModel("gpt-4o-mini", api_key=SECRET, transport=_openai_handler(seen))
    try:
        assert await llm.model(model).request("Hi").prompt_async(stream=False) == "Mocked answer."
        assert await llm.model(model).request("Hi").prompt_async() == "Mocked stream."  # streamed
    finally:
        await model.aclose()
    assert [str(request.url) for request in seen] == ["https://api.openai.com/v1/chat/completions"] * 2
    assert seen[0].headers["authorization"] == f"Bearer {SECRET}"
    sent = json.loads(seen[0].content)
    assert sent["model"] == "gpt-4o-mini" and sent["messages"][-1] == {"role": "user", "content": "Hi"}
    assert json.loads(seen[1].content)["stream"] is True


async def test_a_transport_of_ones_own_is_used_and_left_open(openai_server: FakeOpenAI) -> None:
    transport = httpx.AsyncHTTPTransport()
    openai_server.add(Answer("first"), Answer("second"))
    try:
        model = make_openai(openai_server, transport=transport)
        assert await llm.model(model).request("x").prompt_async() == "first"
        await model.aclose()  # the caller's transport is the caller's to close
        assert await llm.model(make_openai(openai_server, transport=transport)).request("x").prompt_async() == "second"
    finally:
        await transport.aclose()
