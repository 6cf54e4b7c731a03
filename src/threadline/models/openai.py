"""`OpenAIModel`: OpenAI Chat Completions and every compatible server (vLLM, llama-server, Ollama, OpenRouter).

Configured by ``OPENAI_API_KEY`` and ``OPENAI_BASE_URL`` (default ``https://api.openai.com/v1``), or per model in
code. Translation lives in `_openai_convert`, the transport and error mapping in `_http`; this module only wires
them to the `Model` interface.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Mapping

import msgspec

from ..errors import UserError
from ._http import Endpoint, mask_secrets
from ._openai_convert import ChatStream, build_request, parse_completion
from ._wire import check_images, check_tool_choice
from .base import Model, ModelCapabilities, ModelEvent, ModelRequest, check_capabilities
from .profiles import ModelProfile, openai_profile

__all__ = ["DEFAULT_BASE_URL", "OpenAIModel"]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
_encode = msgspec.json.Encoder().encode


class OpenAIModel(Model):
    """A model behind an OpenAI-compatible Chat Completions endpoint.

    Args:
        model_name: The provider's model id, e.g. ``"gpt-4o-mini"`` (or ``"llama3.2"`` on Ollama).
        base_url: The API root (``…/v1``); default ``OPENAI_BASE_URL``, else OpenAI's.
        api_key: The key; default ``OPENAI_API_KEY``. Without one no ``Authorization`` header is sent, which
            local servers accept.
        headers: Extra headers for every request (e.g. OpenRouter's ``HTTP-Referer``).
        capabilities: Overrides the family profile's capabilities (e.g. ``images=True`` for a local vision model).
        profile: Overrides the whole family profile.
        timeout: Default seconds to wait for a connection or the next bytes of an answer.
        max_retries: Default retries of retryable failures (``max_retries`` in the settings wins).
        retry_base_delay: First backoff delay in seconds; doubled for each further retry.
    """

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
    ) -> None:
        if not isinstance(model_name, str) or not model_name.strip():
            raise UserError("OpenAIModel needs a model name, e.g. OpenAIModel('gpt-4o-mini') or 'openai:gpt-4o-mini'")
        self.model_id = model_name.strip()
        self.name = f"openai:{self.model_id}"
        self.profile = (profile or openai_profile(self.model_id)).with_capabilities(capabilities)
        self.capabilities = self.profile.capabilities
        key_from_env = api_key is None
        key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY") or None
        self.base_url = (base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")
        self._has_key = bool(key)
        all_headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if key:
            all_headers["Authorization"] = f"Bearer {key}"
        all_headers.update(headers or {})
        if not key:
            hint = "No key is set: set OPENAI_API_KEY (or pass api_key=) if this server needs one."
        elif key_from_env:
            hint = "The key from OPENAI_API_KEY was refused: check it is valid for this server."
        else:
            hint = "The api_key given to OpenAIModel was refused: check it is valid for this server."
        self._endpoint = Endpoint(
            provider="OpenAI" if self.base_url == DEFAULT_BASE_URL else "OpenAI-compatible server",
            url=f"{self.base_url}/chat/completions",
            headers=all_headers,
            secrets=(key,) if key else (),
            auth_hint=hint,
            timeout=timeout,
            max_retries=max_retries,
            retry_base_delay=retry_base_delay,
        )

    def __repr__(self) -> str:
        return f"<OpenAIModel {self.name!r} at {mask_secrets(self.base_url)}>"

    def check(self, request: ModelRequest) -> None:
        """Refuse, before anything is sent, a request this model cannot serve.

        Raises:
            CapabilityError: when the request needs tools, images or a forced tool the model lacks.
            UserError: for OpenAI's own endpoint without a key, an unreadable image, or a tool_choice naming a
                tool that is not offered.
        """
        check_capabilities(self.name, self.capabilities, request)
        if not self._has_key and self.base_url == DEFAULT_BASE_URL:
            raise UserError(
                f"no API key for {self.name}: set OPENAI_API_KEY, or pass api_key= "
                "(or base_url= for an OpenAI-compatible server that needs none)"
            )
        check_tool_choice(request)
        if self.capabilities.images:
            check_images(request.messages)

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """Send one request; yield text deltas while it streams, then the `ModelResponse`.

        Raises:
            ModelError: when the call fails after the retries allowed (``.partial`` holds text already shown).
        """
        stream = request.settings.stream and self.capabilities.streaming
        body, context = build_request(request, self.model_id, self.profile, stream=stream)
        return self._endpoint.events(
            _encode(body),
            request.settings,
            stream=stream,
            parse=lambda data: parse_completion(data, context),
            decoder=lambda: ChatStream(context),
        )

    async def aclose(self) -> None:
        """Close this model's pooled connections (those of the running event loop)."""
        await self._endpoint.aclose()
