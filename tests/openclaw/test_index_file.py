"""The index file `.refmem/openclaw-index.sqlite` under attack: whatever another program puts at its
name, a search never follows it, never blocks on it, never writes through it, and still answers."""

from __future__ import annotations

import os
import pathlib
import sqlite3
import subprocess
import sys
import threading
from typing import Any, Dict, List

import pytest

from refmem.openclaw import OpenClawMemory
from refmem.openclaw.index import Index, fts5_available

from .openclaw_support import CANARY, write


@pytest.fixture(autouse=True)
def _one_note(case: pathlib.Path) -> None:
    write(case, "memory/a.md", "zebra crossing\n")


def index_path(case: pathlib.Path) -> pathlib.Path:
    return case / "memories" / ".refmem" / "openclaw-index.sqlite"


def squat(case: pathlib.Path) -> pathlib.Path:
    folder = case / "memories" / ".refmem"
    folder.mkdir(exist_ok=True)
    return folder / "openclaw-index.sqlite"


def search(case: pathlib.Path, timeout: float = 20) -> Dict[str, Any]:
    found: List[Dict[str, Any]] = []

    def run() -> None:
        memory = OpenClawMemory(case / "memories")
        try:
            found.append(memory.memory_search("zebra"))
        finally:
            memory.close()

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(timeout)
    assert found, "the search blocked"
    return found[0]


def outside_unchanged(case: pathlib.Path) -> None:
    assert (case / "outside" / "secret.db").read_text() == f"{CANARY}\n"
    assert "new.db" not in os.listdir(case / "outside")


def test_a_fresh_index_is_a_file_in_the_bookkeeping_folder(case: pathlib.Path) -> None:
    result = search(case)
    assert [hit["path"] for hit in result["results"]] == ["memory/a.md"] and "warning" not in result
    info = os.lstat(index_path(case))
    assert info.st_nlink == 1 and oct(info.st_mode & 0o777) == "0o600"
    # Beside the index: the root's lock and the change journal that the first search asked for (changes.py).
    assert sorted(os.listdir(case / "memories" / ".refmem")) == ["changes", "lock", "openclaw-index.sqlite"]


def test_symlink_at_the_index_name_is_never_followed(case: pathlib.Path) -> None:
    os.symlink(case / "outside" / "secret.db", squat(case))
    result = search(case)
    assert [hit["path"] for hit in result["results"]] == ["memory/a.md"]
    outside_unchanged(case)
    assert not index_path(case).is_symlink()  # dropped and rebuilt as a file of our own


def test_dangling_symlink_is_not_created_through(case: pathlib.Path) -> None:
    os.symlink(case / "outside" / "new.db", squat(case))
    search(case)
    outside_unchanged(case)


