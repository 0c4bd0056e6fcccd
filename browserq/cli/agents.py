"""``browserq mcp``: serve the fleet's agent sessions to MCP clients (docs/agents.md).

stdio by default (a client launches ``browserq mcp`` and talks over its stdin/stdout: nothing
else is written to stdout); ``--http HOST:PORT`` serves streamable HTTP at ``/mcp`` behind
bearer tokens (``BROWSERQ_MCP_TOKEN`` / ``BROWSERQ_MCP_TOKENS``).
"""

from __future__ import annotations

import os
from typing import Annotated

import anyio
import typer

from browserq.cli.render import err_console, friendly_errors
from browserq.errors import ConfigError
from browserq.settings import get_settings, reset_settings_cache


def _host_port(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ConfigError(f"--http takes HOST:PORT (e.g. 127.0.0.1:8931), got {value!r}")
    return host.strip("[]"), int(port)


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
) -> None:
    """Serve agent sessions to MCP clients: one session per connection (docs/agents.md)."""
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
                             max_lifetime_s=max_lifetime_s, settings=template_settings)
    server = fleet_server(options)
    if http is None:
        if no_auth:
            raise ConfigError("--no-auth applies to --http only (stdio has no network to guard)")
        anyio.run(serve_stdio, server)
        return
    host, port = _host_port(http)
    tokens = StaticTokens(settings.mcp_token, settings.mcp_tokens)
    app = http_app(server, tokens, host=host, port=port, no_auth=no_auth,
                   idle_timeout_s=idle_timeout_s or settings.session_idle_timeout_s)
    err_console.print(f"browserq mcp: serving http://{host}:{port}/mcp "
                      f"({'no auth: loopback only' if no_auth else 'bearer token required'})", highlight=False)
    anyio.run(serve_http, app, host, port)
