"""The Anthropic Python SDK's `BetaLocalFilesystemMemoryTool` as a conformance target.

    refmem-conformance --target python:refmem_conformance.adapters.anthropic_sdk:make

The SDK class takes a base directory and keeps memories in `<base>/memories`. The runner's root is
always a directory named `memories` (CASE/memories), so the base is simply the root's parent: the SDK
works on exactly the directory the case prepared, with no link or copy in between. Any other root is
refused rather than silently mapped somewhere else.

Results are read the way the SDK's own tool runner reads them: a returned string is a success, a
`ToolError` is an error result with its content, and any other exception is an error result (shown
to the model as its repr) that the runner also records as `raised`.
"""

from __future__ import annotations

import pathlib
from typing import Any, Dict

HOMEPAGE = "https://github.com/anthropics/anthropic-sdk-python"


def _version() -> str:
    import anthropic

    return str(anthropic.__version__)


IMPLEMENTATION: Dict[str, str] = {
    "name": "anthropic BetaLocalFilesystemMemoryTool",
    "language": "python",
    "version": "",
    "homepage": HOMEPAGE,
}


def make(root: pathlib.Path) -> Any:
    """A `BetaLocalFilesystemMemoryTool` whose `/memories` is `root` (which must be named `memories`)."""
    from anthropic.tools import BetaLocalFilesystemMemoryTool

    root = pathlib.Path(root)
    if root.name != "memories":
        raise ValueError("the SDK keeps memories in <base>/memories: the root must be a directory named memories")
    tool = BetaLocalFilesystemMemoryTool(str(root.parent))
    tool.implementation = dict(IMPLEMENTATION, version=_version())  # type: ignore[attr-defined]
    return tool
