"""The kernel: closed handles fail instead of wandering; every primitive and the views' way to a file, on every walk."""

from __future__ import annotations

import contextlib
import os
import stat
import threading
from pathlib import Path
from typing import Callable, Tuple

import pytest

from refmem import Limits, MemoryHandler, problems, tracked
from refmem import _kernel as kernel
from refmem._records import put_record
from refmem.paths import parse_path


def test_a_closed_folder_handle_fails_instead_of_using_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "root" / "d").mkdir(parents=True)
    (tmp_path / "cwd").mkdir()
    (tmp_path / "cwd" / "x").write_text("decoy")
    monkeypatch.chdir(tmp_path / "cwd")
    root = tracked.TrackedDirectory(tmp_path / "root")
    folder = root.walk(("d",))
    folder.close()
    folder.close()  # twice is fine
    assert isinstance(folder, kernel.FdDir) and folder.fd == kernel.CLOSED_FD
    with pytest.raises(problems.OsFailure):
        folder.lstat("x")  # EBADF, not the decoy in the working directory
    with pytest.raises(problems.FsProblem):
        put_record(folder, "y", b"data\n", 0)
    assert sorted(os.listdir(tmp_path / "cwd")) == ["x"]
    root.close()


def test_a_closed_root_refuses_every_command_and_writes_nowhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")
    handler = MemoryHandler(tmp_path / "root")
    assert not handler.execute({"command": "create", "path": "/memories/a.md", "file_text": "a\n"}).is_error
    lent = handler.store.dir.top
    handler.close()
    assert isinstance(lent, kernel.FdDir) and lent.fd == kernel.CLOSED_FD
    for command in (
        {"command": "view", "path": "/memories/a.md"},
        {"command": "create", "path": "/memories/b.md", "file_text": "b\n"},
        {"command": "view", "path": "/memories"},
    ):
        result = handler.execute(command)
        assert result.is_error and result.output.startswith("Error: Could not"), result.output
    with pytest.raises(problems.OsFailure):
        lent.lstat("a.md")
    assert list((tmp_path / "cwd").iterdir()) == []


def test_a_handlers_limits_are_fixed(tmp_path: Path) -> None:
    """Parsed paths and pages are remembered under the limits the handler was made with."""
    handler = MemoryHandler(tmp_path, limits=Limits(max_view_chars=30))
    with pytest.raises(AttributeError):
        handler.limits = Limits()  # type: ignore[misc]
    assert handler.limits.max_view_chars == 30
    assert parse_path("/memories/a", handler.limits).parts == ("a",)


# --- every primitive, on every walk ---------------------------------------------------------------



def test_walk_enters_folders_only(kernel_root: kernel.RootDir) -> None:
    with kernel_root.walk(("a", "b")) as folder:
        assert folder.lstat("f.txt") is not None
    for parts in [("file",), ("out",), ("fifo",), ("missing",), ("a", "missing"), ("file", "x"), ("out", "secret.txt")]:
        with pytest.raises(problems.Missing):
            kernel_root.walk(parts)


def test_walk_creates_and_reports_what_it_made(kernel_root: kernel.RootDir) -> None:
    made: list = []
    with kernel_root.walk(("a", "new", "deeper"), create=True, made=made) as folder:
        assert folder.lstat(".") is not None
    assert made == [1, 2]
    with pytest.raises(problems.ParentNotDir) as problem:
        kernel_root.walk(("file", "x"), create=True)
    assert problem.value.depth == 1
    with pytest.raises(problems.ParentNotDir):
        kernel_root.walk(("out", "x"), create=True)  # a link is not a folder to make or enter


