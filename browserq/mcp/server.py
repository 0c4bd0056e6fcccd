"""``browserq mcp``: the MCP server (the official ``mcp`` SDK's low-level ``Server``) over the
fleet's agent sessions, on stdio or streamable HTTP.

Each MCP connection gets its own :class:`AgentConnection`, kept in the SDK's per-connection state
and closed by the connection's teardown (stdio: the client went away; HTTP: its DELETE, or the
transport's idle timeout). Over HTTP every request needs a bearer token (:class:`StaticTokens`);
the token's tenant is the tenant its sessions run under.
"""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Callable, Mapping
from typing import Any

import mcp_types as types
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import AnyHttpUrl
from starlette.applications import Starlette

from browserq import __version__
from browserq.errors import ConfigError
from browserq.mcp.connection import AgentConnection, SessionOptions, text_result
from browserq.mcp.tools import BY_NAME, TOOLS, argument_problems

#: Where the per-connection :class:`AgentConnection` is kept in the SDK's connection state.
STATE_KEY = "browserq.agent"
#: The claim of an access token naming its tenant.
TENANT_CLAIM = "browserq_tenant"

#: Builds a connection's agent for a tenant (None: no tenant).
ConnectionFactory = Callable[[str | None], AgentConnection]


class StaticTokens:
    """The SDK's ``TokenVerifier`` over this server's configured tokens: ``BROWSERQ_MCP_TOKEN``
    (no tenant) and ``BROWSERQ_MCP_TOKENS`` (token → tenant). Compared in constant time; the
    AccessToken carries an index, never the token, as its client id (the SDK binds an HTTP
    session to the credential that opened it)."""

    def __init__(self, token: str | None, tenants: Mapping[str, str]) -> None:
        self._tokens: list[tuple[bytes, str | None]] = [(t.encode(), tenant) for t, tenant in tenants.items()]
        if token:
            self._tokens.append((token.encode(), None))

    def __bool__(self) -> bool:
        return bool(self._tokens)

    async def verify_token(self, token: str) -> AccessToken | None:
        given, found = token.encode(), None
        for index, (known, tenant) in enumerate(self._tokens):
            if hmac.compare_digest(given, known) and found is None:
                found = AccessToken(token="(verified)", client_id=f"browserq-mcp-token-{index}", scopes=[],
                                    claims={TENANT_CLAIM: tenant})
        return found


def tool_list(allow_eval: bool) -> list[types.Tool]:
    """The tools this server offers (``browser_evaluate`` only where its sessions allow eval)."""
    return [
        types.Tool(name=spec.name, title=spec.title, description=spec.description, input_schema=spec.schema,
                   annotations=types.ToolAnnotations(title=spec.title, read_only_hint=spec.read_only))
        for spec in TOOLS if allow_eval or spec.name != "browser_evaluate"
    ]


def _tenant_of(ctx: ServerRequestContext[Any, Any]) -> str | None:
    request = ctx.request
    user = request.scope.get("user") if request is not None and hasattr(request, "scope") else None
    if isinstance(user, AuthenticatedUser):
        tenant = (user.access_token.claims or {}).get(TENANT_CLAIM)
        return str(tenant) if tenant else None
    return None


async def _connection_of(ctx: ServerRequestContext[Any, Any], factory: ConnectionFactory) -> AgentConnection:
    """This connection's agent, made on its first tool call; its session closes with the connection.

    The SDK keeps per-connection state and teardown on its ``Connection`` (``state``,
    ``exit_stack``), which a low-level handler reaches through its ``ServerSession``."""
    connection = ctx.session._connection  # the SDK's per-connection object (mcp 2.3, pinned)
    agent = connection.state.get(STATE_KEY)
    if agent is None:
        agent = factory(_tenant_of(ctx))
        connection.state[STATE_KEY] = agent
        connection.exit_stack.push_async_callback(agent.close)
    assert isinstance(agent, AgentConnection)
    return agent


