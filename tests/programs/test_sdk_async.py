"""The Anthropic SDK's async memory tool over the reference handler (`refmem.sdk.AsyncRefmemMemoryTool`), over the
filesystem, SQLite and PostgreSQL stores (the last on the tests' throwaway cluster): the sync tool's routing and
errors, commands on one worker thread that the event loop never waits on, and calls cancelled part way (the SDK
abandoning them) that leave every command whole: applied entirely or not at all, counted by tokens (D-SDK-ASYNC);
each cancelled call's outcome in `abandoned` (D-SDK-ASYNC-ABANDONED); one worker thread a tool, and 10,000 cancelled
calls that leave no thread, descriptor or server session behind; the conformance suite through the async target
(D-SDK-ASYNC-BOUNDS)."""

from __future__ import annotations

import asyncio
import gc
import os
import random
import threading
import time
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
    # each cut while it ran, so each recorded when it ended, with its result: applied, in the order of the calls
    assert [record.input for record in tool.abandoned] == [_inputs(number)[1] for number in range(calls)]
    assert all(record.applied and record.result is not None for record in tool.abandoned)
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


def _memory_threads() -> List[threading.Thread]:
    return [thread for thread in threading.enumerate() if thread.name.startswith("refmem-memory")]


@pytest.mark.parametrize("kind", STORES)
def test_the_executor_is_bounded_per_tool(kind: str, tmp_path: Path) -> None:
    """Three tools, 60 calls each at once: three worker threads in all, one a tool, never one a call."""
    before = len(_memory_threads())
    for folder in range(3):
        (tmp_path / f"tool{folder}").mkdir()
    tools = [_tool(kind, tmp_path / f"tool{number}") for number in range(3)]
    watched = []
    for tool in tools:
        watched.append(Watched(tool.handler.execute))
        tool.handler.execute = watched[-1]  # type: ignore[method-assign]
    most_threads = 0

    async def use() -> None:
        nonlocal most_threads
        calls = [
            tool.call({"command": "create", "path": f"/memories/t{number}.md", "file_text": "x"})
            for tool in tools
            for number in range(60)
        ]
        tasks = [asyncio.ensure_future(call) for call in calls]
        while not all(task.done() for task in tasks):
            most_threads = max(most_threads, len(_memory_threads()) - before)
            await asyncio.sleep(0)
        await asyncio.gather(*tasks)
        for tool in tools:
            await tool.aclose()

    asyncio.run(use())
    for tool in tools:
        if kind != "filesystem":
            tool.handler.store.close()
    assert [len(one.threads) for one in watched] == [60, 60, 60] and [one.most for one in watched] == [1, 1, 1]
    assert [len(set(one.threads)) for one in watched] == [1, 1, 1]
    assert len({one.threads[0] for one in watched}) == 3 and 1 <= most_threads <= 3
    for thread in _memory_threads():
        thread.join(timeout=60)
    assert len(_memory_threads()) == before  # closed tools leave no worker behind


