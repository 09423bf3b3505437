"""The reference handler as an Anthropic Python SDK memory tool (optional: needs `refmem[anthropic]`).

`RefmemMemoryTool(root)` plugs into the SDK's tool runner like its own memory tools do, but every
command goes through `MemoryHandler`: error results are raised as the SDK's `ToolError`, which the
runner sends back with `is_error` set. Importing this module imports `anthropic`; nothing else in
`refmem` does, and without it the import fails with an ImportError that says what to install.
"""

from __future__ import annotations

import os
from typing import Any, Union

from .handler import MemoryHandler
from .messages import Result
from .storage import Store

INSTALL_HINT = 'refmem.sdk needs the Anthropic Python SDK (anthropic>=0.69): pip install "refmem[anthropic]"'

try:
    from anthropic.lib.tools import BetaAbstractMemoryTool, ToolError
except ImportError as missing:  # not installed, or too old to have the memory tool base class
    raise ImportError(INSTALL_HINT, name=missing.name) from missing

__all__ = ["RefmemMemoryTool"]


def _as_input(command: Any) -> Any:
    """The SDK hands typed command objects to the methods; the handler wants the plain input."""
    if hasattr(command, "to_dict"):
        return command.to_dict()
    return command


class RefmemMemoryTool(BetaAbstractMemoryTool):
    """A `BetaAbstractMemoryTool` backed by the reference handler over `root`: a directory, or any
    `refmem.storage.Store` (the handler's options, `tenant` included, pass through)."""

    def __init__(self, root: Union[str, os.PathLike[str], Store], **handler_options: Any) -> None:
        super().__init__()
        self.handler = MemoryHandler(root, **handler_options)

    def _run(self, tool_input: Any) -> str:
        result: Result = self.handler.execute(tool_input)
        if result.is_error:
            raise ToolError(result.output)
        return result.output

    def call(self, input: object) -> str:  # noqa: A002 - the SDK's parameter name
        # The raw input goes straight to the handler, which checks it itself: the SDK's typed
        # construction would otherwise be a second, looser parser in front of ours.
        return self._run(input)

    def view(self, command: Any) -> str:
        return self._run(_as_input(command))

    def create(self, command: Any) -> str:
        return self._run(_as_input(command))

    def str_replace(self, command: Any) -> str:
        return self._run(_as_input(command))

    def insert(self, command: Any) -> str:
        return self._run(_as_input(command))

    def delete(self, command: Any) -> str:
        return self._run(_as_input(command))

    def rename(self, command: Any) -> str:
        return self._run(_as_input(command))
