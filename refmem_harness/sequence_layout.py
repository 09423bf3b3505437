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
written as conformance fixture objects so a finding converts into a case without translation. A
plug-in for other tools (fuzz/plugin.py) lays out its own fixtures, and may add files beside the
canary tree (`outside`, their text holding the run's canary where it says `<CANARY>`).
"""

from __future__ import annotations

import base64
import os
import secrets
import tempfile
from pathlib import Path
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

from . import hosttree
from .layout import apply_fixtures, make_case_dir, remove

Fixture = Dict[str, str]

def symlinks(*links: Tuple[str, str]) -> List[Fixture]:
    """A symlink fixture for each (path in the root, where it points)."""
    return [{"type": "symlink", "path": path, "target": target} for path, target in links]


HOSTILE_FIXTURES: List[Fixture] = [
    {"type": "file", "path": "notes.md", "text": "first line\nsecond line\n"},
    {"type": "dir", "path": "docs"},
    {"type": "file", "path": "docs/a.txt", "text": "alpha\r\nbeta\r\n"},
    *symlinks(
        ("link_out", "../outside"),
        ("link_secret", "../outside/secret.txt"),
        ("link_evil", "../memories_evil"),
        ("docs/link_up", "../.."),
        ("dangling", "../outside/new.txt"),
        ("link_inside", "notes.md"),
    ),
    {"type": "fifo", "path": "pipe"},
    {"type": "hardlink", "path": "hard", "target": "outside/secret.txt"},
    {"type": "file", "path": "binary.bin", "base64": base64.b64encode(b"\xff\xfe\x00bad\x80").decode()},
]
"""Names the decoder's dictionary also knows (see tokens.py)."""

CANARY_MARK = "<CANARY>"
"""Where the run's canary goes in the text of a file laid out beside the canary tree (and in finding files)."""

Snapshot = Dict[str, "hosttree.Node"]
Fingerprint = Dict[str, Tuple[object, ...]]


class Layout:
    """One reusable case directory; `reset()` rebuilds it between sequences."""

    def __init__(
        self,
        work: Path,
        hostile: bool,
        canary: Optional[str] = None,
        fixtures: Optional[Sequence[Fixture]] = None,
        outside: Optional[Mapping[str, str]] = None,
    ) -> None:
        self.work = work
        self.case = work / "case"
        self.root = self.case / "memories"
        self.hostile = hostile
        self.canary = canary or f"CANARY-{secrets.token_hex(12)}"
        chosen = HOSTILE_FIXTURES if fixtures is None else fixtures
        self._fixtures: List[Fixture] = [dict(fixture) for fixture in chosen]
        self.outside: Dict[str, str] = dict(outside or {})
        """Files written beside the canary tree, before the fixtures (CASE-relative path -> text)."""
        self.baseline: Snapshot = {}
        self.baseline_print: Fingerprint = {}
        self._host_paths: List[str] = []

    @property
    def fixtures(self) -> List[Fixture]:
        return self._fixtures if self.hostile else []

    def host_paths(self) -> List[str]:
        """Spellings of the case directory that must never appear in an output (worked out once:
        they are checked after every step, and the case directory does not move)."""
        if not self._host_paths:
            spellings = {str(self.work), str(self.case), os.path.realpath(self.work), os.path.realpath(self.case)}
            self._host_paths = sorted(spellings, key=len, reverse=True)
        return self._host_paths

    def reset(self) -> None:
        """Lay the case out afresh; skipped when the last sequence left everything as it was.

        "As it was" is judged by metadata (inode, size, modification time, mode, link text) of every
        entry: a write that keeps all of those is not something a handler can do by accident, and
        reading every byte of a megabyte file after each sequence would halve the fuzzer's speed.
        """
        if self.baseline_print and self.work.exists() and hosttree.fingerprint(str(self.work)) == self.baseline_print:
            return
        if self.work.exists():
            remove(self.work)
        # The same case directory, canary tree and fixtures as the conformance runner lays out.
        self.work.mkdir(parents=True)
        case = make_case_dir(self.case, self.canary)
        for relative, text in self.outside.items():
            (self.case / relative).parent.mkdir(parents=True, exist_ok=True)
            (self.case / relative).write_bytes(text.replace(CANARY_MARK, self.canary).encode("utf-8"))
        apply_fixtures(case, [dict(fixture) for fixture in self.fixtures])
        self.baseline = self.snapshot_outside()
        self.baseline_print = hosttree.fingerprint(str(self.work))

    def snapshot_outside(self, wanted: hosttree.Wanted = hosttree.want_all) -> Snapshot:
        """Everything under WORK except the root's contents (the root's own entry is kept)."""
        root = os.path.relpath(self.root, self.work)
        snapshot: Snapshot = hosttree.read(str(self.work), wanted, enter=lambda relative: relative != root).tree
        return snapshot

    def outside_changes(self) -> List[str]:
        """Human-readable differences from the baseline; empty when nothing outside changed."""
        now = self.snapshot_outside(hosttree.wanted_like(self.baseline))
        changes = []
        for rel, before, after in hosttree.changes(self.baseline, now):
            if before is None:
                changes.append(f"new outside the root: {rel}")
            elif after is None:
                changes.append(f"removed outside the root: {rel}")
            else:
                changes.append(f"changed outside the root: {rel}")
        return changes

    def remove(self) -> None:
        if self.work.exists():
            remove(self.work)


def scratch_dir_base() -> Optional[str]:
    """tmpfs when there is one: layouts are rebuilt often, and tmpfs makes that cheap."""
    return "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None


def scratch_dir(prefix: str) -> Path:
    return Path(tempfile.mkdtemp(prefix=prefix, dir=scratch_dir_base()))
