"""`refmem mcp`: the command line of refmem's MCP server. Standard library only: the server itself is the
`refmem_mcp` package, which needs the MCP SDK (the `mcp` extra) and is imported only when this command runs
(D-MCP-PACKAGE)."""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Any, Optional

from .stores.location import ENVIRONMENT as _STORE_VARIABLE
from .subcommands import memories_options, subcommand

EXTRA_MISSING = "refmem mcp needs the MCP SDK: pip install 'refmem[mcp]'"
DEFAULT_PORT = 8765

_DESCRIPTION = f"""\
Serve the memory tool (and with --openclaw, memory_get and memory_search) to MCP clients, over one store: --root
DIRECTORY, or --store LOCATION (or {_STORE_VARIABLE}). On stdio by default; with --http, streamable HTTP at
http://HOST:PORT/mcp, on 127.0.0.1 unless --host says otherwise. Any address but a loopback one needs
--token-file: a file only its owner may read, one `TOKEN TENANT` per line (TENANT - for the default one); every
request then carries `Authorization: Bearer TOKEN`, and the token alone picks the tenant."""


def _fail(reason: str) -> int:
    print(f"refmem mcp: {reason}", file=sys.stderr)
    return 2


def _run(args: argparse.Namespace) -> int:
    try:
        # An optional package (the `mcp` extra), so found by name: refmem itself imports none of the others.
        server = importlib.import_module("refmem_mcp.server")
        memories_module = importlib.import_module("refmem_mcp.memories")
        Memories, Settings = memories_module.Memories, memories_module.Settings
    except ImportError as exc:
        if (exc.name or "").split(".")[0] in ("mcp", "mcp_types", "anyio", "uvicorn", "starlette", "pydantic"):
            return _fail(EXTRA_MISSING)
        return _fail(f"the MCP server could not be loaded ({type(exc).__name__})")
    location: Optional[str] = args.store
    if location is None and args.root is None:
        from .stores.location import from_environment

        location = from_environment()
    if location is None and args.root is None:
        return _fail(f"give --root DIRECTORY or --store LOCATION (or set {_STORE_VARIABLE})")
    if args.tenant is not None:
        from .store_protocol import TenantError, tenant_name

        try:
            tenant_name(args.tenant)
        except TenantError as exc:
            return _fail(f"cannot use the tenant: {exc}")
    allow = tuple(args.allow) if args.allow else None
    if args.harness and args.http:
        return _fail("--harness is for stdio only")
    memories = Memories(Settings(args.root, location, args.read_only, allow, args.openclaw, args.harness))
    try:  # the default tenant's handler, built now: an unusable root or store is said before a client connects
        memories.handler(None if args.token_file else args.tenant)
    except Exception as exc:  # noqa: BLE001 - said, never a traceback
        memories.close()
        from .stores import StoreError

        said = str(exc) if isinstance(exc, StoreError) else type(exc).__name__
        return _fail(f"cannot use the memories: {said}"[:300])
    try:
        if args.http:
            return int(server.run_http(memories, args.tenant, args.host, args.port, args.token_file))
        if args.token_file is not None or args.host is not None:
            return _fail("--token-file and --host go with --http")
        return int(server.run_stdio(memories, args.tenant))
    except server.ConfigError as exc:
        memories.close()
        return _fail(str(exc))


def register(commands: Any) -> None:
    """Add `refmem mcp` to the sub-commands."""
    parser = subcommand(commands, "mcp", "serve the memory tool to MCP clients (stdio or HTTP)", _DESCRIPTION, _run)
    memories_options(
        parser,
        root="the directory whose files are the memories (it must exist)",
        store=f"sqlite:///PATH.db or postgresql://...; also {_STORE_VARIABLE}; never shown",
        tenant="whose memories (not with --token-file, where the token picks)",
        read_only=True,
    )
    parser.add_argument(
        "--allow", action="append", metavar="GLOB", help="only paths matching one of these globs (repeatable)"
    )
    parser.add_argument("--openclaw", action="store_true", help="also serve memory_get and memory_search")
    parser.add_argument("--http", action="store_true", help="streamable HTTP instead of stdio")
    parser.add_argument("--host", help="with --http: the address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"with --http (default {DEFAULT_PORT})")
    parser.add_argument("--token-file", metavar="FILE", help="with --http: bearer tokens and their tenants")
    parser.add_argument(
        "--harness",
        action="store_true",
        help="for the conformance suite and the fuzzer only (stdio): serve their refmem/reset request, and ERASE "
        "a --store's memories on start and on every reset",
    )
