"""`Tool`: a callable the model may invoke, with its name, description and argument schema; `tool` and `as_tool`
make one from a function."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, overload

from ..errors import UserError
from ..models.base import ToolSpec
from .schema import is_async_callable, signature_of

__all__ = ["Tool", "ToolArgumentsError", "approval_problem", "as_tool", "check_waits", "tool"]


class ToolArgumentsError(Exception):
    """The model's arguments did not validate; the message is meant for the model."""


class Tool:
    """A callable the model may invoke.

    Attributes:
        name: The real name (may contain dots, e.g. ``Notes.add_note``); the wire name is derived per request.
        description: What the tool does, for the model.
        parameters: JSON schema of the arguments.
        handler: The function called with the validated arguments as keyword arguments.
        timeout: Seconds before a running call is cut off and reported to the model (None: the conversation's).
        approval: Whether its calls wait for a person's decision: True, False, a function of the arguments that
            answers True, False or a reason, or None (the turn's policy decides: ``.approval(policy)``).
        external: Its result comes from outside the process (``submit_result``): its calls wait, no body runs.
        idempotent: Running a call twice does no harm: an approved call that stopped while it ran (its process
            died) runs again when the conversation goes on, instead of waiting for a person to decide again.
    """

    __slots__ = (
        "_check",
        "_fields",
        "_validator",
        "approval",
        "description",
        "external",
        "handler",
        "idempotent",
        "is_async",
        "name",
        "parameters",
        "timeout",
    )

    def __init__(
        self,
        handler: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        timeout: float | None = None,
        parameters: Mapping[str, Any] | None = None,
        approval: bool | Callable[[dict[str, Any]], bool | str | None] | None = None,
        external: bool = False,
        idempotent: bool = False,
    ) -> None:
        if not callable(handler):
            raise UserError(f"a tool needs a callable, got {type(handler).__name__}")
        fn_name = getattr(handler, "__name__", None) or type(handler).__name__
        self.name: str = name or fn_name
        if not isinstance(self.name, str) or not self.name:
            raise UserError("a tool needs a non-empty name")
        self.approval, self.external = check_waits(self.name, approval, external)
        self.idempotent = _flag(self.name, "idempotent", idempotent)
        signature = signature_of(handler, self.name)
        self.description: str = description if description is not None else signature.summary
        self.handler = handler
        self.timeout = timeout
        self.is_async = signature.is_async
        self._check: Callable[[Mapping[str, Any]], dict[str, Any]] | None = None
        self._validator = signature.validator
        self._fields = signature.fields
        self.parameters: dict[str, Any] = dict(parameters) if parameters is not None else signature.parameters

    @classmethod
    def from_schema(
        cls,
        handler: Callable[..., Any],
        *,
        name: str,
        parameters: Mapping[str, Any],
        description: str = "",
        validator: Callable[[Mapping[str, Any]], dict[str, Any]] | None = None,
        timeout: float | None = None,
        approval: bool | Callable[[dict[str, Any]], bool | str | None] | None = None,
        external: bool = False,
        idempotent: bool = False,
    ) -> Tool:
        """A tool described by a JSON schema instead of its handler's signature (e.g. a tool of an MCP server).

        Args:
            handler: Called with the arguments as keyword arguments (sync or async).
            name: The real name.
            parameters: The JSON schema of the arguments, offered to the model as it is.
            description: What the tool does, for the model.
            validator: ``validator(arguments) -> kwargs``, raising `ToolArgumentsError` with a message for the model
                when the arguments do not fit the schema. None passes them on unchecked, so the handler (or the
                server behind it) judges them.
            timeout: Seconds before a running call is cut off (None: the conversation's).
            approval: As for `Tool`.
            external: As for `Tool`.
            idempotent: As for `Tool`.

        Raises:
            UserError: for a handler that is not callable, an empty name or a schema that is not an object.
        """
        if not callable(handler):
            raise UserError(f"a tool needs a callable, got {type(handler).__name__}")
        if not isinstance(name, str) or not name:
            raise UserError("a tool needs a non-empty name")
        if not isinstance(parameters, Mapping):
            raise UserError(f"tool {name!r}: its parameters must be a JSON schema object")
        made = cls.__new__(cls)
        made.approval, made.external = check_waits(name, approval, external)
        made.idempotent = _flag(name, "idempotent", idempotent)
        made.name = name
        made.description = description
        made.handler = handler
        made.timeout = timeout
        made.is_async = is_async_callable(handler)
        made.parameters = dict(parameters)
        # No pydantic model here: the schema is the contract, and the validator (if any) enforces it.
        made._validator = None
        made._fields = ()
        made._check = validator if validator is not None else dict
        return made

    def spec(self) -> ToolSpec:
        """The tool as offered to a model."""
        return ToolSpec(name=self.name, description=self.description, parameters=self.parameters)

    def validate(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """Validate the model's arguments; return the keyword arguments for the handler.

        Raises:
            ToolArgumentsError: with a message naming each offending field.
        """
        if self._check is not None:
            return self._check(arguments)
        import pydantic

        try:
            instance = self._validator.model_validate(arguments)
        except pydantic.ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(part) for part in error['loc']) or 'arguments'}: {error['msg']}"
                for error in exc.errors(include_url=False)
            )
            raise ToolArgumentsError(problems) from None
        return {parameter: getattr(instance, field) for field, parameter in self._fields}

    async def invoke(self, kwargs: Mapping[str, Any]) -> Any:
        """Call the handler: async handlers are awaited, sync ones run on a daemon worker thread.

        No timeout applies here; `execute_tool_call` is what the turn engine uses.
        """
        if self.is_async:
            return await self.handler(**kwargs)
        from ._workers import start

        outcome = await start(self.handler, **kwargs)
        if outcome.ok:
            return outcome.value
        raise outcome.value

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.handler(*args, **kwargs)

    def __repr__(self) -> str:
        return f"Tool({self.name!r})"


