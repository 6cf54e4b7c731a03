"""A real server's first generations on this CPU: llama-cpp-python's OpenAI-compatible server started as the tests
and the README start it (``python -m threadline.llama_cpp_server``), asked for answers through threadline.

On a CPU with AMX the plain server dies with SIGSEGV on its first generation; a case fails when the server could
not start, died, or a turn did not end in an answer in a valid log. ``seen`` says what the CPU has and which
kernels the server chose.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from threadline import Conversation, llm
from threadline.models.local._runtime import cpu_has_amx
from threadline.models.openai import OpenAIModel

from ..providers.llama_server import (
    LLAMA_CPP_MODEL,
    ServerDidNotStart,
    check_alive,
    free_port,
    server_command,
    start_server,
)
from .campaign import Row

ROW = "llama.cpp server via the launcher: first answers"


async def _answer(base_url: str, question: str) -> Conversation:
    model = OpenAIModel(LLAMA_CPP_MODEL, base_url=base_url, server="llama-cpp-python", timeout=120, max_retries=0)
    try:
        # min_tokens (llama-cpp-python's extension) holds back the end of the answer for a few tokens: an answer with
        # text whatever this CPU's build of the model would say, so an empty one means the plumbing lost it.
        conversation = (
            llm.model(model).request(question).prompt_conversation(temperature=0.0, max_tokens=16, openai_min_tokens=4)
        )
        async for _ in conversation:
            pass
        return conversation
    finally:
        await model.aclose()


def server_generations(starts: int, answers: int, directory: Path) -> Row:
    """Start the server ``starts`` times and ask it ``answers`` questions each time; one case per question (or one
    failed case for a start that failed)."""
    row = Row(ROW)
    for start in range(starts):
        row.saw(f"cpu amx {'yes' if cpu_has_amx() else 'no'}")
        port = free_port()
        log_path = directory / f"llama-server-{start}.log"
        try:
            server = start_server(server_command(port), f"http://127.0.0.1:{port}/v1", log_path)
        except ServerDidNotStart as exc:
            row.case(crashed=str(exc).splitlines()[0], note=f"start {start}")
            continue
        try:
            log = log_path.read_text(errors="replace")
            row.saw("extra buffers off" if "extra CPU buffer types off" in log else "extra buffers on")
            for number in range(answers):
                note = f"start {start}, answer {number}"
                try:
                    conversation = asyncio.run(_answer(server.base_url, f"Say the number {number}."))
                    conversation.messages.validate()
                    reply = conversation.messages[-1]
                    problem = None if reply.role == "assistant" and reply.content else "no answer"
                except Exception as exc:
                    problem = check_alive(server) or f"{type(exc).__name__}: {exc}"
                row.case(crashed=problem.splitlines()[0] if problem else None, note=note)
        finally:
            server.stop()
    return row
