"""The database stores: the same memories, rules and results as the filesystem store, kept in SQL.

`refmem.stores.schema` holds the schema (as data) and every query, for any SQL engine through a small
`Dialect`; `refmem.stores.core.SqlStore` is the store's logic over them (`store_protocol.Store`), the same for every
engine, composed over a `core.Engine`; `refmem.stores.sqlite` is the embedded engine (standard library),
`refmem.stores.postgres` the server (psycopg 3, extra `refmem[postgres]`, imported only when a PostgreSQL store is
opened) and `refmem.stores.pgpool` its pooled engine: each adds its dialect and engine and keeps the rest.
`refmem.stores.location` is the registry of location schemes: which store a location names.

`StoreError` is what opening a database store raises when it cannot serve (a network filesystem, a newer
schema, a file that is not a database): its text is for the application's operator and names no host path,
host or password.
"""

from __future__ import annotations


class StoreError(Exception):
    """A database store cannot be opened; the message says why, naming no host path, host or password."""
