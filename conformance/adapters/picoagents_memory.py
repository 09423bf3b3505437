"""picoagents' `MemoryTool` as a conformance target (thin).

    refmem-conformance field --only picoagents-0.5.0

`MemoryTool(base_path).execute(parameters)` is a coroutine answering a `ToolResult`: `success`, and `result` or
`error`. That is the whole reading: a success is its result's text, a failure an error result with the error's
text. Its base path is the `/memories` folder itself.
"""

from __future__ import annotations

import asyncio
import importlib
import pathlib
from typing import Any, Dict

IMPLEMENTATION = {"name": "picoagents MemoryTool", "language": "python", "version": "",
                  "homepage": "https://pypi.org/project/picoagents/"}


class PicoagentsMemory:
    def __init__(self, root: pathlib.Path) -> None:
        from importlib.metadata import version

        tools = importlib.import_module("picoagents.tools")
        self._tool = tools.MemoryTool(base_path=str(root))
        self.implementation = dict(IMPLEMENTATION, version=version("picoagents"))

    def call(self, input: Any) -> Dict[str, Any]:
        result = asyncio.run(self._tool.execute(input))
        if result.success:
            return {"output": "" if result.result is None else str(result.result), "is_error": False}
        return {"output": str(result.error or ""), "is_error": True}


def make(root: pathlib.Path) -> Any:
    return PicoagentsMemory(pathlib.Path(root))
