"""`import threadline` stays light: no HTTP client, model runtime, driver, CLI/web library or SDK
(docs/architecture.md#import-weight)."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ["httpx", "llama_cpp", "psycopg", "psycopg_pool", "click", "rich", "starlette", "uvicorn",
         "jinja2", "markdown_it", "pygments", "pydantic", "pydantic_core", "openai", "anthropic", "mcp", "mcp_types",
         "jsonschema", "opentelemetry"]  # fmt: skip


def loaded_after(code: str) -> set[str]:
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True, text=True, timeout=120)
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


def heavy_in(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if m.split(".")[0] in HEAVY)


def test_import_threadline_loads_no_heavy_dependency() -> None:
    modules = loaded_after("import threadline")
    assert "threadline" in modules
    assert heavy_in(modules) == []


def test_import_threadline_loads_no_store() -> None:
    # The stores load when one is opened (`threadline.store` costs ~15 ms of import): a conversation without a
    # store, the builder and the context builder must not reach them at import time.
    modules = loaded_after("import threadline")
    assert sorted(m for m in modules if m.startswith("threadline.store")) == []


def test_reading_a_log_and_using_scripted_model_stay_light() -> None:
    code = """
import threadline
from threadline import MessageList, llm
from threadline.testing import ScriptedModel
log = MessageList.from_json('{"version": "2.0", "messages": [{"role": "user", "content": "hi"}]}')
log.to_json()
llm.model(ScriptedModel(["ok"])).request("hi").prompt()
"""
    assert heavy_in(loaded_after(code)) == []


def test_resolving_local_does_not_import_httpx() -> None:
    # The name resolves lazily: asking for the model class must not pull in the HTTP stack.
    code = "import threadline.models as m\nm._factories['local']"
    assert "httpx" not in loaded_after(code)


def test_reading_logs_does_not_start_asyncio() -> None:
    # asyncio is most of the import cost; commands that only read logs (list, show, export) never need it.
    code = """
from threadline import MessageList
MessageList.from_json('{"version": "2.0", "messages": [{"role": "user", "content": "hi"}]}').validate()
"""
    assert "asyncio" not in loaded_after(code)


def test_an_mcp_toolset_imports_the_sdk_only_when_it_connects() -> None:
    # Made at import time of a user's module, it must cost nothing until its tools are needed.
    code = """
import sys
from threadline import Toolset
from threadline.toolboxes import Pages
Toolset.from_mcp(command=[sys.executable, "-m", "mcp_server_time"])
"""
    modules = loaded_after(code)
    assert "threadline.tools.mcp.toolset" in modules
    assert sorted(m for m in modules if m.split(".")[0] in ("mcp", "mcp_types", "jsonschema", "anyio")) == []


# Each extra's entry module imports its own libraries and no other extra's (a `threadline` CLI command that never
# touches PostgreSQL, the web or llama.cpp does not pay for them).
EXTRA_ENTRY_POINTS = {
    "threadline.cli": {"click"},  # cli
    "threadline.web": {"starlette", "jinja2", "markdown_it", "pygments"},  # web
    "threadline.models.local": set(),  # local: llama.cpp loads with the model, not with the module
    "threadline.store.postgres": set(),  # postgres: psycopg loads when a store connects
    "threadline.tools.mcp.toolset": set(),  # mcp: the SDK loads when a toolset connects
    "threadline.toolboxes": set(),
    "threadline.tracing": set(),  # otel: OpenTelemetry loads with threadline.instrument(), not with the module
    "threadline.models.openai": {"httpx"},
    "threadline.models.anthropic": {"httpx"},
}


def test_each_extras_entry_module_loads_only_its_own_libraries() -> None:
    for module, allowed in EXTRA_ENTRY_POINTS.items():
        loaded = {name.split(".")[0] for name in heavy_in(loaded_after(f"import {module}"))}
        assert loaded == allowed, module
