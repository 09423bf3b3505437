"""What `refmem mcp` serves: one handler per tenant over the configured store, and the tool calls on them.

Standard library and refmem only (no SDK), so that it can be tested without a transport. Calls are serialised by
one lock: the handler is synchronous, and the server runs it on a worker thread.
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
from typing import Any, Dict, List, Optional, Tuple

from refmem import MemoryHandler

from .schema import MEMORY_TOOL

Reply = Tuple[str, bool, Any]
"""(text, is_error, the tool's result object or None)."""


@dataclasses.dataclass(frozen=True)
class Settings:
    """Where the memories are and how every session may use them (the session options `refmem serve` takes)."""

    root: Optional[str] = None
    """A directory whose files are the memories; or None with `location`."""
    location: Optional[str] = None
    """A database store (sqlite:///..., postgresql://...); never shown."""
    read_only: bool = False
    allow: Optional[Tuple[str, ...]] = None
    openclaw: bool = False
    """Also serve OpenClaw's memory_get and memory_search over the same store."""
    harness: bool = False
    """Serve the conformance suite and the fuzzer (`--harness`, D-MCP-RESET): a store's memories are erased when
    they are first opened and on every `reset`, and a reset moves a root to the directory it names."""


class Memories:
    """Handlers built on first use, one per tenant (None: the default tenant), closed together."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._lock = threading.Lock()
        self._handlers: Dict[Optional[str], Any] = {}
        self._workspaces: Dict[Optional[str], Any] = {}
        self._stores: List[Any] = []

    def _options(self) -> Dict[str, Any]:
        options: Dict[str, Any] = {"read_only": self.settings.read_only}
        if self.settings.allow is not None:
            options["allow"] = list(self.settings.allow)
        return options

    def handler(self, tenant: Optional[str]) -> Any:
        """The tenant's handler, built on first use (raises what building it raises: the caller says why)."""
        found = self._handlers.get(tenant)
        if found is not None:
            return found
        if self.settings.location is not None:
            from refmem.stores.location import open_location

            store = open_location(self.settings.location)
            try:
                if self.settings.harness:  # a throwaway store: it starts empty, whatever an earlier server left
                    erase = getattr(store, "erase", None)
                    if callable(erase):
                        erase()
                found = MemoryHandler(store, tenant=tenant, **self._options())  # type: ignore[arg-type]
            except BaseException:
                with contextlib.suppress(Exception):
                    store.close()  # type: ignore[attr-defined]
                raise
            self._stores.append(store)
        else:
            found = MemoryHandler(self.settings.root or "", tenant=tenant, **self._options())
        self._handlers[tenant] = found
        return found

    def _workspace(self, tenant: Optional[str]) -> Any:
        found = self._workspaces.get(tenant)
        if found is None:
            from refmem.openclaw import OpenClawMemory

            options = self._options()
            found = OpenClawMemory(self.handler(tenant).store, **options)
            self._workspaces[tenant] = found
        return found

    def call(self, tool: str, arguments: Any, tenant: Optional[str]) -> Reply:
        """Run one tool call for `tenant`. Never raises: a store that cannot be opened, or a handler that breaks
        its promise never to raise, is an error result that names only the exception's type."""
        with self._lock:
            try:
                if tool == MEMORY_TOOL:
                    result = self.handler(tenant).execute(arguments)
                    return str(result.output), bool(result.is_error), None
                from refmem.openclaw.tools import reply

                answer = reply(self._workspace(tenant), tool, arguments)
                return str(answer["output"]), bool(answer["is_error"]), answer.get("result")
            except Exception as exc:  # noqa: BLE001 - reported to the client, never a crash
                return _failure(exc), True, None

    def reset(self, root: str) -> None:
        """A fresh start, as a new server process would make it (D-MCP-RESET): every handler, workspace and store
        closed (their caches, open descriptors and watches with them), the settings' root moved to `root` (a
        database store stays where it is, and is erased), and the default tenant's handler built anew. Only for
        `--harness`; raises what building the handler raises."""
        with self._lock:
            self._erase()
            self._release()
            if self.settings.root is not None:
                self.settings = dataclasses.replace(self.settings, root=root)
            self.handler(self.default_tenant)

    default_tenant: Optional[str] = None
    """The tenant a reset opens first (the server's `--tenant`)."""

    def _erase(self) -> None:
        """With --harness: every opened store's memories erased (the suite's throwaway store)."""
        if not self.settings.harness:
            return
        for store in self._stores:
            erase = getattr(store, "erase", None)
            if callable(erase):
                erase()

    def _release(self) -> None:
        held = [*self._workspaces.values(), *self._handlers.values(), *self._stores]
        self._workspaces.clear()
        self._handlers.clear()
        self._stores = []
        for item in held:
            close = getattr(item, "close", None)
            if callable(close):
                with contextlib.suppress(Exception):
                    close()

    def close(self) -> None:
        with self._lock:
            self._release()


def _failure(exc: Exception) -> str:
    from refmem.stores import StoreError

    if isinstance(exc, StoreError):  # its text names no location (refmem.stores.location)
        return f"Error: the store could not be used: {exc}"[:300]
    return f"Error: the memory tool failed ({type(exc).__name__})"
