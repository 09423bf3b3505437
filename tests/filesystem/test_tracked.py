"""The filesystem store (refmem/tracked.py) beyond the interface's contract: its tenants' folders, its own
files' one check, and what it refuses that the handler never asks (test_storage_contract.py has the rest).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from refmem import MemoryHandler, problems, tracked
from refmem import _kernel as kernel
from refmem._single import open_single
from refmem.messages import IO_REASONS
from refmem.paths import parse_path
from refmem.store_protocol import Entry, TenantError
from refmem.tracked import TrackedDirectory

CANARY = "CANARY-store"


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "secret.md").write_text(CANARY)
    return folder


def untouched(outside: Path) -> bool:
    return sorted(p.name for p in outside.iterdir()) == ["secret.md"] and (outside / "secret.md").read_text() == CANARY


# --- tenants' folders (D-STORE-TENANT-FS) ------------------------------------------------------------------


def test_a_tenant_folder_replaced_by_a_link_is_refused_not_followed(tmp_path: Path, outside: Path) -> None:
    (tmp_path / "m" / ".refmem" / "tenants").mkdir(parents=True)
    (tmp_path / "m" / ".refmem" / "tenants" / "alice").symlink_to(outside)
    with pytest.raises(problems.OsFailure) as refused:
        TrackedDirectory(tmp_path / "m", tenant="alice")
    assert refused.value.code == "bookkeeping"
    (tmp_path / "m" / ".refmem" / "tenants" / "alice").unlink()
    (tmp_path / "m" / ".refmem" / "tenants").rmdir()
    (tmp_path / "m" / ".refmem" / "tenants").symlink_to(outside)
    with pytest.raises(problems.OsFailure):
        TrackedDirectory(tmp_path / "m", tenant="alice")
    assert untouched(outside)


def test_a_tenant_folder_swapped_between_its_check_and_its_opening_is_refused(
    tmp_path: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_root_dir = kernel.RootDir
    tenant = tmp_path / "m" / ".refmem" / "tenants" / "alice"

    def swap_then_open(path: object, portable: bool = False, create: bool = True) -> kernel.RootDir:
        if Path(str(path)) == tenant:
            tenant.rename(tmp_path / "moved-away")
            tenant.symlink_to(outside)
        return real_root_dir(path, portable, create)  # type: ignore[arg-type]

    monkeypatch.setattr(tracked.kernel, "RootDir", swap_then_open)
    with pytest.raises(problems.OsFailure) as refused:
        TrackedDirectory(tmp_path / "m", tenant="alice")
    assert refused.value.code == "bookkeeping"
    assert untouched(outside)


def test_a_tenants_store_has_its_own_bookkeeping_and_no_tenants(tmp_path: Path) -> None:
    root = TrackedDirectory(tmp_path / "m")
    alice = root.for_tenant("alice")
    try:
        with alice.locked():
            alice.write_new(parse_path("/memories/a.md"), b"a")
        assert (tmp_path / "m" / ".refmem" / "tenants" / "alice" / ".refmem" / "lock").is_file()
        assert alice.real == str((tmp_path / "m" / ".refmem" / "tenants" / "alice").resolve())
        with pytest.raises(TenantError):
            alice.for_tenant("bob")
        with pytest.raises(TenantError):
            root.for_tenant("Bob")
    finally:
        alice.close()
        root.close()
    assert not (tmp_path / "m" / ".refmem" / "tenants" / "Bob").exists()


# --- the store's own files: one check (D-BOOKKEEPING) ---------------------------------------------------


@pytest.mark.parametrize("plant", ["folder", "hard-link", "fifo", "link"])
def test_anything_but_a_single_link_file_at_the_locks_name_is_the_bookkeeping_reason(
    tmp_path: Path, outside: Path, plant: str
) -> None:
    """A folder there gave "operating system error" before the lock shared the one check."""
    lock = tmp_path / "m" / ".refmem" / "lock"
    lock.parent.mkdir(parents=True)
    if plant == "folder":
        lock.mkdir()
    elif plant == "hard-link":
        os.link(outside / "secret.md", lock)
    elif plant == "fifo":
        os.mkfifo(lock)
    else:
        lock.symlink_to(outside / "secret.md")
    handler = MemoryHandler(tmp_path / "m")
    try:
        result = handler.execute({"command": "create", "path": "/memories/n.md", "file_text": "n"})
        assert result.output == f"Error: Could not create /memories/n.md: {IO_REASONS['bookkeeping']}."
    finally:
        handler.close()
    assert untouched(outside)


def test_the_one_check_looks_before_it_opens_and_after(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder_path = tmp_path / "f"
    folder_path.mkdir()
    os.mkfifo(folder_path / "fifo")
    opened = []
    top = kernel.RootDir(folder_path)
    real_open = type(top.top).open_file

    def watch(self: kernel.Dir, name: str, flags: int, mode: int = 0o600) -> int:
        opened.append(name)
        return real_open(self, name, flags, mode)  # type: ignore[arg-type]

    monkeypatch.setattr(type(top.top), "open_file", watch)
    try:
        with pytest.raises(problems.NotRegular):
            open_single(top.top, "fifo", os.O_RDONLY)
        assert opened == []  # a FIFO is never opened, not even without blocking
        (folder_path / "file").write_text("x")
        fd, info = open_single(top.top, "file", os.O_RDONLY)
        os.close(fd)
        assert info.st_size == 1 and opened == ["file"]
    finally:
        top.close()


# --- an edit replaces only what it read -------------------------------------------------------------------


def test_an_edit_is_not_fooled_by_a_new_file_that_reuses_the_inode_number(tmp_path: Path) -> None:
    """A writer that ignores the lock deletes the file read and makes another at its name: the filesystem
    often gives the new file the freed inode number, which the identity check alone took for the same file."""
    reader, writer = TrackedDirectory(tmp_path / "m"), TrackedDirectory(tmp_path / "m")
    note = parse_path("/memories/e.md")
    try:
        for round_ in range(20):
            with writer.locked():
                writer.write_new(note, b"read")
            with reader.open_edit(note, 100) as edit:
                with writer.locked():
                    writer.delete(note)
                    writer.write_new(note, b"theirs, longer" * (round_ + 1))
                with pytest.raises(problems.OsFailure):
                    edit.replace(b"mine")
            with reader.open_regular(note) as opened:
                assert opened.read_all().startswith(b"theirs")
            with writer.locked():
                writer.delete(note)
    finally:
        reader.close()
        writer.close()


# --- what the handler never asks, refused all the same ---------------------------------------------------


def test_the_root_is_not_deleted_renamed_or_opened_as_a_file(tmp_path: Path) -> None:
    root = TrackedDirectory(tmp_path / "m")
    try:
        whole = parse_path("/memories")
        with root.locked():
            with pytest.raises(problems.OsFailure):
                root.delete(whole)
            with pytest.raises(problems.OsFailure):
                root.rename(whole, parse_path("/memories/x"))
        with pytest.raises(problems.NotRegular):
            root.open_regular(whole)
        assert root.entry(whole) == Entry("dir", 0)
    finally:
        root.close()
    assert (tmp_path / "m").is_dir()


# --- access records through the store ------------------------------------------------------------------


def test_a_view_of_an_old_file_is_recorded_and_a_recent_one_needs_no_record(tmp_path: Path) -> None:
    root = TrackedDirectory(tmp_path / "m")
    try:
        for name in ("old.md", "new.md"):
            with root.locked():
                root.write_new(parse_path(f"/memories/{name}"), b"x")
        long_ago = time.time() - 40 * 86400
        os.utime(tmp_path / "m" / "old.md", (long_ago, long_ago))
        for name in ("old.md", "new.md"):
            with root.open_regular(parse_path(f"/memories/{name}")) as opened:
                opened.read_all()
            root.record_use(parse_path(f"/memories/{name}"), opened)
        assert abs((root.last_access(parse_path("/memories/old.md")) or 0) - time.time()) < 5
        assert root.last_access(parse_path("/memories/new.md")) is None  # its mtime says it
    finally:
        root.close()


def test_a_store_that_keeps_no_records_writes_none(tmp_path: Path) -> None:
    root = TrackedDirectory(tmp_path / "m", track_access=False)
    try:
        with root.locked():
            root.write_new(parse_path("/memories/a.md"), b"x")
            root.rename(parse_path("/memories/a.md"), parse_path("/memories/b.md"))
        long_ago = time.time() - 40 * 86400
        os.utime(tmp_path / "m" / "b.md", (long_ago, long_ago))
        with root.open_regular(parse_path("/memories/b.md")) as opened:
            opened.read_all()
        root.record_use(parse_path("/memories/b.md"), opened)
    finally:
        root.close()
    assert not (tmp_path / "m" / ".refmem" / "access").exists()


# --- the work of a delete and a rename ---------------------------------------------------------------------


def test_a_rename_or_delete_that_finds_its_file_asks_the_root_nothing_and_confirms_a_folder_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The root-removed check (a stat) is made only when nothing is found (a removed root has no entries), and a
    rename within one folder confirms that folder once (before: two root checks per command, two confirms)."""
    handler = MemoryHandler(tmp_path / "m", track_access=False)
    for name in ("a", "b", "c"):
        assert not handler.execute({"command": "create", "path": f"/memories/d/{name}.md", "file_text": "x\n"}).is_error
    handler.store.changes_since(0)  # a journal to write to (without one, each change checks `.refmem` is still there)
    checks = {"root": 0, "confirm": 0}
    check_removed, confirm = kernel.RootDir.check_removed, kernel.FdDir.confirm

    def counting_check(root: kernel.RootDir) -> None:
        checks["root"] += 1
        check_removed(root)

    def counting_confirm(folder: kernel.FdDir) -> None:
        checks["confirm"] += 1
        confirm(folder)

    monkeypatch.setattr(kernel.RootDir, "check_removed", counting_check)
    monkeypatch.setattr(kernel.FdDir, "confirm", counting_confirm)
    renamed = handler.execute({"command": "rename", "old_path": "/memories/d/a.md", "new_path": "/memories/d/z.md"})
    assert not renamed.is_error
    assert not handler.execute({"command": "delete", "path": "/memories/d/b.md"}).is_error
    assert checks == {"root": 0, "confirm": 1}
    missing = handler.execute({"command": "delete", "path": "/memories/d/nothing.md"})
    assert missing.is_error and checks["root"] == 1  # nothing found: the root is checked, as before
