"""`OpenAIModel`: OpenAI Chat Completions and every compatible server (vLLM, llama-server, Ollama, OpenRouter).

Configured by ``OPENAI_API_KEY`` and ``OPENAI_BASE_URL`` (default ``https://api.openai.com/v1``), and by
``THREADLINE_OPENAI_SERVER`` for servers that differ from OpenAI's API in what they do with tools (see
`threadline.models.profiles.server_options`), or per model in code. Translation lives in `_chat_request`,
`_chat_response` and `_chat_stream`, the transport, error mapping and what the HTTP adapters share in
`threadline.models.http`; this module only says how OpenAI differs.

A compatible server (any base URL other than OpenAI's) gets ``max_tokens`` `COMPATIBLE_MAX_TOKENS` when the turn sets
none: a small local model that never stops would otherwise generate until its context is full (a 7,547-token answer
took 8.5 minutes). The turn's ``max_tokens`` replaces it, higher or lower.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from ..http._model import HTTPModel
from ..profiles import openai_profile
from ._chat_request import build_request, check_effort_with_tools, plan_tools
from ._chat_response import parse_completion
from ._chat_stream import ChatStream
from ._files import CHAT_FILES, check_files

if TYPE_CHECKING:
    from ..base import ModelRequest
    from ..http._model import Translation
    from ..profiles import ModelProfile

__all__ = ["COMPATIBLE_MAX_TOKENS", "DEFAULT_BASE_URL", "OpenAIModel"]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
COMPATIBLE_MAX_TOKENS = 4096
"""The ``max_tokens`` a compatible server is sent when the turn sets none (OpenAI's own API is sent none)."""


class OpenAIModel(HTTPModel):
    """A model behind an OpenAI-compatible Chat Completions endpoint.

    Args:
        model_name: The provider's model id, e.g. ``"gpt-4o-mini"`` (or ``"llama3.2"`` on Ollama).
        base_url: The API root (``…/v1``); default ``OPENAI_BASE_URL``, else OpenAI's.
        api_key: The key; default ``OPENAI_API_KEY``. Without one no ``Authorization`` header is sent, which
            local servers accept.
        headers: Extra headers for every request (e.g. OpenRouter's ``HTTP-Referer``).
        capabilities: Overrides the family profile's capabilities (e.g. ``images=True`` for a local vision model).
        profile: Overrides the whole family profile.
        timeout: Default seconds one attempt may take in all, from the request to the answer's last byte (also the
            longest wait for a connection or the next bytes); ``timeout`` in the settings wins.
        max_retries: Default retries of retryable failures (``max_retries`` in the settings wins).
        retry_base_delay: First backoff delay in seconds; doubled for each further retry.
        retry_time_limit: The longest one call keeps retrying, in seconds from its first failure; a server that
            asks to wait longer (``Retry-After``) gets a clear error at once. None: no limit.
        server: What the server does about tools, when it differs from OpenAI's API: a preset name
            (``"llama-cpp-python"``), ``key=value`` options, or both (see
            `threadline.models.profiles.server_options`); default ``THREADLINE_OPENAI_SERVER``.
        verify: How certificates are checked, as httpx takes it: True (the default CAs, or ``SSL_CERT_FILE``), the
            path of a CA bundle (a corporate CA), an ``ssl.SSLContext``, or False (no check).
        transport: An ``httpx.AsyncBaseTransport`` of your own that every request goes through (a proxy's,
            ``httpx.AsyncHTTPTransport(proxy=…)``, or an in-process test double such as ``httpx.MockTransport``);
            it replaces the pooled connections and is yours to close.
    """

    _class_name = "OpenAIModel"
    _prefix = "openai"
    _example = "gpt-4o-mini"
    _provider = "OpenAI"
    _key_env = "OPENAI_API_KEY"
    _url_env = "OPENAI_BASE_URL"
    _default_base_url = DEFAULT_BASE_URL
    _path = "/chat/completions"
    _auth_header = "Authorization"
    _auth_scheme = "Bearer "
    _compatible_servers = True
    _server_env = "THREADLINE_OPENAI_SERVER"

    def _default_profile(self, model_id: str) -> ModelProfile:
        return openai_profile(model_id)

    def _check_wire(self, request: ModelRequest) -> None:
        plan_tools(request, self.profile)  # raises CapabilityError for a choice this server cannot honour
        check_files(request.messages, CHAT_FILES)
        check_effort_with_tools(request, self.model_id, self.profile)

    def _translate(self, request: ModelRequest, stream: bool) -> Translation:
        if request.settings.max_tokens is None and self.base_url != self._default_base_url:
            settings = msgspec.structs.replace(request.settings, max_tokens=COMPATIBLE_MAX_TOKENS)
            request = msgspec.structs.replace(request, settings=settings)
        body, context = build_request(request, self.model_id, self.profile, stream=stream)
        return body, lambda data: parse_completion(data, context), lambda: ChatStream(context)
