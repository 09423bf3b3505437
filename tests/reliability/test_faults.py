"""Faults: disk full, I/O errors, permission denied, read-only filesystem, folders removed underneath.

Each fault gives the D-IO result (``Error: Could not {action} {path}: {reason}.``), leaves the old
content intact, and leaves no temp file behind; once the fault is gone the same command works.

Three ways to make the operating system fail:

* an injected ``os`` layer (always available): ``os.open``/``write``/``fsync``/``replace``/... are
  wrapped so that calls on the handler's temp files, or on a named file, raise a chosen errno. The
  wrapper counts what it failed, so a test also proves the fault was reached. (pyfakefs is not used:
  the handler works from directory file descriptors (``dir_fd``), ``renameat2`` through ctypes and
  ``flock``, none of which a fake filesystem models.)
* the kernel itself: ``RLIMIT_FSIZE`` in a forked child makes large writes fail for real;
* when the test may mount (root on Linux): a tiny tmpfs that fills up (real ENOSPC) and is then
  remounted read-only (real EROFS).
"""

from __future__ import annotations

import errno
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Callable, Dict, List, Optional

import pytest

from .reliability_support import (
    INTERNAL_ERROR,
    IO_REASONS,
    MemoryHandler,
    all_temps,
    disk_files,
    explain,
    io_error_pattern,
    report,
)

TEMP = ".refmem-tmp-"


def _base(path) -> str:
    if isinstance(path, int):
        return ""
    return os.path.basename(os.fsdecode(path))


class FaultyOs:
    """Wrap `os` functions so that chosen calls raise a chosen errno.

    `fail(stage, code, name=None, times=None)`: stage is one of open, write, fsync, replace, read,
    mkdir, unlink, rmdir, link, rename; `name` is the basename the call concerns (default: the
    handler's temp files). File descriptors opened for a matching name are tracked, so write/fsync/
    read faults hit exactly those files.
    """

    STAGES = ("open", "write", "fsync", "replace", "read", "mkdir", "unlink", "rmdir", "link", "rename")

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.rules: Dict[str, tuple] = {}
        self.fired: Dict[str, int] = {}
        self.fds: Dict[int, str] = {}
        self.hooks: Dict[str, Callable[[], None]] = {}
        real = {stage: getattr(os, stage) for stage in self.STAGES}
        real["close"] = os.close
        self.real = real

        def matches(stage: str, name: str) -> bool:
            rule = self.rules.get(stage)
            if rule is None:
                return False
            code, wanted, remaining = rule
            hit = name.startswith(TEMP) if wanted is None else name == wanted
            return hit and (remaining is None or remaining > 0)

        def fire(stage: str) -> None:
            code, wanted, remaining = self.rules[stage]
            if remaining is not None:
                self.rules[stage] = (code, wanted, remaining - 1)
            self.fired[stage] = self.fired.get(stage, 0) + 1
            raise OSError(code, os.strerror(code))

        def by_name(stage: str):
            def wrapper(path, *args, **kwargs):
                name = _base(path)
                hook = self.hooks.get(stage)
                if hook is not None and (name.startswith(TEMP) or stage != "open"):
                    del self.hooks[stage]
                    hook()
                if matches(stage, name):
                    fire(stage)
                result = real[stage](path, *args, **kwargs)
                if stage == "open":
                    self.fds[result] = name
                return result

            return wrapper

        def by_fd(stage: str):
            def wrapper(fd, *args, **kwargs):
                name = self.fds.get(fd, "") if isinstance(fd, int) else ""
                hook = self.hooks.get(stage)
                if hook is not None and name.startswith(TEMP):
                    del self.hooks[stage]
                    hook()
                if name and matches(stage, name):
                    fire(stage)
                return real[stage](fd, *args, **kwargs)

            return wrapper

        def close(fd):
            self.fds.pop(fd, None)
            return real["close"](fd)

        for stage in ("open", "replace", "mkdir", "unlink", "rmdir", "link", "rename"):
            monkeypatch.setattr(os, stage, by_name(stage))
        for stage in ("write", "fsync", "read"):
            monkeypatch.setattr(os, stage, by_fd(stage))
        monkeypatch.setattr(os, "close", close)

    def fail(self, stage: str, code: int, name: Optional[str] = None, times: Optional[int] = None) -> None:
        self.rules[stage] = (code, name, times)

    def clear(self) -> None:
        self.rules.clear()


