"""What every way of reaching an implementation shares: the step result, the target interface, its errors.

Both the in-process targets (conformance/targets.py) and the adapter client (conformance/adapter_client.py)
build on this module, so neither imports the other's internals. Standard library only: the fuzzer uses it too.
"""

from __future__ import annotations

import dataclasses
import pathlib
from typing import Any, Dict, FrozenSet, Mapping, Optional

from refmem import protocol

DEFAULT_STEP_TIMEOUT = protocol.STEP_TIMEOUT_SECONDS
"""Seconds one command may take before the target counts as hung."""

STORAGE_KINDS = protocol.STORAGE_KINDS
"""`filesystem`: the target stores under the root it is given; `own`: it keeps its own storage."""

OPTION_NAMES = protocol.OPTION_NAMES
"""Handler options a case may set (CASE-FORMAT.md `options`); a target lists those it honours."""

Options = Optional[Mapping[str, Any]]


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

    @property
    def misbehaved(self) -> bool:
        return self.crashed or self.timed_out or self.raised


class Target:
    """Base class: one implementation, reached one way. Subclasses implement `execute` and `reset`."""

    spec: str = ""
    implementation: Dict[str, str] = {}
    storage: str = "filesystem"
    restarts: int = 0
    options: FrozenSet[str] = frozenset()
    """The names of OPTION_NAMES this target can configure its implementation with."""

    def execute(self, input: Any) -> StepResult:
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

    def close(self) -> None:
        """Release the target; the default has nothing to release."""

    def __enter__(self) -> Target:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def implementation_info(name: str, language: str, version: str = "", homepage: str = "") -> Dict[str, str]:
    return {"name": name, "language": language, "version": version, "homepage": homepage}
