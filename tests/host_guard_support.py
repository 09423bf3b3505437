"""What a test run must leave as it found it outside its temporary folders: a snapshot taken when the session
starts, compared when it ends (tests/conftest.py fails the run and names every difference).

A test that reaches the host by accident does it quietly: a fake descriptor number handed to a real `os`
function changes whatever the test process has open under that number (pytest binds its standard streams to
`/dev/null`), and a confinement bug writes beside the temporary folder instead of in it. The snapshot holds
- the character devices every process shares (`/dev/null`, `/dev/zero`, `/dev/full`, `/dev/urandom`): type,
  mode, owner and device number;
- the repository's working tree, when it is a git checkout: `git status` with untracked and ignored files (the
  tools' caches left out), and a digest of each listed file, so a further change to an already changed file
  shows too;
- a sentinel file in a folder of its own under the user's cache folder, away from the temporary folders
  (`/tmp`, pytest's base folder) and their parents: its bytes, mode, inode and modification time, and its
  folder's listing.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path
from typing import Dict, List, Optional, Tuple

SHARED_DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/urandom")
# Folders the tools themselves write into while tests run (bytecode, hypothesis's example database).
TOOL_CACHES = frozenset({"__pycache__", ".hypothesis", ".pytest_cache", ".mypy_cache", ".ruff_cache"})
SENTINEL_TEXT = b"refmem test session sentinel: no test may change, move or remove this file\n"

Snapshot = Dict[str, str]


def _device(path: str) -> str:
    try:
        info = os.stat(path)
    except OSError as error:
        return f"missing ({error.strerror})"
    kind = "character device" if stat.S_ISCHR(info.st_mode) else f"type {stat.S_IFMT(info.st_mode):o}"
    return (
        f"{kind}, mode {stat.S_IMODE(info.st_mode):04o}, owner {info.st_uid}:{info.st_gid}, "
        f"device {os.major(info.st_rdev)},{os.minor(info.st_rdev)}"
    )


def _describe(path: Path, contents: bool) -> str:
    """Kind, size and modification time of `path`, and with `contents` a digest of its bytes."""
    try:
        info = os.lstat(path)
        if stat.S_ISLNK(info.st_mode):
            return "link to " + os.readlink(path)
        if not stat.S_ISREG(info.st_mode):
            return f"type {stat.S_IFMT(info.st_mode):o}, mode {stat.S_IMODE(info.st_mode):04o}"
        described = f"{info.st_size} bytes, mode {stat.S_IMODE(info.st_mode):04o}, modified {info.st_mtime_ns}"
        if contents:
            described += ", sha256 " + hashlib.sha256(path.read_bytes()).hexdigest()[:16]
        return described
    except FileNotFoundError:
        return "absent"
    except OSError as error:
        return f"unreadable ({error.strerror})"


def _working_tree(repository: Path) -> Optional[Snapshot]:
    """`git status` of the checkout holding `repository`, one entry per path; None outside a git checkout.
    Ignored files (node_modules, build output) are described by size and time, the others by content too."""
    git = shutil.which("git")
    if git is None:
        return None
    try:
        listed = subprocess.run(
            [git, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--ignored"],
            cwd=repository,
            capture_output=True,
            check=True,
            timeout=120,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    top = Path(
        subprocess.run([git, "rev-parse", "--show-toplevel"], cwd=repository, capture_output=True, check=True)
        .stdout.decode("utf-8", "surrogateescape")
        .strip()
    )
    tree: Snapshot = {}
    fields = iter(listed.decode("utf-8", "surrogateescape").split("\0"))
    for entry in fields:
        if not entry:
            continue
        code, name = entry[:2], entry[3:]
        if code[0] in "RC":
            next(fields, None)  # a staged rename or copy names its source in the next field
        if TOOL_CACHES.intersection(Path(name).parts):
            continue
        tree[name] = f"{code} {_describe(top / name, contents=code != '!!')}"
    return tree


class Sentinel:
    """A file in a folder of its own outside every temporary folder; `close()` removes both."""

    def __init__(self) -> None:
        self.folder: Optional[Path] = None
        for parent in (Path.home() / ".cache", Path.home()):
            try:
                parent.mkdir(parents=True, exist_ok=True)
                self.folder = Path(tempfile.mkdtemp(prefix="refmem-test-sentinel-", dir=parent))
            except OSError:
                continue
            break
        if self.folder is not None:
            self.file = self.folder / "sentinel.txt"
            self.file.write_bytes(SENTINEL_TEXT)
            self.file.chmod(0o644)

    def state(self) -> Snapshot:
        if self.folder is None:
            return {}
        try:
            info = os.lstat(self.file)
            listing = sorted(os.listdir(self.folder))
        except OSError as error:
            return {"sentinel": f"missing ({error.strerror})"}
        return {
            "sentinel": f"{_describe(self.file, contents=True)}, inode {info.st_ino}",
            "sentinel folder": ", ".join(listing),
        }

    def close(self) -> None:
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)


def devices() -> Snapshot:
    """The shared devices alone: cheap enough to look at after every test, to say when one changed."""
    return {path: _device(path) for path in SHARED_DEVICES}


def snapshot(repository: Path, sentinel: Sentinel) -> Snapshot:
    state = devices()
    tree = _working_tree(repository)
    if tree is not None:
        state.update({f"working tree: {name}": entry for name, entry in tree.items()})
    state.update(sentinel.state())
    return state


def differences(before: Snapshot, after: Snapshot) -> List[str]:
    """One line per thing that changed, appeared or went."""
    missing = "(absent)"
    changed: List[Tuple[str, str, str]] = [
        (name, before.get(name, missing), after.get(name, missing))
        for name in sorted(set(before) | set(after))
        if before.get(name) != after.get(name)
    ]
    return [f"{name}: {was} -> {now}" for name, was, now in changed]
