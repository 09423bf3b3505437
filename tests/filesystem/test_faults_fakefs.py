"""Faults a real disk cannot easily give, on pyfakefs: disk full, permissions, I/O errors, a read-only
filesystem, and the path rules of case-insensitive (macOS) and Windows filesystems.

Notes on the fake:
- pyfakefs does not emulate `dir_fd`, so every handler here runs with `portable_walk=True` (the
  checked-path walk that Windows uses).
- `renameat2` is called through ctypes on real paths, which the fake cannot intercept, so
  `refmem._kernel._renameat2` is set to None for these tests: the documented link-then-unlink fallback.
- pyfakefs runs as a non-root user here (`allow_root_user=False`) so permissions are enforced.
- pyfakefs hands any `os` name it does not fake to the real module, where a fake descriptor number names
  whatever the test process has open under it (a Windows run once made pytest's `/dev/null` mode 0600 through
  the real `os.fchmod`). `host_unreachable` lets only constants and pure functions through: any other name is
  absent, as on a system without it, and a test that reached for one fails unless it declared the name absent.

Every failure must give the D-IO text, leave the old content as it was and leave no temp file.
"""

from __future__ import annotations

import errno
import os
from typing import Any, Callable, Iterator

import pytest
from pyfakefs.fake_filesystem import OSType
from pyfakefs.fake_filesystem_unittest import Patcher
from pyfakefs.fake_os import FakeOsModule

import refmem._access_log  # noqa: F401
import refmem._kernel as refmem_fs
import refmem._records  # noqa: F401
import refmem.tracked  # noqa: F401

# `_access_log`, `_records` and `tracked` are loaded by the handler on first use. Imported under a fake, a module keeps that fake's `os`
# after the fake is gone (the next test's rename then fails inside pyfakefs), and `_records`' probe of
# `os.supports_fd` asks the fake for functions it does not fake, which the guard below refuses: so they are imported
# here, before any fake, as a run of the whole suite happens to do.
from refmem import MemoryHandler, Result

ROOT = "/data/memories"

# What the fake os module may take from the real one: nothing here reads or changes the host.
PURE_OS_FUNCTIONS = frozenset({"PathLike", "fspath", "fsencode", "fsdecode", "getpid", "strerror"})


class HostUnreachable:
    """The os names the fake did not fake and the code asked for (refused), and those a fixture declared
    absent on purpose (Windows has no os.fchmod before 3.13)."""

    def __init__(self) -> None:
        self.refused: list = []
        self.absent: set = set()


@pytest.fixture(autouse=True)
def host_unreachable(monkeypatch: pytest.MonkeyPatch) -> Iterator[HostUnreachable]:
    guard = HostUnreachable()
    forward = FakeOsModule.__getattr__

    def only_pure(self: FakeOsModule, name: str) -> Any:
        value = forward(self, name)
        if callable(value) and name not in PURE_OS_FUNCTIONS:
            guard.refused.append(name)
            raise AttributeError(f"os.{name} is not faked: a call would reach the host")
        return value

    monkeypatch.setattr(FakeOsModule, "__getattr__", only_pure)
    yield guard
    unexpected = sorted(set(guard.refused) - guard.absent)
    assert not unexpected, f"the code asked for os functions pyfakefs does not fake: {unexpected}"


class Fake:
    def __init__(self, patcher: Patcher) -> None:
        self.fs = patcher.fs
        self.fs.create_dir(ROOT)
        self.handler = MemoryHandler(ROOT, portable_walk=True)

    def __call__(self, **params: Any) -> Result:
        result = self.handler.execute(params)
        assert "Traceback" not in result.output and "/data" not in result.output
        assert result.output != "Error: The command could not be completed because of an internal error."
        return result

    def put(self, rel: str, data: str) -> None:
        self.fs.create_file(f"{ROOT}/{rel}", contents=data)

    def read(self, rel: str) -> str:
        with open(f"{ROOT}/{rel}", encoding="utf-8", newline="") as handle:
            return handle.read()

    def leftovers(self) -> list:
        found = []
        for folder, dirs, files in os.walk(ROOT):
            found += [os.path.join(folder, name) for name in files + dirs if name.startswith(".refmem-tmp")]
        return found


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[Fake]:
    monkeypatch.setattr(refmem_fs, "_renameat2", None)
    with Patcher(allow_root_user=False) as patcher:
        yield Fake(patcher)


