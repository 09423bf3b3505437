"""A target that keeps its own storage but does not say that handlers on one root share it: the runner cannot
build a handler without the case's options over a case's storage, so it loads and reads back through the case's
own handler (D-STORE-OWN-SETUP, D-STORE-OWN-FINAL)."""

from __future__ import annotations

import pathlib
from typing import Any, Mapping, Optional, Sequence

from conformance.reference_sqlite_target import SqliteReference
from conformance.reference_sqlite_target import make as make_sqlite


def unshared(
    root: pathlib.Path,
    *,
    read_only: bool = False,
    allow: Optional[Sequence[str]] = None,
    limits: Optional[Mapping[str, int]] = None,
    content_policy: Optional[str] = None,
) -> Any:
    """The reference over SQLite, declaring own storage and nothing about sharing it."""
    built: SqliteReference = make_sqlite(
        root, read_only=read_only, allow=allow, limits=limits, content_policy=content_policy
    )
    return built


unshared.storage = "own"  # type: ignore[attr-defined]
