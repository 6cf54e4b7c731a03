"""The embedded default model, ``local``: `LocalModel` runs SmolLM2-135M-Instruct (or any GGUF file) in-process with
llama.cpp.

The model class lives in `_model`; the prompt (ChatML or the file's own template) in `_prompt`, the weights and the
worker thread in `_runtime`, one generation in `_generate`, and grammar-constrained decoding for tool calls and
structured output in `_grammar`. llama.cpp is imported when a model loads, not with this package.
"""

from ._model import (
    DEFAULT_MAX_TOKENS,
    DEFAULT_REPEAT_PENALTY,
    DEFAULT_TEMPERATURE,
    LocalModel,
    LocalPrompt,
    sampling_options,
)

__all__ = [
    "DEFAULT_MAX_TOKENS",
    "DEFAULT_REPEAT_PENALTY",
    "DEFAULT_TEMPERATURE",
    "LocalModel",
    "LocalPrompt",
    "sampling_options",
]