# --- disk full ------------------------------------------------------------------------------------


def test_disk_full_str_replace(fake: Fake) -> None:
    fake.put("a.txt", "short\n")
    fake.fs.set_disk_usage(300)
    result = fake(command="str_replace", path="/memories/a.txt", old_str="short", new_str="x" * 1000)
    assert result.output == "Error: Could not write /memories/a.txt: no space left on device."
    assert result.is_error
    assert fake.read("a.txt") == "short\n"
    assert fake.leftovers() == []


def test_disk_full_insert(fake: Fake) -> None:
    fake.put("a.txt", "one\ntwo\n")
    fake.fs.set_disk_usage(300)
    result = fake(command="insert", path="/memories/a.txt", insert_line=1, insert_text="y" * 1000)
    assert result.output == "Error: Could not write /memories/a.txt: no space left on device."
    assert fake.read("a.txt") == "one\ntwo\n"
    assert fake.leftovers() == []


def test_disk_full_create(fake: Fake) -> None:
    fake.fs.set_disk_usage(300)
    result = fake(command="create", path="/memories/b.txt", file_text="z" * 1000)
    assert result.output == "Error: Could not create /memories/b.txt: no space left on device."
    assert not os.path.exists(f"{ROOT}/b.txt")
    assert fake.leftovers() == []


def test_disk_full_then_space_again(fake: Fake) -> None:
    fake.put("a.txt", "short\n")
    fake.fs.set_disk_usage(300)
    assert fake(command="create", path="/memories/b.txt", file_text="z" * 1000).is_error
    fake.fs.set_disk_usage(10**7)
    assert not fake(command="create", path="/memories/b.txt", file_text="z" * 1000).is_error
    assert fake.read("b.txt") == "z" * 1000


# --- permissions ----------------------------------------------------------------------------------


def test_permission_denied_create_in_read_only_folder(fake: Fake) -> None:
    fake.put("d/a.txt", "a\n")
    os.chmod(f"{ROOT}/d", 0o500)
    result = fake(command="create", path="/memories/d/b.txt", file_text="b")
    assert result.output == "Error: Could not create /memories/d/b.txt: permission denied."
    assert result.is_error
    assert sorted(os.listdir(f"{ROOT}/d")) == ["a.txt"]


def test_permission_denied_edit_in_read_only_folder(fake: Fake) -> None:
    fake.put("d/a.txt", "a\n")
    os.chmod(f"{ROOT}/d", 0o500)
    assert fake(command="str_replace", path="/memories/d/a.txt", old_str="a", new_str="b").output == (
        "Error: Could not write /memories/d/a.txt: permission denied."
    )
    assert fake(command="insert", path="/memories/d/a.txt", insert_line=0, insert_text="b").output == (
        "Error: Could not write /memories/d/a.txt: permission denied."
    )
    assert fake.read("d/a.txt") == "a\n"
    assert sorted(os.listdir(f"{ROOT}/d")) == ["a.txt"]


def test_permission_denied_delete(fake: Fake) -> None:
    fake.put("d/a.txt", "a\n")
    os.chmod(f"{ROOT}/d", 0o500)
    assert fake(command="delete", path="/memories/d/a.txt").output == (
        "Error: Could not delete /memories/d/a.txt: permission denied."
    )
    assert fake.read("d/a.txt") == "a\n"


def test_permission_denied_rename_out_of_read_only_folder(fake: Fake) -> None:
    """The link-then-unlink fallback (no renameat2): the unlink of the source fails after the link
    was made. D-IO: the D-IO text, and nothing half-done (the file is not left under both names)."""
    fake.put("d/a.txt", "a\n")
    os.chmod(f"{ROOT}/d", 0o500)
    assert fake(command="rename", old_path="/memories/d/a.txt", new_path="/memories/b.txt").output == (
        "Error: Could not rename /memories/d/a.txt: permission denied."
    )
    assert fake.read("d/a.txt") == "a\n"
    assert not os.path.exists(f"{ROOT}/b.txt")


