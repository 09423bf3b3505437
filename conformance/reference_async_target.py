"""The reference's async SDK tool (`refmem.sdk.AsyncRefmemMemoryTool`) as a conformance target, over each store.

    python -m refmem_conformance --target python:refmem_conformance.reference_async_target:make          # filesystem
    python -m refmem_conformance --target python:refmem_conformance.reference_async_target:make_sqlite
    REFMEM_CONFORMANCE_POSTGRES=... python -m refmem_conformance \\
        --target python:refmem_conformance.reference_async_target:make_postgres

Each factory builds the handler exactly as the `refmem`, `refmem+sqlite` and `refmem+postgres` targets do (their
modules' openers and options), and answers every command through the async tool's `call`: a coroutine, which the
in-process target awaits (conformance/signalling.py `settle`), the command running on the tool's worker thread,
an error result raised as the SDK's `ToolError`. So the suite checks the async path end to end (D-SDK-ASYNC).
Needs `refmem[anthropic]`.
"""

from __future__ import annotations

import inspect
import pathlib
from typing import Any, Callable

from refmem_harness import reference_postgres_target, reference_sqlite_target, reference_target
from refmem_harness.reference_target import StoreReference

__all__ = ["AsyncReference", "make", "make_postgres", "make_sqlite"]

IMPLEMENTATION = {"name": "refmem (async SDK tool)", "language": "python"}


class AsyncReference:
    """The async tool over a handler the reference's target made; `close` closes the tool's worker, then what the
    target's own `close` closes (the store, erased first where that target erases it)."""

    def __init__(self, made: Any) -> None:
        from refmem.sdk import AsyncRefmemMemoryTool

        self._made = made
        self.storage = getattr(made, "storage", "filesystem")
        handler = made.handler if isinstance(made, StoreReference) else made
        self.tool = AsyncRefmemMemoryTool(handler)

    async def call(self, tool_input: Any) -> str:
        return await self.tool.call(tool_input)

    def close(self) -> None:
        self.tool.close()  # the worker, then the handler
        if isinstance(self._made, StoreReference):
            self._made.close()


def _factory(build: Callable[..., Any], storage: str) -> Callable[..., AsyncReference]:
    def make_async(root: pathlib.Path, **options: Any) -> AsyncReference:
        return AsyncReference(build(root, **options))

    make_async.__signature__ = inspect.signature(reference_target.make)  # type: ignore[attr-defined]
    make_async.storage = storage  # type: ignore[attr-defined]
    make_async.shared = getattr(build, "shared", False)  # type: ignore[attr-defined]  # handlers on a root share it
    return make_async


make = _factory(reference_target.make, "filesystem")
"""The async tool over the filesystem store in the case's root."""
make_sqlite = _factory(reference_sqlite_target.make, "own")
"""The async tool over the SQLite store in the case's root (reference_sqlite_target)."""
make_postgres = _factory(reference_postgres_target.make, "own")
"""The async tool over a tenant of its own in the PostgreSQL database REFMEM_CONFORMANCE_POSTGRES names."""

