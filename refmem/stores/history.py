"""History in the SQL stores (D-STORE-HISTORY): keeping the content a change replaces or removes, the retention
rule that bounds it, and the line `refmem history` prints for a version.

The statements are `schema.Queries`'; this module only decides which to run, inside the caller's mutation (its
savepoint, in the command's one transaction). A version's number is the tenant's generation of the change that
kept it: it only grows, per path and per tenant, and is never given twice, even after retention dropped every
older version of the path. Retention (`limits.HistoryLimits`) is enforced in the same transaction as the change:
first the versions of each path the change kept a version of, beyond `versions_per_file`, oldest first; then, while
the tenant's versions hold more than `bytes_per_tenant` bytes (a running total in `refmem_tenants`, never a sum
over the tenant), its oldest versions, a whole generation at a time. Every statement is an indexed range, so the
cost is linear in what is kept and what is dropped, whatever else the tenant keeps.
"""

from __future__ import annotations

import datetime
import time
from typing import Any, List, Optional, Protocol, Sequence, Tuple

from .._store_extras import Version
from .._store_messages import ACTOR_FORM, HISTORY_LINE, HISTORY_NO_ACTOR
from ..limits import HistoryLimits
from ..messages import escape
from ..problems import FILE, OsFailure
from .schema import VERSION_ROW_BYTES, Queries

TRIM_BATCH = 64
"""The tenant's oldest versions read at a time while deciding how many generations the byte budget drops."""
SHA_SHOWN = 12
"""Hex digits of a version's SHA-256 that `refmem history` shows (as short commit hashes are)."""
ECHO_CHARS = 200
"""Longest actor or command `refmem history` prints (both are escaped to one line)."""


class SqlRows(Protocol):
    """What this module needs of `core.SqlStore` (named so, not imported: core imports this module)."""

    queries: Queries
    tenant_key: str
    actor: Optional[str]
    history_limits: HistoryLimits

    def _run(self, sql: str, params: Sequence[Any]) -> Any: ...

    def _one(self, sql: str, params: Sequence[Any]) -> Optional[Tuple[Any, ...]]: ...

    def _all(self, sql: str, params: Sequence[Any]) -> List[Tuple[Any, ...]]: ...


def actor_name(raw: object, limits: HistoryLimits) -> Optional[str]:
    """`raw` if it can name who made a change (None, or 1 to `max_actor_chars` printable characters); else
    ValueError. It is the deployer's, not the model's, but it is printed by `refmem history`."""
    if raw is None:
        return None
    if isinstance(raw, str) and 0 < len(raw) <= limits.max_actor_chars and raw.isprintable():
        return raw
    raise ValueError(ACTOR_FORM.format(most=limits.max_actor_chars))


def keep(
    store: SqlRows, generation: int, command: str, one: Optional[str] = None, below: Optional[Tuple[str, str]] = None
) -> None:
    """Keep as versions numbered `generation` the files at the key `one`, or in the key range `below`, as they are
    now (before the change replaces or removes them); then apply retention."""
    q, tenant = store.queries, store.tenant_key
    values = (generation, time.time(), store.actor, command, tenant, FILE)
    if below is None and q.keep_one_counted is not None:  # one statement keeps, counts and says what to trim
        row = store._one(q.keep_one_counted, values + (one, tenant, tenant, one))
        if row is None:
            raise OsFailure("bookkeeping")
        now_bytes, kept, before = (int(value) for value in row)
        retain(store, str(one), now_bytes, kept, before)
        return
    if below is not None:
        if not _fits(store, below):
            _drop_all(store, generation)
            return
        store._run(q.keep_below, values + below)
    else:
        store._run(q.keep_one, values + (one,))
    total: Optional[int] = None
    if q.count_kept_returning is not None:  # the new total comes back with the count: no statement to read it
        counted = store._one(q.count_kept_returning, (tenant, generation, tenant))
        if counted is None:
            raise OsFailure("bookkeeping")
        total = int(counted[0])
    else:
        store._run(q.count_kept, (tenant, generation, tenant))
    trim(store, generation, total)


def _fits(store: SqlRows, below: Tuple[str, str]) -> bool:
    """Whether the files in the key range `below` can be kept as versions within `bytes_per_tenant` by themselves.
    Counted before anything is copied (D-STORE-HISTORY-RETENTION): a folder delete never needs room for a copy of
    a folder that retention would drop whole the moment it was kept."""
    q, limits = store.queries, store.history_limits
    row = store._one(q.subtree_files, (store.tenant_key, FILE) + below)
    files, size = (0, 0) if row is None else (int(row[0]), int(row[1]))
    return size + VERSION_ROW_BYTES * files <= limits.bytes_per_tenant