def test_permission_denied_rename_into_read_only_folder(fake: Fake) -> None:
    fake.put("a.txt", "a\n")
    fake.put("d/x", "x")
    os.chmod(f"{ROOT}/d", 0o500)
    assert fake(command="rename", old_path="/memories/a.txt", new_path="/memories/d/a.txt").output == (
        "Error: Could not rename /memories/a.txt: permission denied."
    )
    assert fake.read("a.txt") == "a\n"
    assert sorted(os.listdir(f"{ROOT}/d")) == ["x"]


def test_permission_denied_view_unreadable_file(fake: Fake) -> None:
    fake.put("a.txt", "secret\n")
    os.chmod(f"{ROOT}/a.txt", 0)
    result = fake(command="view", path="/memories/a.txt")
    assert result.output == "Error: Could not read /memories/a.txt: permission denied."
    assert result.is_error


def test_permission_denied_listing_unreadable_folder(fake: Fake) -> None:
    fake.put("d/a.txt", "a\n")
    os.chmod(f"{ROOT}/d", 0)
    result = fake(command="view", path="/memories/d")
    assert result.is_error
    assert result.output in (
        "Error: Could not read /memories/d: permission denied.",
        "The path /memories/d does not exist. Please provide a valid path.",
    )


# --- other operating-system failures, injected -----------------------------------------------------


def _failing(original: Callable[..., Any], code: int, when: Callable[..., bool] = lambda *a, **k: True):
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if when(*args, **kwargs):
            raise OSError(code, os.strerror(code))
        return original(*args, **kwargs)

    return wrapper


@pytest.mark.parametrize(
    "code, reason",
    [
        (errno.EIO, "input/output error"),
        (errno.ENOSPC, "no space left on device"),
        (errno.EDQUOT, "no space left on device"),
        (errno.EROFS, "read-only file system"),
        (errno.EACCES, "permission denied"),
        (errno.EMFILE, "operating system error"),
    ],
)
def test_fsync_failure_on_edit(fake: Fake, monkeypatch: pytest.MonkeyPatch, code: int, reason: str) -> None:
    fake.put("a.txt", "keep me\n")
    monkeypatch.setattr(refmem_fs.os, "fsync", _failing(refmem_fs.os.fsync, code))
    result = fake(command="str_replace", path="/memories/a.txt", old_str="keep", new_str="lose")
    assert result.output == f"Error: Could not write /memories/a.txt: {reason}."
    assert fake.read("a.txt") == "keep me\n"
    assert fake.leftovers() == []


def test_read_only_filesystem_on_create(fake: Fake, monkeypatch: pytest.MonkeyPatch) -> None:
    creating = lambda path, flags, *args, **kwargs: bool(flags & os.O_CREAT) and "lock" not in str(path)  # noqa: E731
    monkeypatch.setattr(refmem_fs.os, "open", _failing(refmem_fs.os.open, errno.EROFS, creating))
    result = fake(command="create", path="/memories/new.txt", file_text="x")
    assert result.output == "Error: Could not create /memories/new.txt: read-only file system."
    assert not os.path.exists(f"{ROOT}/new.txt")
    assert fake.leftovers() == []


def test_io_error_while_reading_for_view(fake: Fake, monkeypatch: pytest.MonkeyPatch) -> None:
    fake.put("a.txt", "a\n")
    monkeypatch.setattr(refmem_fs.os, "read", _failing(refmem_fs.os.read, errno.EIO))
    result = fake(command="view", path="/memories/a.txt")
    assert result.output == "Error: Could not read /memories/a.txt: input/output error."
    assert fake.read("a.txt") == "a\n"


def test_failed_replace_leaves_old_content(fake: Fake, monkeypatch: pytest.MonkeyPatch) -> None:
    fake.put("a.txt", "old\n")
    monkeypatch.setattr(refmem_fs.os, "replace", _failing(refmem_fs.os.replace, errno.EIO))
    result = fake(command="insert", path="/memories/a.txt", insert_line=1, insert_text="new")
    assert result.output == "Error: Could not write /memories/a.txt: input/output error."
    assert fake.read("a.txt") == "old\n"
    assert fake.leftovers() == []


