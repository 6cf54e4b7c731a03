"""The OpenTelemetry tracer behind `threadline.instrument`: GenAI spans for turns, model calls and tool calls.

Names and attributes follow OpenTelemetry's GenAI semantic conventions (``gen-ai-spans.md``,
``gen-ai-agent-spans.md`` and ``mcp.md`` in open-telemetry/semantic-conventions-genai; attribute names as in
``opentelemetry.semconv._incubating.attributes.gen_ai_attributes``; the names and the helpers that fill them are in
`_attributes`):

- a turn is an ``invoke_agent threadline`` span (INTERNAL): ``gen_ai.operation.name=invoke_agent``,
  ``gen_ai.agent.name``, ``gen_ai.provider.name``, ``gen_ai.request.model``, ``gen_ai.conversation.id``, the turn's
  summed ``gen_ai.usage.*`` and cost, ``threadline.turn.rounds`` and ``threadline.turn.stop_reason`` (the
  `TurnResult`'s: ``end``, ``max_tool_rounds``, ``error``, ``awaiting``, ``budget``; ``interrupted`` for a turn
  cancelled, interrupted or left by its caller before it answered); a `Run` wraps its nodes' turns in one
  ``invoke_workflow threadline.run`` span; a `generate_text` call that makes no model call of its own (a cache hit,
  or a call sharing an identical one in flight) is an ``invoke_agent`` span with no children and
  ``threadline.answer.reused`` = ``cache`` or ``shared``;
- each model call is a ``chat <model>`` span (CLIENT) under its turn: provider, request and response model, request
  settings, ``server.address``/``server.port``, ``gen_ai.usage.input_tokens``/``output_tokens``/
  ``reasoning.output_tokens``/``cache_read.input_tokens``/``cache_creation.input_tokens``, the call's price
  (``threadline.usage.cost_usd``, ``threadline.usage.cost_unknown`` naming what has no price,
  ``threadline.usage.prices`` the price table), ``gen_ai.response.finish_reasons``; each retry of the HTTP
  transport is an event ``threadline.retry`` on it; a failed call ends in ERROR with ``error.type`` = the type the
  log records (and ``http.response.status_code`` when there was one);
- ``gen_ai.provider.name`` is the conventions' name of the provider (``openai`` for both of OpenAI's APIs; a model
  on the Responses API adds ``threadline.api=responses``);
- each tool call is an ``execute_tool <name>`` span (INTERNAL) under its turn, current while the tool runs (so an
  `agent_tool`'s sub-conversation, whose turn starts in it, is its child): ``gen_ai.tool.name``,
  ``gen_ai.tool.call.id``, ``gen_ai.tool.type``; a call that fails (an exception, a timeout, bad arguments, an
  unknown tool) ends in ERROR with ``error.type`` (the exception's class name, ``timeout``, ``invalid_arguments``,
  ``unknown_tool``, ``unencodable_result``, or ``interrupted``); an MCP tool's span also carries
  ``mcp.method.name=tools/call`` and the transport, as ``mcp.md`` asks of an outer instrumentation;
- tool calls that wait for a person's decision or a result from outside: events on the turn's span
  (``threadline.approval.requested``/``approved``), ``threadline.turn.stop_reason=awaiting``, a short span per
  decision made between turns (``approve <tool>``, ``deny <tool>``, ``submit_result <tool>``), and a tool that
  raises `ApprovalRequired` not marked as failed (`_approvals` says what each holds and why).

Content (``gen_ai.input.messages``, ``gen_ai.output.messages``, ``gen_ai.tool.definitions``,
``gen_ai.tool.call.arguments``/``result``, a failed tool's message and a failed model call's error text, which a
server may fill with the request it refused, as status descriptions and retry events'
``threadline.retry.message``) is recorded only with ``include_content=True``, as JSON strings, scrubbed
(`threadline.tracing.content`): each turn keeps the secret values it has seen (secret-named tool arguments in its
log, its requests and its answers, secret-named parameters' defaults; a sub-conversation's turn also those of the
turn that called it) and masks them in every span it writes. Without content, a failed model call is described by
its error type and HTTP status only. Error texts of model calls are the log's own, which the transport has already
redacted of keys; they are scrubbed again here.

Turn spans are never made "current" across the yields of `run_turn` (an async generator: its caller's code runs
between them, in the same context); children name their turn as parent explicitly. A model call's and a tool
call's spans are current only while the call runs, within one step of the turn.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind

from ..errors import ApprovalRequired, ModelError
from ..message_types import ApprovalMessage, AssistantMessage, Message, ToolCall, ToolMessage
from ..tools import call_approved, execute_tool_call
from ._approvals import APPROVED, AWAITING, approval_event, decision_span, time_ns
from .content import (
    Secrets,
    answer_messages,
    dumps,
    input_messages,
    output_messages,
    scrub,
    tool_arguments,
    tool_definitions,
)

if TYPE_CHECKING:
    from ..engine import TurnOptions, TurnResult
    from ..message_types import LLMError
    from ..models.base import Model, ModelRequest, ModelResponse
    from ..tools import Tool


from ._attributes import (
    AGENT,
    AGENT_NAME,
    API,
    CONVERSATION_ID,
    ERROR_TYPE,
    FINISH_REASONS,
    HTTP_STATUS,
    INPUT_MESSAGES,
    OPERATION,
    OUTPUT_MESSAGES,
    OUTPUT_TYPE,
    PROVIDER,
    REQUEST_MAX_TOKENS,
    REQUEST_MODEL,
    REQUEST_TEMPERATURE,
    RESPONSE_MODEL,
    RETRY_EVENT,
    REUSED,
    STOP_REASON,
    TOOL_ARGUMENTS,
    TOOL_CALL_ID,
    TOOL_DEFINITIONS,
    TOOL_DESCRIPTION,
    TOOL_NAME,
    TOOL_RESULT,
    TOOL_TYPE,
    WORKFLOW,
    WORKFLOW_NAME,
    add_content,
    add_usage,
    chat_attributes,
    described,
    error_text_of,
    error_type_of,
    fail_span,
    log_secrets,
    model_name_of,
    provider_of,
    request_of_turn,
    server_attributes,
    stop_reason_of,
)

__all__ = ["OtelTracer"]

# The model call and the tool call running in this context (for retries, MCP attributes and the secrets a
# sub-conversation's turn inherits).
_current_chat: ContextVar[_Chat | None] = ContextVar("threadline_chat_span", default=None)
_current_tool: ContextVar[tuple[Span, _Turn] | None] = ContextVar("threadline_tool_span", default=None)


class OtelTracer:
    """The `threadline.tracing.hooks.Tracer` that makes OpenTelemetry spans.

    Args:
        tracer_provider: Where spans go (None: the global tracer provider).
        include_content: Record messages, tool arguments and results on the spans.
    """

    def __init__(self, tracer_provider: Any = None, include_content: bool = False) -> None:
        from .. import __version__

        self.tracer = trace.get_tracer("threadline", __version__, tracer_provider=tracer_provider)
        self.include_content = include_content

    # -- hooks.Tracer --------------------------------------------------------------------------------------------
    def turn(self, host: Any, model: Model, options: TurnOptions) -> _Turn:
        provider, api, model_id = provider_of(model_name_of(model))
        attributes: dict[str, Any] = {
            OPERATION: "invoke_agent",
            PROVIDER: provider,
            AGENT_NAME: AGENT,
            REQUEST_MODEL: model_id,
        }
        if api is not None:
            attributes[API] = api
        conversation_id = getattr(host, "id", None) or getattr(host, "conversation_id", None)
        if isinstance(conversation_id, str):
            attributes[CONVERSATION_ID] = conversation_id
        else:
            conversation_id = None
        meta = options.meta
        if meta is not None and meta.run_id:
            attributes["threadline.run.id"] = meta.run_id
            if meta.node_id:
                attributes["threadline.run.node_id"] = meta.node_id
        secrets: Secrets | None = None
        turn_input: list[Message] | None = None
        if self.include_content:
            # Every secret the log holds, and those of the tool call this turn runs in (an agent_tool's): the turn's
            # input is written when it ends, masked with every secret the turn has seen by then.
            caller = _current_tool.get()
            secrets = Secrets(caller[1].secrets if caller is not None else None)
            log = list(host.messages)
            secrets.add_messages(log)
            turn_input = request_of_turn(log)
        span = self.tracer.start_span(f"invoke_agent {AGENT}", kind=SpanKind.INTERNAL, attributes=attributes)
        return _Turn(self, span, model, conversation_id, secrets, turn_input)

    def reused(
        self,
        model_name: str,
        request_hash: str,
        how: str,
        started_ns: int,
        conversation_id: str | None = None,
        error: BaseException | None = None,
    ) -> None:
        # An invoke_agent span with no model call under it: the caller's time, and where its answer came from.
        provider, api, model_id = provider_of(model_name)
        attributes: dict[str, Any] = {
            OPERATION: "invoke_agent",
            PROVIDER: provider,
            AGENT_NAME: AGENT,
            REQUEST_MODEL: model_id,
            REUSED: how,
            "threadline.request_hash": request_hash,
        }
        if api is not None:
            attributes[API] = api
        if conversation_id is not None:
            attributes[CONVERSATION_ID] = conversation_id
        span = self.tracer.start_span(
            f"invoke_agent {AGENT}", kind=SpanKind.INTERNAL, attributes=attributes, start_time=started_ns
        )
        if error is not None:
            fail_span(span, error_type_of(error), None)  # the call that ran it holds the failure and its text
        span.end()

    def retry(self, attempt: int, error: ModelError, delay: float) -> None:
        chat = _current_chat.get()
        if chat is None:
            return
        attributes: dict[str, Any] = {
            ERROR_TYPE: error.type,
            "threadline.retry.attempt": attempt,
            "threadline.retry.delay_s": round(delay, 3),
        }
        secrets = chat.secrets
        if secrets is not None:  # the server's text may quote the request: content
            attributes["threadline.retry.message"] = scrub(error.message, secrets.forms)
        if error.status is not None:
            attributes[HTTP_STATUS] = error.status
        chat.span.add_event(RETRY_EVENT, attributes)

    def mcp_call(self, tool_name: str, transport: str, url: str | None) -> None:
        current = _current_tool.get()
        if current is None:
            return
        span = current[0]
        span.set_attribute("mcp.method.name", "tools/call")
        span.set_attribute("network.transport", transport)
        if url:
            span.set_attributes(server_attributes(url))

    def decision(self, host: Any, message: ApprovalMessage | ToolMessage) -> None:
        decision_span(self.tracer, host, message, self.include_content)

    async def workflow(self, run: Any, steps: AsyncGenerator[Message, None]) -> AsyncGenerator[Message, None]:
        attributes: dict[str, Any] = {
            OPERATION: "invoke_workflow",
            WORKFLOW_NAME: WORKFLOW,
            "threadline.run.id": run.run_id,
            "threadline.run.nodes": len(run.nodes),
        }
        conversation_id = getattr(run.conversation, "id", None)
        if isinstance(conversation_id, str):
            attributes[CONVERSATION_ID] = conversation_id
        span = self.tracer.start_span(f"invoke_workflow {WORKFLOW}", kind=SpanKind.INTERNAL, attributes=attributes)
        # Current only while a step of the run runs (never across our own yields, where the caller's code runs),
        # so each node's turn, which starts inside a step, is the workflow's child.
        inside = trace.set_span_in_context(span)
        finished = False
        try:
            while True:
                token = otel_context.attach(inside)
                try:
                    message = await steps.__anext__()
                except StopAsyncIteration:
                    finished = True
                    break
                finally:
                    otel_context.detach(token)
                yield message
        except BaseException as exc:
            if not isinstance(exc, GeneratorExit):  # GeneratorExit: the caller stopped reading
                secrets = log_secrets(run.conversation) if self.include_content else None
                fail_span(span, error_type_of(exc), error_text_of(exc, secrets))
            raise
        finally:
            if not finished:
                token = otel_context.attach(inside)
                try:
                    await steps.aclose()
                finally:
                    otel_context.detach(token)
            span.end()


class _Turn:
    """One turn's span and what its children need (`hooks.TurnSpan`).

    The attributes every model call and tool call of the turn share are worked out once, when the turn starts:
    a turn of many rounds pays for them once. With content, ``secrets`` are the secret values the turn has seen so
    far (see `Secrets`); None without.
    """

    __slots__ = (
        "_chat",
        "_conversation_id",
        "_input",
        "_model",
        "_owner",
        "_parent",
        "secrets",
        "span",
        "usage_reported",
    )

    def __init__(
        self,
        owner: OtelTracer,
        span: Span,
        model: Model,
        conversation_id: str | None,
        secrets: Secrets | None,
        turn_input: list[Message] | None,
    ) -> None:
        self._owner = owner
        self.span = span
        self._parent = trace.set_span_in_context(span)
        self.usage_reported = False  # a turn whose model reports no usage shows none (not zero tokens)
        self.secrets = secrets
        self._input = turn_input
        self._model = model
        self._conversation_id = conversation_id
        self._chat = chat_attributes(model, conversation_id)

    def chat(self, model: Model, request: ModelRequest) -> _Chat:
        if model is not self._model:  # a host may hand out another model (never within one turn today)
            self._model = model
            self._chat = chat_attributes(model, self._conversation_id)
        attributes = self._chat
        settings = request.settings
        if settings.max_tokens is not None or settings.temperature is not None or request.response_format is not None:
            attributes = dict(attributes)
            if settings.max_tokens is not None:
                attributes[REQUEST_MAX_TOKENS] = settings.max_tokens
            if settings.temperature is not None:
                attributes[REQUEST_TEMPERATURE] = settings.temperature
            if request.response_format is not None:
                attributes[OUTPUT_TYPE] = "json"
        secrets = self.secrets
        if secrets is not None:
            # The secrets of everything sent, known before the call (a retry's error text may quote any of it);
            # the messages themselves are written when the call ends, when its answer's are known too.
            attributes = dict(attributes)
            try:
                found: list[str] = []
                if request.tools:
                    attributes[TOOL_DEFINITIONS] = dumps(tool_definitions(request.tools, found))
                secrets.add(found)
                secrets.add_messages(request.messages)
            except Exception:  # tracing never fails a turn; a call whose secrets are not all known shows no content
                attributes.pop(TOOL_DEFINITIONS, None)
                secrets = None
        model_id = attributes[REQUEST_MODEL]
        # A model in this process (llama.cpp) is INTERNAL, one behind an API a CLIENT, as gen-ai-spans.md says.
        kind = SpanKind.INTERNAL if attributes[PROVIDER] == "local" else SpanKind.CLIENT
        span = self._owner.tracer.start_span(f"chat {model_id}", context=self._parent, kind=kind, attributes=attributes)
        # Current while the call runs: HTTP client spans of other instrumentations nest under it, and the
        # transport's retries find it.
        token = otel_context.attach(trace.set_span_in_context(span, self._parent))
        name = model_name_of(model)
        prefix = name[: name.index(":") + 1] if ":" in name else None
        chat = _Chat(self, span, model_id, prefix, token, request, secrets)
        chat.var = _current_chat.set(chat)
        return chat

    async def execute_tool(
        self, call: ToolCall, tools: Mapping[str, Tool], default_timeout: float | None
    ) -> ToolMessage:
        # The span's parent (the turn) carries the conversation id; gen-ai-spans.md lists none for execute_tool.
        attributes: dict[str, Any] = {
            OPERATION: "execute_tool",
            TOOL_TYPE: "function",
            TOOL_NAME: call.name,
            TOOL_CALL_ID: call.id,
        }
        tool = tools.get(call.name)
        if tool is not None and tool.description:
            attributes[TOOL_DESCRIPTION] = tool.description
        if call_approved():  # a call a person (or a rule) approved, run by the turn that acts on the decision
            attributes[APPROVED] = True
        secrets = self.secrets
        if secrets is not None:
            try:
                secrets.add_calls((call,))  # known already from the answer that made the call; this costs little
            except Exception:
                secrets = None
            else:
                forms = secrets.forms
                add_content(attributes, TOOL_ARGUMENTS, lambda: tool_arguments(call, forms))
        span = self._owner.tracer.start_span(
            f"execute_tool {call.name}", context=self._parent, kind=SpanKind.INTERNAL, attributes=attributes
        )
        token = otel_context.attach(trace.set_span_in_context(span, self._parent))
        current = _current_tool.set((span, self))
        errors: list[str] = []
        try:
            message = await execute_tool_call(call, tools, default_timeout, on_error=errors.append)
        except ApprovalRequired:  # not a failure: the call waits (the turn's event says why)
            span.set_attribute(AWAITING, "approval")
            raise
        except BaseException as exc:  # cancellation or Ctrl-C: the call stays unanswered in the log
            fail_span(span, error_type_of(exc), None)
            raise
        else:
            if message.is_error:
                why = scrub(message.content, secrets.forms) if secrets is not None else None
                fail_span(span, errors[0] if errors else "_OTHER", why)
            elif secrets is not None:
                span.set_attribute(TOOL_RESULT, scrub(message.content, secrets.forms))
            return message
        finally:
            _current_tool.reset(current)
            otel_context.detach(token)
            span.end()

    def end(self, result: TurnResult, error: BaseException | None) -> None:
        span = self.span
        attributes: dict[str, Any] = {
            STOP_REASON: stop_reason_of(result, error),
            "threadline.turn.rounds": result.rounds,
        }
        if self.usage_reported:
            add_usage(attributes, result.usage)
        secrets = self.secrets
        if secrets is not None:
            try:
                secrets.add_messages(result.new_messages)
            except Exception:
                secrets = None
        if secrets is not None:
            forms = secrets.forms
            turn_input = self._input
            if turn_input is not None:
                add_content(attributes, INPUT_MESSAGES, lambda: input_messages(turn_input, forms))
            answers = [m for m in result.new_messages if isinstance(m, AssistantMessage)]
            if answers:
                add_content(attributes, OUTPUT_MESSAGES, lambda: answer_messages(answers[-1], forms))
        span.set_attributes(attributes)
        for message in result.new_messages:
            if type(message) is ApprovalMessage:
                name, event = approval_event(message, secrets.forms if secrets is not None else None)
                span.add_event(name, event, timestamp=time_ns(message.created_at))
        if error is not None and not isinstance(error, GeneratorExit):  # GeneratorExit: the caller stopped reading
            fail_span(span, error_type_of(error), error_text_of(error, secrets.forms if secrets is not None else None))
        span.end()


class _Chat:
    """One model call's span (`hooks.ChatSpan`); it ends with `done` or `failed`.

    ``secrets`` are its turn's with content (None without, or when they could not all be known).
    """

    __slots__ = ("_model_id", "_prefix", "_request", "_token", "_turn", "secrets", "span", "var")

    def __init__(
        self,
        turn: _Turn,
        span: Span,
        model_id: str,
        prefix: str | None,
        token: object,
        request: ModelRequest,
        secrets: Secrets | None,
    ) -> None:
        self._turn = turn
        self.span = span
        self._model_id = model_id
        self._prefix = prefix  # the provider prefix of the model's name ("openai:"), when it has one
        self._token = token
        self._request = request
        self.secrets = secrets
        self.var: Any = None

    def done(self, response: ModelResponse) -> None:
        # The model the provider says answered (a dated snapshot), else the name the answer is logged under.
        name = response.response_model
        if not name:
            # The name the answer is logged under, without the provider prefix of this model's own name: the log
            # says "openai:gpt-4o-mini-2024-07-18", the span "gpt-4o-mini-2024-07-18"; "llama3:8b" stays whole.
            name = response.model
            prefix = self._prefix
            if name and prefix and name.startswith(prefix) and len(name) > len(prefix):
                name = name[len(prefix) :]
        attributes: dict[str, Any] = {RESPONSE_MODEL: name or self._model_id}
        if response.stop_reason:
            attributes[FINISH_REASONS] = (response.stop_reason,)
        if response.usage is not None:
            self._turn.usage_reported = True
            add_usage(attributes, response.usage)
        self._messages(attributes, response)
        self.span.set_attributes(attributes)
        self._close()

    def failed(self, error: LLMError, status: int | None = None) -> None:
        attributes: dict[str, Any] = {} if status is None else {HTTP_STATUS: status}
        self._messages(attributes, None)
        self.span.set_attributes(attributes)
        secrets = self.secrets
        # The error's text may quote what was sent (vLLM's 400 quotes the message it refused): content.
        why = scrub(error.message, secrets.forms) if secrets is not None else described(error.type, status)
        fail_span(self.span, error.type, why)
        self._close()

    def _messages(self, attributes: dict[str, Any], response: ModelResponse | None) -> None:
        """With content: what was sent and (``response``) answered, masked with every secret known by now."""
        secrets = self.secrets
        if secrets is None:
            return
        try:
            if response is not None:
                secrets.add_calls(response.tool_calls)
        except Exception:
            return
        forms = secrets.forms
        request = self._request
        add_content(attributes, INPUT_MESSAGES, lambda: input_messages(request.messages, forms))
        if response is not None:
            add_content(attributes, OUTPUT_MESSAGES, lambda: output_messages(response, forms))

    def _close(self) -> None:
        _current_chat.reset(self.var)
        otel_context.detach(self._token)  # type: ignore[arg-type]
        self.span.end()