@pytest.fixture
def faulty(monkeypatch: pytest.MonkeyPatch) -> FaultyOs:
    return FaultyOs(monkeypatch)


ORIGINAL = "line one\nline two\nline three\n"
CODES = {"ENOSPC": errno.ENOSPC, "EIO": errno.EIO, "EACCES": errno.EACCES, "EROFS": errno.EROFS,
         "EDQUOT": errno.EDQUOT, "EPERM": errno.EPERM}

WRITES = {
    "create": {"command": "create", "path": "/memories/notes/new.md", "file_text": "fresh\n" * 100},
    "str_replace": {"command": "str_replace", "path": "/memories/notes/a.md", "old_str": "line two",
                    "new_str": "line 2 " + "y" * 5000},
    "insert": {"command": "insert", "path": "/memories/notes/a.md", "insert_line": 1, "insert_text": "added"},
}
EXPECTED_AFTER = {
    "create": ("notes/new.md", "fresh\n" * 100),
    "str_replace": ("notes/a.md", ORIGINAL.replace("line two", "line 2 " + "y" * 5000)),
    "insert": ("notes/a.md", "line one\nadded\nline two\nline three\n"),
}


def _setup(root: Path) -> MemoryHandler:
    handler = MemoryHandler(root)
    result = handler.execute({"command": "create", "path": "/memories/notes/a.md", "file_text": ORIGINAL})
    assert not result.is_error, result.output
    return handler


def _assert_untouched(root: Path) -> None:
    files, temps = disk_files(root)
    assert files == {"notes/a.md": ORIGINAL}, files
    assert temps == [], f"temp files left behind: {temps}"


def _assert_io_error(handler, tool_input: dict, result, path: str, code_name: str) -> None:
    reason = IO_REASONS.get(code_name, "no space left on device" if code_name == "EDQUOT" else None)
    assert result.is_error, result.output
    assert result.output != INTERNAL_ERROR, explain(handler, tool_input, result)
    assert io_error_pattern(path, reason).fullmatch(result.output), result.output
    assert "Errno" not in result.output and "/tmp" not in result.output


WRITE_STAGES = [
        ("write", "ENOSPC"),
        ("write", "EDQUOT"),
        ("write", "EIO"),
        ("fsync", "EIO"),
        ("fsync", "ENOSPC"),
        ("open", "EACCES"),
        ("open", "EROFS"),
        ("open", "ENOSPC"),
        ("replace", "EIO"),
        ("replace", "EROFS"),
    ]
# create moves its temp file with a no-replace rename (renameat2 or link), never os.replace: no such stage
WRITE_FAULTS = [
    (command, stage, code) for command in sorted(WRITES) for stage, code in WRITE_STAGES
    if not (command == "create" and stage == "replace")
]


@pytest.mark.parametrize("command,stage,code_name", WRITE_FAULTS)
def test_write_faults_leave_the_old_content(root: Path, faulty: FaultyOs, command: str, stage: str,
                                            code_name: str) -> None:
    handler = _setup(root)
    tool_input = WRITES[command]
    faulty.fail(stage, CODES[code_name])
    result = handler.execute(tool_input)
    assert faulty.fired.get(stage), f"the injected {stage} fault was never reached: the handler bypasses os.{stage}"
    _assert_io_error(handler, tool_input, result, tool_input["path"], code_name)
    _assert_untouched(root)
    faulty.clear()
    result = handler.execute(tool_input)  # the fault is gone: the same command now works
    assert not result.is_error, result.output
    name, text = EXPECTED_AFTER[command]
    assert (root / name).read_text() == text
    assert not all_temps(root)


def test_create_fails_cleanly_when_its_folder_cannot_be_made(root: Path, faulty: FaultyOs) -> None:
    handler = _setup(root)
    faulty.fail("mkdir", errno.EROFS, name="deeper")
    tool_input = {"command": "create", "path": "/memories/notes/deeper/x.md", "file_text": "x"}
    result = handler.execute(tool_input)
    assert faulty.fired.get("mkdir")
    _assert_io_error(handler, tool_input, result, "/memories/notes/deeper/x.md", "EROFS")
    _assert_untouched(root)


