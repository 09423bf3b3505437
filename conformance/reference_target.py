"""The `refmem` target: the embedded reference handler, configured from a case's options as the case states them.

This is the only module of the suite that imports the reference; the runner and the other targets pass
options as plain data (conformance/CASE-FORMAT.md `options`).
"""

from __future__ import annotations

import pathlib
from typing import Any, Dict, Mapping, Optional, Sequence


def version() -> str:
    import refmem

    return str(getattr(refmem, "__version__", ""))


def make(
    root: pathlib.Path,
    *,
    read_only: bool = False,
    allow: Optional[Sequence[str]] = None,
    limits: Optional[Mapping[str, int]] = None,
    content_policy: Optional[str] = None,
) -> Any:
    """A `refmem.MemoryHandler` on `root`; `limits` a dict of Limits fields, `content_policy` an action name."""
    from refmem import MemoryHandler
    from refmem.limits import Limits
    from refmem.policy import ContentPolicy

    kwargs: Dict[str, Any] = {"read_only": read_only, "allow": allow}
    if limits:
        kwargs["limits"] = Limits(**dict(limits))
    if content_policy is not None:
        kwargs["content_policy"] = ContentPolicy(content_policy)
    return MemoryHandler(root, **kwargs)
