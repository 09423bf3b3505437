"""The store's optional protocols: what only some deployments read (`store_protocol.py` is what the six commands
need). A store implements any of them beside `store_protocol.Store`: `ChangeJournal` (OpenClaw's index), `AccessRecords`
(expiry), `VersionedStore` (history, D-STORE-HISTORY), `PrunableStore` and `ErasableStore` (the database stores). The
handler finds them with `getattr`, never by import, so a vendored copy leaves this file out (D-VENDOR-SET); the
modules that use them import them from here (D-STORE-EXTRAS).
"""

from __future__ import annotations

from typing import ContextManager, List, NamedTuple, Optional, Protocol, Tuple, runtime_checkable

from .paths import VirtualPath
from .store_protocol import ReadFile

__all__ = ["AccessRecords", "ChangeJournal", "Changes", "ErasableStore", "PrunableStore", "Version", "VersionedStore"]


class Changes(NamedTuple):
    """The answer of `changes_since`: the generation to ask from next time, and the paths changed since
    the generation asked about (each standing for itself and everything below it), sorted and without
    repeats; `paths` is None when the store cannot tell (too many changes, a trimmed journal, a
    generation it never gave out, a restart that may have lost the journal's tail): rescan."""

    generation: int
    paths: Optional[Tuple[str, ...]]


@runtime_checkable
class ChangeJournal(Protocol):
    """A store that says what changed: OpenClaw's search index reads it; without it the index rescans."""

    def changes_since(self, generation: int) -> Changes:
        """The paths changed since `generation` (a value an earlier call returned; 0 to start), and the
        generation to ask from next. Cheap: proportional to what changed, not to the store's size."""
        ...


@runtime_checkable
class AccessRecords(Protocol):
    """A store that remembers when each file was last used (D-EXPIRY); the handler reports each view's use."""

    def record_use(self, path: VirtualPath, opened: ReadFile) -> None:
        """The file just read through `opened` was used now (D-EXPIRY: a view). Never raises for a
        bookkeeping failure, and may skip a record that its own data already implies."""
        ...

    def last_access(self, path: VirtualPath) -> Optional[float]:
        """The last recorded use of `path` (seconds since the epoch), None when there is no record."""
        ...


class Version(NamedTuple):
    """One kept version of a path's content (D-STORE-HISTORY): its number (growing per tenant and path), size in
    bytes, SHA-256 (lower-case hex), when it was kept (seconds since the epoch), who made the change (the store's
    actor, or None) and what did (the tool's command, or the store's operation: "restore", "write")."""

    number: int
    size: int
    sha256: str
    at: float
    actor: Optional[str]
    command: str


@runtime_checkable
class VersionedStore(Protocol):
    """A store that keeps history (D-STORE-HISTORY)."""

    def acting(self, command: str) -> ContextManager[None]:
        """The mutations inside the block are the tool's `command` (what a version says did it)."""
        ...

    def history(self, path: VirtualPath) -> List[Version]:
        """The versions kept of `path`, newest first (an empty list when none are)."""
        ...

    def restore(self, path: VirtualPath, number: int) -> str:
        """Write version `number` of `path` back as its content, keeping the content it replaces as a version;
        the SHA-256 of the content now there. D-STORE-HISTORY-RESTORE says what is refused."""
        ...

    def write(self, path: VirtualPath, data: bytes, expected_sha256: Optional[str]) -> str:
        """Replace the file's content only if its SHA-256 is `expected_sha256`, or create it only if it is
        missing when that is None; else `problems.Conflict`, changing nothing. The new content's SHA-256."""
        ...


@runtime_checkable
class PrunableStore(Protocol):
    """A store that removes its unused memories itself (D-STORE-SQL-PRUNE)."""

    def prune(self, cutoff: float, dry_run: bool = False) -> Tuple[List[str], int]:
        """The files last used before `cutoff` (seconds since the epoch) removed, then the folders that left
        empty: (the virtual paths removed, the files kept). A dry run removes nothing and says the same."""
        ...


@runtime_checkable
class ErasableStore(Protocol):
    """A store that can remove one tenant whole (D-STORE-SQL-ERASE)."""

    def erase(self) -> Tuple[int, int]:
        """Every memory, kept version and change of this store's tenant deleted, nothing kept to restore:
        (paths deleted, versions deleted)."""
        ...
