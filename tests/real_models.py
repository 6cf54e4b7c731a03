"""What a test may assert of a turn on a real model: what threadline guarantees, never what the model happens to say.

llama.cpp is compiled for the CPU it is built on (AVX2, AVX-512 or AMX kernels), so the greedy words of the tiny
SmolLM2, how long its answer runs, and what it picks where it may choose ("auto": call a tool or answer) differ from
one machine to the next, although each machine repeats itself. The tests that run a real model (the embedded
``local``, llama-cpp-python's server, the demo, the CLI on either) assert through these checks:

- `assert_tool_turn`: the protocol of the turn (each round's calls name offered tools, carry unique ids and are
  answered in call order by the tool's real output for the arguments the model wrote), a forced first call made, no
  more rounds than allowed, and a stop reason among those the engine allows for what happened (``"length"`` only for
  an answer that used exactly ``max_tokens``);
- `never_stop`: a logit bias that bans the model's end-of-generation tokens, for a test that needs an answer of a
  known length (streamed in many pieces, or long enough to interrupt): the answer then runs to ``max_tokens``, a
  length threadline reports, not one the model chooses.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping, Sequence

from threadline import AssistantMessage, ToolMessage, get_model
from threadline.messages import Message
from threadline.models.local import LocalModel

# The bias that bans a token: far past any logit a model computes.
BANNED = -1e9


@functools.cache
def end_of_generation_tokens() -> tuple[int, ...]:
    """The token ids that end a generation of the bundled SmolLM2 (llama.cpp's "end of generation" set: for this
    file ``<|endoftext|>``, ``<|im_end|>`` and ``<reponame>``). llama-cpp-python's server runs the same file."""
    import llama_cpp

    model = get_model("local")
    assert isinstance(model, LocalModel)
    llama = model.llama
    vocab = llama_cpp.llama_model_get_vocab(llama.model)
    tokens = tuple(token for token in range(llama.n_vocab()) if llama_cpp.llama_vocab_is_eog(vocab, token))
    assert tokens, "the model has no end-of-generation token"
    return tokens


def never_stop() -> dict[int, float]:
    """A ``local_logit_bias`` under which the embedded model cannot end its answer before ``max_tokens``."""
    return dict.fromkeys(end_of_generation_tokens(), BANNED)


def never_stop_option() -> list[str]:
    """`never_stop` as the command line takes it (``-o local_logit_bias {…}``)."""
    return ["-o", "local_logit_bias", json.dumps({str(token): bias for token, bias in never_stop().items()})]


def assert_tool_turn(
    new: Sequence[Message],
    *,
    tools: Mapping[str, Callable[..., str]],
    max_rounds: int,
    stop_reason: str | None,
    forced: str | None = None,
    max_tokens: int | None = None,
) -> int:
    """Check the messages a turn added (``new``) against what the engine guarantees; return its rounds of tool calls.

    Args:
        new: The turn's messages, in order: rounds of an assistant message with tool calls followed by their
            results, then the final answer.
        tools: Each offered tool's real name and a function computing its result from the call's arguments, so
            every successful result is checked to be the tool's real output for the arguments the model wrote.
        max_rounds: The turn's ``max_tool_rounds``.
        stop_reason: The turn's ``last_turn.stop_reason`` (None where it is not known, as in a saved file).
        forced: The first request's ``tool_choice`` when it forced a call: ``"required"`` or a tool's name.
        max_tokens: The output token limit of each model call, when one was set.
    """
    messages = list(new)
    rounds = 0
    ids: set[str] = set()
    index = 0
    final: AssistantMessage | None = None
    while index < len(messages):
        message = messages[index]
        index += 1
        assert isinstance(message, AssistantMessage), f"message {index - 1} is a {message.role} message"
        assert message.error is None, message.error
        if not message.tool_calls:
            final = message
            break
        if rounds == 0 and forced not in (None, "required"):
            assert message.tool_calls[0].name == forced, message.tool_calls
        for call in message.tool_calls:
            assert call.name in tools, f"call of {call.name!r}, which is not offered"
            assert call.id and call.id not in ids, f"call id {call.id!r} is empty or used twice"
            ids.add(call.id)
            assert index < len(messages), f"call {call.id!r} is not answered"
            result = messages[index]
            index += 1
            assert isinstance(result, ToolMessage), f"call {call.id!r} is followed by a {result.role} message"
            assert (result.tool_call_id, result.tool_name) == (call.id, call.name)
            if result.is_error:
                # The only errors these tools give: arguments the model wrote that the schema refuses, or a call cut
                # short at the token limit (not made).
                refused = f"Invalid arguments for tool {call.name!r}"
                cut = f"The call to {call.name!r} was not made: your answer reached the output token limit"
                assert result.content.startswith((refused, cut)), result.content
            else:
                assert call.raw_arguments is None
                assert result.content == tools[call.name](**call.arguments)
        rounds += 1
    assert final is not None, "the turn did not end in an answer"
    assert index == len(messages), "messages follow the final answer"
    if forced is not None:
        assert rounds >= 1, "the forced call was not made"
    assert rounds <= max_rounds
    # The engine's rule (engine.run_turn): an answer cut at the token limit says "length"; otherwise the turn ended
    # by itself ("end"), or after the last round allowed, whose request offered no tools ("max_tool_rounds").
    if stop_reason is not None:
        assert stop_reason in {"max_tool_rounds" if rounds == max_rounds else "end", "length"}, (stop_reason, rounds)
    if max_tokens is not None and final.usage is not None:
        if stop_reason == "length":
            assert final.usage.output_tokens == max_tokens
        else:
            assert final.usage.output_tokens <= max_tokens
    return rounds
