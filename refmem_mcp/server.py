"""The MCP transports of `refmem mcp`, on the official `mcp` SDK: stdio, and streamable HTTP behind bearer tokens.

Every tool call is the handler's: its text is the one text content of the result, its error flag `isError`; the
SDK validates nothing against the input schema, so a malformed input gets the handler's documented message.

Over HTTP (D-MCP-HTTP): the server binds to 127.0.0.1 unless told otherwise, and to any other address only with a
token file. With a token file, every request carries `Authorization: Bearer TOKEN`; a request without a known token
gets 401 before the SDK sees it, and the tenant is the one the token file gives that token, looked up again for
every tool call. Nothing the client sends names a tenant.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import os
import stat
from typing import Any, Awaitable, Callable, Dict, List, MutableMapping, Optional

import anyio
import anyio.to_thread
import mcp_types as types
from mcp.server.lowlevel import Server

import refmem
from refmem.protocol import MAX_LINE_BYTES

from .memories import Memories
from .schema import definitions

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Any]]
Send = Callable[[Any], Awaitable[None]]
ASGI = Callable[[Scope, Receive, Send], Awaitable[None]]

RESET_METHOD = "refmem/reset"
"""The harness's request for a fresh start on a new root (D-MCP-RESET): served, and advertised as an experimental
capability of that name, only by `refmem mcp --harness` (stdio only); every other server answers it "method not
found". Never a tool: it is not listed, and no model's tool call can reach it."""
MAX_TOKEN_FILE_BYTES = 1 << 20
MIN_TOKEN_CHARS = 16
LOOPBACK_NAMES = ("localhost",)


class ConfigError(Exception):
    """The server cannot start as asked (said on stderr, exit status 2)."""


def is_loopback(host: str) -> bool:
    """Whether `host` is an address only this machine can reach."""
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def read_tokens(path: str) -> Dict[str, Optional[str]]:
    """The token file: one `TOKEN TENANT` per line (TENANT `-` for the default tenant), `#` comments and blank lines
    ignored. Refused when another user may read or write it, when a token is short or repeated, or when a tenant
    name is not one refmem takes (D-MCP-HTTP)."""
    from refmem.store_protocol import TenantError, tenant_name

    try:
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise ConfigError(f"cannot open the token file ({exc.strerror})") from None
    try:
        status = os.fstat(descriptor)
        if not stat.S_ISREG(status.st_mode):
            raise ConfigError("the token file is not a regular file")
        if status.st_mode & 0o077:
            raise ConfigError("the token file is open to other users: chmod 600 it")
        data = os.read(descriptor, MAX_TOKEN_FILE_BYTES + 1)
    finally:
        os.close(descriptor)
    if len(data) > MAX_TOKEN_FILE_BYTES:
        raise ConfigError("the token file is too long")
    tokens: Dict[str, Optional[str]] = {}
    for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
        fields = line.split("#", 1)[0].split()
        if not fields:
            continue
        if len(fields) != 2:
            raise ConfigError(f"token file line {number}: expected TOKEN TENANT")
        token, tenant = fields
        if len(token) < MIN_TOKEN_CHARS:
            raise ConfigError(f"token file line {number}: a token has at least {MIN_TOKEN_CHARS} characters")
        if token in tokens:
            raise ConfigError(f"token file line {number}: a token given twice")
        if tenant != "-":
            try:
                tenant_name(tenant)
            except TenantError as exc:
                raise ConfigError(f"token file line {number}: {exc}") from None
        tokens[token] = None if tenant == "-" else tenant
    if not tokens:
        raise ConfigError("the token file names no token")
    return tokens


class ResetParams(types.RequestParams):
    """`refmem/reset`'s parameters: the directory the next case's memories are in (used with --root only)."""

    root: str


class Tokens:
    """Which tenant a request's bearer token picks (compared in constant time with every known token)."""

    def __init__(self, tokens: Dict[str, Optional[str]]) -> None:
        self._tokens = [(token.encode(), tenant) for token, tenant in tokens.items()]

    def tenant(self, authorization: Optional[str]) -> Optional[List[Optional[str]]]:
        """[tenant] for a known token, None for a missing or unknown one."""
        if not authorization or not authorization[:7].lower() == "bearer ":
            return None
        offered = authorization[7:].strip().encode("utf-8", "replace")
        found: Optional[List[Optional[str]]] = None
        for token, tenant in self._tokens:
            if hmac.compare_digest(offered, token) and found is None:
                found = [tenant]
        return found