def valid_index_outside(case: pathlib.Path, tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    """A real index (of another workspace) outside the root: one SQLite would happily write to."""
    other = tmp_path_factory.mktemp("other")
    (other / "memory").mkdir()
    (other / "memory" / "b.md").write_text("zebra elsewhere\n")
    OpenClawMemory(other).refresh()
    target = case / "outside" / "real.sqlite"
    target.write_bytes((other / ".refmem" / "openclaw-index.sqlite").read_bytes())
    return target


@pytest.mark.parametrize("kind", ["symlink", "hardlink"])
def test_a_valid_index_outside_is_never_written(
    case: pathlib.Path, tmp_path_factory: pytest.TempPathFactory, kind: str
) -> None:
    target = valid_index_outside(case, tmp_path_factory)
    before = target.read_bytes()
    (os.symlink if kind == "symlink" else os.link)(target, squat(case))
    result = search(case)
    assert [hit["path"] for hit in result["results"]] == ["memory/a.md"]
    assert target.read_bytes() == before


def test_hard_link_at_the_index_name_is_never_written(case: pathlib.Path) -> None:
    os.link(case / "outside" / "secret.db", squat(case))
    result = search(case)
    assert [hit["path"] for hit in result["results"]] == ["memory/a.md"]
    outside_unchanged(case)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_fifo_at_the_index_name_never_blocks(case: pathlib.Path) -> None:
    os.mkfifo(squat(case))
    result = search(case)
    assert [hit["path"] for hit in result["results"]] == ["memory/a.md"]


def test_folder_at_the_index_name(case: pathlib.Path) -> None:
    squat(case).mkdir()
    (squat(case) / "keep.txt").write_text("x")
    result = search(case)
    assert [hit["path"] for hit in result["results"]] == ["memory/a.md"]


def test_garbage_file_is_rebuilt(case: pathlib.Path) -> None:
    squat(case).write_bytes(b"not a database at all" * 100)
    assert [hit["path"] for hit in search(case)["results"]] == ["memory/a.md"]
    with sqlite3.connect(index_path(case)) as conn:
        assert conn.execute("SELECT COUNT(*) FROM files").fetchone()[0] == 1


def test_a_database_with_another_layout_is_rebuilt(case: pathlib.Path) -> None:
    with sqlite3.connect(squat(case)) as conn:
        conn.execute("CREATE TABLE chunks(id INTEGER PRIMARY KEY, path TEXT, text TEXT)")
        conn.execute("INSERT INTO chunks(path, text) VALUES ('../../outside/secret.db', 'zebra planted')")
        conn.execute("CREATE TRIGGER t AFTER INSERT ON chunks BEGIN DELETE FROM chunks; END")
    result = search(case)
    assert [hit["path"] for hit in result["results"]] == ["memory/a.md"]
    assert "planted" not in str(result)


def test_planted_rows_in_a_well_formed_index_do_not_survive_a_refresh(case: pathlib.Path) -> None:
    search(case)
    with sqlite3.connect(index_path(case)) as conn:
        conn.execute("PRAGMA journal_mode=MEMORY")
        conn.execute(
            "INSERT INTO files(path, dev, ino, size, mtime_ns, chunks, key_path, key_base, key_stem) "
            "VALUES ('memory/planted.md', 1, 1, 1, 1, 1, 'memory/planted.md', 'planted.md', 'planted')"
        )
        conn.execute(
            "INSERT INTO chunks(path, start_line, end_line, text, length, words, hash) "
            "VALUES ('memory/planted.md', 1, 1, 'zebra', 1, 1, 'x')"
        )
        if fts5_available():
            conn.execute("INSERT INTO chunks_fts(rowid, text) VALUES (last_insert_rowid(), 'zebra')")
    result = search(case)
    assert [hit["path"] for hit in result["results"]] == ["memory/a.md"]  # the file does not exist: dropped


@pytest.mark.skipif(not fts5_available(), reason="no FTS5")
def test_wal_mode_database_is_rebuilt_without_side_files(case: pathlib.Path) -> None:
    with sqlite3.connect(squat(case)) as conn:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("CREATE TABLE x(y)")
    for suffix in ("-wal", "-shm", "-journal"):
        side = case / "memories" / ".refmem" / ("openclaw-index.sqlite" + suffix)
        if side.exists():
            side.unlink()
        os.symlink(case / "outside" / ("side" + suffix), side)
    assert [hit["path"] for hit in search(case)["results"]] == ["memory/a.md"]
    outside_unchanged(case)


def test_unwritable_bookkeeping_falls_back_to_memory(case: pathlib.Path) -> None:
    (case / "memories" / ".refmem").write_text("a file where the folder should be")
    result = search(case)
    assert [hit["path"] for hit in result["results"]] == ["memory/a.md"]
    assert "temporary index" in result["warning"]
    assert str(case) not in result["warning"]


def test_bookkeeping_folder_that_is_a_link_is_not_followed(case: pathlib.Path) -> None:
    (case / "outside" / "dir").mkdir()
    os.symlink(case / "outside" / "dir", case / "memories" / ".refmem")
    result = search(case)
    assert [hit["path"] for hit in result["results"]] == ["memory/a.md"]
    assert "bookkeeping files are not usable" in result["warning"]
    assert os.listdir(case / "outside" / "dir") == []
    outside_unchanged(case)


def test_index_in_memory_on_request(case: pathlib.Path) -> None:
    memory = OpenClawMemory(case / "memories", index="memory")
    assert [hit["path"] for hit in memory.memory_search("zebra")["results"]] == ["memory/a.md"]
    assert not index_path(case).exists()


def test_index_open_directly_reports_the_fallback(case: pathlib.Path) -> None:
    os.symlink(case / "outside" / "secret.db", squat(case))
    os.chmod(case / "memories" / ".refmem", 0o500)
    try:
        memory = OpenClawMemory(case / "memories")
        index = Index.open(memory.disk, {"format": "x"})
        if os.geteuid() != 0:
            assert index.notice is not None
        index.close()
    finally:
        os.chmod(case / "memories" / ".refmem", 0o700)
    outside_unchanged(case)


# --- SQLite's locks survive a second handler in the same process ----------------------------------

PROBE = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], timeout=0, isolation_level=None)
try:
    conn.execute("BEGIN IMMEDIATE")
except sqlite3.OperationalError:
    print("refused")
else:
    print("granted")
"""


def other_process_may_write(case: pathlib.Path) -> bool:
    """Can another process take the index's write lock right now (without waiting)?"""
    found = subprocess.run(
        [sys.executable, "-c", PROBE, str(index_path(case))], capture_output=True, text=True, timeout=60, check=True
    )
    return found.stdout.strip() == "granted"


def test_opening_the_index_again_keeps_this_process_s_write_lock(case: pathlib.Path) -> None:
    """SQLite's locks are POSIX record locks: they belong to the process and the file, and closing any
    descriptor of the file drops them all. The index used to be opened through a checked descriptor
    that was closed right after SQLite opened it: a second handler opening the index dropped the
    first one's write lock, and another process could then write beside it."""
    first = OpenClawMemory(case / "memories")
    first.refresh()
    index = first._open_index()
    index.conn.execute("BEGIN IMMEDIATE")
    try:
        assert not other_process_may_write(case)
        second = OpenClawMemory(case / "memories")
        assert second.counts() == (1, 1)  # opened and read beside the write lock
        assert not other_process_may_write(case)
        second.close()
        assert not other_process_may_write(case)
    finally:
        index.conn.execute("ROLLBACK")
    first.close()
    assert other_process_may_write(case)  # nothing of this process holds the file any more
