"""The `refmem+postgres` target: the embedded reference handler over the PostgreSQL store (`refmem.stores.postgres`).

The same handler, options and results as the `refmem` target, with each case's memories in a tenant of its own in
the database that the environment variable `REFMEM_CONFORMANCE_POSTGRES` names (a libpq connection string or
URI, never printed; the schema is made on first use). The case's tenant is erased when the case ends. Like
`refmem+sqlite`, the target keeps its own storage (`storage = "own"`): a case that needs on-disk fixtures is
skipped with the runner's reason (docs/spec-notes.md, D-STORE-SQL-FIXTURES).

    initdb/pg_ctl a server, then
    REFMEM_CONFORMANCE_POSTGRES='host=/run/postgresql dbname=refmem' \\
        python -m refmem_conformance --target refmem+postgres --profile hardening
"""

from __future__ import annotations

import hashlib
import os
import pathlib
from typing import Any, MutableMapping, Optional, Tuple

from .reference_target import over_store, version

__all__ = ["ENVIRONMENT", "make", "version"]

ENVIRONMENT = "REFMEM_CONFORMANCE_POSTGRES"
"""The environment variable holding the DSN of the database the target keeps its cases' tenants in."""
MARKER = ".refmem-postgres-case"
"""The file in a case's root that says a handler has already opened the root's tenant."""


def check_environment() -> Optional[str]:
    """What keeps the target from opening (its DSN missing), or None."""
    return None if dsn() else f"set {ENVIRONMENT} to the PostgreSQL database's connection string"


def dsn() -> Optional[str]:
    """The DSN the environment gives, or None."""
    return os.environ.get(ENVIRONMENT) or None


def _open(root: pathlib.Path, options: MutableMapping[str, Any]) -> Tuple[Any, bool]:
    from refmem.store_protocol import tenant_name
    from refmem.stores.location import POSTGRESQL, find

    location = dsn()
    if location is None:
        raise RuntimeError(f"refmem+postgres needs the database's connection string in {ENVIRONMENT}")
    tenant = options.pop("tenant", None)
    if tenant is not None:
        tenant_name(tenant)  # refused as the reference refuses it
    folder = pathlib.Path(root).resolve()
    folder.mkdir(parents=True, exist_ok=True)
    try:
        os.close(os.open(folder / MARKER, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600))
        owner = True
    except FileExistsError:
        owner = False
    seed = f"{folder}\0{tenant or ''}".encode()
    scheme = find(location) or POSTGRESQL  # a URI by the registry of schemes; a libpq keyword string is PostgreSQL's
    store = scheme.open(location, "case-" + hashlib.sha256(seed).hexdigest()[:24], None, True)
    if owner:
        try:
            store.erase()  # a root path used again starts from nothing
        except BaseException:
            store.close()
            raise
    return store, owner


make = over_store(_open)
"""The reference handler over its own PostgreSQL store (one tenant per case root); `close` closes both, and erases
the tenant when this handler was the first on the root."""
"""A `refmem.MemoryHandler` over `refmem.stores.postgres.PostgresStore` in a tenant of its own for this case's
root (and the model's `tenant` in it, when named), configured as the `refmem` target configures it.

Handlers made on one root, in any process, share that tenant (the deployment tier's sessions). The first to open
the root (it makes the marker file `MARKER` there) starts from an empty tenant and erases it when it closes; the
others join it and leave it be."""
