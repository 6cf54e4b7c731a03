"""``python -m threadline.llama_cpp_server``: llama-cpp-python's OpenAI-compatible server, safe on CPUs with AMX.

It takes exactly the arguments of ``python -m llama_cpp.server`` and runs that server (llama-cpp-python's own code,
unchanged), with one difference: on a CPU with AMX it loads models without llama.cpp's extra CPU buffer types.
There ggml's AMX kernels crash the plain server with SIGSEGV on its first generation (ggml-org/llama.cpp#20824),
and the server has no option to avoid them. The embedded ``local`` model makes the same change in-process
(`threadline.models._local_runtime.extra_buffers_off`); ``THREADLINE_LLAMA_EXTRA_BUFFERS`` (``auto``, ``off``,
``on``) decides for both.

Example::

    python -m threadline.llama_cpp_server --model SmolLM2-135M-Instruct.Q4_1.gguf \\
        --chat_format chatml-function-calling --port 8000
"""

from __future__ import annotations

import sys

__all__ = ["main"]


def main(argv: list[str] | None = None) -> None:
    """Run llama-cpp-python's server with ``argv`` (default: this process's arguments).

    Raises:
        SystemExit: when llama-cpp-python's server extra is not installed, or when the server exits.
    """
    from .errors import UserError
    from .models._local_runtime import extra_buffers_off, switch_off_extra_buffers

    try:
        import llama_cpp.llama_cpp as low_level
        from llama_cpp.server.__main__ import main as server_main
    except ImportError as exc:
        raise SystemExit(
            f"threadline.llama_cpp_server needs llama-cpp-python's server: pip install 'llama-cpp-python[server]' "
            f"({exc})"
        ) from None
    try:
        off, why = extra_buffers_off()
    except UserError as exc:
        raise SystemExit(str(exc)) from None
    if off:
        switch_off_extra_buffers(low_level)
    # One line on stderr, so a server log says which kernels it ran with.
    print(f"threadline: llama.cpp extra CPU buffer types {'off' if off else 'on'} ({why})", file=sys.stderr, flush=True)
    sys.argv = [f"{sys.executable} -m threadline.llama_cpp_server", *(sys.argv[1:] if argv is None else argv)]
    server_main()  # type: ignore[no-untyped-call]


if __name__ == "__main__":
    main()
