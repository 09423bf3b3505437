"""The stores the storage contract runs against, and `DictStore`: the interface's smallest implementation.

`KINDS` lists a factory per store: `open(where)` opens a store over the backing location `where`; two
stores opened over one location hold the same memories (as two processes would). A store that can be
shared between processes says so (`processes`), and the contract then also checks it across a fork.
The SQLite store (one database file at `where`) is here, and the PostgreSQL store (a schema of its own for
`where` in the session's throwaway cluster, postgres_support; skipped saying why where none can start), alone on
its connection and pooled (one pool per location: postgres_support.open_pooled_store). The database stores are
opened by their location scheme's row (refmem.stores.location.SCHEMES, `scheme_kind`).

`DictStore` keeps memories in a Python dict shared by the stores opened over one location in this
process. It exists to prove that the handler needs nothing but the interface: the handler's tests run
the same commands over it and over the filesystem store and compare every result.
"""

from __future__ import annotations

import contextlib
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, NamedTuple, Optional, Tuple

import postgres_support

from refmem import problems
from refmem._store_extras import Changes
from refmem.directory import Directory
from refmem.paths import VirtualPath
from refmem.problems import DIR, FILE
from refmem.store_protocol import Entry, Store, TenantError, tenant_name
from refmem.stores import location
from refmem.stores.location import Scheme
from refmem.tracked import TrackedDirectory

Parts = Tuple[str, ...]
JOURNAL_KEPT = 64  # lines a DictStore keeps: older generations get None (rescan), as a trimmed journal does


@dataclass
class Space:
    """One tenant's memories: folders, files (bytes and a version), uses, and the change journal."""

    folders: set = field(default_factory=lambda: {()})
    files: Dict[Parts, Tuple[bytes, int]] = field(default_factory=dict)
    used: Dict[Parts, float] = field(default_factory=dict)
    journal: List[Tuple[int, Tuple[str, ...]]] = field(default_factory=list)
    generation: int = 1000  # the first generation handed out; 0 is never one
    lock: threading.RLock = field(default_factory=threading.RLock)


_SPACES: Dict[Tuple[str, Optional[str]], Space] = {}
_SPACES_LOCK = threading.Lock()


def _space(where: str, tenant: Optional[str]) -> Space:
    with _SPACES_LOCK:
        return _SPACES.setdefault((where, tenant), Space())


class DictFile:
    __slots__ = ("_data", "_at")

    def __init__(self, data: bytes) -> None:
        self._data = data
        self._at = 0

    @property
    def size(self) -> int:
        return len(self._data)

    def read_all(self) -> bytes:
        rest, self._at = self._data[self._at :], len(self._data)
        return rest

    def chunks(self) -> Iterator[bytes]:
        while self._at < len(self._data):
            chunk = self._data[self._at : self._at + 4096]
            self._at += len(chunk)
            yield chunk

    def close(self) -> None:
        self._data = b""

    def __enter__(self) -> DictFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class DictEdit:
    def __init__(self, store: DictStore, parts: Parts, data: bytes, version: int) -> None:
        self._store, self._parts, self.data, self._version = store, parts, data, version

    def replace(self, new_data: bytes) -> None:
        with self._store.locked():
            space = self._store.space
            current = space.files.get(self._parts)
            if current is None or current[1] != self._version:
                raise problems.OsFailure("changed")
            self._store._note(self._parts)
            space.files[self._parts] = (new_data, self._store._next_version())


