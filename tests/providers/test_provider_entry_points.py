"""Providers from other packages: an installed distribution that declares an entry point in the group
``threadline.providers`` makes ``get_model("<its prefix>:…")`` work without threadline changing.

The distributions are real ones as importlib.metadata reads them: a module and a ``*.dist-info`` folder (``METADATA``
and ``entry_points.txt``) written into a folder put on ``sys.path``, as pip installs them."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

import threadline.models as models
from threadline import get_model, llm
from threadline.errors import UserError
from threadline.testing import ScriptedModel

PROVIDER = """
from threadline.testing import ScriptedModel

made = []


def make(rest):
    made.append(rest)
    return ScriptedModel([f"hello from myprov ({rest})"])


make.environment = ("MYPROV_API_KEY",)


def fails(rest):
    raise RuntimeError("the myprov service is not configured")
"""


def install(site: Path, distribution: str, module: str, source: str, entry_points: dict[str, str]) -> None:
    """Write a distribution as an installer would: the module, and its dist-info with the entry points."""
    (site / f"{module}.py").write_text(textwrap.dedent(source), encoding="utf-8")
    info = site / f"{distribution.replace('-', '_')}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {distribution}\nVersion: 1.0\n", encoding="utf-8")
    lines = "".join(f"{name} = {target}\n" for name, target in entry_points.items())
    (info / "entry_points.txt").write_text(f"[threadline.providers]\n{lines}", encoding="utf-8")


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    install(
        tmp_path,
        "threadline-myprov",
        "threadline_myprov",
        PROVIDER,
        {
            "myprov": "threadline_myprov:make",
            "myprov-fails": "threadline_myprov:fails",
            "myprov-list": "threadline_myprov:made",
        },
    )
    install(
        tmp_path,
        "acme-broken-provider",
        "acme_broken_provider",
        "import acme_sdk_that_is_not_installed\n",
        {"acme": "acme_broken_provider:make", "acme-nothing": "threadline_myprov:missing_name"},
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    for prefix in ("myprov", "myprov-fails", "myprov-list", "acme", "acme-nothing"):
        models._factories.pop(prefix, None)
        models._environment.pop(prefix, None)
        models._packages.pop(prefix, None)
    for name in [name for name in models._cache if name.partition(":")[0].startswith(("myprov", "acme"))]:
        models._cache.pop(name)
    for module in ("threadline_myprov", "acme_broken_provider"):
        sys.modules.pop(module, None)


def test_an_installed_package_adds_a_provider_by_its_entry_point(site: Path) -> None:
    assert "myprov" not in models._factories  # nothing is read before a name needs it
    model = get_model("myprov:small")
    assert isinstance(model, ScriptedModel)
    assert sys.modules["threadline_myprov"].made == ["small"]
    assert llm.model("myprov:other").request("hi").prompt() == "hello from myprov (other)"
    assert get_model("myprov:small") is model  # registered: cached like a built-in provider
    assert models._environment["myprov"] == ("MYPROV_API_KEY",)  # its environment is part of the cache key


def test_an_entry_point_that_fails_to_load_names_its_package(site: Path) -> None:
    with pytest.raises(UserError) as caught:
        get_model("acme:model-1")
    message = str(caught.value)
    assert "the provider 'acme' of the package acme-broken-provider" in message
    assert "could not be loaded" in message and "acme_sdk_that_is_not_installed" in message
    with pytest.raises(UserError, match=r"'acme-nothing' of the package acme-broken-provider .* AttributeError"):
        get_model("acme-nothing:x")  # a name its module lacks
    with pytest.raises(UserError, match=r"'myprov-list' of the package threadline-myprov .* is not a factory"):
        get_model("myprov-list:x")
    assert "acme" not in models._factories and "myprov-list" not in models._factories  # nothing half-registered


def test_a_factory_that_raises_names_its_package(site: Path) -> None:
    with pytest.raises(UserError) as caught:
        get_model("myprov-fails:x")
    assert str(caught.value) == (
        "the provider 'myprov-fails' of the package threadline-myprov failed to make 'myprov-fails:x':"
        " RuntimeError: the myprov service is not configured"
    )


def test_an_unknown_prefix_says_where_providers_come_from(site: Path) -> None:
    with pytest.raises(UserError, match=r"unknown model 'nosuch:x'.*entry-point group 'threadline\.providers'"):
        get_model("nosuch:x")


def test_built_in_names_never_read_the_entry_points() -> None:
    # importlib.metadata is loaded only for a prefix nobody registered.
    code = (
        "import sys, threadline\n"
        "threadline.get_model('openai:gpt-4o-mini')\n"
        "print('importlib.metadata' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False"]
