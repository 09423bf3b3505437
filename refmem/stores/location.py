"""Where a database store is: `sqlite:///abs/path.db` or `sqlite:relative/path.db`, or a PostgreSQL URI
(`postgresql://...` or `postgres://...`, libpq's own syntax, handed to psycopg whole), as `refmem exec --store`,
`refmem db` and the `REFMEM_STORE` environment variable give it. Pure parsing, then the store's own open; a
refusal names no path (StoreError), since the text may end up in a log the path should not reach."""

from __future__ import annotations

import os
from typing import Optional

from ..messages import STORE_SPEC
from . import StoreError

ENVIRONMENT = "REFMEM_STORE"
"""The environment variable a store location is read from when none is given on the command line."""
SQLITE_SCHEME = "sqlite:"
POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def is_postgres(location: str) -> bool:
    """Whether `location` names a PostgreSQL database (its URI scheme)."""
    return location.startswith(POSTGRES_SCHEMES)


def sqlite_path(location: str) -> str:
    """The database path of an `sqlite:` location; StoreError for anything else."""
    if not location.startswith(SQLITE_SCHEME):
        raise StoreError(STORE_SPEC)
    rest = location[len(SQLITE_SCHEME) :]
    if rest.startswith("//"):
        rest = rest[2:]
        if not rest.startswith("/"):  # sqlite://host/... names a host: a file store has none
            raise StoreError(STORE_SPEC)
    if not rest or "\0" in rest:
        raise StoreError(STORE_SPEC)
    return rest


def open_location(location: str, tenant: Optional[str] = None, actor: Optional[str] = None) -> object:
    """The store at `location` (a `store_protocol.Store`), for `tenant`, its changes' versions naming `actor`.
    A PostgreSQL
    database must have its schema (`refmem db init`): a command line never makes one by accident."""
    if is_postgres(location):
        from .postgres import PostgresStore

        return PostgresStore(location, tenant=tenant, create=False, actor=actor)
    from .sqlite import SqliteStore

    return SqliteStore(sqlite_path(location), tenant=tenant, actor=actor)


def from_environment() -> Optional[str]:
    """The location `REFMEM_STORE` holds, or None."""
    return os.environ.get(ENVIRONMENT) or None
