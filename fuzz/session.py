"""One command sequence against one target in one freshly laid-out case directory."""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, List, Optional

from . import oracles
from .layout import Layout
from .model import Model, Outcome, Tree
from .observe import read_tree
from .oracles import Violation

ORACLE_PRIORITY = ("escape", "leak", "hang", "crash", "exception", "parser", "diverge")


@dataclasses.dataclass
class Report:
    commands: List[Any]
    steps: List[Any]
    expected: List[Outcome]
    violations: List[Violation]
    tree_after: Optional[Tree] = None

    @property
    def primary(self) -> Optional[Violation]:
        if not self.violations:
            return None
        return min(self.violations, key=lambda v: ORACLE_PRIORITY.index(v.family))

    def has(self, oracle: str) -> bool:
        return any(v.oracle == oracle for v in self.violations)


@dataclasses.dataclass
class Settings:
    strict: bool = False
    """Also require no traceback or exception class name in outputs (the reference's promise)."""
    differential: bool = False
    """Compare outcome classes and the final tree with the model of the reference."""
    parse: Optional[Callable[[str], Any]] = None
    """The path parser the model uses (refmem.paths.parse_path); needed when differential."""


def run_sequence(commands: List[Any], target: Any, layout: Layout, settings: Settings) -> Report:
    layout.reset()
    target.reset(layout.root)
    model = Model(layout.fixtures, settings.parse) if settings.differential and settings.parse else None
    diverged = False
    report = Report(commands, [], [], [])
    for index, command in enumerate(commands):
        step = target.execute(command)
        report.steps.append(step)
        report.violations.extend(oracles.check_step(index, command, step, layout, settings.strict))
        if model is not None:
            expected = model.apply(command)
            report.expected.append(expected)
            if not diverged and not step.timed_out and not step.crashed:
                violation = oracles.check_outcome(index, command, expected, step.is_error)
                if violation is not None:
                    report.violations.append(violation)
                    diverged = True
        if step.crashed or step.timed_out:
            break  # the target is gone until the next reset
    report.violations.extend(oracles.check_outside(layout))
    if getattr(target, "storage", "filesystem") == "filesystem":
        report.tree_after = read_tree(layout.root)
        if model is not None and not diverged and not model.lost:
            violation = oracles.check_tree(model.tree, report.tree_after)
            if violation is not None:
                report.violations.append(violation)
    return report
