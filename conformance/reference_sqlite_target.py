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
from typing import Mapping, Optional, Sequence

from .reference_target import StoreReference, version
from .reference_target import make as make_reference

__all__ = ["DATABASE_NAME", "SqliteReference", "make", "version"]

DATABASE_NAME = "memory.db"
"""The database file, in the case's root (with SQLite's -wal and -shm files beside it while it is open)."""


SqliteReference = StoreReference
"""The reference handler over its own SQLite store; `close` closes both."""


def make(
    root: pathlib.Path,
    *,
    read_only: bool = False,
    allow: Optional[Sequence[str]] = None,
    limits: Optional[Mapping[str, int]] = None,
    content_policy: Optional[str] = None,
    tenant: Optional[str] = None,
) -> StoreReference:
    """A `refmem.MemoryHandler` over `refmem.stores.sqlite.SqliteStore(root / DATABASE_NAME)`, configured as the
    `refmem` target configures it (for `tenant`'s memories when named: rows of their own, D-STORE-TENANT)."""
    from refmem.stores.sqlite import SqliteStore

    pathlib.Path(root).mkdir(parents=True, exist_ok=True)
    store = SqliteStore(pathlib.Path(root) / DATABASE_NAME)
    try:
        handler = make_reference(
            store,  # type: ignore[arg-type]
            read_only=read_only,
            allow=allow,
            limits=limits,
            content_policy=content_policy,
            tenant=tenant,
        )
    except BaseException:
        store.close()
        raise
    return StoreReference(handler, store)


make.storage = "own"  # type: ignore[attr-defined]  # what InProcessTarget reads from a factory
# Handlers made on one root in several processes open the same database file: they share what they store (the
# deployment tier's sessions), each command one transaction.
make.shared = True  # type: ignore[attr-defined]
