"""langchain-anthropic's memory middlewares as conformance targets.

    refmem-conformance field --only langchain-anthropic-fs-1.7.10     # FilesystemClaudeMemoryMiddleware
    refmem-conformance field --only langchain-anthropic-state-1.7.10  # StateClaudeMemoryMiddleware

Each middleware builds one LangChain tool (`middleware.tools[0]`) whose function takes the tool runtime and the
command's fields; an agent's tool node calls it with the runtime it injects. This adapter calls that function the
same way, with a runtime of its own that carries the two things the function reads (`state`, `tool_call_id`), and
reads what it returns as the tool node would: a `Command` is a success whose `ToolMessage` is the text the model
sees; a plain string is what the function returns from its own `except` (an error). Fields are passed as the
model sends them, with no renaming: a field the function does not name is dropped and a missing `command` or
`path` is an error, as the tool node's argument check treats them (so the documented `insert_text` and `old_path`
reach it as the middleware itself would get them, i.e. not at all).

The state middleware keeps its files in the agent's state, which the graph carries from one call to the next: here
the adapter keeps it (the `update` of each `Command` merged into it by the package's own `files_reducer`, as the
graph's state schema says), so the storage is the adapter's own and
nothing is on disk. The filesystem middleware keeps `/memories/...` under `root_path/memories`: the root's parent.
"""

from __future__ import annotations

import importlib
import pathlib
import types
from typing import Any, Dict

HOMEPAGE = "https://github.com/langchain-ai/langchain/tree/master/libs/partners/anthropic"
FIELDS = ("command", "path", "file_text", "old_str", "new_str", "insert_line", "new_path", "view_range")
"""The fields of the middleware's tool function (after its runtime)."""


def _version() -> str:
    from importlib.metadata import version

    return version("langchain-anthropic")


class _Middleware:
    """One middleware's tool, called as the tool node calls it."""

    storage = "filesystem"

    def __init__(self, middleware: Any, label: str) -> None:
        self._middleware = middleware
        self._function = middleware.tools[0].func
        tools_module = importlib.import_module(type(middleware).__module__)
        self._reducer = getattr(tools_module, "files_reducer", None)
        self.state: Dict[str, Any] = {}
        self.implementation = {"name": f"langchain-anthropic {label}", "language": "python",
                               "version": _version(), "homepage": HOMEPAGE}

    def call(self, input: Any) -> Dict[str, Any]:
        if not isinstance(input, dict):
            return {"output": "the tool's input must be an object", "is_error": True}
        fields = {name: value for name, value in input.items() if name in FIELDS}
        missing = [name for name in ("command", "path") if name not in fields]
        if missing:
            return {"output": f"invalid arguments: missing {', '.join(missing)}", "is_error": True}
        runtime = types.SimpleNamespace(state=self.state, tool_call_id="call-1", config={}, context=None,
                                        store=None, stream_writer=None)
        value = self._function(runtime=runtime, **fields)
        if isinstance(value, str):
            return {"output": value, "is_error": True}
        update = dict(getattr(value, "update", None) or {})
        messages = update.pop("messages", [])
        for key, value in update.items():  # the graph applies each key's reducer: the package's own merge
            self.state[key] = self._reducer(self.state.get(key), value) if self._reducer else value
        text = "".join(str(getattr(message, "content", "")) for message in messages)
        failed = any(getattr(message, "status", "success") == "error" for message in messages)
        return {"output": text, "is_error": failed}


class _StateMiddleware(_Middleware):
    storage = "own"


def make_filesystem(root: pathlib.Path) -> Any:
    """FilesystemClaudeMemoryMiddleware whose `/memories` is `root` (which must be named memories)."""
    middleware = importlib.import_module("langchain_anthropic.middleware")
    root = pathlib.Path(root)
    if root.name != "memories":
        raise ValueError("the middleware keeps /memories in <root_path>/memories: the root must be named memories")
    made = middleware.FilesystemClaudeMemoryMiddleware(root_path=str(root.parent))
    return _Middleware(made, "FilesystemClaudeMemoryMiddleware")


def make_state(root: pathlib.Path) -> Any:
    """StateClaudeMemoryMiddleware, its state kept by this adapter between calls (nothing on disk)."""
    middleware = importlib.import_module("langchain_anthropic.middleware")
    return _StateMiddleware(middleware.StateClaudeMemoryMiddleware(), "StateClaudeMemoryMiddleware")
