"""`AnthropicModel`: the Anthropic Messages API.

Configured by ``ANTHROPIC_API_KEY`` and ``ANTHROPIC_BASE_URL`` (default ``https://api.anthropic.com``), or per model
in code. Translation lives in `_anthropic_convert`, the transport and error mapping in `_http`; this module only
wires them to the `Model` interface.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Mapping

import msgspec

from ..errors import UserError
from ._anthropic_convert import MessageStream, build_request, parse_message
from ._http import Endpoint, mask_secrets
from ._wire import check_images, check_tool_choice
from .base import Model, ModelCapabilities, ModelEvent, ModelRequest, check_capabilities
from .profiles import ModelProfile, anthropic_profile

__all__ = ["ANTHROPIC_VERSION", "DEFAULT_BASE_URL", "AnthropicModel"]

DEFAULT_BASE_URL = "https://api.anthropic.com"
ANTHROPIC_VERSION = "2023-06-01"
_encode = msgspec.json.Encoder().encode


class AnthropicModel(Model):
    """A model behind the Anthropic Messages API.

    Args:
        model_name: The model id, e.g. ``"claude-haiku-4-5"``.
        base_url: The API root (without ``/v1``); default ``ANTHROPIC_BASE_URL``, else Anthropic's.
        api_key: The key; default ``ANTHROPIC_API_KEY``. Sent as ``x-api-key``.
        headers: Extra headers for every request (e.g. ``anthropic-beta``).
        capabilities: Overrides the family profile's capabilities.
        profile: Overrides the whole family profile (e.g. another default ``max_tokens``).
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
            raise UserError(
                "AnthropicModel needs a model name, e.g. AnthropicModel('claude-haiku-4-5') "
                "or 'anthropic:claude-haiku-4-5'"
            )
        self.model_id = model_name.strip()
        self.name = f"anthropic:{self.model_id}"
        self.profile = (profile or anthropic_profile(self.model_id)).with_capabilities(capabilities)
        self.capabilities = self.profile.capabilities
        key_from_env = api_key is None
        key = api_key if api_key is not None else os.environ.get("ANTHROPIC_API_KEY") or None
        self.base_url = (base_url or os.environ.get("ANTHROPIC_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")
        self._has_key = bool(key)
        all_headers = {
            "Content-Type": "application/json",
            "Accept": "application/json",
            "anthropic-version": ANTHROPIC_VERSION,
        }
        if key:
            all_headers["x-api-key"] = key
        all_headers.update(headers or {})
        if not key:
            hint = "No key is set: set ANTHROPIC_API_KEY (or pass api_key=)."
        elif key_from_env:
            hint = "The key from ANTHROPIC_API_KEY was refused: check it is valid."
        else:
            hint = "The api_key given to AnthropicModel was refused: check it is valid."
        self._endpoint = Endpoint(
            provider="Anthropic",
            url=f"{self.base_url}/v1/messages",
            headers=all_headers,
            secrets=(key,) if key else (),
            auth_hint=hint,
            timeout=timeout,
            max_retries=max_retries,
            retry_base_delay=retry_base_delay,
        )

    def __repr__(self) -> str:
        return f"<AnthropicModel {self.name!r} at {mask_secrets(self.base_url)}>"

    def check(self, request: ModelRequest) -> None:
        """Refuse, before anything is sent, a request this model cannot serve.

        Raises:
            CapabilityError: when the request needs tools, images or a forced tool the model lacks.
            UserError: for Anthropic's own endpoint without a key, an unreadable image, or a tool_choice naming a
                tool that is not offered.
        """
        check_capabilities(self.name, self.capabilities, request)
        if not self._has_key and self.base_url == DEFAULT_BASE_URL:
            raise UserError(f"no API key for {self.name}: set ANTHROPIC_API_KEY, or pass api_key=")
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
            parse=lambda data: parse_message(data, context),
            decoder=lambda: MessageStream(context),
        )

    async def aclose(self) -> None:
        """Close this model's pooled connections (those of the running event loop)."""
        await self._endpoint.aclose()