def build(memories: Memories, tenant: Optional[str], tokens: Optional[Tokens]) -> Server[Any]:
    """The MCP server: `tenant` serves every call, unless `tokens` pick one per HTTP request."""
    tools = [types.Tool(name=d["name"], description=d["description"], input_schema=d["inputSchema"])
             for d in definitions(memories.settings.openclaw)]
    served = {t.name for t in tools}

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        if params.name not in served:
            text = f"Error: unknown tool {params.name!r:.80}; this server runs {', '.join(sorted(served))}"
            return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True)
        who = tenant
        if tokens is not None:
            request = getattr(ctx, "request", None)
            headers = getattr(request, "headers", None)
            picked = tokens.tenant(headers.get("authorization") if headers is not None else None)
            if picked is None:  # the middleware lets no such request through; refused here all the same
                text = "Error: a known bearer token is required"
                return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True)
            who = picked[0]
        arguments = params.arguments if params.arguments is not None else {}
        output, is_error, result = await anyio.to_thread.run_sync(memories.call, params.name, arguments, who)
        structured = result if isinstance(result, dict) else None
        return types.CallToolResult(
            content=[types.TextContent(text=output)], is_error=is_error, structured_content=structured
        )

    server: Server[Any] = Server(
        "refmem", version=refmem.__version__, on_list_tools=list_tools, on_call_tool=call_tool
    )
    if memories.settings.harness:

        async def reset(ctx: Any, params: ResetParams) -> types.EmptyResult:
            await anyio.to_thread.run_sync(memories.reset, params.root)
            return types.EmptyResult()

        server.add_request_handler(RESET_METHOD, ResetParams, reset)
    return server


async def _stdio(server: Server[Any], harness: bool) -> None:
    from .stdio import bounded_stdio

    experimental: Optional[Dict[str, Dict[str, Any]]] = {RESET_METHOD: {}} if harness else None
    async with bounded_stdio() as (read_stream, write_stream):  # every line answered (D-MCP-INPUT)
        options = server.create_initialization_options(experimental_capabilities=experimental)
        await server.run(read_stream, write_stream, options)


def run_stdio(memories: Memories, tenant: Optional[str]) -> int:
    memories.default_tenant = tenant
    try:
        anyio.run(_stdio, build(memories, tenant, None), memories.settings.harness)
    finally:
        memories.close()
    return 0


def _guarded(app: ASGI, tokens: Tokens) -> ASGI:
    """`app` behind the bearer tokens: any HTTP request without a known one is answered 401."""

    async def guarded(scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") == "http":
            headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
            if tokens.tenant(headers.get("authorization")) is None:
                body = b'{"error": "a known bearer token is required"}'
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [
                            (b"content-type", b"application/json"),
                            (b"www-authenticate", b'Bearer realm="refmem"'),
                            (b"content-length", str(len(body)).encode()),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": body})
                return
        await app(scope, receive, send)

    return guarded


async def _send_json(send: Send, status: int, body: bytes) -> None:
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _bounded(app: ASGI, limit: int) -> ASGI:
    """`app` with every request body bounded by `limit` bytes (D-MCP-INPUT): the SDK reads a body whole, so a
    longer one, whether its length is stated or not, is answered 413 with a JSON-RPC parse error (id null) when its
    first byte over the bound arrives; nothing longer is held."""
    too_long = json.dumps(
        {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": f"Parse error: a message is at most "
                                                                          f"{limit} bytes"}}
    ).encode()

    async def bounded(scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") != "http":
            await app(scope, receive, send)
            return
        headers = dict(scope.get("headers", []))
        stated = headers.get(b"content-length", b"").strip()
        if stated.isdigit() and int(stated) > limit:
            await _send_json(send, 413, too_long)
            return
        chunks: List[bytes] = []
        held = 0
        while True:
            message = await receive()
            if message.get("type") != "http.request":
                break
            chunk = bytes(message.get("body", b""))
            held += len(chunk)
            if held > limit:
                await _send_json(send, 413, too_long)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                message = {"type": "http.request", "body": b"".join(chunks), "more_body": False}
                break
        replayed = [message]

        async def replay() -> Any:
            return replayed.pop() if replayed else await receive()

        await app(scope, replay, send)

    return bounded


def http_app(memories: Memories, tenant: Optional[str], tokens: Optional[Tokens], host: str) -> ASGI:
    """The streamable HTTP app at /mcp, its request bodies bounded (behind the tokens when there are any)."""
    server = build(memories, tenant, tokens)
    app: ASGI = _bounded(server.streamable_http_app(host=host), MAX_LINE_BYTES)
    return _guarded(app, tokens) if tokens is not None else app


def run_http(
    memories: Memories, tenant: Optional[str], host: str, port: int, token_file: Optional[str]
) -> int:
    import uvicorn

    host = host or "127.0.0.1"
    if memories.settings.harness:
        raise ConfigError("--harness is for stdio only: over HTTP anyone who reaches the port could reset it")
    tokens = Tokens(read_tokens(token_file)) if token_file is not None else None
    if tokens is None and not is_loopback(host):
        raise ConfigError("serving on an address other machines can reach needs --token-file")
    if tokens is not None and tenant is not None:
        raise ConfigError("with --token-file the token picks the tenant: leave out --tenant")
    try:
        uvicorn.run(http_app(memories, tenant, tokens, host), host=host, port=port, log_level="warning")
    finally:
        memories.close()
    return 0
