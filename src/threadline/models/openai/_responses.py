"""`OpenAIResponsesModel`: OpenAI's Responses API (``openai-responses:<model>``), stateless.

Configured like ``openai:`` by ``OPENAI_API_KEY`` and ``OPENAI_BASE_URL`` (default ``https://api.openai.com/v1``),
or per model in code. Every request is sent with ``store: false`` and, for reasoning models, asks for the encrypted
reasoning items that let a tool loop continue without any state on OpenAI's side; they are kept in the log and sent
back in place (see `_responses_request`), to the server that produced them only (`OpenAIResponsesModel.origin`).

Reasoning settings ask for a summary of the thinking (``reasoning.summary``), which OpenAI refuses to organizations
that are not verified. ``reasoning_summary=None`` turns it off for one model object, and
``THREADLINE_OPENAI_REASONING_SUMMARY=none`` for every model, also those named by a string (``get_model``,
``THREADLINE_MODEL``, the command line); it is read at each request, so a model already made follows it.

Translation lives in `_responses_request`, `_responses_response` and `_responses_stream`, the transport and error
mapping in `threadline.models.http`; this module only says how this API differs.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

from ...errors import ModelError, UserError
from ...message_types import UserMessage
from ..http._model import HTTPModel
from ..profiles import openai_profile
from ._responses_request import PROVIDER, build_request
from ._responses_response import parse_response
from ._responses_stream import ResponsesStream

if TYPE_CHECKING:
    import httpx

    from ..base import ModelCapabilities, ModelEvent, ModelRequest
    from ..http._model import Translation
    from ..http._tls import Verify
    from ..profiles import ModelProfile

__all__ = ["DEFAULT_BASE_URL", "SUMMARY_ENV", "OpenAIResponsesModel", "origin_of"]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
SUMMARY_ENV = "THREADLINE_OPENAI_REASONING_SUMMARY"
"""The environment variable that sets the reasoning summary asked for: ``auto``, ``concise``, ``detailed`` or
``none``."""
_SUMMARIES: dict[str, Literal["auto", "concise", "detailed"] | None] = {
    "auto": "auto",
    "concise": "concise",
    "detailed": "detailed",
    "none": None,
    "off": None,
}
_UNSET: Any = object()
_SUMMARY_REFUSED = "to generate reasoning summaries"  # in OpenAI's 400 to organizations that are not verified
_DEFAULT_PORTS = {"https": 443, "http": 80}


def _where(base_url: str) -> tuple[str, str, int | None, str]:
    """Scheme and host lower-cased, the port given (None: none, or not a number) and the path without a trailing
    slash."""
    parts = urlsplit(base_url.strip())
    try:
        port = parts.port
    except ValueError:  # no request reaches such a URL anyway
        port = None
    return parts.scheme.lower(), (parts.hostname or "").lower(), port, parts.path.rstrip("/")


def _same_server(scheme: str, host: str, port: int | None, path: str) -> tuple[str, str, int | None, str]:
    return scheme, host, port or _DEFAULT_PORTS.get(scheme), path


_OPENAI = _same_server(*_where(DEFAULT_BASE_URL))


def origin_of(base_url: str) -> str:
    """The `Reasoning.provider` of reasoning pieces from the Responses API at ``base_url``.

    ``"openai-responses"`` for OpenAI's own API (the default base URL, whatever the case of its scheme and host and
    with or without a trailing slash), else ``"openai-responses@host"``, or ``"openai-responses@host:port"`` when the
    URL gives a port other than its scheme's default (the host lower-cased). Nothing else of the URL is kept: user
    info, path and query may carry credentials, and the origin is written to the log.
    """
    scheme, host, port, path = _where(base_url)
    if _same_server(scheme, host, port, path) == _OPENAI:
        return PROVIDER
    if port == _DEFAULT_PORTS.get(scheme):
        port = None  # https://gw.example.com and https://gw.example.com:443 are one server
    host = host or "unknown"
    if ":" in host:
        host = f"[{host}]"  # an IPv6 address, bracketed as in a URL
    return f"{PROVIDER}@{host}" if port is None else f"{PROVIDER}@{host}:{port}"


class OpenAIResponsesModel(HTTPModel):
    """A model behind OpenAI's Responses API (``POST {base_url}/responses``).

    Args:
        model_name: The model id, e.g. ``"o4-mini"`` or ``"gpt-5"``.
        base_url: The API root (``…/v1``); default ``OPENAI_BASE_URL``, else OpenAI's.
        api_key: The key; default ``OPENAI_API_KEY``. Sent as ``Authorization: Bearer …``.
        headers: Extra headers for every request (e.g. ``OpenAI-Organization``).
        capabilities: Overrides the family profile's capabilities (``reasoning=False`` stops asking for encrypted
            reasoning, for a model that refuses it).
        profile: Overrides the whole family profile.
        timeout: Default seconds one attempt may take in all, from the request to the answer's last byte (also the
            longest wait for a connection or the next bytes); ``timeout`` in the settings wins.
        max_retries: Default retries of retryable failures (``max_retries`` in the settings wins).
        retry_base_delay: First backoff delay in seconds; doubled for each further retry.
        retry_time_limit: The longest one call keeps retrying, in seconds from its first failure; a server that
            asks to wait longer (``Retry-After``) gets a clear error at once. None: no limit.
        reasoning_summary: The reasoning summary asked for with reasoning settings: ``"auto"`` (the profile's
            default), ``"concise"``, ``"detailed"``, or None for none (OpenAI refuses summaries to organizations
            that are not verified). Default: ``THREADLINE_OPENAI_REASONING_SUMMARY`` when set (``none`` for
            none), read at each request, else the profile's.
        verify: How certificates are checked, as httpx takes it: True (the default CAs, or ``SSL_CERT_FILE``), the
            path of a CA bundle (a corporate CA), an ``ssl.SSLContext``, or False (no check).
        transport: An ``httpx.AsyncBaseTransport`` of your own that every request goes through (a proxy's,
            ``httpx.AsyncHTTPTransport(proxy=…)``, or an in-process test double such as ``httpx.MockTransport``);
            it replaces the pooled connections and is yours to close.

    Attributes:
        origin: The server this model's reasoning comes from and goes back to, as in `Reasoning.provider`
            (see `origin_of`): ``"openai-responses"`` for OpenAI's own API, else ``"openai-responses@host:port"``.
            Reasoning pieces go back only to a model of the same origin: OpenAI's encrypted reasoning means nothing
            to another server (vLLM answers 400), and another server's reasoning items are unknown to OpenAI's API,
            also behind a proxy (404 "Item with id 'rs_…' not found" under ``store: false``).
    """

    _class_name = "OpenAIResponsesModel"
    _prefix = "openai-responses"
    _example = "o4-mini"
    _provider = "OpenAI"
    _key_env = "OPENAI_API_KEY"
    _url_env = "OPENAI_BASE_URL"
    _default_base_url = DEFAULT_BASE_URL
    _path = "/responses"
    _auth_header = "Authorization"
    _auth_scheme = "Bearer "
    _compatible_servers = True  # vLLM, Ollama and others serve /v1/responses too, often without a key

    def __init__(
        self,
        model_name: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        headers: Mapping[str, str] | None = None,
        capabilities: ModelCapabilities | None = None,
        profile: ModelProfile | None = None,
        timeout: float = 600.0,
        max_retries: int = 2,
        retry_base_delay: float = 0.5,
        retry_time_limit: float | None = 60.0,
        reasoning_summary: Literal["auto", "concise", "detailed"] | None = _UNSET,
        verify: Verify = True,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        super().__init__(
            model_name,
            base_url=base_url,
            api_key=api_key,
            headers=headers,
            capabilities=capabilities,
            profile=profile,
            timeout=timeout,
            max_retries=max_retries,
            retry_base_delay=retry_base_delay,
            retry_time_limit=retry_time_limit,
            verify=verify,
            transport=transport,
        )
        self.origin = origin_of(self.base_url)
        self._summary_set = reasoning_summary is not _UNSET
        if self._summary_set:
            self.profile = replace(self.profile, reasoning_summary=reasoning_summary)

    def _default_profile(self, model_id: str) -> ModelProfile:
        return openai_profile(model_id)  # the same families as Chat Completions; the flags say what differs

    def _profile_now(self) -> ModelProfile:
        """The profile with the reasoning summary the environment asks for, unless the caller set one here."""
        value = os.environ.get(SUMMARY_ENV)
        if self._summary_set or not value:
            return self.profile
        key = value.strip().lower()
        if key not in _SUMMARIES:
            raise UserError(f"{SUMMARY_ENV}={value!r} is not one of auto, concise, detailed or none")
        summary = _SUMMARIES[key]
        return (
            self.profile
            if summary == self.profile.reasoning_summary
            else replace(self.profile, reasoning_summary=summary)
        )

    def _check_wire(self, request: ModelRequest) -> None:
        if any(a.kind == "file" for m in request.messages if isinstance(m, UserMessage) for a in m.attachments):
            from ._files import RESPONSES_FILES, check_files

            check_files(request.messages, RESPONSES_FILES)
        if request.settings.reasoning is not None:
            self._profile_now()  # an unknown value in the environment is refused before anything is sent

    def _translate(self, request: ModelRequest, stream: bool) -> Translation:
        profile = self._profile_now() if request.settings.reasoning is not None else self.profile
        body, context = build_request(request, self.model_id, profile, stream=stream, origin=self.origin)
        return body, lambda data: parse_response(data, context), lambda: ResponsesStream(context)

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """Send one request; yield text deltas while it streams, then the `ModelResponse` (see `HTTPModel.stream`).

        Raises:
            ModelError: when the call fails; OpenAI's refusal of reasoning summaries says how to turn them off.
        """
        return self._explained(super().stream(request))

    async def _explained(self, events: AsyncIterator[ModelEvent]) -> AsyncIterator[ModelEvent]:
        try:
            async for event in events:
                yield event
        except ModelError as exc:
            if exc.status != 400 or _SUMMARY_REFUSED not in exc.message:
                raise
            error = ModelError(
                f"{exc.message}. To ask for no reasoning summary, set {SUMMARY_ENV}=none (for every model, also "
                f"one named by a string), or pass reasoning_summary=None to {self._class_name}",
                type=exc.type,
                status=exc.status,
                partial=exc.partial,
                retryable=exc.retryable,
            )
            raise error from None
