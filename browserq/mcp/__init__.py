"""``browserq mcp``: an MCP server over the fleet's agent sessions (docs/agents.md).

    tools.py       the tools: playwright-mcp's names and argument names, JSON schemas with bounds
    commands.py    a tool call → the session commands (template steps) it stands for
    connection.py  one MCP connection, one session: opened on the first call, closed with it;
                   failures as isError results that say what to do next
    server.py      the SDK's low-level Server; stdio; streamable HTTP behind bearer tokens
"""

from __future__ import annotations

from typing import Any

from browserq.mcp.connection import AgentConnection, SessionOptions
from browserq.mcp.server import (
    StaticTokens,
    build_server,
    http_app,
    is_loopback,
    serve_http,
    serve_stdio,
)


def fleet_server(options: SessionOptions) -> Any:
    """The server whose connections open sessions on the fleet (``open_session_async``) and read
    screenshots from the fleet's artifact store."""
    from browserq.settings import get_settings
    from browserq.store.artifacts import artifact_store
    from browserq.submit.sessions import open_session_async

    artifacts = artifact_store(get_settings())

    def factory(tenant: str | None) -> AgentConnection:
        return AgentConnection(options, open_session_async, artifacts.read_bytes, tenant=tenant)

    return build_server(factory, allow_eval=bool(options.settings.get("allow_eval")),
                        secret_names=tuple(sorted(options.secrets)))


__all__ = ["AgentConnection", "SessionOptions", "StaticTokens", "build_server", "fleet_server", "http_app",
           "is_loopback", "serve_http", "serve_stdio"]
