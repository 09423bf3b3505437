"""Search without a rescan (D-OPENCLAW-INDEX-FRESH): the index learns of refmem's writes at once, of
other programs' edits by the cheap check of every search (folder times) or the full scan at its interval;
no search scans the workspace while nothing says it changed. Work is counted, never timed."""

from __future__ import annotations

import datetime
import os
import pathlib
from typing import Any, List

from refmem import MemoryHandler
from refmem.openclaw import OpenClawLimits, OpenClawMemory, changes
from refmem.openclaw.disk import Disk

from .openclaw_support import NOW, paths_of, write


class CountingDisk(Disk):
    scans: List[Any] = []
    reads: List[str] = []

    def scan(self, *args: Any, **kwargs: Any) -> Any:
        CountingDisk.scans.append(args)
        return super().scan(*args, **kwargs)

    def read_file(self, parts: Any, limit: int) -> Any:
        CountingDisk.reads.append("/".join(parts))
        return super().read_file(parts, limit)


def counted(case: pathlib.Path, **kwargs: Any) -> OpenClawMemory:
    memory = OpenClawMemory(case / "memories", clock=lambda: NOW, **kwargs)
    memory.disk = CountingDisk(memory.root)
    CountingDisk.scans, CountingDisk.reads = [], []
    return memory


def seed(case: pathlib.Path, count: int = 30) -> None:
    for n in range(count):
        write(case, f"memory/notes/n{n}.md", f"note {n} about bananas\n")
    write(case, "MEMORY.md", "- apples are red\n")


def test_searches_do_not_rescan_while_nothing_changed(case: pathlib.Path) -> None:
    seed(case)
    memory = counted(case)
    memory.memory_search("bananas")
    assert len(CountingDisk.scans) == 1 and len(CountingDisk.reads) == 31  # the handler's first search scans
    for _ in range(20):
        memory.memory_search("bananas")
    assert len(CountingDisk.scans) == 1 and len(CountingDisk.reads) == 31


def test_a_refmem_log_is_seen_by_the_next_search_of_every_handler(case: pathlib.Path) -> None:
    seed(case)
    reader, writer = counted(case), OpenClawMemory(case / "memories")
    reader.memory_search("bananas")
    writer.append_daily("a quokka in the garden", datetime.date(2026, 11, 22))
    assert paths_of(reader.memory_search("quokka")) == ["memory/2026-11-22.md"]
    assert len(CountingDisk.scans) == 1 and CountingDisk.reads[-1:] == ["memory/2026-11-22.md"]


def test_the_memory_tool_s_writes_are_seen_by_the_next_search(case: pathlib.Path) -> None:
    seed(case)
    memory = counted(case)
    handler = MemoryHandler(case / "memories")
    memory.memory_search("bananas")
    handler.execute({"command": "create", "path": "/memories/memory/notes/new.md", "file_text": "a quokka\n"})
    assert paths_of(memory.memory_search("quokka")) == ["memory/notes/new.md"]
    handler.execute({"command": "str_replace", "path": "/memories/MEMORY.md", "old_str": "apples", "new_str": "pears"})
    assert paths_of(memory.memory_search("pears")) == ["MEMORY.md"]
    handler.execute({"command": "delete", "path": "/memories/memory/notes"})
    assert memory.memory_search("bananas")["results"] == []
    handler.execute({"command": "create", "path": "/memories/memory/deep/er/x.md", "file_text": "kiwi\n"})
    assert paths_of(memory.memory_search("kiwi")) == ["memory/deep/er/x.md"]
    assert len(CountingDisk.scans) == 2  # the first search, and the new folder's own scan
    handler.close()


def test_an_edit_in_place_is_seen_once_the_interval_is_due(case: pathlib.Path, monkeypatch: Any) -> None:
    """Without kernel notices (REFMEM_WATCH=0, or no inotify): the interval's full scan."""
    monkeypatch.setenv("REFMEM_WATCH", "0")
    seed(case, 3)
    memory = counted(case, limits=OpenClawLimits(scan_interval_ms=3_600_000))
    memory.memory_search("bananas")
    target = case / "memories" / "memory" / "notes" / "n1.md"
    with open(target, "a", encoding="utf-8") as handle:  # in place: the folder's name list is the same
        handle.write("cherries\n")
    fresh = memory._fresh()
    for parts in list(fresh.folders):  # folder times as a slow clock would leave them: old, unmoved
        os.utime(case / "memories" / "/".join(parts), ns=(1, 1))
        fresh.folders[parts] = (fresh.folders[parts][0]._replace(mtime_ns=1), fresh.folders[parts][1])
    assert memory.memory_search("cherries")["results"] == []  # within the interval: not yet
    fresh.sources[1].interval_ns = 0  # type: ignore[attr-defined]  # the interval is due
    assert paths_of(memory.memory_search("cherries")) == ["memory/notes/n1.md"]


def test_the_store_journal_plugs_in(case: pathlib.Path) -> None:
    """The seam: a store that offers `changes_since` is asked before each search."""
    seed(case, 3)
    memory = counted(case)
    asked: List[int] = []

    def changes_since(generation: int) -> Any:
        asked.append(generation)
        return generation + 1, ["/memories/memory/notes/n2.md"]

    memory.root.changes_since = changes_since  # type: ignore[attr-defined]
    memory.memory_search("bananas")
    memory.memory_search("bananas")
    assert asked == [0, 1]
    assert changes.journal(memory.root) is not None


def test_notices_that_fell_behind_ask_for_a_scan() -> None:
    key = (-1, -1)
    source = changes.Notices(key)
    changes.notify(key, ["memory/a.md"])
    token, found = source.changes_since(0)
    assert found == {"memory/a.md"}
    changes.notify(key, [f"memory/{n}.md" for n in range(changes.NOTICE_CAP + 5)])
    assert source.changes_since(token)[1] is None
