"""What the HTTP providers share: `_model.HTTPModel` (the base of every HTTP adapter), the transport (`_transport`:
one attempt, request or stream; `_retries`: backoff and ``Retry-After``), server-sent events (`_sse`), the deadline of
an attempt (`_deadline`), secret masking of answers (`_answer_masking`), upstream error text (`_error_text`),
certificates (`_tls`: ``verify=``), and the wire helpers every translator uses (`_convert_common`, OpenRouter's
`_reasoning_details`, `_think_tags`).

Nothing here is imported by `import threadline`; importing a module of this package imports httpx only where it
needs it (`_transport`, `_model`).
"""

__all__: list[str] = []
