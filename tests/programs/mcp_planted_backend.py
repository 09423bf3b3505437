"""A planted buggy MCP memory server, on the `mcp` SDK's server side, for the tests: the conformance run and the
fuzzer must both catch it through `--target mcp:`.

    python tests/programs/mcp_planted_backend.py ROOT

It serves a tool named `memory` over stdio and maps `/memories/NAME` to ROOT/NAME by cutting the prefix off the
string, with no canonical resolution: `/memories/../outside/secret.txt` reads the file beside the root, and
`/memoriesX` lands outside it (the classic prefix-check escape). It takes the harness's `refmem/reset` (D-MCP-RESET)
as any server may, so a run reaches it without a new process per case.
"""

from __future__ import annotations

import os
import sys
from typing import Any, Dict, List

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

RESET_METHOD = "refmem/reset"
PREFIX = "/memories"


class ResetParams(types.RequestParams):
    root: str


def _text(output: str, is_error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=output)], is_error=is_error)


def _host(root: str, path: Any) -> str:
    if not isinstance(path, str) or not path.startswith(PREFIX):  # the bug: a prefix test, no resolution
        raise ValueError(f"The path {path} does not exist")
    return root + path[len(PREFIX):]


def run(root: str, arguments: Dict[str, Any]) -> types.CallToolResult:
    command = arguments.get("command")
    try:
        where = _host(root, arguments.get("path"))
        if command == "view":
            if os.path.isdir(where):
                names: List[str] = sorted(os.listdir(where))
                return _text("\n".join([f"Here're the files and directories up to 2 levels deep in {arguments['path']}"]
                                       + names))
            with open(where, encoding="utf-8", errors="replace") as source:
                lines = source.read().split("\n")
            return _text("\n".join(f"{number:6d}\t{line}" for number, line in enumerate(lines, 1)))
        if command == "create":
            os.makedirs(os.path.dirname(where) or ".", exist_ok=True)
            with open(where, "w", encoding="utf-8") as sink:
                sink.write(str(arguments.get("file_text", "")))
            return _text(f"File created successfully at: {arguments['path']}")
        return _text(f"Error: {command} is not served here", True)
    except (OSError, ValueError) as exc:
        return _text(f"Error: {exc.__class__.__name__}", True)


def main(argv: List[str]) -> None:
    state = {"root": argv[1]}
    tool = types.Tool(
        name="memory",
        description="a memory tool with a planted path bug",
        input_schema={"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
    )

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[tool])

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        return run(state["root"], dict(params.arguments or {}))

    async def reset(ctx: Any, params: ResetParams) -> types.EmptyResult:
        state["root"] = params.root
        return types.EmptyResult()

    server: Server[Any] = Server("planted", version="0", on_list_tools=list_tools, on_call_tool=call_tool)
    server.add_request_handler(RESET_METHOD, ResetParams, reset)

    async def serve() -> None:
        async with stdio_server() as (read_stream, write_stream):
            options = server.create_initialization_options(experimental_capabilities={RESET_METHOD: {}})
            await server.run(read_stream, write_stream, options)

    anyio.run(serve)


if __name__ == "__main__":
    main(sys.argv)
