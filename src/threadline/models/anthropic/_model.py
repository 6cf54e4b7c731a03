"""`AnthropicModel`: the Anthropic Messages API.

Configured by ``ANTHROPIC_API_KEY`` and ``ANTHROPIC_BASE_URL`` (default ``https://api.anthropic.com``), or per model
in code. Translation lives in `_request`, `_response` and `_stream`, the transport, error mapping and what the HTTP
adapters share in `threadline.models.http`; this module only says how Anthropic differs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, ClassVar

from ..http._model import HTTPModel
from ..profiles import anthropic_profile
from ._request import build_request, check_request
from ._response import parse_message
from ._stream import MessageStream
from ._thinking import check_thinking

if TYPE_CHECKING:
    from ..base import ModelRequest
    from ..http._model import Translation
    from ..profiles import ModelProfile

__all__ = ["ANTHROPIC_VERSION", "DEFAULT_BASE_URL", "AnthropicModel"]

DEFAULT_BASE_URL = "https://api.anthropic.com"
ANTHROPIC_VERSION = "2023-06-01"


class AnthropicModel(HTTPModel):
    """A model behind the Anthropic Messages API.

    Args:
        model_name: The model id, e.g. ``"claude-haiku-4-5"``.
        base_url: The API root (without ``/v1``); default ``ANTHROPIC_BASE_URL``, else Anthropic's.
        api_key: The key; default ``ANTHROPIC_API_KEY``. Sent as ``x-api-key``.
        headers: Extra headers for every request (e.g. ``anthropic-beta``).
        capabilities: Overrides the family profile's capabilities.
        profile: Overrides the whole family profile (e.g. another default ``max_tokens``).
        timeout: Default seconds one attempt may take in all, from the request to the answer's last byte (also the
            longest wait for a connection or the next bytes); ``timeout`` in the settings wins.
        max_retries: Default retries of retryable failures (``max_retries`` in the settings wins).
        retry_base_delay: First backoff delay in seconds; doubled for each further retry.
        retry_time_limit: The longest one call keeps retrying, in seconds from its first failure; a server that
            asks to wait longer (``retry-after``) gets a clear error at once. None: no limit.
        verify: How certificates are checked, as httpx takes it: True (the default CAs, or ``SSL_CERT_FILE``), the
            path of a CA bundle (a corporate CA), an ``ssl.SSLContext``, or False (no check).
        transport: An ``httpx.AsyncBaseTransport`` of your own that every request goes through (a proxy's,
            ``httpx.AsyncHTTPTransport(proxy=…)``, or an in-process test double such as ``httpx.MockTransport``);
            it replaces the pooled connections and is yours to close.
    """

    _class_name = "AnthropicModel"
    _prefix = "anthropic"
    _example = "claude-haiku-4-5"
    _provider = "Anthropic"
    _key_env = "ANTHROPIC_API_KEY"
    _url_env = "ANTHROPIC_BASE_URL"
    _default_base_url = DEFAULT_BASE_URL
    _path = "/v1/messages"
    _auth_header = "x-api-key"
    _extra_headers: ClassVar[Mapping[str, str]] = {"anthropic-version": ANTHROPIC_VERSION}

    def _default_profile(self, model_id: str) -> ModelProfile:
        return anthropic_profile(model_id)

    def _check_wire(self, request: ModelRequest) -> None:
        # Thinking's own rules (a budget of at least 1,024 tokens, no forced tool), before anything is sent.
        check_thinking(request, self.profile, self.name)
        # File attachments and blank messages the API would refuse, rather than sent or silently left out.
        check_request(request.messages)

    def _translate(self, request: ModelRequest, stream: bool) -> Translation:
        body, context = build_request(request, self.model_id, self.profile, stream=stream)
        return body, lambda data: parse_message(data, context), lambda: MessageStream(context)
