"""What a search found: the shortest failing sequence of one class, or nothing (no hypothesis needed to read it)."""

from __future__ import annotations

import dataclasses
import pathlib
from typing import Any, FrozenSet, List, Optional, Tuple

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
    """The first distinct failure (`failures[0]`), or None."""
    finding_file: Optional[pathlib.Path] = None
    """Where the failure was written as a finding file (its reproduction)."""
    failures: List[Failure] = dataclasses.field(default_factory=list)
    """Every distinct failure the budget reached, each shrunk on its own (D-VERDICT-EVERY-FAILURE), first found
    first: a second bug is never hidden behind the first."""
    finding_files: List[pathlib.Path] = dataclasses.field(default_factory=list)
    """Their finding files, in the same order."""


def signature(finding: Finding, command: Any, result: Optional[StepResult], oracle: Any) -> Tuple[str, str]:
    """What makes two failures of one class the same: the finding's kind and the fuzzer's oracle name (`oracle`:
    report.oracle), a leak's without the command that showed it (the same leak through view or create is one)."""
    name = str(oracle(finding, command, result))
    return finding.kind, (name.rsplit(":", 1)[0] if finding.kind == "leak" else name)


Known = FrozenSet[Tuple[str, str]]
"""Signatures a search passes over: the failures found already."""