# --- case-insensitive (macOS) and Windows filesystems ----------------------------------------------


@pytest.fixture
def mac(monkeypatch: pytest.MonkeyPatch) -> Iterator[Fake]:
    monkeypatch.setattr(refmem_fs, "_renameat2", None)
    with Patcher() as patcher:
        patcher.fs.os = OSType.MACOS
        yield Fake(patcher)


def test_case_insensitive_create_never_overwrites(mac: Fake) -> None:
    assert not mac(command="create", path="/memories/Notes.md", file_text="first\n").is_error
    assert mac(command="create", path="/memories/notes.md", file_text="second\n").output == (
        "Error: File /memories/notes.md already exists"
    )
    assert mac.read("Notes.md") == "first\n"


def test_case_insensitive_rename_onto_other_case_never_overwrites(mac: Fake) -> None:
    mac.put("Notes.md", "first\n")
    mac.put("other.md", "other\n")
    assert mac(command="rename", old_path="/memories/other.md", new_path="/memories/NOTES.md").output == (
        "Error: The destination /memories/NOTES.md already exists"
    )
    assert mac.read("Notes.md") == "first\n" and mac.read("other.md") == "other\n"


@pytest.fixture
def windows(monkeypatch: pytest.MonkeyPatch, host_unreachable: HostUnreachable) -> Iterator[Fake]:
    monkeypatch.setattr(refmem_fs, "_renameat2", None)
    with Patcher() as patcher:
        patcher.fs.os = OSType.WINDOWS
        # Python before 3.13 has no os.fchmod on Windows; the fake module still answers hasattr()
        # with True and raises when called, so hide it as real Windows would. Without its method the
        # fake would hand out the real os.fchmod: host_unreachable refuses it instead.
        if hasattr(type(refmem_fs.os), "fchmod"):
            monkeypatch.delattr(type(refmem_fs.os), "fchmod")
        host_unreachable.absent.add("fchmod")
        patcher.fs.create_dir("C:\\data")
        fake = Fake.__new__(Fake)
        fake.fs = patcher.fs
        fake.fs.create_dir("C:\\data\\memories")
        fake.handler = MemoryHandler("C:\\data\\memories", portable_walk=True)
        yield fake


def test_windows_create_view_rename_delete(windows: Fake) -> None:
    assert windows(command="create", path="/memories/d/Notes.md", file_text="n\n").output == (
        "File created successfully at: /memories/d/Notes.md"
    )
    assert windows(command="view", path="/memories/d/Notes.md").output.endswith("     1\tn")
    assert windows(command="create", path="/memories/D/notes.MD", file_text="x").output == (
        "Error: File /memories/D/notes.MD already exists"
    )
    assert not windows(command="rename", old_path="/memories/d/Notes.md", new_path="/memories/e/N.md").is_error
    assert windows(command="view", path="/memories").output.split("\n")[1:] == [
        "4.0K\t/memories",
        "4.0K\t/memories/d/",
        "4.0K\t/memories/e/",
        "2B\t/memories/e/N.md",
    ]
    assert not windows(command="delete", path="/memories/e").is_error
    assert "\\" not in windows(command="view", path="/memories").output


@pytest.mark.parametrize(
    "name",
    [
        "a.",
        "a ",
        "CON",
        "nul.txt",
        "COM1",
        "a:b",
        "file.txt:stream:$DATA",
        "a<b",
        "a|b",
        "a?b",
        "a*b",
        'a"b',
        "..\\x",
        "C:\\x",
    ],
)
def test_windows_names_never_reach_the_filesystem(windows: Fake, name: str) -> None:
    result = windows(command="create", path=f"/memories/{name}", file_text="x")
    assert result.is_error and result.output.startswith("Error: Invalid path /memories/")
    assert [n for n in os.listdir("C:\\data\\memories") if n != ".refmem"] == []
    assert os.listdir("C:\\data") == ["memories"]
