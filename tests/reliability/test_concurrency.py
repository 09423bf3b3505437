"""Concurrency: processes and threads editing the same files lose nothing; renames never overwrite.

str_replace and insert read, change and write back a whole file; without one lock shared by every
process, two edits that read the same version both "succeed" and one is silently lost. These tests
make that loss visible: every successful edit leaves a mark that must survive to the end.
"""

from __future__ import annotations

import multiprocessing
import os
import random
import re
import threading
import time
from pathlib import Path
from typing import Dict, List, Tuple

import pytest

from .reliability_support import MemoryHandler, all_temps, assert_clean_listing, explain, report

PROCESSES = int(os.environ.get("REFMEM_CONC_PROCESSES", "4"))
THREADS = int(os.environ.get("REFMEM_CONC_THREADS", "3"))
EDITS = int(os.environ.get("REFMEM_CONC_EDITS", "15"))
RACE_ROUNDS = int(os.environ.get("REFMEM_RACE_ROUNDS", "60"))

pytestmark = pytest.mark.skipif(
    "fork" not in multiprocessing.get_all_start_methods(), reason="needs the fork start method"
)
CTX = multiprocessing.get_context("fork") if "fork" in multiprocessing.get_all_start_methods() else None


def _in_threads(count: int, target, *args) -> List[object]:
    """Run target(thread_index, *args) in `count` threads; return results, re-raise failures."""
    results: List[object] = [None] * count
    errors: List[BaseException] = []

    def run(index: int) -> None:
        try:
            results[index] = target(index, *args)
        except BaseException as error:  # noqa: BLE001
            errors.append(error)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return results


def _in_processes(count: int, target, *args, timeout: float = 120) -> List[object]:
    """Run target(process_index, *args) in `count` forked processes; collect what they return."""
    queue = CTX.Queue()

    def main(index: int) -> None:
        try:
            queue.put((index, "ok", target(index, *args)))
        except BaseException as error:  # noqa: BLE001
            queue.put((index, "error", repr(error)))

    processes = [CTX.Process(target=main, args=(i,)) for i in range(count)]
    for process in processes:
        process.start()
    results: Dict[int, object] = {}
    failures = []
    deadline = time.monotonic() + timeout
    for _ in processes:
        index, status, value = queue.get(timeout=max(1, deadline - time.monotonic()))
        if status == "ok":
            results[index] = value
        else:
            failures.append(f"process {index}: {value}")
    for process in processes:
        process.join(10)
    assert not failures, "\n".join(failures)
    return [results[i] for i in range(count)]


# --- insert: every inserted line survives --------------------------------------------------------


def test_inserts_from_processes_and_threads_lose_nothing(root: Path) -> None:
    MemoryHandler(root).execute({"command": "create", "path": "/memories/log.md", "file_text": "head\n"})

    def process(p: int) -> int:
        handler = MemoryHandler(root)  # one handler per process, shared by its threads

        def thread(t: int) -> int:
            rng = random.Random(p * 100 + t)
            done = 0
            for k in range(EDITS):
                line = rng.choice([0, 1])
                result = handler.execute(
                    {"command": "insert", "path": "/memories/log.md", "insert_line": line,
                     "insert_text": f"p{p}-t{t}-{k}\n"}
                )
                assert not result.is_error, explain(handler, {}, result)
                done += 1
            return done

        return sum(_in_threads(THREADS, thread))

    started = time.monotonic()
    done = sum(_in_processes(PROCESSES, process))
    lines = (root / "log.md").read_text().split("\n")[:-1]
    expected = {f"p{p}-t{t}-{k}" for p in range(PROCESSES) for t in range(THREADS) for k in range(EDITS)}
    lost = expected - set(lines)
    report("concurrency-insert", processes=PROCESSES, threads=THREADS, inserts=done,
           lines_lost=len(lost), duplicates=len(lines) - len(set(lines)),
           seconds=round(time.monotonic() - started, 2))
    assert done == len(expected)
    assert not lost, f"{len(lost)} inserted lines lost, e.g. {sorted(lost)[:5]}"
    assert len(lines) == len(expected) + 1 and "head" in lines
    assert not all_temps(root)


# --- str_replace: a shared counter and per-worker counters ---------------------------------------


