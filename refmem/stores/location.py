"""Where a store is, and what each kind of location can do: the registry of location schemes (D-STORE-SCHEMES).

A location is `sqlite:///abs/path.db` or `sqlite:relative/path.db`, or a PostgreSQL URI (`postgresql://...` or
`postgres://...`, libpq's own syntax, handed to psycopg whole), as `refmem exec --store`, `refmem db` and the
`REFMEM_STORE` environment variable give it; or a directory, given by `--root` (the filesystem store). Each is one
row of `SCHEMES`: how it is recognised, how a store is opened for a tenant, its admin side (`db init/migrate`,
`db check`, `db tenants`, whether `db erase` finds a database there, whether it has roles), how it prunes and
whether it keeps history. The command line, `serve`, the conformance targets and the storage contract's tests read
the rows; none of them names an engine. A new kind of store is one row (`register`) plus its engine.

Pure parsing, then the store's own open; a refusal names no path (StoreError), since the text may end up in a log
the path should not reach.
"""

from __future__ import annotations

import contextlib
import os
from typing import Any, Callable, Iterator, List, NamedTuple, Optional, Tuple

from .._store_messages import STORE_SPEC
from . import StoreError

ENVIRONMENT = "REFMEM_STORE"
"""The environment variable a store location is read from when none is given on the command line."""
SQLITE_SCHEME = "sqlite:"
POSTGRES_SCHEMES = ("postgresql://", "postgres://")

Opener = Callable[[str, Optional[str], Optional[str], bool], Any]
"""(location, tenant, actor, create) -> the store (`store_protocol.Store`) for `tenant`, its changes' versions
naming `actor`; `create`: make the database's schema where it has none (a command line never does)."""


class Scheme(NamedTuple):
    """One kind of location (see the module docstring); the admin side's fields are None where it has none."""

    name: str
    recognises: Callable[[str], bool]
    """Whether a location string is of this scheme (never true of any for the filesystem: `--root` names it)."""
    open: Opener
    migrate: Optional[Callable[[str, Optional[str]], Tuple[Optional[int], int]]] = None
    """`db init` and `db migrate`: (location, app role) -> (schema version before, after)."""
    check: Optional[Callable[[str, Optional[str]], Tuple[List[str], str]]] = None
    """`db check` (D-STORE-DB-CHECK): (location, app role) -> (problems, the healthy line)."""
    tenants: Optional[Callable[[str], List[Any]]] = None
    """`db tenants` (D-STORE-DB-TENANTS): location -> its tenants (health.Tenant)."""
    present: Callable[[str], bool] = lambda location: True
    """Whether a database is at the location: `db erase` never makes one to erase nothing in."""
    roles: bool = False
    """Whether the database has roles (`--app-role`)."""
    prune: Optional[Callable[[str, float, bool], Tuple[List[str], int]]] = None
    """How a location without tenants prunes (the filesystem: `expiry.prune` of the root): (location, seconds,
    dry run) -> (paths removed, files kept). None: the store prunes itself (`store_protocol.PrunableStore`)."""
    history: bool = True
    """Whether its stores keep versions (`refmem history` and `restore`); the filesystem store keeps none."""


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


def sqlite_location(path: str) -> str:
    """The `sqlite:` location of the database file at `path` (made absolute)."""
    return SQLITE_SCHEME + "//" + os.path.abspath(path)


def _sqlite_open(location: str, tenant: Optional[str], actor: Optional[str], create: bool) -> Any:
    from .sqlite import SqliteStore

    return SqliteStore(sqlite_path(location), tenant=tenant, actor=actor)  # a database file is made where missing


def _sqlite_migrate(location: str, app_role: Optional[str]) -> Tuple[Optional[int], int]:
    from .sqlite import migrate

    return migrate(sqlite_path(location))


def _sqlite_check(location: str, app_role: Optional[str]) -> Tuple[List[str], str]:
    from .health import check_sqlite

    return check_sqlite(sqlite_path(location))


def _sqlite_tenants(location: str) -> List[Any]:
    from .health import tenants_sqlite

    return tenants_sqlite(sqlite_path(location))


def _postgres_open(location: str, tenant: Optional[str], actor: Optional[str], create: bool) -> Any:
    from .postgres import PostgresStore

    return PostgresStore(location, tenant=tenant, create=create, actor=actor)


