"""Handles after close: a closed folder or root fails every call; it never falls back to the working directory."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from refmem import Limits, MemoryHandler, expiry, kernel, store
from refmem.paths import parse_path


def test_a_closed_folder_handle_fails_instead_of_using_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "root" / "d").mkdir(parents=True)
    (tmp_path / "cwd").mkdir()
    (tmp_path / "cwd" / "x").write_text("decoy")
    monkeypatch.chdir(tmp_path / "cwd")
    root = store.Root(tmp_path / "root")
    folder = root.walk(("d",))
    folder.close()
    folder.close()  # twice is fine
    assert isinstance(folder, kernel.FdDir) and folder.fd == kernel.CLOSED_FD
    with pytest.raises(kernel.OsFailure):
        folder.lstat("x")  # EBADF, not the decoy in the working directory
    with pytest.raises(kernel.FsProblem):
        expiry.put_record(folder, "y", b"data\n", 0)
    assert sorted(os.listdir(tmp_path / "cwd")) == ["x"]
    root.close()


def test_a_closed_root_refuses_every_command_and_writes_nowhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")
    handler = MemoryHandler(tmp_path / "root")
    assert not handler.execute({"command": "create", "path": "/memories/a.md", "file_text": "a\n"}).is_error
    lent = handler.root.dir.top
    handler.close()
    assert isinstance(lent, kernel.FdDir) and lent.fd == kernel.CLOSED_FD
    for command in (
        {"command": "view", "path": "/memories/a.md"},
        {"command": "create", "path": "/memories/b.md", "file_text": "b\n"},
        {"command": "view", "path": "/memories"},
    ):
        result = handler.execute(command)
        assert result.is_error and result.output.startswith("Error: Could not"), result.output
    with pytest.raises(kernel.OsFailure):
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

WALKS = {"openat2": (False, True), "name-by-name": (False, False), "portable": (True, False)}


@pytest.fixture(params=list(WALKS))
def root(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> kernel.RootDir:
    portable, one_call = WALKS[request.param]
    if not one_call:
        monkeypatch.setattr(kernel, "_openat2", None)
    top = tmp_path / "root"
    (top / "a" / "b").mkdir(parents=True)
    (top / "a" / "b" / "f.txt").write_text("inside\n")
    (top / "file").write_text("x")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text("CANARY")
    (top / "out").symlink_to(tmp_path / "outside")
    os.mkfifo(top / "fifo")
    opened = kernel.RootDir(top, portable=portable)
    yield opened
    opened.close()


def test_walk_enters_folders_only(root: kernel.RootDir) -> None:
    with root.walk(("a", "b")) as folder:
        assert folder.lstat("f.txt") is not None
    for parts in [("file",), ("out",), ("fifo",), ("missing",), ("a", "missing"), ("file", "x"), ("out", "secret.txt")]:
        with pytest.raises(kernel.Missing):
            root.walk(parts)


def test_walk_creates_and_reports_what_it_made(root: kernel.RootDir) -> None:
    made: list = []
    with root.walk(("a", "new", "deeper"), create=True, made=made) as folder:
        assert folder.lstat(".") is not None
    assert made == [1, 2]
    with pytest.raises(kernel.ParentNotDir) as problem:
        root.walk(("file", "x"), create=True)
    assert problem.value.depth == 1
    with pytest.raises(kernel.ParentNotDir):
        root.walk(("out", "x"), create=True)  # a link is not a folder to make or enter


def test_open_regular_refuses_links_fifos_folders_and_hard_links(root: kernel.RootDir, tmp_path: Path) -> None:
    top = root.top
    fd, info = kernel.open_regular(top, "file", True)
    os.close(fd)
    assert info.st_size == 1
    with pytest.raises(kernel.IsLink):
        kernel.open_regular(top, "out", True)
    with pytest.raises(kernel.NotRegular) as special:
        kernel.open_regular(top, "fifo", True)  # refused before any open: never blocks
    assert special.value.kind == kernel.SPECIAL
    with pytest.raises(kernel.NotRegular) as folder:
        kernel.open_regular(top, "a", True)
    assert folder.value.kind == kernel.DIR
    os.link(tmp_path / "outside" / "secret.txt", tmp_path / "root" / "hard")
    with pytest.raises(kernel.HardLinked):
        kernel.open_regular(top, "hard", True)
    fd, _ = kernel.open_regular(top, "hard", False)
    os.close(fd)
    with pytest.raises(kernel.Missing):
        kernel.open_regular(top, "nothing", True)


def test_write_temp_then_replace_only_the_file_read(root: kernel.RootDir, tmp_path: Path) -> None:
    with root.walk(("a", "b")) as folder:
        read = kernel.identity(os.stat(tmp_path / "root" / "a" / "b" / "f.txt"))
        temp = kernel.write_temp(folder, b"new\n", 0o640)
        assert temp.startswith(kernel.TEMP_PREFIX)
        assert stat.S_IMODE(folder.lstat(temp).st_mode) == 0o640
        kernel.replace(folder, temp, "f.txt", expected=read)
        assert (tmp_path / "root" / "a" / "b" / "f.txt").read_text() == "new\n"
        stale = kernel.write_temp(folder, b"newer\n", 0o600)
        with pytest.raises(kernel.OsFailure) as changed:
            kernel.replace(folder, stale, "f.txt", expected=read)  # f.txt is another file by now
        assert changed.value.code == "changed"
        assert sorted(os.listdir(tmp_path / "root" / "a" / "b")) == ["f.txt"]  # the temp file went


@pytest.mark.parametrize("renameat2", [True, False], ids=["renameat2", "fallback"])
def test_rename_noreplace_never_overwrites(
    root: kernel.RootDir, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, renameat2: bool
) -> None:
    if not renameat2:
        monkeypatch.setattr(kernel, "_renameat2", None)
    top = root.top
    with root.walk(("a",)) as a:
        with pytest.raises(kernel.Exists):
            kernel.rename_noreplace(top, "file", a, "b", is_dir=False)
        with pytest.raises(kernel.Exists):
            kernel.rename_noreplace(a, "b", top, "file", is_dir=True)
        kernel.rename_noreplace(top, "file", a, "moved", is_dir=False)
    assert (tmp_path / "root" / "a" / "moved").read_text() == "x"
    assert (tmp_path / "outside" / "secret.txt").read_text() == "CANARY"


def test_remove_takes_a_tree_without_following_links(root: kernel.RootDir, tmp_path: Path) -> None:
    (tmp_path / "root" / "a" / "b" / "link").symlink_to(tmp_path / "outside")
    (tmp_path / "root" / "a" / "ro.txt").write_text("keep")
    (tmp_path / "root" / "a" / "ro.txt").chmod(0o444)
    top = root.top
    with pytest.raises(kernel.OsFailure) as kept:
        kernel.remove(top, "a", top.lstat("a"), keep=lambda info: not info.st_mode & stat.S_IWUSR)
    assert kept.value.code == "protected"
    assert (tmp_path / "root" / "a" / "ro.txt").read_text() == "keep"
    kernel.remove(top, "a", top.lstat("a"))
    assert not (tmp_path / "root" / "a").exists()
    kernel.remove(top, "out", top.lstat("out"))  # the link, not what it points at
    assert (tmp_path / "outside" / "secret.txt").read_text() == "CANARY"


def test_descend_visits_every_folder_after_its_subfolders(root: kernel.RootDir, tmp_path: Path) -> None:
    (tmp_path / "root" / "a" / "c").mkdir()
    order = [visit.parts for visit in kernel.descend(root.top, lambda parts, name: True)]
    assert order.index(("a", "b")) < order.index(("a",)) and order.index(("a", "c")) < order.index(("a",))
    assert order[-1] == () and ("out",) not in order  # links are not entered


def test_descend_stops_when_the_tree_is_moved_under_it(root: kernel.RootDir, tmp_path: Path) -> None:
    walk = kernel.descend(root.top, lambda parts, name: True)
    first = next(walk)  # the deepest folder, a/b: its parent a is to be reopened through ".."
    assert first.parts == ("a", "b")
    os.rename(tmp_path / "root" / "a", tmp_path / "moved-away")  # a/b now lives outside the root...
    (tmp_path / "root" / "a").mkdir()  # ...and another folder took a's name
    with pytest.raises(kernel.FsProblem):  # not the folder entered, or no longer inside the root
        for _visit in walk:
            pass
    assert (tmp_path / "moved-away" / "b").is_dir()


def test_a_removed_root_is_said_as_such(root: kernel.RootDir, tmp_path: Path) -> None:
    import shutil

    shutil.rmtree(tmp_path / "root")
    with pytest.raises(kernel.OsFailure) as removed:
        root.walk(("a",))
    assert removed.value.code == "root_removed"
