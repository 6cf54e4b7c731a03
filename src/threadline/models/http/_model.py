"""`HTTPModel`: what the HTTP adapters (`OpenAIModel`, `AnthropicModel`) share, so that each says only how it differs.

This module owns an HTTP model's configuration: the model name and profile (with what the server does about
tools, for APIs that other servers speak), the key (from an argument or the environment) and the hint given when
it is refused, the base URL, the headers, and the `Endpoint` they make; then the `Model` methods on top (`check`,
`stream`, `aclose`). A subclass sets class attributes (names, environment variables, default URL, request path,
authentication header) and hooks: the family profile of a model id, the checks its wire format adds, and the
translation of a request into a body and the readers of its answer.
"""

from __future__ import annotations

import os
import re
from abc import abstractmethod
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, ClassVar

import msgspec

from ...errors import UserError
from ..base import Model, ModelCapabilities, ModelEvent, ModelRequest, check_capabilities
from ..keys import key_file_path, key_name_for, stored_key
from ..profiles import ModelProfile, server_for_url
from ._convert_common import check_images, check_tool_choice
from ._tls import ssl_verify
from ._transport import Endpoint, mask_secrets

if TYPE_CHECKING:  # only annotations use it: building the alias at import time would cost for nothing
    from collections.abc import Callable
    from typing import Any, TypeAlias

    import httpx

    from ..base import ModelResponse
    from ._tls import Verify
    from ._transport import StreamDecoder

    Translation: TypeAlias = tuple[dict[str, Any], Callable[[bytes], ModelResponse], Callable[[], StreamDecoder]]
    """A request translated: the JSON body, how to read a whole answer, and how to make a stream reader."""

__all__ = ["HTTPModel"]

_encode = msgspec.json.Encoder().encode
_SECRET_HEADER = re.compile(r"key|auth|token|secret", re.IGNORECASE)
_BAD_KEY_CHARS = re.compile(r"[\x00-\x20\x7f]")