@pytest.mark.parametrize("kind", STORES)
def test_a_cancelled_call_says_whether_its_command_applied(kind: str, tmp_path: Path) -> None:
    """Every call cancelled once it reached the tool has one record in `abandoned`, the very input it was given,
    and the record's `applied` is what the store holds: dropped before it began (no result, nothing there), or
    run whole (its result; applied unless the command failed, and then nothing changed)."""
    chooser = random.Random(30)
    numbered = [_inputs(number) for number in range(300)]
    failing = {"command": "str_replace", "path": LOG, "old_str": "no such line", "new_str": "x"}

    async def run() -> Tuple[AsyncRefmemMemoryTool, List[Tuple[str, Dict[str, Any], bool]], str, str]:
        tool = _tool(kind, tmp_path)
        await tool.call({"command": "create", "path": LOG, "file_text": "START\nEND\n"})
        said: List[Tuple[str, Dict[str, Any], bool]] = []
        for start in range(0, len(numbered), 30):
            batch = numbered[start : start + 30] + [("", dict(failing))]
            tasks = [asyncio.ensure_future(tool.call(tool_input)) for _token, tool_input in batch]
            cancel_after = [chooser.choice([1, 2, 3, 4, None]) for _ in tasks]  # from 1: each reached the tool
            for turn in range(5):
                await asyncio.sleep(0)
                for task, after in zip(tasks, cancel_after):
                    if after == turn + 1:
                        task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            said += [(token, tool_input, task.cancelled()) for (token, tool_input), task in zip(batch, tasks)]
        await tool.settled()
        log = await tool.call({"command": "view", "path": LOG})
        listing = await tool.call({"command": "view", "path": "/memories/own"})
        await tool.aclose()
        return tool, said, log, listing

    tool, said, log, listing = asyncio.run(run())
    lines = [line.split("\t", 1)[1] for line in log.split("\n")[1:]]
    cancelled = [(token, tool_input) for token, tool_input, was in said if was]
    # in the order each outcome became known (a command cut while it ran is recorded when it ends)
    by_input = {id(record.input): record for record in tool.abandoned}
    assert len(tool.abandoned) == len(by_input) == len(cancelled) and len(cancelled) >= 100
    assert all(by_input[id(tool_input)].input is tool_input for _token, tool_input in cancelled)
    outcomes = {"dropped": 0, "applied": 0, "failed": 0}
    for token, tool_input in cancelled:
        record = by_input[id(tool_input)]
        if tool_input["command"] == "create":
            present = f"/memories/own/{token}.md" in listing
        elif token:
            present = lines.count(token) == 1
        else:  # the failing edit: never a change
            present = False
        assert record.applied == present, (token, record)
        if record.result is None:
            outcomes["dropped"] += 1
        else:
            outcomes["applied" if record.applied else "failed"] += 1
            assert record.result.is_error == (not token)
    assert outcomes["dropped"] > 0, outcomes  # (calls cut while they run: the test below, every one of them)
    if kind != "filesystem":
        tool.handler.store.close()
    print(f"{kind}: {len(said)} calls, {len(cancelled)} cancelled: {outcomes}")


def _open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


def _server_sessions() -> int:
    from postgres_support import APP_ROLE, cluster

    with cluster().admin() as connection:
        row = connection.execute("SELECT count(*) FROM pg_stat_activity WHERE usename = %s", (APP_ROLE,)).fetchone()
    return int(row[0])


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts descriptors in /proc/self/fd")
@pytest.mark.parametrize("kind", STORES)
def test_ten_thousand_cancelled_calls_leak_no_thread_and_no_connection(kind: str, tmp_path: Path) -> None:
    """100 tools, each over a store opened for it (closed after), each with 100 calls cancelled once queued: the
    threads, open descriptors and (PostgreSQL) server sessions are those of before, counted, not timed."""
    tools_made, calls_each = 100, 100
    (tmp_path / "warm").mkdir()
    warm = _tool(kind, tmp_path / "warm")  # imports, the cluster, the first connection: before the counts
    if kind != "filesystem":
        warm.handler.store.close()
    warm.close()
    for thread in _memory_threads():
        thread.join(timeout=60)
    gc.collect()  # what earlier tests left for the collector (their stores' files) goes before the counts
    threads, descriptors = threading.active_count(), _open_descriptors()
    sessions = _server_sessions() if kind == "postgresql" else 0

    kept: List[AsyncRefmemMemoryTool] = []  # alive to the end: a worker a closed tool kept would still be running

    async def one_tool(number: int) -> Tuple[int, int]:
        where = tmp_path / f"t{number % 4}"
        where.mkdir(exist_ok=True)
        tool = _tool(kind, where)
        kept.append(tool)
        inputs: List[Dict[str, Any]] = [
            {"command": "view", "path": "/memories"} if call % 2 else
            {"command": "create", "path": f"/memories/c{number}-{call}.md", "file_text": "x\n"}
            for call in range(calls_each)
        ]
        tasks = [asyncio.ensure_future(tool.call(tool_input)) for tool_input in inputs]
        await asyncio.sleep(0)  # every call reached the tool and waits on its worker
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await tool.settled()
        cancelled, recorded = sum(task.cancelled() for task in tasks), len(tool.abandoned)
        await tool.aclose()
        if kind != "filesystem":
            tool.handler.store.close()
        return cancelled, recorded

    async def run() -> List[Tuple[int, int]]:
        return [await one_tool(number) for number in range(tools_made)]

    counted = asyncio.run(run())
    assert sum(cancelled for cancelled, _recorded in counted) == tools_made * calls_each == 10_000
    assert all(recorded == calls_each for _cancelled, recorded in counted) and len(kept) == tools_made
    deadline = time.monotonic() + 60  # a worker ends once its last command has: waited for, never timed
    for thread in _memory_threads():
        thread.join(timeout=max(0.0, deadline - time.monotonic()))
    gc.collect()
    # no more than before (fewer when a thread or file of an earlier test's ends meanwhile): nothing left open
    assert threading.active_count() <= threads
    assert _open_descriptors() <= descriptors
    if kind == "postgresql":
        assert _server_sessions() <= sessions