def test_str_replace_counters_lose_no_update(root: Path) -> None:
    workers = [(p, t) for p in range(PROCESSES) for t in range(THREADS)]
    text = "counter: 0\n" + "".join(f"w{p}_{t}: 0\n" for p, t in workers)
    MemoryHandler(root).execute({"command": "create", "path": "/memories/c.md", "file_text": text})
    path = "/memories/c.md"

    def process(p: int) -> Tuple[int, int]:
        handler = MemoryHandler(root)

        def thread(t: int) -> Tuple[int, int, List[str]]:
            shared = conflicts = 0
            view_errors: List[str] = []
            for own in range(EDITS):
                # my own line: I am its only writer, so every edit must succeed and stick
                result = handler.execute({"command": "str_replace", "path": path,
                                          "old_str": f"\nw{p}_{t}: {own}\n", "new_str": f"\nw{p}_{t}: {own + 1}\n"})
                assert not result.is_error, explain(handler, {}, result)
                # the shared counter: read, then compare-and-swap through str_replace
                view = handler.execute({"command": "view", "path": path, "view_range": [1, 1]})
                while view.is_error:  # a view racing a write must show old or new, never fail
                    view_errors.append(view.output)
                    view = handler.execute({"command": "view", "path": path, "view_range": [1, 1]})
                value = int(re.search(r"counter: (\d+)", view.output).group(1))
                result = handler.execute({"command": "str_replace", "path": path,
                                          "old_str": f"counter: {value}\n", "new_str": f"counter: {value + 1}\n"})
                if result.is_error:
                    assert "did not appear verbatim" in result.output, result.output
                    conflicts += 1
                else:
                    shared += 1
            return shared, conflicts, view_errors

        results = _in_threads(THREADS, thread)
        return sum(r[0] for r in results), sum(r[1] for r in results), [e for r in results for e in r[2]]

    started = time.monotonic()
    results = _in_processes(PROCESSES, process)
    successes = sum(r[0] for r in results)
    conflicts = sum(r[1] for r in results)
    view_errors = [e for r in results for e in r[2]]
    final = (root / "c.md").read_text()
    counter = int(re.search(r"counter: (\d+)", final).group(1))
    own_lost = [f"w{p}_{t}" for p, t in workers if f"\nw{p}_{t}: {EDITS}\n" not in final]
    report("concurrency-str_replace", processes=PROCESSES, threads=THREADS,
           own_line_edits=len(workers) * EDITS, own_line_updates_lost=len(own_lost),
           shared_counter_successes=successes, shared_counter_conflicts_refused=conflicts,
           shared_counter_final=counter, views_failed_during_writes=len(view_errors),
           seconds=round(time.monotonic() - started, 2))
    assert counter == successes, f"{successes} successful increments but the counter says {counter}"
    assert not own_lost, f"lost updates on {own_lost}"
    assert not all_temps(root)
    assert not view_errors, (
        f"{len(view_errors)} views failed while another process wrote the file, e.g. {view_errors[0]!r}"
    )


# --- rename: two (or more) renames racing for one destination -----------------------------------


def test_racing_renames_never_overwrite(root: Path) -> None:
    racers = max(2, PROCESSES)
    setup = MemoryHandler(root)
    for r in range(RACE_ROUNDS):
        for i in range(racers):
            if r % 3 == 2:  # folders race too
                setup.execute({"command": "create", "path": f"/memories/race/src{r}_{i}/inner.md",
                               "file_text": f"round {r} racer {i}\n"})
            else:
                setup.execute({"command": "create", "path": f"/memories/race/src{r}_{i}.md",
                               "file_text": f"round {r} racer {i}\n"})
    barrier = CTX.Barrier(racers)

    def process(i: int) -> List[Tuple[bool, str]]:
        handler = MemoryHandler(root)
        outcomes = []
        for r in range(RACE_ROUNDS):
            folder = r % 3 == 2
            src = f"/memories/race/src{r}_{i}" + ("" if folder else ".md")
            dst = f"/memories/race/dst{r}" + ("" if folder else ".md")
            barrier.wait(timeout=60)
            result = handler.execute({"command": "rename", "old_path": src, "new_path": dst})
            outcomes.append((result.is_error, result.output))
        return outcomes

    started = time.monotonic()
    results = _in_processes(racers, process)
    overwrites = 0
    for r in range(RACE_ROUNDS):
        folder = r % 3 == 2
        winners = [i for i in range(racers) if not results[i][r][0]]
        assert len(winners) == 1, f"round {r}: {len(winners)} renames succeeded"
        dst = f"/memories/race/dst{r}" + ("" if folder else ".md")
        for i in range(racers):
            if i not in winners:
                assert results[i][r][1] == f"Error: The destination {dst} already exists", results[i][r][1]
        winner = winners[0]
        dst_file = root / "race" / (f"dst{r}/inner.md" if folder else f"dst{r}.md")
        if dst_file.read_text() != f"round {r} racer {winner}\n":
            overwrites += 1
        for i in range(racers):
            src_file = root / "race" / (f"src{r}_{i}/inner.md" if folder else f"src{r}_{i}.md")
            assert src_file.exists() == (i != winner), f"round {r} racer {i}"
            if i != winner:
                assert src_file.read_text() == f"round {r} racer {i}\n"
    report("concurrency-rename-race", racers=racers, rounds=RACE_ROUNDS, overwrites=overwrites,
           seconds=round(time.monotonic() - started, 2))
    assert overwrites == 0