class HTTPModel(Model):
    """A model behind an HTTP API; subclasses say which API (see `OpenAIModel` for the arguments).

    Attributes:
        model_id: The provider's model id.
        base_url: The API root, without a trailing slash.
        profile: The model family's profile (capabilities included).
    """

    _class_name: ClassVar[str]
    """The public class name used in messages (``"OpenAIModel"``)."""
    _prefix: ClassVar[str]
    """The provider part of model names (``"openai"`` in ``"openai:gpt-4o-mini"``)."""
    _example: ClassVar[str]
    """A model id for the message about a missing model name."""
    _provider: ClassVar[str]
    """The provider's name as users know it (``"OpenAI"``)."""
    _key_env: ClassVar[str]
    _url_env: ClassVar[str]
    _default_base_url: ClassVar[str]
    _path: ClassVar[str]
    """What follows the base URL in the URL requests are posted to."""
    _auth_header: ClassVar[str]
    _auth_scheme: ClassVar[str] = ""
    """What comes before the key in the authentication header (``"Bearer "``)."""
    _extra_headers: ClassVar[Mapping[str, str]] = {}
    """Headers every request of this API carries (such as a version), before the caller's own."""
    _compatible_servers: ClassVar[bool] = False
    """Whether other servers speak this API (vLLM, Ollama…): then a key is optional, and an endpoint other than
    the provider's own is called a compatible server."""
    _server_env: ClassVar[str | None] = None
    """The environment variable that says which server this is (see `ModelProfile.with_server`), where other
    servers speak the API."""

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
        server: str | Mapping[str, Any] | None = None,
        verify: Verify = True,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        cls = self._class_name
        if not isinstance(model_name, str) or not model_name.strip():
            raise UserError(
                f"{cls} needs a model name, e.g. {cls}('{self._example}') or '{self._prefix}:{self._example}'"
            )
        self.model_id = model_name.strip()
        self.name = f"{self._prefix}:{self.model_id}"
        if server is not None and self._server_env is None:
            raise UserError(f"{cls} takes no server= option: only one server speaks its API")
        if transport is not None and verify is not True:
            raise UserError(
                f"{cls} takes verify= or transport=, not both: a transport of your own verifies as it is made"
            )
        self.base_url = (base_url or os.environ.get(self._url_env) or self._default_base_url).rstrip("/")
        if server is None and self._server_env is not None:
            # Named in the environment, or known by the base URL's host (OpenRouter).
            server = os.environ.get(self._server_env) or server_for_url(self.base_url)
        base_profile = profile or self._default_profile(self.model_id)
        self.profile = base_profile.with_server(server).with_capabilities(capabilities)
        self.capabilities = self.profile.capabilities
        key_name = key_name_for(self._key_env)
        if api_key is not None:
            key: str | None = api_key
            where = f"the api_key given to {cls}"
        elif os.environ.get(self._key_env):
            key = os.environ[self._key_env]
            where = f"the key from {self._key_env}"
        else:  # the environment wins over the key file (`threadline keys set`)
            key = stored_key(self._key_env)
            where = f"the {key_name!r} key of the key file {key_file_path()}"
        if key is not None:
            # A key read from a file often ends in a newline, which no server accepts in a header.
            key = key.strip() or None
            if key is not None and _BAD_KEY_CHARS.search(key):
                raise UserError(f"{where} contains a space or a control character; check it (it is not shown)")
        self._has_key = bool(key)
        all_headers = {"Content-Type": "application/json", "Accept": "application/json", **self._extra_headers}
        if key:
            all_headers[self._auth_header] = f"{self._auth_scheme}{key}"
        all_headers.update(headers or {})
        compatible = self._compatible_servers
        # Where other servers speak the API a key may rightly be missing, and the hints say so.
        needs_one = " if this server needs one" if compatible else ""
        valid_for = " for this server" if compatible else ""
        if not key:
            hint = f"No key is set: {self._set_key_hint()}{needs_one}."
        else:
            hint = f"{where[0].upper()}{where[1:]} was refused: check it is valid{valid_for}."
        elsewhere = compatible and self.base_url != self._default_base_url
        # Headers that carry credentials of the caller's own (Azure's "api-key", a proxy's token) are secrets too.
        secrets = [key] if key else []
        secrets += [value for name, value in (headers or {}).items() if _SECRET_HEADER.search(name)]
        self._endpoint = Endpoint(
            provider=f"{self._provider}-compatible server" if elsewhere else self._provider,
            url=f"{self.base_url}{self._path}",
            headers=all_headers,
            secrets=tuple(secrets),
            auth_hint=hint,
            timeout=timeout,
            max_retries=max_retries,
            retry_base_delay=retry_base_delay,
            retry_time_limit=retry_time_limit,
            verify=ssl_verify(verify, cls),
            transport=transport,
        )

    @abstractmethod
    def _default_profile(self, model_id: str) -> ModelProfile:
        """The family profile of a model id (used unless the caller passes ``profile=``)."""

    @abstractmethod
    def _translate(self, request: ModelRequest, stream: bool) -> Translation:
        """The request in this API's wire format, and how its answer is read (the body's ``stream`` says whether
        it was streamed, which the translation may decline)."""

    def _check_wire(self, request: ModelRequest) -> None:
        """Refuse, before anything is sent, a request this API's translation could not express."""

    def __repr__(self) -> str:
        return f"<{self._class_name} {self.name!r} at {mask_secrets(self.base_url)}>"

    def _set_key_hint(self) -> str:
        """How to give this provider a key: the shell's way, the key file's, and the library's."""
        return (
            f"set {self._key_env} (export {self._key_env}=...), save one with: threadline keys set "
            f"{key_name_for(self._key_env)}, or pass api_key="
        )

    def check(self, request: ModelRequest) -> None:
        """Refuse, before anything is sent, a request this model cannot serve.

        Raises:
            CapabilityError: when the request needs tools, images or a forced tool the model lacks.
            UserError: for the provider's own endpoint without a key, an unreadable image, or a tool_choice naming
                a tool that is not offered.
        """
        check_capabilities(self.name, self.capabilities, request)
        if not self._has_key and self.base_url == self._default_base_url:
            other_server = (
                f" (or base_url= for an {self._provider}-compatible server that needs none)"
                if self._compatible_servers
                else ""
            )
            raise UserError(f"no API key for {self.name}: {self._set_key_hint()}{other_server}")
        check_tool_choice(request)
        self._check_wire(request)
        if self.capabilities.images:
            check_images(request.messages)

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """Send one request; yield text deltas while it streams, then the `ModelResponse`.

        Raises:
            ModelError: when the call fails after the retries allowed (``.partial`` holds text already shown).
        """
        stream = request.settings.stream and self.capabilities.streaming
        body, parse, decoder = self._translate(request, stream)
        streamed = bool(body.get("stream"))
        return self._endpoint.events(
            _encode(body),
            request.settings,
            stream=streamed,
            parse=parse,
            decoder=decoder,
            reasoning_shown=request.reasoning_shown,
        )

    async def aclose(self) -> None:
        """Close this model's pooled connections (those of the running event loop)."""
        await self._endpoint.aclose()

    def close_soon(self) -> None:
        """Close every pooled connection of this model, each on its own event loop, without waiting."""
        self._endpoint.close_soon()
