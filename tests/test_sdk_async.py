"""The Anthropic SDK's async memory tool over the reference handler (`refmem.sdk.AsyncRefmemMemoryTool`), over the
filesystem, SQLite and PostgreSQL stores (the last on the tests' throwaway cluster): the sync tool's routing and
errors, commands on one worker thread that the event loop never waits on, and calls cancelled part way (the SDK
abandoning them) that leave every command whole: applied entirely or not at all, counted by tokens (D-SDK-ASYNC)."""

from __future__ import annotations

import asyncio
import random
import threading
from pathlib import Path
from typing import Any, Callable, Dict, List, Tuple

import pytest

pytest.importorskip("anthropic")

from anthropic.lib.tools import BetaAsyncAbstractMemoryTool, ToolError  # noqa: E402
from anthropic.types.beta import BetaMemoryTool20250818ViewCommand  # noqa: E402

from refmem import MemoryHandler  # noqa: E402
from refmem.sdk import AsyncRefmemMemoryTool  # noqa: E402
from refmem.stores.sqlite import SqliteStore  # noqa: E402

STORES = ["filesystem", "sqlite", "postgresql"]
LOG = "/memories/log.md"


def _store(kind: str, tmp_path: Path) -> Any:
    if kind == "sqlite":
        return SqliteStore(tmp_path / "memory.db")
    from postgres_support import open_store  # the session's cluster; skips (fails in CI) where none can start

    return open_store(tmp_path)


def _tool(kind: str, tmp_path: Path, **options: Any) -> AsyncRefmemMemoryTool:
    if kind == "filesystem":
        return AsyncRefmemMemoryTool(tmp_path / "memories", **options)
    return AsyncRefmemMemoryTool(_store(kind, tmp_path), **options)


def _reopened(kind: str, tmp_path: Path) -> MemoryHandler:
    """A second handler over the same storage, as another process would open it: what was committed."""
    if kind == "filesystem":
        return MemoryHandler(tmp_path / "memories")
    return MemoryHandler(_store(kind, tmp_path))


@pytest.mark.parametrize("kind", STORES)
def test_async_sdk_tool_routes_to_the_handler_and_raises_tool_error(kind: str, tmp_path: Path) -> None:
    tool = _tool(kind, tmp_path, read_only=False)

    async def use() -> None:
        async with tool:
            assert isinstance(tool, BetaAsyncAbstractMemoryTool)
            assert tool.to_dict() == {"type": "memory_20250818", "name": "memory"}
            created = await tool.call({"command": "create", "path": "/memories/n.md", "file_text": "hi\n"})
            assert created == "File created successfully at: /memories/n.md"
            typed = BetaMemoryTool20250818ViewCommand(command="view", path="/memories/n.md")
            expected = "Here's the content of /memories/n.md with line numbers:\n     1\thi"
            assert await tool.view(typed) == expected
            assert await tool.execute(typed) == expected  # the SDK's own dispatch reaches the same method
            with pytest.raises(ToolError) as raised:
                await tool.call({"command": "view", "path": "/memories/../etc/passwd"})
            assert str(raised.value) == (
                'Error: Invalid path /memories/../etc/passwd: "." and ".." segments are not allowed.'
            )
            with pytest.raises(ToolError):
                await tool.call("not a command")  # anything a model sends is a result, never a traceback

    asyncio.run(use())
    # closed: a call is still answered as the closed handler answers, with a result, never a traceback
    if kind == "filesystem":
        with pytest.raises(ToolError, match="^Error: Could not read /memories/n.md"):
            asyncio.run(tool.call({"command": "view", "path": "/memories/n.md"}))
    else:  # a store given to the handler is its owner's to close: still open
        assert asyncio.run(tool.call({"command": "view", "path": "/memories/n.md"})).endswith("1\thi")
        tool.handler.store.close()


class Watched:
    """The handler's `execute`, recording the thread of each call and how many ran at once."""

    def __init__(self, execute: Callable[[Any], Any], before: Callable[[], None] = lambda: None) -> None:
        self.execute, self.before = execute, before
        self.threads: List[int] = []
        self.running = self.most = 0
        self.guard = threading.Lock()

    def __call__(self, tool_input: Any) -> Any:
        with self.guard:
            self.running += 1
            self.most = max(self.most, self.running)
            self.threads.append(threading.get_ident())
        try:
            self.before()
            return self.execute(tool_input)
        finally:
            with self.guard:
                self.running -= 1


