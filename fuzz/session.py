"""One command sequence against one target in one freshly laid-out case directory."""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, Callable, Dict, List, Optional

from . import cost, oracles
from .layout import Layout
from .meter import Meter
from .model import Model, Outcome, Tree
from .observe import read_tree
from .oracles import Violation

ORACLE_PRIORITY = ("escape", "leak", "hang", "crash", "exception", "cost", "parser", "diverge")


@dataclasses.dataclass
class Report:
    commands: List[Any]
    steps: List[Any]
    expected: List[Outcome]
    violations: List[Violation]
    tree_after: Optional[Tree] = None
    costs: List[Dict[str, Any]] = dataclasses.field(default_factory=list)
    """Per measured step: input characters so far, what it cost, and the budget it had."""
    confirmed: List[float] = dataclasses.field(default_factory=list)
    """For a confirmed cost finding: the measured figure of each run that broke the budget."""

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
    meter: Optional[Meter] = None
    """Measures every step for the cost oracle (with `budget`); None: no cost oracle."""
    budget: Optional[cost.Budget] = None
    trace_memory: bool = False
    """Run this sequence's in-process steps under tracemalloc: memory figures, no time figures."""


def run_sequence(commands: List[Any], target: Any, layout: Layout, settings: Settings) -> Report:
    layout.reset()
    target.reset(layout.root)
    model = Model(layout.fixtures, settings.parse) if settings.differential and settings.parse else None
    diverged = False
    report = Report(commands, [], [], [])
    measured = settings.meter is not None and settings.budget is not None
    chars = cost.layout_chars(layout.fixtures) if measured else 0
    for index, command in enumerate(commands):
        if settings.meter is not None and settings.budget is not None:
            chars += cost.input_chars(command)
            step, spent = settings.meter.measure(functools.partial(target.execute, command), settings.trace_memory)
            report.costs.append({"step": index, "input_chars": chars, "measured": spent.to_json(),
                                 "budget": settings.budget.limits(chars, spent.clock),
                                 "bucket": cost.bucket(spent, settings.budget, chars)})
            if not (step.timed_out or step.crashed):
                report.violations.extend(cost.check(index, command, spent, settings.budget, chars))
        else:
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
