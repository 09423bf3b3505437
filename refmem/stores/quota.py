"""A tenant's quota in the SQL stores (D-STORE-QUOTA): the deployer's bounds on what one tenant keeps, so that no
tenant fills the database every tenant shares.

    store = PostgresStore(dsn, tenant="alice", quota={"max_bytes": 50 << 20, "max_files": 10_000})

The usage it is checked against is a running count in the tenant's row (`refmem_tenants.files` and
`.content_bytes`, schema 3), moved by every mutation in the statement that starts its generation (`core.SqlStore`),
so a check reads nothing more and costs nothing that grows with the tenant. A mutation that would take a count past
its bound is refused with the D-IO reason `quota_files` or `quota_bytes`, in its own transaction, after the tenant's
lock is held: two writers of one tenant never both pass the last byte. A mutation that frees (a delete, a shorter
edit, a rename) is never refused, even past a bound lowered since. Kept versions are bounded by the history's own
budget (`limits.HistoryLimits`: each version counts its row too), and never refuse a write.
"""

from __future__ import annotations

import dataclasses
from typing import Mapping, Optional, Tuple, Union

from .._store_messages import QUOTA_FORM


@dataclasses.dataclass(frozen=True)
class Quota:
    """A tenant's bounds; None (the default) for none. Checked when it is made: ValueError for a bound that is not
    a non-negative integer, TypeError (`from_mapping`) for a field it does not have."""

    max_bytes: Optional[int] = None
    """Most bytes of file content the tenant holds, every file together (versions apart: HistoryLimits)."""

    max_files: Optional[int] = None
    """Most files the tenant holds (folders are free: they hold nothing)."""

    def __post_init__(self) -> None:
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
                raise ValueError(QUOTA_FORM.format(name=field.name))

    @classmethod
    def from_mapping(cls, values: Union[Quota, Mapping[str, Optional[int]], None]) -> Quota:
        if values is None:
            return NO_QUOTA
        if isinstance(values, cls):
            return values
        return cls(**dict(values))  # type: ignore[arg-type]

    def refusal(self, grown: Tuple[int, int], usage: Tuple[int, int]) -> Optional[str]:
        """The D-IO reason a mutation that grew (files, bytes) by `grown` to `usage` is refused with, or None."""
        files, size = usage
        if grown[0] > 0 and self.max_files is not None and files > self.max_files:
            return "quota_files"
        if grown[1] > 0 and self.max_bytes is not None and size > self.max_bytes:
            return "quota_bytes"
        return None


NO_QUOTA = Quota()
