"""Other tools fuzzed on the shared apparatus: a plug-in is a layout, a decoder and oracles, nothing more.

The session (session.py), the minimiser, the finding files, replay and the engines are the memory tool's; a
plug-in brings only what is its own: the hostile layout its tools read, how the fuzzer's bytes become its
commands (each naming its tool, the protocol's `tool` field), how one command runs on a target, and the
oracles on one step. Its finding files carry its name as their `harness`: that is how `refmem-fuzz replay`
lays out the same workspace and checks the same oracles again; the target a file names is never started
(replay.py).
"""

from __future__ import annotations

import dataclasses
import pathlib
from typing import Any, Callable, List, Mapping, Sequence, Tuple

from refmem_harness.sequence_layout import Fixture, Layout

from .minimise import Fields
from .session import CheckStep, Execute, Settings


@dataclasses.dataclass(frozen=True)
class Plugin:
    harness: str
    """The harness name in its finding files (finding.HARNESS_NAMES)."""
    tools: Tuple[str, ...]
    """The tools its commands call: a target that does not run them all is refused (targets.open_target)."""
    fixtures: Sequence[Fixture]
    outside: Mapping[str, str]
    """Files laid out beside the canary tree (refmem_harness/sequence_layout.py)."""
    decode: Callable[[bytes], List[Any]]
    execute: Execute
    check_step: CheckStep
    fields: Fields
    """What the minimiser simplifies in its commands."""

    def layout(self, work: pathlib.Path) -> Layout:
        return Layout(work, hostile=True, fixtures=self.fixtures, outside=self.outside)

    def settings(self, **options: Any) -> Settings:
        return Settings(execute=self.execute, check_step=self.check_step, **options)
