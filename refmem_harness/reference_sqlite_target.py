"""The `refmem+sqlite` target: the embedded reference handler over the SQLite store (`refmem.stores.sqlite`).

The same handler, options and results as the `refmem` target, with the memories in one database file made in
the case's root. The target keeps its own storage (`storage = "own"`): a case's `setup.files` and plain fixtures
are created through the handler, its `final` state is read back with views (both by a handler without the case's
options, since handlers on one root share the database: D-STORE-OWN-SETUP, D-STORE-OWN-FINAL), and a case that
needs other on-disk fixtures (links, FIFOs, hard links, modes, raw bytes planted on the host) is skipped with the
runner's reason, because none of those can stand in a database (docs/spec-notes.md, D-STORE-SQL-FIXTURES).
"""

from __future__ import annotations

import pathlib
from typing import Any, MutableMapping, Tuple

from .reference_target import over_store, version

__all__ = ["DATABASE_NAME", "make", "version"]

DATABASE_NAME = "memory.db"
"""The database file, in the case's root (with SQLite's -wal and -shm files beside it while it is open)."""


def _open(root: pathlib.Path, options: MutableMapping[str, Any]) -> Tuple[Any, bool]:
    from refmem.stores.location import open_location, sqlite_location

    root.mkdir(parents=True, exist_ok=True)
    return open_location(sqlite_location(str(root / DATABASE_NAME)), create=True), False


make = over_store(_open)
"""The reference handler over its own SQLite store; `close` closes both."""
"""A `refmem.MemoryHandler` over the store at the `sqlite:` location of `root / DATABASE_NAME` (opened through
refmem.stores.location, the registry of schemes), configured as the `refmem` target configures it (for
`tenant`'s memories when named: rows of their own, D-STORE-TENANT). Handlers made on one root in several processes
open the same database file, each command one transaction."""