@pytest.mark.parametrize("kind", STORES)
def test_commands_run_one_at_a_time_on_one_worker_thread(kind: str, tmp_path: Path) -> None:
    tool = _tool(kind, tmp_path)
    watched = Watched(tool.handler.execute)
    tool.handler.execute = watched  # type: ignore[method-assign]

    async def use() -> int:
        async with tool:
            calls = [
                tool.call({"command": "create", "path": f"/memories/f{number}.md", "file_text": f"{number}\n"})
                for number in range(40)
            ]
            await asyncio.gather(*calls)
        return threading.get_ident()

    loop_thread = asyncio.run(use())
    assert len(watched.threads) == 40 and watched.most == 1
    assert len(set(watched.threads)) == 1 and loop_thread not in watched.threads


@pytest.mark.parametrize("kind", STORES)
def test_the_loop_runs_while_a_command_waits_on_the_store(kind: str, tmp_path: Path) -> None:
    ticks = 0
    release = threading.Event()
    seen_when_released: List[int] = []

    def wait_for_the_loop() -> None:  # the command blocks until the loop has ticked 50 times
        release.wait(timeout=60)
        seen_when_released.append(ticks)

    tool = _tool(kind, tmp_path)
    tool.handler.execute = Watched(tool.handler.execute, wait_for_the_loop)  # type: ignore[method-assign]

    async def ticking() -> None:
        nonlocal ticks
        while ticks < 50:
            ticks += 1
            await asyncio.sleep(0)
        release.set()

    async def use() -> str:
        async with tool:
            call = asyncio.ensure_future(tool.call({"command": "create", "path": "/memories/a.md", "file_text": "a"}))
            await ticking()
            return await call

    assert asyncio.run(use()) == "File created successfully at: /memories/a.md"
    assert seen_when_released == [50]  # a loop blocked by the call could not have ticked before it ended


def _inputs(number: int) -> Tuple[str, Dict[str, Any]]:
    """The command of call `number` and the token it adds: an append by str_replace, an insert at the top, or a
    file of its own."""
    token = f"token-{number:05d}"
    kind = number % 3
    if kind == 0:
        return token, {"command": "str_replace", "path": LOG, "old_str": "END\n", "new_str": f"{token}\nEND\n"}
    if kind == 1:
        return token, {"command": "insert", "path": LOG, "insert_line": 0, "insert_text": f"{token}\n"}
    return token, {"command": "create", "path": f"/memories/own/{token}.md", "file_text": f"{token}\n"}


@pytest.mark.parametrize("kind", STORES)
def test_calls_cancelled_in_flight_leave_every_command_whole(kind: str, tmp_path: Path) -> None:
    rounds, per_round = 12, 40
    chooser = random.Random(18)

    async def one_round(tool: AsyncRefmemMemoryTool, start: int) -> List[Tuple[str, Dict[str, Any], str]]:
        numbered = [_inputs(number) for number in range(start, start + per_round)]
        tasks = [asyncio.ensure_future(tool.call(tool_input)) for _token, tool_input in numbered]
        # each call is cancelled after 0 to 5 turns of the loop, or left alone: a cancel lands before the call
        # reaches the worker, while it waits in the worker's queue, while it runs, or after it returned
        cancel_after = [chooser.choice([0, 1, 2, 3, 4, 5, None]) for _ in tasks]
        for turn in range(6):
            for task, after in zip(tasks, cancel_after):
                if after == turn:
                    task.cancel()
            await asyncio.sleep(0)
        outcomes = await asyncio.gather(*tasks, return_exceptions=True)
        said = []
        for (token, tool_input), outcome in zip(numbered, outcomes):
            if isinstance(outcome, asyncio.CancelledError):
                said.append((token, tool_input, "cancelled"))
            elif isinstance(outcome, BaseException):
                said.append((token, tool_input, f"raised {outcome!r}"))
            else:
                said.append((token, tool_input, "done"))
        return said

    async def run() -> Tuple[List[Tuple[str, Dict[str, Any], str]], str, str]:
        async with _tool(kind, tmp_path) as tool:
            await tool.call({"command": "create", "path": LOG, "file_text": "START\nEND\n"})
            said: List[Tuple[str, Dict[str, Any], str]] = []
            for start in range(0, rounds * per_round, per_round):
                said += await one_round(tool, start)
            # queued behind whatever cancelled command still runs on the worker: the state once all have ended
            log = await tool.call({"command": "view", "path": LOG})
            listing = await tool.call({"command": "view", "path": "/memories/own"})
        return said, log, listing

    said, log, listing = asyncio.run(run())
    lines = [line.split("\t", 1)[1] for line in log.split("\n")[1:]]
    assert [status for _token, _input, status in said if status not in ("done", "cancelled")] == []
    assert lines.count("START") == 1 and lines[-1] == "END" and lines.count("END") == 1
    in_log = [line for line in lines if line not in ("START", "END")]
    assert all(line.startswith("token-") for line in in_log)  # nothing but whole lines a command wrote
    assert len(in_log) == len(set(in_log))  # no command applied twice

    reopened = _reopened(kind, tmp_path)
    try:
        assert reopened.execute({"command": "view", "path": LOG}).output == log  # committed, as shown
        applied = cancelled_applied = cancelled = 0
        for token, tool_input, status in said:
            if tool_input["command"] == "create":
                shown = reopened.execute({"command": "view", "path": tool_input["path"]})
                present = not shown.is_error
                if present:  # a file made at all is whole
                    assert shown.output.endswith(f"\n     1\t{token}"), shown.output
                assert (f"/memories/own/{token}.md" in listing) == present
            else:
                present = in_log.count(token) == 1
            if status == "done":
                assert present, f"{token}: the call returned, but its change is not in the store"
            else:
                cancelled += 1
                cancelled_applied += present
            applied += present
    finally:
        reopened.close()
    assert applied == len(in_log) + listing.count("/memories/own/token-")  # every token counted is a command's
    assert cancelled >= rounds  # every round cancels calls (at least those cancelled before their first turn)
    print(f"{kind}: {len(said)} calls, {cancelled} cancelled, {cancelled_applied} of them applied whole")


