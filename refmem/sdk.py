"""The reference handler as an Anthropic Python SDK memory tool (optional: needs `refmem[anthropic]`).

`RefmemMemoryTool(root)` plugs into the SDK's tool runner like its own memory tools do, but every
command goes through `MemoryHandler`: error results are raised as the SDK's `ToolError`, which the
runner sends back with `is_error` set. `AsyncRefmemMemoryTool(root)` is the same for the SDK's async
runner. Importing this module imports `anthropic`; nothing else in `refmem` does, and without it the
import fails with an ImportError that says what to install.
"""

from __future__ import annotations

import asyncio
import collections
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Deque, NamedTuple, Optional, TypeVar, Union

from .handler import MemoryHandler
from .messages import Result
from .store_protocol import Store

INSTALL_HINT = 'refmem.sdk needs the Anthropic Python SDK (anthropic>=0.69): pip install "refmem[anthropic]"'

try:
    from anthropic.lib.tools import BetaAbstractMemoryTool, BetaAsyncAbstractMemoryTool, ToolError
except ImportError as missing:  # not installed, or too old to have the memory tool base class
    raise ImportError(INSTALL_HINT, name=missing.name) from missing

__all__ = ["ABANDONED_KEPT", "Abandoned", "AsyncRefmemMemoryTool", "RefmemMemoryTool"]

ABANDONED_KEPT = 1000
"""How many abandoned calls an async tool remembers (`AsyncRefmemMemoryTool.abandoned`): the oldest go first."""

_Done = TypeVar("_Done")


def _as_input(command: Any) -> Any:
    """The SDK hands typed command objects to the methods; the handler wants the plain input."""
    if hasattr(command, "to_dict"):
        return command.to_dict()
    return command


class RefmemMemoryTool(BetaAbstractMemoryTool):
    """A `BetaAbstractMemoryTool` backed by the reference handler over `root`: a directory, or any
    `refmem.store_protocol.Store` (the handler's options, `tenant` included, pass through)."""

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


class Abandoned(NamedTuple):
    """A call of the async tool whose awaiting task was cancelled, and what became of its command (D-SDK-ASYNC).

    `input` is the very object the call was given (compare with `is`). `result` is the handler's result of the
    command, or None when the command had not begun when the call was cancelled, and never will: nothing of it was
    applied. A command either ran whole or not at all, so `applied` (it ran and did not fail) says whether the
    store holds its change; a failed command changed nothing.
    """

    input: Any
    result: Optional[Result]

    @property
    def applied(self) -> bool:
        return self.result is not None and not self.result.is_error


class _Call:
    """One call's command on its way to the worker: whether it began, its result, and whether it was abandoned,
    under one lock, so that exactly one `Abandoned` is recorded for a cancelled call, by whichever side learns
    the outcome last (the worker when the command ends, the loop when the cancel lands)."""

    __slots__ = ("tool_input", "lock", "begun", "result", "abandoned")

    def __init__(self, tool_input: Any) -> None:
        self.tool_input = tool_input
        self.lock = threading.Lock()
        self.begun = self.abandoned = False
        self.result: Optional[Result] = None


class AsyncRefmemMemoryTool(BetaAsyncAbstractMemoryTool):
    """A `BetaAsyncAbstractMemoryTool` backed by the reference handler over `root` (a directory, or any
    `refmem.store_protocol.Store`; the handler's options, `tenant` included, pass through), or by a `MemoryHandler`
    already made.

    The handler's work is blocking file or database work, so every command runs on a worker thread of the
    tool's own, one command at a time in the order the calls came: the event loop never waits on the
    store, and the store sees one caller, whose locking (the write lock, the transaction) holds as for the
    sync tool. A call whose awaiting task is cancelled (the SDK abandoning it on a timeout) is never cut
    part way: a command not yet begun is dropped whole, one begun runs to its end on the worker, each
    all-or-nothing as the handler makes it (D-SDK-ASYNC). What became of each cancelled call is in
    `abandoned` (the last `ABANDONED_KEPT`, oldest first), once known: `await settled()` waits for the
    commands queued so far. Building the tool opens the store on the caller's thread, as the sync tool
    does; `aclose()` (or `async with`) closes it after the commands already queued.
    """

    def __init__(self, root: Union[str, os.PathLike[str], Store, MemoryHandler], **handler_options: Any) -> None:
        super().__init__()
        if isinstance(root, MemoryHandler):  # a handler already made and configured: the tool's to close
            if handler_options:
                raise TypeError("a MemoryHandler given to the tool comes configured: no handler options")
            self.handler = root
        else:
            self.handler = MemoryHandler(root, **handler_options)
        self.abandoned: Deque[Abandoned] = collections.deque(maxlen=ABANDONED_KEPT)
        """The calls whose awaiting task was cancelled, each with its command's result (None: never begun)."""
        self._worker: Optional[ThreadPoolExecutor] = ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="refmem-memory"
        )

    async def _run(self, tool_input: Any) -> str:
        call = _Call(tool_input)
        try:
            result = await self._on_worker(self._execute, call)
        except asyncio.CancelledError:
            with call.lock:
                call.abandoned = True
                if not call.begun or call.result is not None:  # dropped whole, or ended before the cancel landed
                    self.abandoned.append(Abandoned(tool_input, call.result))
            raise
        if result is None:  # not reached: only an abandoned call is dropped
            raise asyncio.CancelledError
        if result.is_error:
            raise ToolError(result.output)
        return result.output

    def _execute(self, call: _Call) -> Optional[Result]:
        """On the worker: the call's command, unless its call was abandoned before it began."""
        with call.lock:
            if call.abandoned:
                return None
            call.begun = True
        result = self.handler.execute(call.tool_input)
        with call.lock:
            call.result = result
            if call.abandoned:  # cancelled while it ran: the loop left the record to this side
                self.abandoned.append(Abandoned(call.tool_input, result))
        return result

    async def settled(self) -> None:
        """Wait until every command queued before this call has ended (and so every earlier abandoned call is in
        `abandoned`)."""
        await self._on_worker(lambda: None)

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
