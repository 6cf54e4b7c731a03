"""The embedded model's generation loop, run in a worker thread: one request's llama.cpp generations, each
token's text handed to the event loop through ``post``, and the per-token hook that counts tokens and stops at once
when the caller has gone away.

See `threadline.models.local` for the modes (free text, tool call, structured output, ``auto``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ...errors import ModelError, UserError
from . import _grammar as grammars
from ._prompt import TOOL_CALL_OPEN, LocalPrompt, Segment
from ._runtime import LoadedModel

__all__ = ["Generation", "Result", "encode"]


def encode(llama: Any, segments: Sequence[Segment]) -> list[int]:
    """Tokens of a prompt: markup with the model's special tokens, message content as plain text."""
    tokens: list[int] = []
    for segment in segments:
        if segment.text:
            tokens.extend(llama.tokenize(segment.text.encode("utf-8"), add_bos=False, special=segment.special))
    return tokens


@dataclass(slots=True)
class Result:
    """What one request generated: answer text, finish reason, token counts, and the tool call if there was one."""

    text: str
    finish: str
    prompt_tokens: int
    completion_tokens: int
    call: grammars.ParsedCall | None = None


class _Cancelled(Exception):
    """The consumer went away; the worker stops quietly."""


class Generation:
    """One request's generation, run in a worker thread; talks to the event loop only through ``post``.

    ``post`` receives ``("text", str)`` for each piece of answer text, then ``("done", Result)`` or
    ``("error", exception)``; nothing after ``cancel`` is set.
    """

    def __init__(
        self,
        loaded: LoadedModel,
        prompt: LocalPrompt,
        sampling: dict[str, Any],
        post: Callable[[tuple[str, Any]], None],
    ) -> None:
        self.loaded = loaded
        self.prompt = prompt
        self.sampling = sampling
        self.post = post
        self.cancel = threading.Event()
        self.tokens = 0

    def run(self) -> None:
        running = self.loaded.running
        running.add(self.cancel)
        try:
            with self.loaded.lock:
                if self.cancel.is_set():
                    return
                result = self._generate()
        except _Cancelled:
            return
        except BaseException as exc:
            self.post(("error", exc))
            return
        finally:
            running.discard(self.cancel)
        self.post(("done", result))

    def _generate(self) -> Result:
        llama = self.loaded.llama
        prompt = self.prompt
        tokens = encode(llama, prompt.segments)
        if len(tokens) >= self.loaded.n_ctx:
            raise ModelError(
                f"the prompt has {len(tokens)} tokens, more than the local model's context of {self.loaded.n_ctx}; "
                "set a smaller context budget (ContextSettings(max_tokens=…))",
                type="context_length",
            )
        mode = prompt.mode
        if mode == "text":
            text, finish, used = self._phase(tokens, None, show=True)
            return Result(text, finish, len(tokens), used)
        if mode == "json":
            text, finish, used = self._phase(tokens, prompt.grammar, show=True)
            return Result(text, finish, len(tokens), used)
        if mode == "call":
            text, finish, used = self._phase(tokens, prompt.grammar, show=False)
            return Result("", finish, len(tokens), used, self._call(text, finish))
        scanner = grammars.MarkerScanner()
        if mode == "auto_json":
            _, finish, used = self._phase(tokens, prompt.grammar, show=True, scanner=scanner)
            if not scanner.found:
                return Result(scanner.text_before, finish, len(tokens), used)
            return Result("", finish, len(tokens), used, self._call(scanner.text_after, finish))
        # auto: free text until the model starts a tool call, then the call under its grammar.
        _, finish, used = self._phase(tokens, None, show=True, scanner=scanner, stop_at_marker=True)
        before = scanner.text_before
        if not scanner.found:
            return Result(before, finish, len(tokens), used)
        call_prompt = tokens + llama.tokenize((before + TOOL_CALL_OPEN).encode("utf-8"), add_bos=False, special=False)
        text, finish, more = self._phase(call_prompt, prompt.call_grammar, show=False)
        return Result(before.strip(), finish, len(tokens), used + more, self._call(text, finish))

    def _call(self, text: str, finish: str) -> grammars.ParsedCall:
        parsed = grammars.parse_call(text, self.prompt.tool_names)
        if parsed is None:
            raise ModelError(
                f"the local model's tool call was cut off before naming a tool (finish: {finish}); raise max_tokens",
                type="length" if finish == "length" else "local",
                partial=text,
            )
        return parsed

    def _phase(
        self,
        tokens: list[int],
        grammar: str | None,
        *,
        show: bool,
        scanner: grammars.MarkerScanner | None = None,
        stop_at_marker: bool = False,
    ) -> tuple[str, str, int]:
        """One ``create_completion`` run; returns (text, finish reason, generated tokens)."""
        from llama_cpp.llama import StoppingCriteriaList
        from llama_cpp.llama_grammar import LlamaGrammar

        llama = self.loaded.llama
        if grammar is not None:
            self._check_grammar(grammar)
        seen = 0
        cancel = self.cancel

        def per_token(input_ids: Any, logits: Any) -> bool:
            # Called by llama.cpp once per sampled token with the tokens before it (and once more at the end with
            # the same length): the longest length seen gives the number of tokens generated.
            nonlocal seen
            seen = max(seen, len(input_ids))
            return cancel.is_set()

        parts: list[str] = []
        finish = "length"
        completion = llama.create_completion(
            tokens,
            stream=True,
            grammar=LlamaGrammar.from_string(grammar) if grammar is not None else None,
            stopping_criteria=StoppingCriteriaList([per_token]),
            **self.sampling,
        )
        try:
            for chunk in completion:
                choice = chunk["choices"][0]
                piece = choice["text"]
                if piece:
                    parts.append(piece)
                    shown = scanner.feed(piece) if scanner is not None else piece
                    if show and shown:
                        self.post(("text", shown))
                    if stop_at_marker and scanner is not None and scanner.found:
                        finish = "tool_calls"
                        break
                if choice.get("finish_reason"):
                    finish = choice["finish_reason"]
        except ValueError as exc:
            raise ModelError(f"the local model failed: {exc}", type="local", partial="".join(parts)) from None
        finally:
            completion.close()
        if cancel.is_set():
            raise _Cancelled()
        if scanner is not None and not scanner.found:
            rest = scanner.flush()
            if show and rest:
                self.post(("text", rest))
        used = seen - len(tokens) + 1 if seen else 0
        if finish == "stop" and used:
            used -= 1  # the end-of-generation token passed the hook too, but is not part of the answer
        return "".join(parts), finish, used

    def _check_grammar(self, grammar: str) -> None:
        """Make sure llama.cpp accepts the grammar: a grammar it rejects would crash the sampler instead."""
        checked = self.loaded.checked_grammars
        if grammar in checked:
            return
        import llama_cpp

        vocab = self.loaded.llama._model.vocab
        sampler = llama_cpp.llama_sampler_init_grammar(vocab, grammar.encode("utf-8"), b"root")
        if not sampler:
            raise UserError("the local model cannot use this JSON schema: llama.cpp rejected the grammar built from it")
        llama_cpp.llama_sampler_free(sampler)
        if len(checked) > 256:
            checked.clear()
        checked.add(grammar)