@pytest.mark.parametrize("kind", STORES)
def test_every_call_cancelled_while_its_command_runs_is_applied_whole_once(kind: str, tmp_path: Path) -> None:
    calls = 150
    tool = _tool(kind, tmp_path)
    started: List[asyncio.Event] = []
    released: List[threading.Event] = []  # one per call: a shared event cleared by the worker raced the next set
    loop_of_test: List[asyncio.AbstractEventLoop] = []

    def hold_until_cancelled() -> None:  # on the worker: tell the loop the command began, wait for its cancel
        event, release = started[-1], released[-1]  # the loop adds the next ones only once `event` is set
        loop_of_test[0].call_soon_threadsafe(event.set)
        assert release.wait(timeout=60), "the test never released the command"

    watched = Watched(tool.handler.execute, hold_until_cancelled)

    async def run() -> Tuple[List[bool], str]:
        loop_of_test.append(asyncio.get_running_loop())
        cancelled = []
        async with tool:
            await tool.call({"command": "create", "path": LOG, "file_text": "START\nEND\n"})
            tool.handler.execute = watched  # type: ignore[method-assign]
            for number in range(calls):
                started.append(asyncio.Event())
                released.append(threading.Event())
                task = asyncio.ensure_future(tool.call(_inputs(number)[1]))
                await started[-1].wait()  # the command is running on the worker, held there
                task.cancel()
                await asyncio.sleep(0)  # the awaiting task sees its cancellation first...
                cancelled.append(task.cancelled())
                released[-1].set()  # ...then the command goes on to its end
                await asyncio.gather(task, return_exceptions=True)
            started.append(asyncio.Event())
            released.append(threading.Event())
            started[-1].set()
            released[-1].set()
            log = await tool.call({"command": "view", "path": LOG})
        return cancelled, log

    cancelled, log = asyncio.run(run())
    assert cancelled == [True] * calls and watched.most == 1
    reopened = _reopened(kind, tmp_path)
    try:
        assert reopened.execute({"command": "view", "path": LOG}).output == log
        lines = [line.split("\t", 1)[1] for line in log.split("\n")[1:]]
        for number in range(calls):
            token, tool_input = _inputs(number)
            if tool_input["command"] == "create":
                shown = reopened.execute({"command": "view", "path": tool_input["path"]}).output
                assert shown.endswith(f"\n     1\t{token}"), f"{token}: {shown}"
            else:
                assert lines.count(token) == 1, f"{token}: cancelled while it ran, and not applied exactly once"
    finally:
        reopened.close()
    assert len(lines) == 2 + calls - calls // 3  # START, END and one line per edit: nothing else, nothing torn