def test_read_faults_on_view_and_edit(root: Path, faulty: FaultyOs) -> None:
    handler = _setup(root)
    faulty.fail("read", errno.EIO, name="a.md")
    for tool_input in (
        {"command": "view", "path": "/memories/notes/a.md"},
        WRITES["str_replace"],
        WRITES["insert"],
    ):
        result = handler.execute(tool_input)
        _assert_io_error(handler, tool_input, result, "/memories/notes/a.md", "EIO")
    assert faulty.fired.get("read") == 3
    _assert_untouched(root)
    faulty.fail("open", errno.EACCES, name="a.md")
    faulty.rules.pop("read")
    result = handler.execute({"command": "view", "path": "/memories/notes/a.md"})
    _assert_io_error(handler, {}, result, "/memories/notes/a.md", "EACCES")


def test_delete_and_rename_faults(root: Path, faulty: FaultyOs) -> None:
    handler = _setup(root)
    faulty.fail("unlink", errno.EROFS, name="a.md")
    tool_input = {"command": "delete", "path": "/memories/notes/a.md"}
    result = handler.execute(tool_input)
    assert faulty.fired.get("unlink")
    _assert_io_error(handler, tool_input, result, "/memories/notes/a.md", "EROFS")
    _assert_untouched(root)
    faulty.clear()
    # a folder delete that fails half way: what is left is whole, and a retry finishes the job
    for i in range(5):
        handler.execute({"command": "create", "path": f"/memories/notes/f{i}.md", "file_text": f"{i}\n"})
    faulty.fail("unlink", errno.EIO, name="f3.md")
    result = handler.execute({"command": "delete", "path": "/memories/notes"})
    _assert_io_error(handler, {}, result, "/memories/notes", "EIO")
    files, temps = disk_files(root)
    assert temps == []
    for name, text in files.items():
        assert text == (ORIGINAL if name == "notes/a.md" else name[-4] + "\n"), name
    faulty.clear()
    assert not handler.execute({"command": "delete", "path": "/memories/notes"}).is_error
    assert disk_files(root) == ({}, [])


def test_directory_removed_between_read_and_write(root: Path, faulty: FaultyOs) -> None:
    """Someone removes the folder while an edit is writing its temp file there."""
    handler = _setup(root)
    faulty.hooks["write"] = lambda: shutil.rmtree(root / "notes")
    tool_input = WRITES["str_replace"]
    result = handler.execute(tool_input)
    assert result.is_error, result.output
    assert result.output != INTERNAL_ERROR, explain(handler, tool_input, result)
    assert not (root / "notes").exists(), "the removed folder came back"
    assert disk_files(root) == ({}, [])
    after = handler.execute({"command": "view", "path": "/memories/notes/a.md"})
    assert after.output == "The path /memories/notes/a.md does not exist. Please provide a valid path."


def test_directory_removed_before_create_opens_its_temp_file(root: Path, faulty: FaultyOs) -> None:
    handler = _setup(root)
    faulty.hooks["open"] = lambda: shutil.rmtree(root / "notes")
    tool_input = {"command": "create", "path": "/memories/notes/b.md", "file_text": "b\n"}
    result = handler.execute(tool_input)
    assert result.is_error, result.output
    assert result.output != INTERNAL_ERROR, explain(handler, tool_input, result)
    assert not (root / "notes").exists()
    assert not all_temps(root)


def test_root_removed_underneath(root: Path) -> None:
    handler = _setup(root)
    shutil.rmtree(root)
    outcomes = []
    for tool_input in (
        {"command": "view", "path": "/memories"},
        {"command": "view", "path": "/memories/notes/a.md"},
        {"command": "create", "path": "/memories/x.md", "file_text": "x"},
        WRITES["str_replace"],
        {"command": "delete", "path": "/memories/notes/a.md"},
        {"command": "rename", "old_path": "/memories/notes/a.md", "new_path": "/memories/b.md"},
    ):
        result = handler.execute(tool_input)
        outcomes.append(result.output)
        if tool_input == {"command": "view", "path": "/memories"} and not result.is_error:
            # an empty listing is an honest answer for a missing root
            assert result.output.endswith("\n4.0K\t/memories"), result.output
            continue
        assert result.is_error, f"{tool_input} -> {result.output}"
        assert result.output != INTERNAL_ERROR, explain(handler, tool_input, result)
        assert str(root) not in result.output
    assert not root.exists(), "a command recreated the removed root"
    report("faults-root-removed", outcomes=outcomes)