def _conformance(target: str, where: Path, capsys: pytest.CaptureFixture[str]) -> str:
    from conformance.cli import main

    subset = [f"{family}-00[1-4]" for family in (
        "create", "delete", "rename", "insert", "str_replace", "view-dir", "view-file", "view-range", "options",
        "unicode", "crlf", "limits", "hidden", "sizes", "paths", "input",
    )]
    arguments = ["--target", target, "--profile", "standard", "--workdir", str(where)]
    status = main(arguments + [part for glob in subset for part in ("--run", glob)])
    out = capsys.readouterr().out
    assert status == 0, out[-3000:]
    return out


@pytest.mark.parametrize("kind", STORES)
def test_the_async_tool_passes_the_conformance_suite(
    kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The suite's standard profile through the async target (conformance/reference_async_target.py), each command
    awaited on the tool's worker, on each store. A subset: the first four cases of every command's family, and of
    paths, input, options, limits, sizes, unicode and line endings (about 60 cases, seconds); the whole suite takes
    over two minutes a store on a loaded machine (`python -m refmem_conformance --target
    python:refmem_conformance.reference_async_target:make_sqlite --profile standard`: 2,038 cases pass)."""
    factory = {"filesystem": "make", "sqlite": "make_sqlite", "postgresql": "make_postgres"}[kind]
    if kind == "postgresql":
        from postgres_support import cluster

        monkeypatch.setenv("REFMEM_CONFORMANCE_POSTGRES", cluster().location_dsn(tmp_path))
    where = Path("/dev/shm") if os.access("/dev/shm", os.W_OK) else tmp_path
    out = _conformance(f"python:refmem_conformance.reference_async_target:{factory}", where, capsys)
    assert "refmem (async SDK tool)" in out and "verdict: PASS" in out
    passed = int(out.split(" pass, ", 1)[0].rsplit("\n", 1)[-1].strip())
    assert passed >= 50, out[-2000:]


@pytest.mark.parametrize("kind", STORES)
def test_a_failing_command_cut_while_it_runs_is_recorded_as_not_applied(kind: str, tmp_path: Path) -> None:
    failing = {"command": "str_replace", "path": LOG, "old_str": "no such line", "new_str": "x"}
    tool = _tool(kind, tmp_path)
    begun, release = threading.Event(), threading.Event()

    def hold() -> None:
        begun.set()
        assert release.wait(timeout=60)

    async def run() -> str:
        await tool.call({"command": "create", "path": LOG, "file_text": "START\nEND\n"})
        tool.handler.execute = Watched(tool.handler.execute, hold)  # type: ignore[method-assign]
        task = asyncio.ensure_future(tool.call(failing))
        while not begun.is_set():
            await asyncio.sleep(0.001)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        assert task.cancelled() and list(tool.abandoned) == []  # still running: its outcome is not known yet
        release.set()
        await tool.settled()
        shown = await tool.call({"command": "view", "path": LOG})
        await tool.aclose()
        return shown

    shown = asyncio.run(run())
    (record,) = tool.abandoned
    assert record.input is failing and record.result is not None and record.result.is_error
    assert not record.applied and shown.endswith("1\tSTART\n     2\tEND")
    if kind != "filesystem":
        tool.handler.store.close()