def test_racing_creates_of_one_path_keep_exactly_one(root: Path) -> None:
    racers = max(2, PROCESSES)
    barrier = CTX.Barrier(racers)
    rounds = RACE_ROUNDS

    def process(i: int) -> List[bool]:
        handler = MemoryHandler(root)
        out = []
        for r in range(rounds):
            barrier.wait(timeout=60)
            text = f"racer {i}\n" * (1 + (i * 997) % 3000)  # different sizes: a mix would show
            out.append(not handler.execute({"command": "create", "path": f"/memories/new/c{r}.md",
                                            "file_text": text}).is_error)
        return out

    results = _in_processes(racers, process)
    for r in range(rounds):
        winners = [i for i in range(racers) if results[i][r]]
        assert len(winners) == 1, f"round {r}: {winners}"
        i = winners[0]
        assert (root / "new" / f"c{r}.md").read_text() == f"racer {i}\n" * (1 + (i * 997) % 3000)
    assert not all_temps(root)


# --- two handlers on one root ---------------------------------------------------------------------


def test_two_handlers_on_one_root_stay_consistent(root: Path) -> None:
    first, second = MemoryHandler(root), MemoryHandler(root)
    files = [f"/memories/shared/f{i}.md" for i in range(5)]
    for path in files:
        assert not first.execute({"command": "create", "path": path, "file_text": "start\n"}).is_error

    def thread(t: int) -> int:
        handler = first if t % 2 == 0 else second
        rng = random.Random(t)
        count = 0
        for k in range(EDITS * 2):
            path = rng.choice(files)
            result = handler.execute({"command": "insert", "path": path, "insert_line": 1,
                                      "insert_text": f"t{t}-{k}"})
            assert not result.is_error, result.output
            count += 1
            other = second if handler is first else first
            view = other.execute({"command": "view", "path": path})
            assert not view.is_error and f"t{t}-{k}" in view.output, "the other handler does not see the write"
        return count

    total = sum(_in_threads(4, thread))
    seen = 0
    for path in files:
        a = first.execute({"command": "view", "path": path})
        b = second.execute({"command": "view", "path": path})
        assert a == b
        seen += len(a.output.split("\n")) - 2  # header and "start"
    assert seen == total
    assert assert_clean_listing(first) == assert_clean_listing(second)
    # a rename through one handler is seen by the other at once, and never overwrites
    assert not first.execute({"command": "rename", "old_path": files[0], "new_path": "/memories/moved.md"}).is_error
    assert second.execute({"command": "view", "path": files[0]}).is_error
    result = second.execute({"command": "rename", "old_path": files[1], "new_path": "/memories/moved.md"})
    assert result.output == "Error: The destination /memories/moved.md already exists"


# --- views racing writes -----------------------------------------------------------------------------


def test_views_racing_writes_show_old_or_new_never_an_error(root: Path) -> None:
    """Writes replace the file atomically, so a concurrent view has a whole version to show.

    Both sides go on until both have done their share (the writer `writes` edits, the reader as many views), so
    the race has the same size on a busy machine as on an idle one."""
    versions = {"A": "state: A\n" + "filler line\n" * 50, "B": "state: B\n" + "filler line\n" * 50}
    MemoryHandler(root).execute({"command": "create", "path": "/memories/v.md", "file_text": versions["A"]})
    writes = EDITS * 20
    written = CTX.Value("i", 0)
    viewed = CTX.Event()
    failed = CTX.Event()

    def writer(_: int) -> None:
        handler = MemoryHandler(root)
        k = 0
        while k < writes or not viewed.is_set():
            a, b = ("A", "B") if k % 2 == 0 else ("B", "A")
            result = handler.execute({"command": "str_replace", "path": "/memories/v.md",
                                      "old_str": f"state: {a}", "new_str": f"state: {b}"})
            if result.is_error:
                failed.set()
                raise AssertionError(result.output)
            k += 1
            written.value = k

    # The exact page of each whole version, from a handler that remembers nothing, in a folder of its own.
    pages = set()
    for name, content in versions.items():
        (root / f".pages-{name}").mkdir()
        (root / f".pages-{name}" / "v.md").write_text(content)
        alone = MemoryHandler(root / f".pages-{name}", view_cache_bytes=0, track_access=False)
        pages.add(alone.execute({"command": "view", "path": "/memories/v.md"}).output)
    reader = MemoryHandler(root)
    errors: List[str] = []
    views = 0
    process = CTX.Process(target=writer, args=(0,))
    process.start()
    deadline = time.monotonic() + 300  # a hang guard: both shares take a second or two
    try:
        while (views < writes or written.value < writes) and not failed.is_set() and process.is_alive():
            assert time.monotonic() < deadline, f"{views} views and {written.value} writes in 300 s"
            result = reader.execute({"command": "view", "path": "/memories/v.md"})
            views += 1
            if result.is_error:
                errors.append(result.output)
            else:
                assert result.output in pages, result.output[:200]  # a whole version, never a mix
    finally:
        viewed.set()
        process.join(60)
    report("concurrency-view-vs-write", writes=written.value, views=views, views_failed=len(errors))
    assert process.exitcode == 0 and not failed.is_set(), "a write failed while views ran"
    assert written.value >= writes and views >= writes
    assert not errors, f"{len(errors)} of {views} views failed during writes, e.g. {errors[0]!r}"