def _drop_all(store: SqlRows, generation: int) -> None:
    """What retention does after a change whose versions alone are over the budget: every version of the tenant
    before `generation` dropped (and the change's own, which are never copied: `_fits`)."""
    q, tenant = store.queries, store.tenant_key
    freed = store._one(q.bytes_up_to, (tenant, generation))
    store._run(q.drop_up_to, (tenant, generation))
    store._run(q.uncount, (int(freed[0]) if freed else 0, tenant))


def retain(store: SqlRows, path: str, total: int, kept: int, before: int) -> None:
    """Retention after one path's version was kept (`kept`: 0 or 1) by a statement that returned the tenant's
    version bytes (`total`) and the path's versions before it (`before`): no statement to decide."""
    if kept and before + kept > store.history_limits.versions_per_file:
        total -= _trim_path(store, path, before + kept)
    _trim_bytes(store, total)


def trim(store: SqlRows, generation: int, total: Optional[int] = None) -> None:
    """Retention after the versions numbered `generation` were kept (see the module docstring); `total`: the
    tenant's version bytes after they were counted, when the count returned them (else they are read)."""
    q, tenant, limits = store.queries, store.tenant_key, store.history_limits
    per_file = limits.versions_per_file
    for path, count in store._all(q.crowded, (tenant, generation, per_file)):
        dropped_bytes = _trim_path(store, path, int(count))
        total = None if total is None else total - dropped_bytes
    if total is None:
        row = store._one(q.version_bytes, (tenant,))
        if row is None:
            raise OsFailure("bookkeeping")
        total = int(row[0])
    _trim_bytes(store, total)


def _trim_path(store: SqlRows, path: str, count: int) -> int:
    """The oldest versions of `path`, which has `count`, beyond `versions_per_file` dropped; the bytes freed."""
    q, tenant, per_file = store.queries, store.tenant_key, store.history_limits.versions_per_file
    if q.drop_oldest_of_path is not None:  # one statement drops, uncounts and says what it freed
        row = store._one(q.drop_oldest_of_path, (tenant, path, tenant, path, count - per_file, tenant))
        if row is None:
            raise OsFailure("bookkeeping")
        return int(row[0])
    dropped = store._all(q.oldest_of_path, (tenant, path, count - per_file))
    store._run(q.drop_of_path, (tenant, path, dropped[-1][0]))
    dropped_bytes = sum(int(size) for _, size in dropped)
    store._run(q.uncount, (dropped_bytes, tenant))
    return dropped_bytes


def _trim_bytes(store: SqlRows, total: int) -> None:
    """While the tenant's versions (`total` bytes) are over `bytes_per_tenant`, its oldest dropped, a whole
    generation at a time."""
    q, tenant = store.queries, store.tenant_key
    excess = total - store.history_limits.bytes_per_tenant
    if excess <= 0:
        return
    covered, after, cutoff = 0, 0, None
    while covered < excess:
        batch = store._all(q.oldest, (tenant, after, TRIM_BATCH))
        for number, size in batch:
            covered, cutoff = covered + int(size), int(number)
            if covered >= excess:
                break
        if len(batch) < TRIM_BATCH:
            break
        after = int(batch[-1][0])
    if cutoff is None:
        return
    freed = store._one(q.bytes_up_to, (tenant, cutoff))
    store._run(q.drop_up_to, (tenant, cutoff))
    store._run(q.uncount, (int(freed[0]) if freed else 0, tenant))


def version_of(row: Tuple[object, ...]) -> Version:
    number, size, sha256, at, actor, command = row
    return Version(
        int(number),  # type: ignore[call-overload]
        int(size),  # type: ignore[call-overload]
        str(sha256),
        float(at),  # type: ignore[arg-type]
        None if actor is None else str(actor),
        str(command),
    )


def line(version: Version) -> str:
    """One line of `refmem history`: number, when (UTC, ISO 8601), size, SHA-256's first 12 hex digits, command,
    actor (`-` for none); the actor and command escaped to one bounded line."""
    when = datetime.datetime.fromtimestamp(version.at, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    actor = HISTORY_NO_ACTOR if version.actor is None else escape(version.actor, ECHO_CHARS)
    return HISTORY_LINE.format(
        number=version.number,
        at=when,
        size=version.size,
        sha256=version.sha256[:SHA_SHOWN],
        command=escape(version.command, ECHO_CHARS),
        actor=actor,
    )
