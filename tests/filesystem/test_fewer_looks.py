"""Two cuts of a mutation's system calls, each with what makes it safe (issue 27):

* D-FS-KEPT-FOLDER: the folder a rename's look at its source reached serves the move, and the lock's release closes it
  (no descriptor outlives the command, none serves another command);
* D-STORE-CHANGES-FS-ABSENT: "no journal" is remembered from `.refmem`'s identity and times, and forgotten as soon
  as a journal is made, by this handler or another.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from refmem import MemoryHandler
from refmem import _changes as changes


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts descriptors through /proc")
def test_a_rename_keeps_no_folder_past_its_command(tmp_path: Path) -> None:
    handler = MemoryHandler(tmp_path / "m")
    store = handler.store
    assert not handler.execute({"command": "create", "path": "/memories/d/a.md", "file_text": "x\n"}).is_error
    assert not handler.execute({"command": "create", "path": "/memories/d/c.md", "file_text": "y\n"}).is_error
    rename = [{"command": "rename", "old_path": f"/memories/d/{o}.md", "new_path": f"/memories/d/{n}.md"}
              for o, n in (("a", "b"), ("b", "a"))]
    handler.execute(rename[0])
    handler.execute(rename[1])
    before = _open_fds()
    outputs = [handler.execute(rename[i % 2]).output for i in range(40)]
    refused = handler.execute({"command": "rename", "old_path": "/memories/d/a.md", "new_path": "/memories/d/c.md"})
    missing = handler.execute({"command": "rename", "old_path": "/memories/d/zz.md", "new_path": "/memories/d/y.md"})
    assert outputs[0] == "Successfully renamed /memories/d/a.md to /memories/d/b.md"
    assert refused.is_error and missing.is_error
    assert store._kept.folder is None  # type: ignore[attr-defined]
    assert _open_fds() == before
    assert sorted(os.listdir(tmp_path / "m" / "d")) == ["a.md", "c.md"]
    handler.close()


def test_a_folder_an_unlocked_look_reached_is_never_kept(tmp_path: Path) -> None:
    handler = MemoryHandler(tmp_path / "m")
    assert not handler.execute({"command": "create", "path": "/memories/d/a.md", "file_text": "x\n"}).is_error
    from refmem.paths import parse_path

    assert handler.store.entry(parse_path("/memories/d/a.md")) is not None
    assert handler.store._kept.folder is None  # type: ignore[attr-defined]
    handler.close()


def test_no_journal_is_remembered_and_forgotten_when_another_handler_makes_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(changes, "ABSENT_SETTLED_NS", 0)  # remember at once; the sleep below moves the times' step
    writer = MemoryHandler(tmp_path / "m")
    assert not writer.execute({"command": "create", "path": "/memories/a.md", "file_text": "x\n"}).is_error
    assert not writer.execute({"command": "create", "path": "/memories/b.md", "file_text": "x\n"}).is_error
    journal = writer.store._journal  # type: ignore[attr-defined]
    assert journal._absent is not None  # remembered: the next mutation makes one stat of .refmem
    assert not (tmp_path / "m" / ".refmem" / "changes").exists()
    time.sleep(0.05)  # past any coarse timestamp step, as the two seconds are in use
    reader = MemoryHandler(tmp_path / "m")
    first = reader.store.changes_since(0)  # type: ignore[attr-defined]
    assert first.paths is None  # a new journal: rescan
    assert not writer.execute({"command": "delete", "path": "/memories/a.md"}).is_error
    assert journal._absent is None
    assert reader.store.changes_since(first.generation).paths == ("/memories/a.md",)  # type: ignore[attr-defined]
    writer.close()
    reader.close()


def test_no_journal_is_not_remembered_of_a_folder_changed_just_now(tmp_path: Path) -> None:
    writer = MemoryHandler(tmp_path / "m")
    assert not writer.execute({"command": "create", "path": "/memories/a.md", "file_text": "x\n"}).is_error
    assert writer.store._journal._absent is None  # type: ignore[attr-defined]  # .refmem was made a moment ago
    writer.close()


def test_a_rename_looks_at_its_source_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """D-FS-KEPT-FOLDER: the handler's look at the source serves the move (the store's second `lstat` is gone);
    the kernel's confirmation and the move by name stay."""
    handler = MemoryHandler(tmp_path / "m")
    assert not handler.execute({"command": "create", "path": "/memories/d/z.md", "file_text": "x\n"}).is_error
    first = {"command": "rename", "old_path": "/memories/d/z.md", "new_path": "/memories/d/a.md"}
    assert not handler.execute(first).is_error
    looks: list = []  # the second rename: the records' folder is made and open
    real_stat, real_readlink = os.stat, os.readlink

    def counting_stat(path: object, *args: object, **kwargs: object) -> os.stat_result:
        looks.append(path)
        return real_stat(path, *args, **kwargs)  # type: ignore[arg-type]

    def counting_readlink(path: object, *args: object, **kwargs: object) -> str:
        looks.append("readlink")
        return real_readlink(path, *args, **kwargs)  # type: ignore[arg-type, no-any-return]

    monkeypatch.setattr(os, "stat", counting_stat)
    monkeypatch.setattr(os, "readlink", counting_readlink)
    renamed = handler.execute({"command": "rename", "old_path": "/memories/d/a.md", "new_path": "/memories/d/b.md"})
    monkeypatch.undo()
    assert renamed.output == "Successfully renamed /memories/d/a.md to /memories/d/b.md"
    assert looks.count("a.md") == 1 and looks.count("readlink") == 1, looks
    assert sorted(os.listdir(tmp_path / "m" / "d")) == ["b.md"]
    # The look does not outlive its command: a source gone since is missing for the next rename.
    os.rename(tmp_path / "m" / "d" / "b.md", tmp_path / "m" / "d" / "c.md")
    missing = handler.execute({"command": "rename", "old_path": "/memories/d/b.md", "new_path": "/memories/d/e.md"})
    assert missing.is_error and "does not exist" in missing.output
    handler.close()


def test_no_access_bookkeeping_without_track_access(tmp_path: Path) -> None:
    """D-STORE-RENAME-USE: a handler made with track_access=False writes no access records and no moves log."""
    handler = MemoryHandler(tmp_path / "m", track_access=False)
    assert not handler.execute({"command": "create", "path": "/memories/a.md", "file_text": "x\n"}).is_error
    rename = {"command": "rename", "old_path": "/memories/a.md", "new_path": "/memories/b.md"}
    assert not handler.execute(rename).is_error
    assert not handler.execute({"command": "delete", "path": "/memories/b.md"}).is_error
    assert not (tmp_path / "m" / ".refmem" / "access").exists()
    handler.close()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_takes_the_lock_through_its_own_file(tmp_path: Path) -> None:
    """The write lock keeps the process id by a fork hook, not by asking at every lock: a child that inherited an
    open lock file (whose `flock` is shared with the parent's open file) opens its own before it locks."""
    handler = MemoryHandler(tmp_path / "m")
    assert not handler.execute({"command": "create", "path": "/memories/a.md", "file_text": "x\n"}).is_error
    lock = handler.store._lock  # type: ignore[attr-defined]
    parent_fd = lock._fd
    assert parent_fd is not None
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            with lock.locked():
                os.write(write_end, b"1" if lock._fd not in (None, parent_fd) else b"0")
        finally:
            os._exit(0)
    os.close(write_end)
    answer = os.read(read_end, 1)
    os.waitpid(pid, 0)
    os.close(read_end)
    assert answer == b"1"
    assert lock._fd == parent_fd
    handler.close()