def build_server(factory: ConnectionFactory, *, allow_eval: bool, secret_names: tuple[str, ...] = ()) -> Server[Any]:
    """The MCP server: its tools listed with their schemas; each call validated, then run on
    the calling connection's session."""
    offered = {tool.name for tool in tool_list(allow_eval)}

    async def list_tools(ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tool_list(allow_eval))

    async def call_tool(ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams) -> types.CallToolResult:
        name, arguments = params.name, dict(params.arguments or {})
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            raise MCPError(types.INVALID_REQUEST, STATEFUL_ONLY)
        if name not in offered:
            why = " (this server's sessions do not allow eval)" if name in BY_NAME else ""
            raise MCPError(types.INVALID_PARAMS, f"unknown tool {name!r}{why}; tools: {', '.join(sorted(offered))}")
        problems = argument_problems(name, arguments)
        if problems:
            return text_result(f"INVALID_ARGUMENTS: {name}: " + "; ".join(problems) + ". Nothing was run.", error=True)
        agent = await _connection_of(ctx, factory)
        return await agent.call(name, arguments)

    async def discover(ctx: ServerRequestContext[Any, Any], params: types.RequestParams) -> types.DiscoverResult:
        raise MCPError(types.METHOD_NOT_FOUND, STATEFUL_ONLY)  # a client in mode "auto" falls back to initialize

    instructions = INSTRUCTIONS + (f" Secrets you may type by reference (the value is filled in on the worker and "
                                   f"never shown to you): {', '.join('${' + n + '}' for n in secret_names)}."
                                   if secret_names else "")
    server: Server[Any] = Server("browserq", version=__version__, instructions=instructions,
                                 on_list_tools=list_tools, on_call_tool=call_tool)
    server.add_request_handler("server/discover", types.RequestParams, discover)
    return server


#: Why the 2026-07-28 per-request era is refused: it has no connection to hold a session.
STATEFUL_ONLY = ("browserq mcp keeps one browser session per connection: connect with the initialize handshake "
                 "(protocol 2025-11-25 or earlier); the stateless 2026-07-28 era has no connection to hold it")


INSTRUCTIONS = (
    "A browser session on a browserq fleet: it opens on your first tool call and closes when you disconnect "
    "or stay idle past its timeout. Take a browser_snapshot, then act on its [ref=…] nodes; a ref that is gone "
    "fails REF_STALE (take a new snapshot), never acting on another element."
)


async def serve_stdio(server: Server[Any]) -> None:
    """Serve one client on this process's stdin/stdout until it goes away, in the handshake era
    only (``serve_loop``): the connection, and so its session, lives as long as the client."""
    from mcp.server.runner import serve_loop
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read_stream, write_stream), server.lifespan(server) as state:
        await serve_loop(server, read_stream, write_stream, lifespan_state=state,
                         init_options=server.create_initialization_options())


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def http_app(server: Server[Any], tokens: StaticTokens, *, host: str, port: int, no_auth: bool,
             idle_timeout_s: float) -> Starlette:
    """The streamable HTTP app at ``/mcp``: bearer tokens required (401 otherwise), unless
    ``no_auth`` on a loopback address. ``ConfigError`` when neither holds."""
    if not tokens and not (no_auth and is_loopback(host)):
        raise ConfigError("browserq mcp --http needs BROWSERQ_MCP_TOKEN (or BROWSERQ_MCP_TOKENS); "
                          "only on a loopback address may it run without one, with --no-auth")
    if no_auth and tokens:
        raise ConfigError("--no-auth with a token configured: unset BROWSERQ_MCP_TOKEN(S) or drop --no-auth")
    auth = None if no_auth else AuthSettings(issuer_url=AnyHttpUrl(f"http://{host}:{port}"), resource_server_url=None)
    return server.streamable_http_app(host=host, auth=auth, token_verifier=None if no_auth else tokens,
                                      session_idle_timeout=idle_timeout_s)


async def serve_http(app: Starlette, host: str, port: int) -> None:
    """Serve ``app`` with uvicorn until interrupted."""
    import uvicorn

    config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on")
    await uvicorn.Server(config).serve()


__all__ = ["INSTRUCTIONS", "SessionOptions", "StaticTokens", "build_server", "http_app", "is_loopback", "serve_http",
           "serve_stdio", "tool_list"]
