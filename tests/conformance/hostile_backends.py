"""Backends that attack the harness rather than the host: what they leave on disk or send back is huge or slow.

Each wraps the careful backend (buggy_backends.CarefulMemory) and adds one hostility:

- `make_sparse`: after every command, a sparse 8 GiB file sits in its root (reading it whole would need 8 GiB);
- `make_verbose`: every result carries 2 MB of text after the real one (a report must stay small);
- `make_slow`: every command sleeps a little first (so a run can be interrupted part way).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

if __package__:
    from .buggy_backends import CarefulMemory, Result
else:  # imported as a top-level module, with this folder on sys.path
    from buggy_backends import CarefulMemory, Result

SPARSE_BYTES = 8 << 30
VERBOSE_CHARS = 2_000_000
SLOW_SECONDS = 0.2


class _Wrapped:
    storage = "filesystem"

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.backend = CarefulMemory(root)
        self.implementation = dict(self.backend.implementation, name=type(self).__name__)


class Sparse(_Wrapped):
    def execute(self, command: Any) -> Result:
        result = self.backend.execute(command)
        with open(self.root / "huge.bin", "ab") as handle:
            handle.truncate(SPARSE_BYTES)
        return result


class Verbose(_Wrapped):
    def execute(self, command: Any) -> Result:
        result = self.backend.execute(command)
        return Result(result.output + "\n" + "v" * VERBOSE_CHARS, result.is_error)


class Slow(_Wrapped):
    def execute(self, command: Any) -> Result:
        time.sleep(SLOW_SECONDS)
        return self.backend.execute(command)


def make_sparse(root: Path) -> Sparse:
    return Sparse(root)


def make_verbose(root: Path) -> Verbose:
    return Verbose(root)


def make_slow(root: Path) -> Slow:
    return Slow(root)


def pid() -> int:
    return os.getpid()
