"""Backends for the property suite's tests: the careful backend of `buggy_backends` with one more planted bug each,
and shapes of result that only a signal can tell apart.

- `make_double_insert`: insert puts insert_text in twice (a documented finding: the documentation says what
  insert does, and nothing outside the root or unnamed is touched, so it is not a safety one);
- `make_unsignalled`: every result a plain string, errors included, and no declaration of how errors read: each
  error the documentation settles comes back as a success that reads as an error (signalling);
- `make_own_storage`: the careful backend declaring storage of its own (the property suite then reads nothing
  from disk: its documented checks follow the model, and a view shows what the backend holds);
- `make_with_index`: the careful backend keeping a hidden index of its own in the root, rewritten after every
  command (not a bug: the backend's own file is neither the sequence's data nor the documentation's business).

Never use any of this as a real backend.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

if __package__:
    from .buggy_backends import SIGNALLING, CarefulMemory, RaisingMemory, insert_lines
else:  # imported as a top-level module, with this folder on sys.path
    from buggy_backends import SIGNALLING, CarefulMemory, RaisingMemory, insert_lines

__all__ = ["SIGNALLING", "make_double_insert", "make_own_storage", "make_with_index"]


class DoubleInsert(CarefulMemory):
    """Inserts insert_text twice at insert_line: the classic retry that re-applies an edit."""

    def inserted(self, text: str, line: int, insert_text: str) -> str:
        return insert_lines(insert_lines(text, line, insert_text), line, insert_text)


class Unsignalled:
    """The careful backend's text, errors included, as plain strings; no SIGNALLING in reach (see below)."""

    storage = "filesystem"

    def __init__(self, root: Path) -> None:
        self.backend = CarefulMemory(root)

    def execute(self, command: Any) -> str:
        return self.backend.execute(command).output


class OwnStorage(RaisingMemory):
    storage = "own"


class WithIndex(RaisingMemory):
    """Counts the commands it ran in `.index`, a file of its own in the root."""

    def __init__(self, root: Path) -> None:
        super().__init__(CarefulMemory(root))
        self.index = root / ".index"
        self.count = 0

    def execute(self, command: Any) -> str:
        try:
            return super().execute(command)
        finally:
            self.count += 1
            self.index.write_text(f"{self.count} commands\n")


def make_double_insert(root: Path) -> RaisingMemory:
    return RaisingMemory(DoubleInsert(root))


def make_own_storage(root: Path) -> RaisingMemory:
    return OwnStorage(CarefulMemory(root))


def make_with_index(root: Path) -> WithIndex:
    return WithIndex(root)
