"""`OpenAIResponsesModel`: OpenAI's Responses API (``openai-responses:<model>``); it lives in
`threadline.models.openai._responses` beside the Chat Completions model, and this module keeps its public name."""

from .openai._responses import DEFAULT_BASE_URL, SUMMARY_ENV, OpenAIResponsesModel, origin_of

__all__ = ["DEFAULT_BASE_URL", "SUMMARY_ENV", "OpenAIResponsesModel", "origin_of"]
