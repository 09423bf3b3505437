"""The storage interface: what a memory store does for the handler, whatever it keeps the files in.

The handler, the paths, the limits, the messages, the views and the content policy are the same for
every store; a store only answers the questions below. `directory.Directory` (a directory tree, the default)
implements it; a database store implements the same methods and passes the same contract tests
(`tests/stores/test_storage_contract.py`, parametrised over store factories).

What every store promises
-------------------------
* Paths are `paths.VirtualPath`s the handler has already parsed: plain names, no dots, no separators,
  never a name starting with `.refmem` (the stores' own bookkeeping may live there).
* Refusals are `problems.FsProblem`s with a `code` (the handler turns each into a message):
  `Missing`, `Exists`, `IsLink`, `NotRegular(kind)`, `HardLinked`, `ParentNotDir(depth)`, `TooBig(size)`,
  `Escaped` and `OsFailure(code)` with a code of `messages.IO_REASONS`. Anything else a store raises
  is a bug of the store: the handler answers it with the D-INTERNAL result, never a traceback.
* Mutations (`write_new`, `Edit.replace`, `delete`, `rename`) run inside `locked()`: the store's write
  lock or transaction. A filesystem store shares it between threads and processes on one host; a
  database store makes it one transaction. A mutation called outside it takes it for itself.
* A store with a change journal (`ChangeJournal`) records the paths every successful mutation changed
  before it returns (`changes_since`), at least from the first `changes_since` on; a recorded path stands
  for itself and everything below it.
* Folders exist on their own: an empty folder stays until deleted; listing order is by name (code
  point order), depth first; sizes are bytes; a folder's size is not shown.

The six commands need `Store` and nothing else; what only some deployments read is an optional protocol:
`ChangeJournal` (OpenClaw's index), `AccessRecords` (expiry), `TenantStore` (tenants, named by `tenant_name`;
D-STORE-TENANT) and `VersionedStore` (history, D-STORE-HISTORY).
"""

from __future__ import annotations

import re
from typing import (
    Callable,
    ContextManager,
    Iterator,
    List,
    NamedTuple,
    Optional,
    Protocol,
    Tuple,
    runtime_checkable,
)

from .messages import TENANT_FORM, TENANT_RESERVED, TENANT_TYPE
from .paths import VirtualPath


class Entry(NamedTuple):
    """What stands at a path: `kind` is problems.DIR, FILE, LINK or SPECIAL; `size` is in bytes (0 for
    anything but a file)."""

    kind: str
    size: int


class Listed(NamedTuple):
    """One entry of a listing: its names below the listed folder, DIR or FILE, and its size."""

    parts: Tuple[str, ...]
    kind: str  # DIR or FILE: links and special files are never listed
    size: int


class ReadFile(Protocol):
    """A regular file open for reading, as it was when opened."""

    @property
    def size(self) -> int:
        """Its size in bytes when opened (a view chooses whole read or streaming by it)."""
        ...

    def read_all(self) -> bytes: ...

    def chunks(self) -> Iterator[bytes]:
        """The bytes from where reading stands, in bounded pieces (a large view streams them)."""
        ...

    def close(self) -> None: ...

    def __enter__(self) -> ReadFile: ...

    def __exit__(self, *exc: object) -> None: ...


class Edit(Protocol):
    """A file read whole under the write lock, for a read-modify-write."""

    @property
    def data(self) -> bytes: ...

    def replace(self, new_data: bytes) -> None:
        """Put `new_data` in place of the bytes read, atomically, only if the file is still the one that
        was read (else OsFailure("changed")); all or nothing."""
        ...


@runtime_checkable
class Store(Protocol):
    """A memory store: the operations the handler needs, on parsed virtual paths."""

    def entry(self, path: VirtualPath) -> Optional[Entry]:
        """What is at `path` (a link or special file is reported, never followed); None when nothing is.
        A path with a trailing slash names a folder only."""
        ...

    def open_regular(self, path: VirtualPath, refuse_hard_links: bool = True) -> ReadFile:
        """The regular file at `path`, open for reading; the caller closes it. Raises Missing,
        NotRegular(kind) (DIR for a folder), IsLink or HardLinked (stores without links never do)."""
        ...

    def children(
        self, path: VirtualPath, keep: Callable[[str], bool], limit: int
    ) -> Tuple[List[Tuple[str, str, int]], bool]:
        """(name, kind, size) of the folders (DIR, size 0) and regular files (FILE) directly in the folder
        `path` whose names `keep` accepts, at most `limit` of them in any order, and whether more were there;
        Missing when `path` is not a folder. Links and special files are never given. What a listing shows
        is decided above every store (`listing.list_tree`), not here."""
        ...

    def extent(self, path: VirtualPath, max_depth: int) -> Tuple[int, int]:
        """(levels below the folder `path`, longest path below it in UTF-8 bytes with a "/" per name),
        counting at most `max_depth + 1` levels (D-RENAME-LIMITS)."""
        ...

    def write_new(self, path: VirtualPath, data: bytes) -> None:
        """Create a file that does not exist yet (Exists otherwise), making missing parent folders
        (ParentNotDir(depth) when a parent is a file); all or nothing, never replacing anything."""
        ...

    def open_edit(self, path: VirtualPath, limit: int) -> ContextManager[Edit]:
        """The file at `path` read whole for an edit (TooBig past `limit` bytes, OsFailure("protected")
        when its owner may not write it); call inside `locked()`."""
        ...

    def delete(self, path: VirtualPath) -> None:
        """Remove a file, or a folder with everything in it (Missing when nothing is there)."""
        ...

    def rename(self, old: VirtualPath, new: VirtualPath) -> None:
        """Move a file or folder, making the destination's missing parents; never replaces anything
        (Exists); Missing when `old` is not there."""
        ...

    def locked(self) -> ContextManager[None]:
        """The write lock (or transaction): every read-modify-write and every mutation happens inside."""
        ...

    def close(self) -> None: ...


@runtime_checkable
class TenantStore(Protocol):
    """A store that keeps several tenants' memories apart (D-STORE-TENANT)."""

    def for_tenant(self, tenant: str) -> Store:
        """A store of the same kind over `tenant`'s memories (checked by `tenant_name`); the caller
        closes it."""
        ...


# --- tenants ------------------------------------------------------------------------------------

_TENANT = re.compile(r"[a-z0-9][a-z0-9_-]{0,62}")
# Names a filesystem store cannot use as a folder on some platform (Windows devices), refused everywhere
# so that a tenant means the same on every store.
_TENANT_RESERVED = frozenset(
    ["con", "prn", "aux", "nul"] + [f"{stem}{n}" for stem in ("com", "lpt") for n in range(10)]
)


class TenantError(ValueError):
    """A tenant name that is not accepted; the message says the rule."""


def tenant_name(raw: object) -> str:
    """`raw` if it is an accepted tenant name, else TenantError. One canonical spelling, so that no two accepted
    names are equal once case is folded or Unicode normalised, and none is read differently by a filesystem or SQL
    (D-STORE-TENANT)."""
    if not isinstance(raw, str):
        raise TenantError(TENANT_TYPE)
    if not _TENANT.fullmatch(raw):
        raise TenantError(TENANT_FORM)
    if raw in _TENANT_RESERVED:
        raise TenantError(TENANT_RESERVED)
    return raw