def _flag(name: str, what: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise UserError(f"tool {name!r}: {what} must be True or False, got {type(value).__name__}")
    return value


def approval_problem(value: Any) -> str | None:
    """Why ``value`` cannot be an approval rule (of a tool, or a turn's policy), or None: it must be True, False,
    None or a function."""
    if value is None or isinstance(value, bool) or callable(value):
        return None
    return f"approval must be True, False or a function, got {type(value).__name__}"


def check_waits(name: str, approval: Any, external: Any) -> tuple[Any, bool]:
    """A tool's ``approval`` and ``external``, checked.

    Raises:
        UserError: for a value either cannot be, or an external tool given an approval rule.
    """
    problem = approval_problem(approval)
    if problem is not None:
        raise UserError(f"tool {name!r}: {problem}")
    _flag(name, "external", external)
    if external and approval:
        raise UserError(f"tool {name!r}: an external tool waits for its result already; it takes no approval")
    return approval, external


@overload
def tool(fn: Callable[..., Any], /) -> Tool: ...
@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    timeout: float | None = None,
    approval: bool | Callable[[dict[str, Any]], bool | str | None] | None = None,
    external: bool = False,
    idempotent: bool = False,
) -> Callable[[Callable[..., Any]], Tool]: ...
def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    timeout: float | None = None,
    approval: bool | Callable[[dict[str, Any]], bool | str | None] | None = None,
    external: bool = False,
    idempotent: bool = False,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Make a function a `Tool`, optionally overriding its name, description and timeout.

    Usable bare (``@tool``) or with arguments (``@tool(name="weather")``). The result is still callable.

    ``approval=True`` makes every call wait for a person's decision (`Conversation.approve` / ``deny``);
    ``approval=fn`` decides from the arguments (``fn(arguments)`` answers True, False or a reason).
    ``external=True`` declares a tool whose result comes from outside the process (a browser, a long job): its
    calls wait until `Conversation.submit_result` gives it; the function only describes its arguments.
    ``idempotent=True`` says a call may run twice without harm: an approved call whose process stopped while it ran
    runs again, instead of asking a person again.
    """
    options: dict[str, Any] = {
        "name": name,
        "description": description,
        "timeout": timeout,
        "approval": approval,
        "external": external,
        "idempotent": idempotent,
    }
    if fn is not None:
        return Tool(fn, **options)

    def decorate(function: Callable[..., Any]) -> Tool:
        return Tool(function, **options)

    return decorate


def as_tool(item: Callable[..., Any] | Tool) -> Tool:
    """A `Tool` for a function (its signature is read once per function, so repeated ``.tools(fn)`` calls are
    cheap, and nothing cached keeps the function or the object of a bound method alive)."""
    if isinstance(item, Tool):
        return item
    if not callable(item):
        raise UserError(f"not a tool: {item!r} (pass functions, Tools, Toolsets or a dynamic tools callable)")
    return Tool(item)
