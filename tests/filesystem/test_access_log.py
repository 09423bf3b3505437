"""The moves log (refmem/_access_log.py): a rename's use is one line appended, not a new record file.

What is kept (D-EXPIRY): a rename counts as a use of the new path and carries the times of what it
moves; a delete drops them; prune keeps what remains. What changes is where: one appended line
instead of a file made per rename, bounded by compaction.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Iterator

import pytest

from refmem import MemoryHandler
from refmem import _access_log as moves
from refmem.expiry import AccessTracker, prune

DAY = 86400.0
RENAME_A_TO_B = {"command": "rename", "old_path": "/memories/a.md", "new_path": "/memories/b.md"}


@pytest.fixture
def handler(tmp_path: Path) -> Iterator[MemoryHandler]:
    with MemoryHandler(tmp_path / "m") as made:
        yield made


def access(tmp_path: Path) -> Path:
    return tmp_path / "m" / ".refmem" / "access"


def old_file(tmp_path: Path, relative: str, days: float = 40) -> Path:
    path = tmp_path / "m" / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("old\n")
    long_ago = time.time() - days * DAY
    os.utime(path, (long_ago, long_ago))
    return path


def test_a_rename_makes_no_record_file_and_counts_as_a_use(tmp_path: Path, handler: MemoryHandler) -> None:
    old_file(tmp_path, "a.md")
    assert not handler.execute(RENAME_A_TO_B).is_error
    assert sorted(p.name for p in access(tmp_path).iterdir()) == ["moves"]
    with AccessTracker(tmp_path / "m") as tracker:
        assert abs((tracker.last_access("/memories/b.md") or 0) - time.time()) < 5
        assert tracker.last_access("/memories/a.md") is None
    handler.close()
    assert prune(tmp_path / "m", 30 * DAY).removed == []  # renamed a moment ago: used, kept


def test_a_folder_rename_carries_every_time_below_it(tmp_path: Path, handler: MemoryHandler) -> None:
    old_file(tmp_path, "d/x.md")
    old_file(tmp_path, "d/e/y.md")
    with AccessTracker(tmp_path / "m") as tracker:
        assert tracker.touch("/memories/d/x.md", now=time.time() - 10 * DAY)
    assert not handler.execute({"command": "rename", "old_path": "/memories/d", "new_path": "/memories/f"}).is_error
    assert not handler.execute({"command": "rename", "old_path": "/memories/f", "new_path": "/memories/g/h"}).is_error
    with AccessTracker(tmp_path / "m") as tracker:
        assert abs((tracker.last_access("/memories/g/h/x.md") or 0) - (time.time() - 10 * DAY)) < 5
        assert tracker.last_access("/memories/g/h/e/y.md") is None  # never used: its mtime says its age
        assert tracker.last_access("/memories/d/x.md") is None and tracker.last_access("/memories/f/x.md") is None
    handler.close()
    report = prune(tmp_path / "m", 30 * DAY)
    assert report.removed == ["/memories/g/h/e/y.md", "/memories/g/h/e"]


def test_a_delete_drops_the_uses_a_rename_logged(tmp_path: Path, handler: MemoryHandler) -> None:
    old_file(tmp_path, "a.md")
    handler.execute(RENAME_A_TO_B)
    handler.execute({"command": "delete", "path": "/memories/b.md"})
    with AccessTracker(tmp_path / "m") as tracker:
        assert tracker.last_access("/memories/b.md") is None
        assert tracker.records() == []


def test_the_log_stays_bounded_and_keeps_every_use(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(moves, "COMPACT_BYTES", 1024)
    handler = MemoryHandler(tmp_path / "m")
    try:
        for number in range(10):
            old_file(tmp_path, f"f{number}.md")
        for round_ in range(30):  # each file moved back and forth: ten paths in use at any time
            for number in range(10):
                handler.execute({"command": "rename", "old_path": f"/memories/f{number}.md",
                                 "new_path": f"/memories/g{number}.md"} if round_ % 2 == 0 else
                                {"command": "rename", "old_path": f"/memories/g{number}.md",
                                 "new_path": f"/memories/f{number}.md"})
            size = (access(tmp_path) / "moves").stat().st_size
            assert size <= 2 * 1024 + 200
    finally:
        handler.close()
    with AccessTracker(tmp_path / "m") as tracker:
        assert sorted(record.path for record in tracker.records()) == [f"/memories/f{n}.md" for n in range(10)]


def test_prune_keeps_only_the_uses_of_files_that_remain(tmp_path: Path, handler: MemoryHandler) -> None:
    old_file(tmp_path, "a.md")
    old_file(tmp_path, "b.md")
    handler.execute({"command": "rename", "old_path": "/memories/a.md", "new_path": "/memories/c.md"})
    (tmp_path / "m" / "c.md").unlink()  # removed by another program: its use is stale
    handler.close()
    report = prune(tmp_path / "m", 30 * DAY)
    assert report.removed == ["/memories/b.md"] and report.stale_records == 1
    assert moves.replay((access(tmp_path) / "moves").read_bytes()) == {}


def test_torn_and_foreign_lines_are_skipped() -> None:
    log = moves.encode([(5, "/memories/a"), (7, "/memories/b"), (None, "/memories/a"), (3, "/memories/b")])
    log += b'[9,"/etc/passwd"]\n[true,"/memories/c"]\n[-1,"/memories/c"]\nnot json\n[11,"/memories/d'
    assert moves.replay(log) == {"/memories/b": 7}


def test_a_link_at_the_logs_name_is_replaced_never_written_through(tmp_path: Path, handler: MemoryHandler) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("CANARY")
    access(tmp_path).mkdir(parents=True)
    (access(tmp_path) / "moves").symlink_to(outside)
    old_file(tmp_path, "a.md")
    assert not handler.execute(RENAME_A_TO_B).is_error
    assert outside.read_text() == "CANARY"
    assert not (access(tmp_path) / "moves").is_symlink()
    with AccessTracker(tmp_path / "m") as tracker:
        assert tracker.last_access("/memories/b.md") is not None
