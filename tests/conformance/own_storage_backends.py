"""A target that keeps its own storage but does not say that handlers on one root share it: the runner cannot
build a handler without the case's options over a case's storage, so it loads and reads back through the case's
own handler (D-STORE-OWN-SETUP, D-STORE-OWN-FINAL)."""

from __future__ import annotations

import inspect
import pathlib
from typing import Any

from refmem_harness.reference_sqlite_target import make as make_sqlite


def unshared(root: pathlib.Path, **options: Any) -> Any:
    """The reference over SQLite, declaring own storage and nothing about sharing it (nor taking a tenant)."""
    return make_sqlite(root, **options)


_SQLITE = inspect.signature(make_sqlite)
unshared.__signature__ = _SQLITE.replace(  # type: ignore[attr-defined]
    parameters=[parameter for name, parameter in _SQLITE.parameters.items() if name != "tenant"]
)
unshared.storage = "own"  # type: ignore[attr-defined]
