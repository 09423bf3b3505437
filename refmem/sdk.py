"""The reference handler as an Anthropic Python SDK memory tool (optional: needs `refmem[anthropic]`).

`RefmemMemoryTool(root)` plugs into the SDK's tool runner like its own memory tools do, but every
command goes through `MemoryHandler`: error results are raised as the SDK's `ToolError`, which the
runner sends back with `is_error` set. `AsyncRefmemMemoryTool(root)` is the same for the SDK's async
runner. Importing this module imports `anthropic`; nothing else in `refmem` does, and without it the
import fails with an ImportError that says what to install.
"""

from __future__ import annotations

import asyncio
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Optional, TypeVar, Union

from .handler import MemoryHandler
from .messages import Result
from .storage import Store

INSTALL_HINT = 'refmem.sdk needs the Anthropic Python SDK (anthropic>=0.69): pip install "refmem[anthropic]"'

try:
    from anthropic.lib.tools import BetaAbstractMemoryTool, BetaAsyncAbstractMemoryTool, ToolError
except ImportError as missing:  # not installed, or too old to have the memory tool base class
    raise ImportError(INSTALL_HINT, name=missing.name) from missing

__all__ = ["AsyncRefmemMemoryTool", "RefmemMemoryTool"]

_Done = TypeVar("_Done")


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

    def _command(self, command: Any) -> str:
        """Every command method: the SDK's typed command back to the plain input, which the handler checks."""
        return self._run(_as_input(command))

    view = create = str_replace = insert = delete = rename = _command


class AsyncRefmemMemoryTool(BetaAsyncAbstractMemoryTool):
    """A `BetaAsyncAbstractMemoryTool` backed by the reference handler over `root` (a directory, or any
    `refmem.storage.Store`; the handler's options, `tenant` included, pass through).

    The handler's work is blocking file or database work, so every command runs on a worker thread of the
    tool's own, one command at a time in the order the calls came: the event loop never waits on the
    store, and the store sees one caller, whose locking (the write lock, the transaction) holds as for the
    sync tool. A call whose awaiting task is cancelled (the SDK abandoning it on a timeout) is never cut
    part way: a command not yet begun is dropped whole, one begun runs to its end on the worker, each
    all-or-nothing as the handler makes it (D-SDK-ASYNC). Building the tool opens the store on the
    caller's thread, as the sync tool does; `aclose()` (or `async with`) closes it after the commands
    already queued.
    """

    def __init__(self, root: Union[str, os.PathLike[str], Store], **handler_options: Any) -> None:
        super().__init__()
        self.handler = MemoryHandler(root, **handler_options)
        self._worker: Optional[ThreadPoolExecutor] = ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="refmem-memory"
        )

    async def _run(self, tool_input: Any) -> str:
        result = await self._on_worker(self.handler.execute, tool_input)
        if result.is_error:
            raise ToolError(result.output)
        return result.output

    async def _on_worker(self, work: Callable[..., _Done], *args: Any) -> _Done:
        # after `aclose` (no worker): the loop's default executor, still never the loop's own thread
        return await asyncio.get_running_loop().run_in_executor(self._worker, work, *args)

    async def call(self, input: object) -> str:  # noqa: A002 - the SDK's parameter name
        # The raw input goes straight to the handler, which checks it itself (as in the sync tool).
        return await self._run(input)

    async def _command(self, command: Any) -> str:
        """Every command method, as in the sync tool."""
        return await self._run(_as_input(command))

    view = create = str_replace = insert = delete = rename = _command

    async def aclose(self) -> None:
        """Close the handler once the commands already queued have run (on the worker, so the loop does not
        wait on the store); a cancelled `aclose` still closes it there."""
        worker, self._worker = self._worker, None
        if worker is None:
            return
        closing = worker.submit(self.handler.close)
        worker.shutdown(wait=False)
        await asyncio.shield(asyncio.wrap_future(closing))

    def close(self) -> None:
        """Close from synchronous code: waits for the commands already queued, then closes the handler."""
        worker, self._worker = self._worker, None
        if worker is not None:
            worker.shutdown(wait=True)
            self.handler.close()

    async def __aenter__(self) -> AsyncRefmemMemoryTool:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()