def _postgres_migrate(location: str, app_role: Optional[str]) -> Tuple[Optional[int], int]:
    from .postgres import migrate

    return migrate(location, app_role)  # init and migrate alike: from the version there


def _postgres_check(location: str, app_role: Optional[str]) -> Tuple[List[str], str]:
    from .health import check_postgres

    return check_postgres(location, app_role)


def _postgres_tenants(location: str) -> List[Any]:
    from .health import tenants_postgres

    return tenants_postgres(location)


def _directory_open(location: str, tenant: Optional[str], actor: Optional[str], create: bool) -> Any:
    from ..tracked import TrackedDirectory

    store = TrackedDirectory(location)
    return store if tenant is None else store.for_tenant(tenant)


def _directory_prune(location: str, seconds: float, dry_run: bool) -> Tuple[List[str], int]:
    from ..expiry import prune

    report = prune(location, seconds, dry_run=dry_run)
    return report.removed, report.kept


SQLITE = Scheme(
    "sqlite",
    lambda location: location.startswith(SQLITE_SCHEME),
    _sqlite_open,
    migrate=_sqlite_migrate,
    check=_sqlite_check,
    tenants=_sqlite_tenants,
    present=lambda location: os.path.isfile(sqlite_path(location)),
)
POSTGRESQL = Scheme(
    "postgresql",
    lambda location: location.startswith(POSTGRES_SCHEMES),
    _postgres_open,
    migrate=_postgres_migrate,
    check=_postgres_check,
    tenants=_postgres_tenants,
    roles=True,
)
DIRECTORY = Scheme("directory", lambda location: False, _directory_open, prune=_directory_prune, history=False)
"""The filesystem store: a directory, given by `--root` (or `serve --store directory`), never by a location."""

SCHEMES: List[Scheme] = [SQLITE, POSTGRESQL, DIRECTORY]
"""Every scheme, the first that recognises a location serving it."""


def register(scheme: Scheme) -> None:
    """Add `scheme`, ahead of those there (so it may take locations another would refuse)."""
    SCHEMES.insert(0, scheme)


def unregister(scheme: Scheme) -> None:
    """Remove `scheme` (registered by `register`)."""
    SCHEMES.remove(scheme)


@contextlib.contextmanager
def registered(scheme: Scheme) -> Iterator[Scheme]:
    """`scheme` registered for the block's length."""
    register(scheme)
    try:
        yield scheme
    finally:
        unregister(scheme)


def find(location: str) -> Optional[Scheme]:
    """The scheme of `location`, or None when no scheme recognises it."""
    for scheme in SCHEMES:
        if scheme.recognises(location):
            return scheme
    return None


def scheme_of(location: str) -> Scheme:
    """The scheme of `location`; StoreError (naming no location) when none recognises it."""
    scheme = find(location)
    if scheme is None:
        raise StoreError(STORE_SPEC)
    return scheme


def open_location(
    location: str, tenant: Optional[str] = None, actor: Optional[str] = None, create: bool = False
) -> object:
    """The store at `location` (a `store_protocol.Store`), for `tenant`, its changes' versions naming `actor`.
    A database server's must have its schema (`refmem db init`) unless `create`: a command line never makes one by
    accident."""
    return scheme_of(location).open(location, tenant, actor, create)


def check(location: str, app_role: Optional[str] = None) -> Tuple[List[str], str]:
    """`refmem db check` of the store at `location` (its row's `check`): (the problems found, one line each; the line
    that says the store is healthy). StoreError for a location no row with a check recognises."""
    scheme = scheme_of(location)
    if scheme.check is None:
        raise StoreError(STORE_SPEC)
    return scheme.check(location, app_role)


def tenants(location: str) -> List[Any]:
    """`refmem db tenants` of the store at `location` (its row's `tenants`: health.Tenant lines); StoreError for a
    location no row with a list of tenants recognises."""
    scheme = scheme_of(location)
    if scheme.tenants is None:
        raise StoreError(STORE_SPEC)
    return scheme.tenants(location)


def from_environment() -> Optional[str]:
    """The location `REFMEM_STORE` holds, or None."""
    return os.environ.get(ENVIRONMENT) or None
