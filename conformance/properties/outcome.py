"""What a search found: the shortest failing sequence of one class, or nothing (no hypothesis needed to read it)."""

from __future__ import annotations

import dataclasses
import pathlib
from typing import Any, List, Optional, Tuple

from refmem_harness import model
from refmem_harness.targets import StepResult

from ..checks import Finding


@dataclasses.dataclass
class Failure:
    """The shortest sequence hypothesis found that breaks one class, as it ran the last time."""

    cls: str
    finding: Finding
    """The first finding of the class at the step that broke it."""
    others: List[Finding]
    """The class's other findings at that step."""
    commands: List[Any]
    results: List[StepResult]
    tree_after: Optional[model.Tree]
    hidden: Tuple[Tuple[str, str], ...] = ()
    """(text, placeholder) for what a finding file must never hold: the run's folder, the canary."""
    flaky: bool = False
    """The last run did not break the class again (a target that is not deterministic, or a hang near the
    timeout): the sequence is the one that broke it before."""


class PropertyFailed(Exception):
    """Raised inside a sequence at the step that breaks the class searched for."""

    def __init__(self, failure: Failure) -> None:
        super().__init__(f"[{failure.cls}] {failure.finding.kind}: {failure.finding.message}")
        self.failure = failure


@dataclasses.dataclass
class SearchResult:
    """One class's search: its budget, what it ran, and the failure it shrank, if any."""

    cls: str
    examples: int
    """The budget: sequences hypothesis may generate."""
    runs: int
    """Sequences run in all (generated, then shrinking)."""
    seconds: float
    failure: Optional[Failure] = None
    finding_file: Optional[pathlib.Path] = None
    """Where the failure was written as a finding file (its reproduction)."""
