"""How the fuzzer reaches a target: the conformance runner's `open_target`, plus a few aliases
(`openclaw`: OpenClaw's own adapter, for the openclaw plug-in's tools).

The fuzzer never talks to an implementation any other way, so a backend that passes the conformance
runner's adapter checks can be fuzzed as it is.
"""

from __future__ import annotations

import importlib.util
import pathlib
from typing import Optional, Sequence

from refmem_harness import targets
from refmem_harness.openclaw_target import target_spec as openclaw_spec

__all__ = ["open", "resolve_spec"]

ALIASES = {
    "reference": "refmem",
    "anthropic-sdk": "",  # resolved below: the conformance adapter when present, else ours
}


def resolve_spec(spec: str) -> str:
    if spec == "anthropic-sdk":
        adapter = targets.__package__ + ".adapters.anthropic_sdk"
        if importlib.util.find_spec(adapter) is not None:
            return f"python:{adapter}:make"
        return f"python:{__package__}.sdk_target:make"
    if spec == "openclaw":
        return openclaw_spec(spec)  # TargetError when it is not installed
    return ALIASES.get(spec) or spec


def open(  # noqa: A001
    spec: str, root: pathlib.Path, timeout: Optional[float], tools: Optional[Sequence[str]] = None
) -> targets.Target:
    """The target `spec` on `root`; `tools` the tools it must run (default: the memory tool)."""
    return targets.open_target(resolve_spec(spec), root, timeout=timeout, tools=tools or (targets.TOOL_MEMORY,))