class DictStore:
    """Memories in a dict (see the module docstring): every method of `store_protocol.Store`, nothing more."""

    def __init__(self, where: str, tenant: Optional[str] = None) -> None:
        self.where = where
        self.tenant = None if tenant is None else tenant_name(tenant)
        self.space = _space(where, self.tenant)
        self._holder: Optional[int] = None
        self._depth = 0

    # -- helpers --

    def _kind(self, parts: Parts) -> Optional[str]:
        if parts in self.space.folders:
            return DIR
        return FILE if parts in self.space.files else None

    def _next_version(self) -> int:
        self.space.generation += 1
        return self.space.generation

    def _note(self, *paths: Parts) -> None:
        self.space.generation += 1
        self.space.journal.append((self.space.generation, tuple("/".join(("/memories",) + p) for p in paths)))
        del self.space.journal[:-JOURNAL_KEPT]

    def _make_parents(self, parts: Parts) -> None:
        for depth in range(1, len(parts)):
            if parts[:depth] in self.space.files:
                raise problems.ParentNotDir(depth)
        for depth in range(1, len(parts)):
            self.space.folders.add(parts[:depth])

    def _below(self, parts: Parts) -> List[Parts]:
        every = list(self.space.folders) + list(self.space.files)
        return [p for p in every if p[: len(parts)] == parts and len(p) > len(parts)]

    # -- queries --

    def entry(self, path: VirtualPath) -> Optional[Entry]:
        kind = self._kind(path.parts)
        if kind is None or (path.trailing_slash and kind != DIR):
            return None
        return Entry(kind, len(self.space.files[path.parts][0]) if kind == FILE else 0)

    def open_regular(self, path: VirtualPath, refuse_hard_links: bool = True) -> DictFile:
        kind = self._kind(path.parts)
        if kind is None or (path.trailing_slash and kind != DIR):
            raise problems.Missing()
        if kind == DIR:
            raise problems.NotRegular(DIR)
        return DictFile(self.space.files[path.parts][0])

    def children(
        self, path: VirtualPath, keep: Callable[[str], bool], limit: int
    ) -> Tuple[List[Tuple[str, str, int]], bool]:
        if self._kind(path.parts) != DIR:
            raise problems.Missing()
        batch: List[Tuple[str, str, int]] = []
        for name in sorted({p[len(path.parts)] for p in self._below(path.parts)}):
            if not keep(name):
                continue
            if len(batch) == limit:
                return batch, True
            child = path.parts + (name,)
            kind = self._kind(child) or DIR
            batch.append((name, kind, len(self.space.files[child][0]) if kind == FILE else 0))
        return batch, False

    def extent(self, path: VirtualPath, max_depth: int) -> Tuple[int, int]:
        below = [p[len(path.parts) :] for p in self._below(path.parts)]
        below = [p for p in below if len(p) <= max_depth + 1]
        if not below:
            return 0, 0
        return max(len(p) for p in below), max(sum(len(n.encode()) + 1 for n in p) for p in below)

    # -- changes --

    def write_new(self, path: VirtualPath, data: bytes) -> None:
        with self.locked():
            if self._kind(path.parts) is not None:
                raise problems.Exists()
            self._make_parents(path.parts)
            self._note(path.parts)
            self.space.files[path.parts] = (data, self._next_version())

    @contextlib.contextmanager
    def open_edit(self, path: VirtualPath, limit: int) -> Iterator[DictEdit]:
        kind = self._kind(path.parts)
        if kind is None or (path.trailing_slash and kind != DIR):
            raise problems.Missing()
        if kind == DIR:
            raise problems.NotRegular(DIR)
        data, version = self.space.files[path.parts]
        if len(data) > limit:
            raise problems.TooBig(len(data))
        yield DictEdit(self, path.parts, data, version)

    def delete(self, path: VirtualPath) -> None:
        with self.locked():
            kind = self._kind(path.parts)
            if kind is None or not path.parts or (path.trailing_slash and kind != DIR):
                raise problems.Missing()
            self._note(path.parts)
            for gone in self._below(path.parts) + [path.parts]:
                self.space.folders.discard(gone)
                self.space.files.pop(gone, None)
                self.space.used.pop(gone, None)

    def rename(self, old: VirtualPath, new: VirtualPath) -> None:
        with self.locked():
            if self._kind(old.parts) is None:
                raise problems.Missing()
            if self._kind(new.parts) is not None:
                raise problems.Exists()
            self._make_parents(new.parts)
            self._note(old.parts, new.parts)
            for moved in sorted(self._below(old.parts) + [old.parts]):
                target = new.parts + moved[len(old.parts) :]
                if moved in self.space.folders:
                    self.space.folders.discard(moved)
                    self.space.folders.add(target)
                else:
                    self.space.files[target] = self.space.files.pop(moved)
                if moved in self.space.used:
                    self.space.used[target] = self.space.used.pop(moved)
            self.space.used[new.parts] = time.time()  # a rename counts as a use of the new path

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        with self.space.lock:
            yield

    # -- bookkeeping --

    def record_use(self, path: VirtualPath, opened: object) -> None:
        self.space.used[path.parts] = time.time()

    def last_access(self, path: VirtualPath) -> Optional[float]:
        return self.space.used.get(path.parts)

    def changes_since(self, generation: int) -> Changes:
        with self.locked():
            journal, now = self.space.journal, self.space.generation
            if generation == now:
                return Changes(now, ())
            if not journal or generation < journal[0][0] - 1 or generation > now:
                return Changes(now, None)
            paths = {p for number, ps in journal if number > generation for p in ps}
            return Changes(now, tuple(sorted(paths)))

    def for_tenant(self, tenant: str) -> DictStore:
        if self.tenant is not None:
            raise TenantError("a tenant's store has no tenants of its own")
        return DictStore(self.where, tenant)

    def close(self) -> None:
        pass


