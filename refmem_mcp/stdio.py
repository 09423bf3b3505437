"""`refmem mcp`'s own stdio framing in front of the MCP SDK's (D-MCP-INPUT): every line the client sends gets an answer.

The SDK's stdio transport hands a line its JSON parser refuses (nested deeper than the parser's recursion limit, about
200 levels; not JSON; not a JSON-RPC message) to the server as an exception, and nothing answers it: the client
waits for its timeout. A prompt-injected model can send such arguments. So the lines are read here, each bounded by
`refmem.protocol.MAX_LINE_BYTES` (a longer one is read to its end in chunks, never held whole), decoded as strict
UTF-8 and checked with the SDK's own message parser (pydantic's, which is iterative and bounded: it refuses deep
nesting instead of recursing without end); a line it takes is passed on unchanged, and any other is answered here
with a JSON-RPC error: -32700 (parse error) when the line is not JSON the parser takes, -32600 (invalid request)
when it is JSON but no JSON-RPC message. The error carries the request's id when a linear scan of the line's first
`ID_SCAN_CHARS` characters finds one at the top level, and null otherwise. An empty line is no message, and is
skipped.
"""

from __future__ import annotations

import json
import os
import re
import sys
from contextlib import asynccontextmanager
from typing import Any, AsyncIterator, BinaryIO, Iterator, Optional, Tuple, Union

import anyio
import anyio.to_thread
import mcp_types as types
from pydantic import ValidationError

from refmem.protocol import MAX_LINE_BYTES
from refmem.serve import read_lines

ID_SCAN_CHARS = 65_536
"""How much of a refused line is searched for its id (the SDK's client writes `jsonrpc` and `id` first)."""

_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"\s*:?|[{}\[\]]|[^"{}\[\]]+|"')
_SCALAR_ID = re.compile(r'\s*(-?(?:0|[1-9][0-9]{0,17})|"(?:[^"\\]|\\.){0,256}")\s*[,}]')
_END = object()

RequestId = Union[int, str, None]


def request_id(text: str) -> RequestId:
    """The id of the top-level object `text` starts (an integer or a string), or None when none is found early.

    One pass over tokens, with the depth counted (no recursion): an `"id"` key at depth 1 whose value is a plain
    integer or a short string. A truncated or malformed prefix gives None, never an exception."""
    text = text[:ID_SCAN_CHARS]
    if not text.lstrip().startswith("{"):
        return None
    depth = 0
    for token in _TOKEN.finditer(text):
        piece = token.group()
        if piece in "{[":
            depth += 1
        elif piece in "}]":
            depth -= 1
            if depth <= 0:
                return None
        elif piece == '"':  # a string that does not end in the scanned part
            return None
        elif depth == 1 and piece.endswith(":") and piece[:-1].rstrip() == '"id"':
            value = _SCALAR_ID.match(text, token.end())
            if value is None:
                return None
            found = json.loads(value.group(1))
            return found if isinstance(found, (int, str)) else None
    return None


def _error(code: int, message: str, identifier: RequestId) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": identifier, "error": {"code": code, "message": message}}) + "\n"


def refusal(line: Optional[bytes]) -> Optional[str]:
    """None for a line the SDK takes; else the JSON-RPC error line that answers it. `line` None stands for a line
    longer than MAX_LINE_BYTES (its head is not kept, so its id is null)."""
    if line is None:
        return _error(types.PARSE_ERROR, f"Parse error: a message is at most {MAX_LINE_BYTES} bytes", None)
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        identifier = request_id(line[: exc.start].decode("utf-8"))
        return _error(types.PARSE_ERROR, f"Parse error: not UTF-8 (byte {exc.start})", identifier)
    try:
        types.jsonrpc_message_adapter.validate_json(text, by_name=False)
    except ValidationError as exc:
        problems = exc.errors(include_url=False, include_context=False, include_input=False)
        if any(problem.get("type") == "json_invalid" for problem in problems):
            why = str(problems[0].get("msg", "invalid JSON"))[:200]
            return _error(types.PARSE_ERROR, f"Parse error: {why}", request_id(text))
        return _error(types.INVALID_REQUEST, "Invalid request: not a JSON-RPC message", request_id(text))
    return None


class _Wire:
    """The client's end: lines in (bounded), whole lines out (one writer at a time: the SDK's replies and ours)."""

    def __init__(self, source: BinaryIO, sink: BinaryIO) -> None:
        self._lines: Iterator[Optional[Union[str, bytes]]] = read_lines(source, MAX_LINE_BYTES)
        self._sink = sink
        self._lock = anyio.Lock()

    def _next(self) -> Any:
        return next(self._lines, _END)

    def __aiter__(self) -> AsyncIterator[str]:
        return self._taken()

    async def _taken(self) -> AsyncIterator[str]:
        """The lines the SDK takes, unchanged; every other line is answered here."""
        while True:
            line = await anyio.to_thread.run_sync(self._next)
            if line is _END:
                return
            if line is not None and not bytes(line).strip():
                continue  # an empty line is no message: nothing waits for an answer to it
            answer = refusal(line if line is None else bytes(line))
            if answer is None:
                yield bytes(line).decode("utf-8")
            else:
                await self.write(answer)
                await self.flush()

    def _put(self, data: bytes) -> None:
        self._sink.write(data)
        self._sink.flush()

    async def write(self, text: str) -> None:
        async with self._lock:
            await anyio.to_thread.run_sync(self._put, text.encode("utf-8"))

    async def flush(self) -> None:
        """Every write is flushed whole."""


@asynccontextmanager
async def bounded_stdio() -> AsyncIterator[Tuple[Any, Any]]:
    """The SDK's stdio transport over this module's framing of fd 0 and 1. While it serves, fd 0 reads the null
    device and fd 1 writes to stderr, so nothing else in the process reads the client's lines or writes on the wire;
    both are put back afterwards."""
    from mcp.server.stdio import stdio_server

    sys.stdout.flush()
    wire_in, wire_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    try:
        with os.fdopen(wire_in, "rb", closefd=False) as source, os.fdopen(wire_out, "wb", closefd=False) as sink:
            wire = _Wire(source, sink)
            async with stdio_server(stdin=wire, stdout=wire) as streams:  # type: ignore[arg-type]
                yield streams
    finally:
        os.dup2(wire_in, 0)
        os.dup2(wire_out, 1)
        os.close(wire_in)
        os.close(wire_out)
