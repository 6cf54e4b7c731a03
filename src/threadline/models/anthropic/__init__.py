"""The Anthropic Messages API: `AnthropicModel` (``anthropic:<model>``).

The model class says only how this API differs (`_model`); the translation to and from the wire is pure and kept
apart by direction: the request (`_request`), the complete answer (`_response`) and the stream (`_stream`), with
Claude's thinking rules in `_thinking` and the JSON-schema subset its structured outputs take in `_schema`. What all
HTTP providers share is in `threadline.models.http`.
"""

from ._model import ANTHROPIC_VERSION, DEFAULT_BASE_URL, AnthropicModel

__all__ = ["ANTHROPIC_VERSION", "DEFAULT_BASE_URL", "AnthropicModel"]