def _as_store(store: DictStore) -> Store:
    return store  # mypy's check that DictStore implements the interface


class StoreKind(NamedTuple):
    name: str
    open: Callable[[Path], Store]
    processes: bool  # one location shared between processes (the contract then checks across a fork)


def scheme_kind(scheme: Scheme, location: Callable[[Path], str], processes: bool = True) -> StoreKind:
    """The stores of a location scheme (refmem.stores.location), named as the scheme, each opened by the scheme's
    row over the location `location(where)` gives: the registry is how the contract reaches a database store."""
    return StoreKind(scheme.name, lambda where: scheme.open(location(where), None, None, True), processes)


KINDS = [
    StoreKind("filesystem", lambda where: TrackedDirectory(where), True),
    StoreKind("filesystem-bare", lambda where: Directory(where), True),  # no journal, no access records
    StoreKind("filesystem-portable", lambda where: TrackedDirectory(where, portable=True), True),
    StoreKind("dict", lambda where: DictStore(str(where)), False),
    scheme_kind(location.SQLITE, lambda where: location.sqlite_location(str(where))),
    # A schema of its own per location in the session's throwaway cluster; skips saying why where there is none.
    scheme_kind(location.POSTGRESQL, lambda where: postgres_support.cluster().location_dsn(where)),
    # The same, each store borrowing a connection per transaction from one pool per location (D-STORE-PG-POOL).
    StoreKind("postgresql-pooled", lambda where: postgres_support.open_pooled_store(where), True),
]


def fill_with_history(
    handler: Any, count: int, path_of: Callable[[int], str], text_of: Callable[[int], str],
    renamed_of: Callable[[int], str],
) -> List[str]:
    """Files, folders, edits, renames and deletes through `handler`, so that every table of a store holds rows:
    `count` files, each created, edited and inserted into; every third deleted, every third renamed. The paths that
    have history (the backups' and the transfers' round trips compare them)."""
    touched = []
    for number in range(count):
        path = path_of(number)
        touched.append(path)
        steps: List[Dict[str, Any]] = [
            {"command": "create", "path": path, "file_text": text_of(number)},
            {"command": "str_replace", "path": path, "old_str": "END\n", "new_str": f"edited {number}\nEND\n"},
            {"command": "insert", "path": path, "insert_line": 0, "insert_text": "top\n"},
        ]
        if number % 3 == 0:
            steps.append({"command": "delete", "path": path})
        if number % 3 == 1:
            touched.append(renamed_of(number))
            steps.append({"command": "rename", "old_path": path, "new_path": renamed_of(number)})
        for step in steps:
            result = handler.execute(step)
            assert not result.is_error, (step, result)
    return touched