def test_walk_takes_a_folder_made_meanwhile_for_a_folder(
    kernel_root: kernel.RootDir, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two writers creating files in one new folder: the second finds the name missing, the first makes the
    folder, then the second looks again. That folder is what the second wanted, not a file in its way."""
    folder_class = type(kernel_root.top)
    original = folder_class.open_dir
    raced: list = []

    def open_then_lose_the_race(self: kernel.Dir, name: str) -> kernel.Dir:
        try:
            return original(self, name)  # type: ignore[no-any-return]
        except problems.Missing:
            if name == "fresh" and not raced:
                raced.append(name)
                (tmp_path / "root" / "fresh").mkdir()  # the other writer, just now
            raise

    monkeypatch.setattr(folder_class, "open_dir", open_then_lose_the_race)
    made: list = []
    with kernel_root.walk(("fresh", "inner"), create=True, made=made) as folder:
        assert folder.lstat(".") is not None
    assert raced == ["fresh"] and made == [1]  # the other writer's folder is not ours to undo
    assert (tmp_path / "root" / "fresh" / "inner").is_dir()


def test_open_regular_refuses_links_fifos_folders_and_hard_links(kernel_root: kernel.RootDir, tmp_path: Path) -> None:
    top = kernel_root.top
    fd, info = kernel.open_regular(top, "file", True)
    os.close(fd)
    assert info.st_size == 1
    with pytest.raises(problems.IsLink):
        kernel.open_regular(top, "out", True)
    with pytest.raises(problems.NotRegular) as special:
        kernel.open_regular(top, "fifo", True)  # refused before any open: never blocks
    assert special.value.kind == problems.SPECIAL
    with pytest.raises(problems.NotRegular) as folder:
        kernel.open_regular(top, "a", True)
    assert folder.value.kind == problems.DIR
    os.link(tmp_path / "outside" / "secret.txt", tmp_path / "root" / "hard")
    with pytest.raises(problems.HardLinked):
        kernel.open_regular(top, "hard", True)
    fd, _ = kernel.open_regular(top, "hard", False)
    os.close(fd)
    with pytest.raises(problems.Missing):
        kernel.open_regular(top, "nothing", True)


def test_write_temp_then_replace_only_the_file_read(kernel_root: kernel.RootDir, tmp_path: Path) -> None:
    with kernel_root.walk(("a", "b")) as folder:
        read = kernel.identity(os.stat(tmp_path / "root" / "a" / "b" / "f.txt"))
        temp = kernel.write_temp(folder, b"new\n", 0o640)
        assert temp.startswith(kernel.TEMP_PREFIX)
        assert stat.S_IMODE(folder.lstat(temp).st_mode) == 0o640
        kernel.replace(folder, temp, "f.txt", expected=read)
        assert (tmp_path / "root" / "a" / "b" / "f.txt").read_text() == "new\n"
        stale = kernel.write_temp(folder, b"newer\n", 0o600)
        with pytest.raises(problems.OsFailure) as changed:
            kernel.replace(folder, stale, "f.txt", expected=read)  # f.txt is another file by now
        assert changed.value.code == "changed"
        assert sorted(os.listdir(tmp_path / "root" / "a" / "b")) == ["f.txt"]  # the temp file went


@pytest.mark.parametrize("renameat2", [True, False], ids=["renameat2", "fallback"])
def test_rename_noreplace_never_overwrites(
    kernel_root: kernel.RootDir, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, renameat2: bool
) -> None:
    if not renameat2:
        monkeypatch.setattr(kernel, "_renameat2", None)
    top = kernel_root.top
    with kernel_root.walk(("a",)) as a:
        with pytest.raises(problems.Exists):
            kernel.rename_noreplace(top, "file", a, "b", is_dir=False)
        with pytest.raises(problems.Exists):
            kernel.rename_noreplace(a, "b", top, "file", is_dir=True)
        kernel.rename_noreplace(top, "file", a, "moved", is_dir=False)
    assert (tmp_path / "root" / "a" / "moved").read_text() == "x"
    assert (tmp_path / "outside" / "secret.txt").read_text() == "CANARY"


def test_a_removed_root_is_said_as_such(kernel_root: kernel.RootDir, tmp_path: Path) -> None:
    import shutil

    shutil.rmtree(tmp_path / "root")
    with pytest.raises(problems.OsFailure) as removed:
        kernel_root.walk(("a",))
    assert removed.value.code == "root_removed"


# --- the views' way to a file: walk to the folder, then open_regular ---------------------------------


def _blocked_writer(fifo: Path) -> threading.Thread:
    """A thread whose open(O_WRONLY) of `fifo` returns only once a reader opens the FIFO."""

    def write() -> None:
        with contextlib.suppress(OSError):
            os.close(os.open(fifo, os.O_WRONLY))

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    return writer


def _open(kernel_root: kernel.RootDir, parts: tuple) -> Tuple[int, os.stat_result]:
    with kernel_root.walk(parts[:-1]) as folder:
        return kernel.open_regular(folder, parts[-1], True)


@pytest.mark.parametrize("where", ["inside", "outside, through a link on the way"])
def test_a_fifo_is_never_opened(kernel_root: kernel.RootDir, tmp_path: Path, where: str) -> None:
    """A reader opening a FIFO releases a writer blocked in open(): the writer must stay blocked."""
    fifo = tmp_path / "root" / "a" / "pipe" if where == "inside" else tmp_path / "outside" / "pipe"
    os.mkfifo(fifo)
    writer = _blocked_writer(fifo)
    try:
        with pytest.raises((problems.NotRegular, problems.Missing)):
            _open(kernel_root, ("a", "pipe") if where == "inside" else ("out", "pipe"))
        writer.join(0.3)
        assert writer.is_alive(), "the FIFO was opened"
    finally:
        os.close(os.open(fifo, os.O_RDONLY | os.O_NONBLOCK))
        writer.join(5)


@pytest.mark.parametrize("one_call", [True, False], ids=["openat2", "name-by-name"])
def test_no_call_resolves_more_than_one_name_but_openat2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, one_call: bool
) -> None:
    """Every `os` call a command makes from a descriptor names one entry of it: a path of more than
    one name is resolved only by openat2 (RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS), so no stat or open
    passes through a link on the way, nor waits on what lies behind it (a hung or automounted mount)."""
    if not one_call:
        monkeypatch.setattr(kernel, "_openat2", None)
    (tmp_path / "outside" / "d").mkdir(parents=True)
    (tmp_path / "outside" / "d" / "f.md").write_text("CANARY")
    handler = MemoryHandler(tmp_path / "root")
    (tmp_path / "root" / "out").symlink_to(tmp_path / "outside")
    names: list = []
    for name in ("stat", "open", "mkdir", "unlink", "rmdir", "rename", "replace", "link"):
        real = getattr(os, name)

        def spy(*args: object, _real: Callable[..., object] = real, **kwargs: object) -> object:
            if kwargs.get("dir_fd") is not None or kwargs.get("src_dir_fd") is not None:
                names.extend(arg for arg in args if isinstance(arg, str))
            return _real(*args, **kwargs)

        monkeypatch.setattr(os, name, spy)
    commands = [
        {"command": "create", "path": "/memories/a/b/c.md", "file_text": "x\n"},
        {"command": "view", "path": "/memories/a/b/c.md"},
        {"command": "view", "path": "/memories/a/b"},
        {"command": "str_replace", "path": "/memories/a/b/c.md", "old_str": "x", "new_str": "y"},
        {"command": "insert", "path": "/memories/a/b/c.md", "insert_line": 0, "insert_text": "z"},
        {"command": "rename", "old_path": "/memories/a/b/c.md", "new_path": "/memories/a/d.md"},
        {"command": "view", "path": "/memories/out/d/f.md"},
        {"command": "view", "path": "/memories/out/d"},
        {"command": "delete", "path": "/memories/a"},
    ]
    outputs = [handler.execute(command).output for command in commands]
    handler.close()
    assert not any("CANARY" in output for output in outputs)
    assert names and all("/" not in name for name in names), sorted({name for name in names if "/" in name})


def test_what_changed_between_the_look_and_the_open_is_refused(
    kernel_root: kernel.RootDir, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lstat sees a regular file; a FIFO takes its name before the open (O_NONBLOCK: no wait).
    What counts is the fstat of what was opened: a refusal, never a FIFO to read from."""
    folder_type = type(kernel_root.top)
    real_open_file = folder_type.open_file
    target = tmp_path / "root" / "a" / "b" / "f.txt"

    def swap_then_open(self: kernel.Dir, name: str, flags: int, mode: int = kernel.FILE_MODE) -> int:
        if name == "f.txt" and target.is_file():
            target.unlink()
            os.mkfifo(target)
        return real_open_file(self, name, flags, mode)  # type: ignore[arg-type]

    monkeypatch.setattr(folder_type, "open_file", swap_then_open)
    with pytest.raises(problems.FsProblem) as refused:
        _open(kernel_root, ("a", "b", "f.txt"))
    assert isinstance(refused.value, (problems.OsFailure, problems.Escaped)), refused.value
