"""The hosted-store profile (D-HOSTED-*): a store that keeps only what Anthropic's hosted memory stores keep, so that a
tenant that lives under it can be exported to one unchanged.

    store = hosted(SqliteStore(path, tenant="alice"))      # or any store_protocol.Store
    handler = MemoryHandler(store)

The hosted stores' published rules, and what this wrapper does for each:

* paths of 1 to 20 names, in Unicode NFC, of at most 1,024 bytes (D-HOSTED-PATH): every path a change makes (a create,
  a rename's destination and everything it carries below it, a restore) is checked, and a change that would make
  another is refused with the D-IO reason `hosted_path`; the bytes counted are those of the whole virtual path
  (`/memories/...`, UTF-8), the stricter reading;
* content of at most 102,400 bytes (D-HOSTED-SIZE): a create, an edit, a conditional write or a restore that would
  leave a file larger is refused with the D-IO reason `hosted_size`;
* `content_sha256` preconditions (D-HOSTED-SHA256): the conditional write (`store_protocol.VersionedStore.write`) of
  the store below, passed on, with the rules above;
* one version per change, and no version for an update that changes nothing (D-HOSTED-UNCHANGED): an edit or a
  conditional write whose new content is the content already there writes nothing (no version, no journal line, no
  new generation) and succeeds as it would have.

Everything else is the wrapped store's, unchanged (reads, deletes, history, tenants, the journal). The checks run
inside the store's own transaction (`locked()`), so no other writer changes what they read before the write.
"""

from __future__ import annotations

import contextlib
import hashlib
import unicodedata
from typing import Any, BinaryIO, Callable, Dict, Iterator, Optional, Tuple

from ..paths import VirtualPath
from ..problems import DIR, OsFailure

MAX_NAMES = 20
"""The most names a hosted store's path has (the fewest is 1)."""
MAX_PATH_BYTES = 1_024
"""The most bytes (UTF-8) of a hosted store's path: counted here over the whole virtual path, `/memories/...`."""
MAX_CONTENT_BYTES = 102_400
"""The most bytes of a hosted store's file."""


def path_refusal(path: VirtualPath, below_levels: int = 0, below_bytes: int = 0) -> Optional[str]:
    """`hosted_path` when `path` (with, below it, `below_levels` more names and `below_bytes` more bytes at most) is
    not a path a hosted store keeps; None when it is. Pure."""
    names = len(path.parts) + below_levels
    size = len(path.canonical.encode("utf-8")) + below_bytes
    if not 1 <= names <= MAX_NAMES or size > MAX_PATH_BYTES:
        return "hosted_path"
    if any(unicodedata.normalize("NFC", name) != name for name in path.parts):
        return "hosted_path"
    return None


def _check_path(path: VirtualPath) -> None:
    refusal = path_refusal(path)
    if refusal is not None:
        raise OsFailure(refusal)


def _check_size(size: int) -> None:
    if size > MAX_CONTENT_BYTES:
        raise OsFailure("hosted_size")


class HostedEdit:
    """An edit of the wrapped store whose `replace` keeps the hosted rules: no write for new content equal to the
    old, none past the size."""

    def __init__(self, edit: Any) -> None:
        self._edit = edit

    @property
    def data(self) -> bytes:
        return bytes(self._edit.data)

    def replace(self, new_data: bytes) -> None:
        if new_data == self._edit.data:
            return  # D-HOSTED-UNCHANGED: nothing changes, so nothing is written and no version kept
        _check_size(len(new_data))
        self._edit.replace(new_data)


class HostedStore:
    """`store` under the hosted rules (the module docstring); every other attribute is the store's own."""

    def __init__(self, store: Any) -> None:
        self.store = store

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    def write_new(self, path: VirtualPath, data: bytes) -> None:
        _check_path(path)
        _check_size(len(data))
        self.store.write_new(path, data)

    @contextlib.contextmanager
    def open_edit(self, path: VirtualPath, limit: int) -> Iterator[HostedEdit]:
        with self.store.open_edit(path, limit) as edit:
            yield HostedEdit(edit)

    def rename(self, old: VirtualPath, new: VirtualPath) -> None:
        below = (0, 0)
        entry = self.store.entry(old)
        if entry is not None and entry.kind == DIR:
            below = self.store.extent(old, MAX_NAMES)
        refusal = path_refusal(new, *below)
        if refusal is not None:
            raise OsFailure(refusal)
        self.store.rename(old, new)

    def write(self, path: VirtualPath, data: bytes, expected_sha256: Optional[str]) -> str:
        """The wrapped store's conditional write (D-HOSTED-SHA256), under the rules: content equal to what is there
        (and the precondition met) writes nothing (D-HOSTED-UNCHANGED)."""
        if isinstance(data, bytes):
            _check_path(path)
            _check_size(len(data))
            digest = hashlib.sha256(data).hexdigest()
            if isinstance(expected_sha256, str) and expected_sha256.lower() == digest:
                with self.store.locked():
                    entry = self.store.entry(path)
                    if entry is not None and entry.kind != DIR:
                        with self.store.open_regular(path) as opened:
                            if hashlib.sha256(opened.read_all()).hexdigest() == digest:
                                return digest
                    return str(self.store.write(path, data, expected_sha256))
        return str(self.store.write(path, data, expected_sha256))

    def restore(self, path: VirtualPath, number: int) -> str:
        _check_path(path)
        for version in self.store.history(path):
            if version.number == number:
                _check_size(version.size)
        return str(self.store.restore(path, number))

    def for_tenant(self, tenant: str, *args: Any, **kwargs: Any) -> HostedStore:
        return HostedStore(self.store.for_tenant(tenant, *args, **kwargs))


def export_refusals(source: BinaryIO, limit: int = 1 << 21) -> Iterator[Tuple[str, str]]:
    """(path, D-IO reason) for each folder, file or version of a tenant's export (docs/tenant-export.md, read line by
    line, at most `limit` bytes a line) that a hosted store would refuse; none for a tenant that can be exported to
    one unchanged. Lines that are not records of the format are the import's to refuse (`transfer.import_tenant`),
    and are passed over here."""
    import json

    for raw in iter(lambda: source.readline(limit), b""):
        try:
            record = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(record, dict) or record.get("type") not in ("folder", "file", "version"):
            continue
        key = record.get("path")
        if not isinstance(key, str):
            continue
        refusal = path_refusal(VirtualPath(tuple(key.split("/"))))
        size = record.get("size")
        if refusal is None and isinstance(size, int) and size > MAX_CONTENT_BYTES:
            refusal = "hosted_size"
        if refusal is not None:
            yield key, refusal


def hosted(store: Any) -> HostedStore:
    """`store` (any `store_protocol.Store`) keeping the hosted stores' rules (D-HOSTED-*)."""
    return store if isinstance(store, HostedStore) else HostedStore(store)


PROFILES: Dict[str, Callable[[Any], Any]] = {"hosted": hosted}
"""`refmem exec --profile NAME` and `refmem serve --profile NAME`: what each profile wraps a database store in
(D-HOSTED-CLI). A name here is an option's choice; its rules are its wrapper's."""
