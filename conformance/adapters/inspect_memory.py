"""inspect_ai's `memory()` tool as a conformance target.

    refmem-conformance field --only inspect-ai-0.3.285

The tool keeps `/memories` in the sample's store (a `StoreModel`), not on disk: storage of its own. An evaluation
gives each sample a fresh store; this adapter does the same for each case (`make`, `init_subtask_store(Store())`),
which is the only logic it adds. A command's fields are bound to the tool's signature as inspect's tool call does;
fields it does not name, and a `ToolError` the tool raises, are error results shown to the model, as in an
evaluation; any other exception is raised (a robustness finding).
"""

from __future__ import annotations

import importlib
import inspect
import pathlib
from typing import Any, Dict

IMPLEMENTATION = {"name": "inspect_ai memory() tool", "language": "python", "version": "",
                  "homepage": "https://github.com/UKGovernmentBISI/inspect_ai"}


class InspectMemory:
    storage = "own"

    def __init__(self) -> None:
        from importlib.metadata import version

        store = importlib.import_module("inspect_ai.util._store")
        store.init_subtask_store(store.Store())
        self._tool_error = importlib.import_module("inspect_ai.tool").ToolError
        self._execute = importlib.import_module("inspect_ai.tool").memory()
        self._signature = inspect.signature(self._execute)
        self.implementation = dict(IMPLEMENTATION, version=version("inspect-ai"))

    async def call(self, input: Any) -> Dict[str, Any]:
        if not isinstance(input, dict):
            return {"output": "the tool's input must be an object", "is_error": True}
        try:
            self._signature.bind(**input)
        except TypeError as exc:
            return {"output": f"invalid arguments: {exc}", "is_error": True}
        try:
            value = await self._execute(**input)
        except self._tool_error as exc:
            return {"output": str(getattr(exc, "message", exc)), "is_error": True}
        return {"output": str(value), "is_error": False}


def make(root: pathlib.Path) -> Any:
    return InspectMemory()
