"""The `refmem` target: the embedded reference handler, configured from a case's options as the case states them,
and the reference's OpenClaw tools (`refmem.openclaw`) for the OpenClaw cases and fuzzer.

This is the only module of the suite that imports the reference; the runner and the other targets pass
options as plain data (conformance/CASE-FORMAT.md `options`).
"""

from __future__ import annotations

import inspect
import pathlib
from typing import Any, Callable, Dict, Mapping, MutableMapping, Optional, Sequence, Tuple


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
    tenant: Optional[str] = None,
) -> Any:
    """A `refmem.MemoryHandler` on `root` (for `tenant`'s memories when named); `limits` a dict of Limits
    fields, `content_policy` an action name."""
    from refmem import MemoryHandler
    from refmem.limits import Limits
    from refmem.policy import ContentPolicy

    kwargs: Dict[str, Any] = {"read_only": read_only, "allow": allow, "tenant": tenant}
    if limits:
        kwargs["limits"] = Limits.from_mapping(limits)
    if content_policy is not None:
        kwargs["content_policy"] = ContentPolicy(content_policy)
    return MemoryHandler(root, **kwargs)


class StoreReference:
    """The reference handler over a store of its own (the `refmem+sqlite` and `refmem+postgres` targets); `close`
    closes both, and erases what the store holds first when `erase_on_close` (the store's `erase`)."""

    storage = "own"

    def __init__(self, handler: Any, store: Any, erase_on_close: bool = False) -> None:
        self.handler = handler
        self.store = store
        self.erase_on_close = erase_on_close

    def execute(self, tool_input: Any) -> Any:
        return self.handler.execute(tool_input)

    def close(self) -> None:
        try:
            self.handler.close()
            if self.erase_on_close:
                self.store.erase()
        finally:
            self.store.close()


StoreOpener = Callable[[pathlib.Path, MutableMapping[str, Any]], Tuple[Any, bool]]
"""Opens a target's store for a case root, given the case's options (it may take out those it serves itself):
the store, and whether closing the handler erases what the store holds."""


def over_store(open_store: StoreOpener) -> Callable[..., StoreReference]:
    """A factory with `make`'s options (its signature, which the runner reads) for the reference handler over the
    store `open_store` opens: own storage, shared by handlers on one root; the store is closed if the handler
    cannot be made."""

    def make_over(root: pathlib.Path, **options: Any) -> StoreReference:
        store, erase_on_close = open_store(pathlib.Path(root), options)
        try:
            handler = make(store, **options)
        except BaseException:
            store.close()
            raise
        return StoreReference(handler, store, erase_on_close)

    make_over.__signature__ = inspect.signature(make)  # type: ignore[attr-defined]
    make_over.storage = "own"  # type: ignore[attr-defined]  # what InProcessTarget reads from a factory
    # Handlers made on one root, in any process, share what they store (the deployment tier's sessions).
    make_over.shared = True  # type: ignore[attr-defined]
    return make_over


class OpenClawTools:
    """`refmem.openclaw`'s `memory_get` and `memory_search` on one root, answered by `refmem.openclaw.tools.reply`,
    the very function `refmem serve` answers an `execute` for them with (the in-process tool convention of
    refmem_harness/targets.py: `tools` and `run_tool`)."""

    tools: Tuple[str, ...] = ("memory_get", "memory_search")

    def __init__(self, root: pathlib.Path) -> None:
        from refmem.openclaw import OpenClawMemory

        self._workspace = OpenClawMemory(root)

    def run_tool(self, tool: str, tool_input: Any) -> Dict[str, Any]:
        from refmem.openclaw.tools import reply

        return reply(self._workspace, tool, tool_input)

    def close(self) -> None:
        self._workspace.close()


def make_openclaw(root: pathlib.Path) -> OpenClawTools:
    return OpenClawTools(root)
