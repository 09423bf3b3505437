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
