"""`OpenAIResponsesModel`: OpenAI's Responses API (``openai-responses:<model>``), stateless.

Configured like ``openai:`` by ``OPENAI_API_KEY`` and ``OPENAI_BASE_URL`` (default ``https://api.openai.com/v1``),
or per model in code. Every request is sent with ``store: false`` and, for reasoning models, asks for the encrypted
reasoning items that let a tool loop continue without any state on OpenAI's side; they are kept in the log and sent
back in place (see `_responses_convert`). Translation lives in `_responses_convert`, the transport and error mapping
in `_transport`, what the HTTP adapters share in `_http_model`; this module only says how this API differs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Literal

from ._http_model import HTTPModel
from ._responses_convert import ResponsesStream, build_request, parse_response
from .profiles import openai_profile

if TYPE_CHECKING:
    from ._http_model import Translation
    from .base import ModelCapabilities, ModelRequest
    from .profiles import ModelProfile

__all__ = ["DEFAULT_BASE_URL", "OpenAIResponsesModel"]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
_UNSET: Any = object()


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
        timeout: Default seconds to wait for a connection or the next bytes of an answer.
        max_retries: Default retries of retryable failures (``max_retries`` in the settings wins).
        retry_base_delay: First backoff delay in seconds; doubled for each further retry.
        retry_time_limit: The longest one call keeps retrying, in seconds from its first failure; a server that
            asks to wait longer (``Retry-After``) gets a clear error at once. None: no limit.
        reasoning_summary: The reasoning summary asked for with reasoning settings: ``"auto"`` (the profile's
            default), ``"concise"``, ``"detailed"``, or None for none (OpenAI refuses summaries to organizations
            that are not verified).
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
        )
        if reasoning_summary is not _UNSET:
            self.profile = replace(self.profile, reasoning_summary=reasoning_summary)

    def _default_profile(self, model_id: str) -> ModelProfile:
        return openai_profile(model_id)  # the same families as Chat Completions; the flags say what differs

    def _translate(self, request: ModelRequest, stream: bool) -> Translation:
        body, context = build_request(request, self.model_id, self.profile, stream=stream)
        return body, lambda data: parse_response(data, context), lambda: ResponsesStream(context)