def test_real_file_size_limit_in_a_child(root: Path) -> None:
    """RLIMIT_FSIZE makes the kernel refuse a large write (EFBIG): nothing half-written."""
    resource = pytest.importorskip("resource")
    if not hasattr(os, "fork"):
        pytest.skip("needs fork")
    _setup(root)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        try:
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (2000, 2000))
            handler = MemoryHandler(root)
            result = handler.execute(WRITES["str_replace"])  # the file would be about 5 KB
            os.write(write, f"{int(result.is_error)}|{result.output}".encode())
        finally:
            os._exit(0)
    os.close(write)
    raw = b""
    while True:
        chunk = os.read(read, 4096)
        if not chunk:
            break
        raw += chunk
    os.close(read)
    os.waitpid(pid, 0)
    is_error, output = raw.decode().split("|", 1)
    assert is_error == "1", output
    assert output == "Error: Could not write /memories/notes/a.md: operating system error.", output
    _assert_untouched(root)


def _can_mount() -> bool:
    if not sys.platform.startswith("linux") or os.geteuid() != 0 or shutil.which("mount") is None:
        return False
    return os.environ.get("REFMEM_NO_MOUNT") is None


@pytest.mark.skipif(not _can_mount(), reason="needs root and mount on Linux (set REFMEM_NO_MOUNT to skip)")
def test_real_disk_full_and_read_only_filesystem(tmp_path: Path) -> None:
    mount_point = tmp_path / "tiny"
    mount_point.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k,mode=0700", "tmpfs", str(mount_point)],
                          capture_output=True)
    if done.returncode != 0:
        pytest.skip("mount refused: " + done.stderr.decode(errors="replace").strip())
    try:
        root = mount_point / "memories"
        root.mkdir()
        handler = _setup(root)
        # fill the filesystem, leaving less than the edit needs
        filler = mount_point / "filler"
        fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            while True:
                os.write(fd, b"\1" * 4096)
        except OSError:
            pass
        finally:
            os.close(fd)
        os.truncate(filler, max(0, filler.stat().st_size - 8192))
        outcomes: List[str] = []
        for tool_input in (
            {"command": "create", "path": "/memories/notes/big.md", "file_text": "z" * 200_000},
            {"command": "str_replace", "path": "/memories/notes/a.md", "old_str": "line two",
             "new_str": "w" * 200_000},
        ):
            result = handler.execute(tool_input)
            outcomes.append(result.output)
            _assert_io_error(handler, tool_input, result, tool_input["path"], "ENOSPC")
            _assert_untouched(root)
        filler.unlink()
        assert not handler.execute(WRITES["insert"]).is_error  # space is back: it works again
        handler.execute({"command": "str_replace", "path": "/memories/notes/a.md", "old_str": "added\n",
                         "new_str": ""})
        # now a read-only filesystem
        done = subprocess.run(["mount", "-o", "remount,ro", str(mount_point)], capture_output=True)
        assert done.returncode == 0, done.stderr
        for command in ("create", "str_replace", "insert"):
            tool_input = WRITES[command]
            result = handler.execute(tool_input)
            _assert_io_error(handler, tool_input, result, tool_input["path"], "EROFS")
        for tool_input in (
            {"command": "delete", "path": "/memories/notes/a.md"},
            {"command": "rename", "old_path": "/memories/notes/a.md", "new_path": "/memories/b.md"},
        ):
            result = handler.execute(tool_input)
            assert result.is_error and result.output.endswith(": read-only file system."), result.output
        view = handler.execute({"command": "view", "path": "/memories/notes/a.md"})
        assert not view.is_error, view.output  # reading a read-only memory still works
        assert (root / "notes" / "a.md").read_text() == ORIGINAL
        report("faults-real-tmpfs", enospc_outcomes=len(outcomes), erofs_commands=5)
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], capture_output=True)
