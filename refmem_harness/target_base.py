"""What every way of reaching an implementation shares: the step result, the target interface, its errors.

Both the in-process targets (refmem_harness/targets.py) and the adapter client (refmem_harness/adapter_client.py)
build on this module, so neither imports the other's internals. Standard library only: the fuzzer uses it too.
"""

from __future__ import annotations

import dataclasses
import pathlib
from typing import Any, Dict, FrozenSet, Mapping, Optional, Tuple

from refmem import protocol

from .visible import printable

DEFAULT_STEP_TIMEOUT = protocol.STEP_TIMEOUT_SECONDS
"""Seconds one command may take before the target counts as hung."""

STORAGE_KINDS = protocol.STORAGE_KINDS
"""`filesystem`: the target stores under the root it is given; `own`: it keeps its own storage."""

OPTION_NAMES = protocol.OPTION_NAMES
"""Handler options a case may set (CASE-FORMAT.md `options`); a target lists those it honours."""

Options = Optional[Mapping[str, Any]]

NAME_CHARS = 200
"""Longest implementation name, language, version or homepage kept from what an implementation says."""
MESSAGE_CHARS = 1000
"""Longest error message kept from an implementation or an adapter."""
DETAIL_CHARS = 4000
"""Longest detail kept: an exception's text and stack, the tail of an adapter's standard error."""


class TargetError(Exception):
    """The target could not be opened, started or reset: nothing can be run against it."""


@dataclasses.dataclass(frozen=True)
class StepResult:
    """What one command produced, and whether the implementation misbehaved while producing it."""

    output: str
    is_error: bool
    crashed: bool = False
    """The implementation's process died, or broke the adapter protocol, during the command."""
    timed_out: bool = False
    """The command took longer than the step timeout; an adapter process was killed."""
    raised: bool = False
    """The implementation raised an exception that is not its declared error signal."""
    detail: str = ""
    """For a crash, timeout or exception: what happened (traceback, stderr tail), for the report."""
    result: Any = None
    """A tool's result object beside its rendered output, for a tool that has one (the protocol's `result`:
    OpenClaw's `memory_get` and `memory_search`); None for the memory tool. Plain JSON data."""

    @property
    def misbehaved(self) -> bool:
        return self.crashed or self.timed_out or self.raised


TOOL_MEMORY = protocol.TOOL_MEMORY
"""The memory tool: what a target runs when no other tool is named."""


class CallTime:
    """The CPU time the thread that ran one call spent on it (`seconds`; None until the call returns, and for
    good when it was abandoned). A new one for every call, so that a reader can tell its call's from another's."""

    __slots__ = ("seconds",)

    def __init__(self) -> None:
        self.seconds: Optional[float] = None


class Target:
    """Base class: one implementation, reached one way. Subclasses implement `execute` and `reset`."""

    spec: str = ""
    implementation: Dict[str, str] = {}
    storage: str = "filesystem"
    restarts: int = 0
    options: FrozenSet[str] = frozenset()
    """The names of OPTION_NAMES this target can configure its implementation with."""
    tools: Tuple[str, ...] = (TOOL_MEMORY,)
    """The tools this target runs over one root (the protocol's `tools`): the memory tool unless it says more
    or other ones (OpenClaw's `memory_get` and `memory_search`)."""
    last_call: Optional[CallTime] = None
    """The thread time of the last call, for a target that runs calls in this process (refmem_harness/usage.py)."""

    @property
    def pid(self) -> Optional[int]:
        """The process that runs the implementation when it is another one (an adapter's, while it runs); None
        when the implementation runs in this process."""
        return None

    def execute(self, input: Any, tool: str = TOOL_MEMORY) -> StepResult:
        """Run `input` as the tool `tool` would be called with it by a model (the protocol's `execute`)."""
        raise NotImplementedError

    def reset(self, root: pathlib.Path, options: Options = None) -> None:
        """A fresh implementation on `root`, configured with `options` (names from `self.options` only)."""
        raise NotImplementedError

    def unsupported(self, options: Options) -> Optional[str]:
        """The first option in `options` this target cannot honour, or None."""
        for name in options or {}:
            if name not in self.options:
                return name
        return None

    def uncarried(self, input: Any) -> Optional[str]:
        """Why the way this target is reached cannot carry `input` at all (an MCP server takes only an object of
        UTF-8 JSON), or None: a case that sends such an input is skipped with the reason, never judged."""
        return None

    def close(self) -> None:
        """Release the target; the default has nothing to release."""

    def __enter__(self) -> Target:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def implementation_info(name: str, language: str, version: str = "", homepage: str = "") -> Dict[str, str]:
    return {"name": name, "language": language, "version": version, "homepage": homepage}


# --- text an implementation supplies -------------------------------------------------------------------
# Names, messages, exception texts and stderr lines come from the implementation under test and end up on a
# terminal, in a CI log and in a job summary. They are made printable (refmem_harness/visible.py: no escape
# sequence, no line break that could start a CI log command) and cut to a bound where they are taken in.


def _cut(text: str, limit: int, keep_end: bool) -> str:
    if len(text) <= limit:
        return text
    if keep_end:
        return f"[{len(text) - limit} characters before] ..." + text[-limit:]
    return text[:limit] + f"... [{len(text) - limit} more characters]"


def clipped(value: Any, limit: int) -> str:
    """`value` (any JSON value; its text when it is a string) as one printable line of about `limit` characters."""
    text = value if isinstance(value, str) else str(value)
    drawn = printable(text[:limit])
    if len(text) <= limit and len(drawn) <= limit:
        return drawn
    return drawn[:limit] + f"... [{len(text)} characters in all]"


def clipped_lines(value: Any, limit: int, keep_end: bool = False) -> str:
    """`value` as printable lines (its line breaks kept, every line printable on its own), about `limit`
    characters in all: the first ones, or the last ones with `keep_end` (the end of a log says most)."""
    text = value if isinstance(value, str) else str(value)
    drawn = "\n".join(printable(line) for line in _cut(text, limit, keep_end).split("\n"))
    return _cut(drawn, limit, keep_end)


def described(info: Mapping[str, Any]) -> Dict[str, str]:
    """An implementation's description (`implementation` in the start reply, or a python target's dict): its
    four fields as printable one-line texts, missing ones empty."""
    return {key: clipped(info.get(key, ""), NAME_CHARS) for key in protocol.IMPLEMENTATION_FIELDS}
