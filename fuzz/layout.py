"""The directory a sequence runs in, laid out as the conformance runner lays out a case.

```
WORK/                    a private ring around the case: anything new here is an escape too
  case/                  CASE in conformance/CASE-FORMAT.md
    memories/            the root handed to the target
    outside/secret.txt   canary text
    outside/dir/inner.txt
    memories_evil/secret.txt   a sibling whose name extends the root's
```

With `hostile=True` the root is seeded with the fixtures below before the first command: links to
the outside, a dangling link, a FIFO, a hard link to the outside secret, non-UTF-8 bytes. They are
written as conformance fixture objects so a finding converts into a case without translation.
"""

from __future__ import annotations

import base64
import os
import secrets
import shutil
import stat
import tempfile
from pathlib import Path
from typing import Dict, List, Optional, Tuple

Fixture = Dict[str, str]

HOSTILE_FIXTURES: List[Fixture] = [
    {"type": "file", "path": "notes.md", "text": "first line\nsecond line\n"},
    {"type": "dir", "path": "docs"},
    {"type": "file", "path": "docs/a.txt", "text": "alpha\r\nbeta\r\n"},
    {"type": "symlink", "path": "link_out", "target": "../outside"},
    {"type": "symlink", "path": "link_secret", "target": "../outside/secret.txt"},
    {"type": "symlink", "path": "link_evil", "target": "../memories_evil"},
    {"type": "symlink", "path": "docs/link_up", "target": "../.."},
    {"type": "symlink", "path": "dangling", "target": "../outside/new.txt"},
    {"type": "symlink", "path": "link_inside", "target": "notes.md"},
    {"type": "fifo", "path": "pipe"},
    {"type": "hardlink", "path": "hard", "target": "outside/secret.txt"},
    {"type": "file", "path": "binary.bin", "base64": base64.b64encode(b"\xff\xfe\x00bad\x80").decode()},
]
"""Names the decoder's dictionary also knows (see tokens.py)."""

SnapshotEntry = Tuple[str, int, bytes]
Snapshot = Dict[str, SnapshotEntry]


class Layout:
    """One reusable case directory; `reset()` rebuilds it between sequences."""

    def __init__(self, work: Path, hostile: bool, canary: Optional[str] = None) -> None:
        self.work = work
        self.case = work / "case"
        self.root = self.case / "memories"
        self.hostile = hostile
        self.canary = canary or f"CANARY-{secrets.token_hex(12)}"
        self.baseline: Snapshot = {}
        self.baseline_all: Snapshot = {}

    @property
    def fixtures(self) -> List[Fixture]:
        return HOSTILE_FIXTURES if self.hostile else []

    def host_paths(self) -> List[str]:
        """Spellings of the case directory that must never appear in an output."""
        spellings = {str(self.work), str(self.case), os.path.realpath(self.case)}
        return sorted(spellings, key=len, reverse=True)

    def reset(self) -> None:
        """Lay the case out afresh; skipped when the last sequence left every byte as it was."""
        if self.baseline and self.work.exists() and self.snapshot_all() == self.baseline_all:
            return
        if self.work.exists():
            _remove_tree(self.work)
        self.root.mkdir(parents=True)
        outside = self.case / "outside"
        (outside / "dir").mkdir(parents=True)
        (outside / "secret.txt").write_text(f"{self.canary} outside secret\n")
        (outside / "dir" / "inner.txt").write_text(f"{self.canary} inner\n")
        (self.case / "memories_evil").mkdir()
        (self.case / "memories_evil" / "secret.txt").write_text(f"{self.canary} sibling\n")
        for fixture in self.fixtures:
            make_fixture(self.case, fixture)
        self.baseline_all = self.snapshot_all()
        self.baseline = self._outside_part(self.baseline_all)

    def snapshot_all(self) -> Snapshot:
        """Everything under WORK, the root's contents included: type, mode, bytes or link text."""
        snap: Snapshot = {}
        for dirpath, dirnames, filenames in os.walk(self.work, followlinks=False):
            for name in dirnames + filenames:
                full = os.path.join(dirpath, name)
                snap[os.path.relpath(full, self.work)] = _describe(full, content=True)
        return snap

    def snapshot_outside(self) -> Snapshot:
        """Everything under WORK except the root's contents."""
        return self._outside_part(self.snapshot_all())

    def _outside_part(self, snap: Snapshot) -> Snapshot:
        inside = os.path.relpath(self.root, self.work) + os.sep
        return {rel: entry for rel, entry in snap.items() if not rel.startswith(inside)}

    def outside_changes(self) -> List[str]:
        """Human-readable differences from the baseline; empty when nothing outside changed."""
        now = self.snapshot_outside()
        changes = []
        for rel in sorted(set(now) | set(self.baseline)):
            before, after = self.baseline.get(rel), now.get(rel)
            if before == after:
                continue
            if before is None:
                changes.append(f"new outside the root: {rel}")
            elif after is None:
                changes.append(f"removed outside the root: {rel}")
            else:
                changes.append(f"changed outside the root: {rel}")
        return changes

    def remove(self) -> None:
        if self.work.exists():
            _remove_tree(self.work)


def scratch_dir_base() -> Optional[str]:
    """tmpfs when there is one: layouts are rebuilt often, and tmpfs makes that cheap."""
    return "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None


def scratch_dir(prefix: str) -> Path:
    return Path(tempfile.mkdtemp(prefix=prefix, dir=scratch_dir_base()))


def make_fixture(case: Path, fixture: Fixture) -> None:
    path = case / "memories" / fixture["path"]
    path.parent.mkdir(parents=True, exist_ok=True)
    kind = fixture["type"]
    if kind == "file":
        data = base64.b64decode(fixture["base64"]) if "base64" in fixture else fixture["text"].encode()
        path.write_bytes(data)
    elif kind == "dir":
        path.mkdir(exist_ok=True)
    elif kind == "symlink":
        os.symlink(fixture["target"], path)
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "hardlink":
        os.link(case / fixture["target"], path)
    elif kind == "mode":
        os.chmod(path, int(fixture["mode"], 8))
    else:
        raise ValueError(f"unknown fixture type {kind}")


def _describe(full: str, content: bool) -> SnapshotEntry:
    info = os.lstat(full)
    mode = stat.S_IMODE(info.st_mode)
    if stat.S_ISLNK(info.st_mode):
        return ("link", mode, os.readlink(full).encode("utf-8", "surrogateescape"))
    if stat.S_ISDIR(info.st_mode):
        return ("dir", mode, b"")
    if stat.S_ISREG(info.st_mode):
        if not content:
            return ("file", mode, b"")
        try:
            fd = os.open(full, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            return ("file", mode, b"<unreadable>")
        with os.fdopen(fd, "rb") as handle:
            return ("file", mode, handle.read(1 << 20))
    return ("special", mode, b"")


def _remove_tree(path: Path) -> None:
    """rmtree that also clears modes a target (or a mode fixture) may have taken away."""

    def fix_and_retry(func, target, _exc) -> None:  # type: ignore[no-untyped-def]
        parent = os.path.dirname(target)
        try:
            os.chmod(parent, 0o700)
            if os.path.isdir(target) and not os.path.islink(target):
                os.chmod(target, 0o700)
        except OSError:
            pass
        func(target)

    shutil.rmtree(path, onerror=fix_and_retry)
