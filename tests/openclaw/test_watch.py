"""Kernel notices instead of the interval's rescan (D-OPENCLAW-INDEX-WATCH): a search after a pause does
the work of a search in a burst, and a change made by another program (new, edited in place, renamed,
removed) is seen by the next search. Work is counted (stat calls, full scans), never timed."""

from __future__ import annotations

import os
import pathlib
import time
from typing import Any, Iterator, List

import pytest

from refmem.openclaw import OpenClawMemory, watch

from .openclaw_support import NOW, paths_of, write

pytestmark = pytest.mark.skipif(watch.start("/") is None, reason="no inotify on this system")


@pytest.fixture()
def stats(monkeypatch: pytest.MonkeyPatch) -> Iterator[List[str]]:
    """Every stat call the process makes (os.stat, os.lstat, os.fstat), by name."""
    made: List[str] = []
    for name in ("stat", "lstat", "fstat"):
        original = getattr(os, name)

        def counting(*args: Any, _original: Any = original, _name: str = name, **kwargs: Any) -> Any:
            made.append(_name)
            return _original(*args, **kwargs)

        monkeypatch.setattr(os, name, counting)
    yield made


def workspace(case: pathlib.Path, files: int) -> OpenClawMemory:
    for n in range(files):
        write(case, f"memory/notes/{n // 100}/n{n}.md", f"note {n} about bananas and topic{n % 17}\n")
    memory = OpenClawMemory(case / "memories", clock=lambda: NOW, index="memory")
    memory.memory_search("bananas")  # the first search scans
    return memory


def test_a_search_after_a_pause_costs_what_a_search_in_a_burst_costs(tmp_path: pathlib.Path, stats: List[str]) -> None:
    memory = workspace(tmp_path, 1000)
    try:
        assert memory._fresh().method == "inotify"
        memory.memory_search("topic3")
        stats.clear()
        memory.memory_search("topic4")
        burst = len(stats)
        time.sleep(2.3)  # past the 2 s interval that used to mean a full scan (a pause, not a measurement)
        stats.clear()
        memory.memory_search("topic5")
        after_pause = len(stats)
        assert memory._fresh().full_scans == 1
        assert after_pause == burst and after_pause < 50, (burst, after_pause)  # a scan stats every file: 1,000+
    finally:
        memory.close()


def test_every_kind_of_change_is_seen_by_the_next_search(tmp_path: pathlib.Path) -> None:
    memory = workspace(tmp_path, 30)
    notes = tmp_path / "memories" / "memory" / "notes" / "0"
    try:
        fresh = memory._fresh()
        for parts in list(fresh.folders):  # folder times as a slow clock leaves them: only a notice can tell
            os.utime(tmp_path / "memories" / "/".join(parts), ns=(1, 1))
            fresh.folders[parts] = (fresh.folders[parts][0]._replace(mtime_ns=1), fresh.folders[parts][1])
        with open(notes / "n1.md", "a", encoding="utf-8") as handle:  # an edit in place
            handle.write("cherries\n")
        assert paths_of(memory.memory_search("cherries")) == ["memory/notes/0/n1.md"]
        (notes / "new.md").write_text("kiwi\n", encoding="utf-8")
        assert paths_of(memory.memory_search("kiwi")) == ["memory/notes/0/new.md"]
        os.rename(notes / "new.md", notes / "renamed.md")
        assert paths_of(memory.memory_search("kiwi")) == ["memory/notes/0/renamed.md"]
        os.unlink(notes / "renamed.md")
        assert memory.memory_search("kiwi")["results"] == []
        os.mkdir(notes / "deeper")
        (notes / "deeper" / "x.md").write_text("mango\n", encoding="utf-8")
        assert paths_of(memory.memory_search("mango")) == ["memory/notes/0/deeper/x.md"]
        with open(notes / "deeper" / "x.md", "a", encoding="utf-8") as handle:  # the new folder is watched
            handle.write("papaya\n")
        assert paths_of(memory.memory_search("papaya")) == ["memory/notes/0/deeper/x.md"]
        assert fresh.full_scans == 1
    finally:
        memory.close()


def test_without_inotify_the_interval_is_used(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REFMEM_WATCH", "0")
    memory = workspace(tmp_path, 3)
    try:
        assert memory._fresh().method == "interval"
    finally:
        memory.close()


def test_closing_the_workspace_closes_the_watch(tmp_path: pathlib.Path) -> None:
    memory = workspace(tmp_path, 3)
    watcher = memory._fresh().watcher
    assert watcher is not None
    memory.close()
    with pytest.raises(OSError):
        os.fstat(watcher.fd)
