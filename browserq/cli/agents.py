"""``browserq mcp``: serve the fleet's agent sessions to MCP clients (docs/agents.md).

stdio by default (a client launches ``browserq mcp`` and talks over its stdin/stdout: nothing
else is written to stdout); ``--http HOST:PORT`` serves streamable HTTP at ``/mcp`` behind
bearer tokens (``BROWSERQ_MCP_TOKEN`` / ``BROWSERQ_MCP_TOKENS``).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Annotated

import typer

from browserq.cli.render import err_console, friendly_errors
from browserq.errors import ConfigError
from browserq.settings import get_settings, reset_settings_cache

#: A secret's name, as a template param's.
SECRET_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")


def _host_port(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ConfigError(f"--http takes HOST:PORT (e.g. 127.0.0.1:8931), got {value!r}")
    return host.strip("[]"), int(port)


def read_secrets(path: Path) -> dict[str, str]:
    """``--secrets FILE``: ``NAME=value`` lines (dotenv: ``#`` comments, blank lines, optional
    quotes around the value); a name is a template param's name."""
    try:
        lines = path.read_text().splitlines()
    except OSError as exc:
        raise ConfigError(f"--secrets {path}: cannot read it ({exc.strerror or exc})") from None
    found: dict[str, str] = {}
    for number, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        name, sep, value = line.removeprefix("export ").partition("=")
        name, value = name.strip(), value.strip()
        if not sep or not SECRET_NAME.fullmatch(name):
            raise ConfigError(f"--secrets {path}, line {number}: expected NAME=value with NAME like password or "
                              "api_key (letters, digits, _; not starting with a digit)")
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        if not value:
            raise ConfigError(f"--secrets {path}, line {number}: {name} has no value")
        found[name] = value
    return found


@friendly_errors
def mcp_server(
    http: Annotated[str | None, typer.Option("--http", help="HOST:PORT: serve streamable HTTP at "
                                             "http://HOST:PORT/mcp instead of stdio.")] = None,
    no_auth: Annotated[bool, typer.Option("--no-auth", help="Over HTTP on a loopback address only: "
                                          "serve without a bearer token.")] = False,
    allowed_domain: Annotated[list[str] | None, typer.Option("--allowed-domain", "-d", help="A domain the "
                                                             "sessions may visit (repeat; none: any).")] = None,
    identity: Annotated[str | None, typer.Option(help="The named identity the sessions use.")] = None,
    identity_pool: Annotated[str | None, typer.Option(help="The identity pool the sessions draw from.")] = None,
    queue: Annotated[str | None, typer.Option(help="The fleet's queue (default BROWSERQ_QUEUE).")] = None,
    idle_timeout_s: Annotated[float | None, typer.Option("--idle-timeout", min=1, help="Seconds without a call "
                                                         "before a session closes (default "
                                                         "BROWSERQ_SESSION_IDLE_TIMEOUT_S).")] = None,
    max_lifetime_s: Annotated[float | None, typer.Option("--max-lifetime", min=1, help="Seconds a session "
                                                         "lives at most.")] = None,
    step_timeout_s: Annotated[float | None, typer.Option("--step-timeout", min=0.1, max=3600,
                                                         help="Seconds one command may take.")] = None,
    allow_eval: Annotated[bool, typer.Option("--allow-eval", help="Let sessions run JavaScript "
                                             "(offers browser_evaluate).")] = False,
    secrets_file: Annotated[Path | None, typer.Option("--secrets", help="A dotenv file of NAME=value: values "
                                                      "agents type as ${NAME}, masked in every record, never "
                                                      "shown to the agent.")] = None,
) -> None:
    """Serve agent sessions to MCP clients: one session per connection (docs/agents.md)."""
    # The arguments are checked before the MCP server is imported (~1.4 s of imports): a bad
    # secrets file or address is refused at once.
    if http is None and no_auth:
        raise ConfigError("--no-auth applies to --http only (stdio has no network to guard)")
    address = _host_port(http) if http is not None else None
    secrets = read_secrets(secrets_file) if secrets_file else {}

    import anyio

    from browserq.mcp import (
        SessionOptions,
        StaticTokens,
        fleet_server,
        http_app,
        serve_http,
        serve_stdio,
    )

    if queue:
        os.environ["BROWSERQ_QUEUE"] = queue
        reset_settings_cache()
    settings = get_settings()
    template_settings: dict[str, object] = {"allow_eval": True} if allow_eval else {}
    if step_timeout_s is not None:
        template_settings["step_timeout_s"] = step_timeout_s
    options = SessionOptions(allowed_domains=list(allowed_domain or []) or None, identity=identity,
                             identity_pool=identity_pool, idle_timeout_s=idle_timeout_s,
                             max_lifetime_s=max_lifetime_s, settings=template_settings, secrets=secrets)
    server = fleet_server(options)
    if address is None:
        anyio.run(serve_stdio, server)
        return
    host, port = address
    tokens = StaticTokens(settings.mcp_token, settings.mcp_tokens)
    app = http_app(server, tokens, host=host, port=port, no_auth=no_auth,
                   idle_timeout_s=idle_timeout_s or settings.session_idle_timeout_s)
    err_console.print(f"browserq mcp: serving http://{host}:{port}/mcp "
                      f"({'no auth: loopback only' if no_auth else 'bearer token required'})", highlight=False)
    anyio.run(serve_http, app, host, port)
