"""One command sequence against one target in one freshly laid-out case directory.

A sequence may be cut short by the run's deadline (`Settings.deadline`, from `--max-time`): no step
starts after it, and a step started close enough to it that its own timeout would carry the run past
it is watched from another thread and given up STEP_GRACE after the deadline. Every later phase of a
run (confirming a cost, minimising, the re-run after minimising) goes through here, so each of them
stops at the deadline too: past it a sequence costs nothing and breaks no oracle.
"""

from __future__ import annotations

import dataclasses
import functools
import queue
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

from refmem_harness import finding as finding_files
from refmem_harness import oracles
from refmem_harness.finding import scrub
from refmem_harness.model import Model, Outcome, Tree
from refmem_harness.model import render_tree as model_render_tree
from refmem_harness.oracles import Violation
from refmem_harness.sequence_layout import Layout

from . import cost
from .meter import Meter
from .observe import read_model_tree

ORACLE_PRIORITY = ("escape", "leak", "hang", "crash", "exception", "cost", "parser", "diverge")

Execute = Callable[[Any, Any, Layout], Any]
"""How one command runs: (target, command, layout) -> a StepResult."""
CheckStep = Callable[[int, Any, Any, Layout, bool], List[Violation]]
"""The oracles on one step: (index, command, step, layout, strict) -> what it broke."""


def run_command(target: Any, command: Any, layout: Layout) -> Any:
    """The memory tool's command, sent as it is."""
    return target.execute(command)


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
    cut: bool = False
    """The deadline came first: `commands` holds only the commands that ran, the tree is not judged."""

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
    deadline: Optional[float] = None
    """`time.monotonic()` at which the run ends (its --max-time): no step starts after it."""
    step_timeout: Optional[float] = None
    """The target's own step timeout (None: none). A step that starts less than this before the
    deadline is watched, and abandoned STEP_GRACE after the deadline."""
    execute: Execute = run_command
    """How a command runs; a plug-in's commands name their tool (fuzz/plugin.py)."""
    check_step: CheckStep = oracles.check_step
    """The oracles on each step; a plug-in brings its own (fuzz/plugin.py)."""

    def past_deadline(self) -> bool:
        return self.deadline is not None and time.monotonic() >= self.deadline


STEP_GRACE = 1.0
"""Seconds past the deadline a step still running is waited for before it is abandoned."""


class Abandoned:
    """What a step abandoned at the deadline returns: no result (the sequence is cut before it)."""

    output = ""
    is_error = True
    crashed = timed_out = raised = False


ABANDONED = Abandoned()


def run_sequence(commands: List[Any], target: Any, layout: Layout, settings: Settings) -> Report:
    if settings.past_deadline():
        return Report([], [], [], [], cut=True)
    layout.reset()
    if _within_deadline(functools.partial(target.reset, layout.root), settings) is ABANDONED:
        return Report([], [], [], [], cut=True)
    model = Model(layout.fixtures, settings.parse) if settings.differential and settings.parse else None
    diverged = False
    report = Report(commands, [], [], [])
    measured = settings.meter is not None and settings.budget is not None
    chars = cost.layout_chars(layout.fixtures) if measured else 0
    for index, command in enumerate(commands):
        run = functools.partial(settings.execute, target, command, layout)
        call = functools.partial(_within_deadline, run, settings)
        if index and settings.past_deadline():
            step = ABANDONED
        elif settings.meter is not None and settings.budget is not None:
            chars += cost.input_chars(command)
            step, spent = settings.meter.measure(call, settings.trace_memory)
            if step is not ABANDONED:
                report.costs.append({"step": index, "input_chars": chars, "measured": spent.to_json(),
                                     "budget": settings.budget.limits(chars, spent.clock),
                                     "bucket": cost.bucket(spent, settings.budget, chars)})
            if not (step.timed_out or step.crashed or step is ABANDONED):
                report.violations.extend(cost.check(index, command, spent, settings.budget, chars))
        else:
            step = call()
        if step is ABANDONED:
            report.commands, report.cut = commands[:index], True
            break
        report.steps.append(step)
        report.violations.extend(settings.check_step(index, command, step, layout, settings.strict))
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
    if getattr(target, "storage", "filesystem") == "filesystem" and not report.cut:
        report.tree_after = read_model_tree(layout.root)
        if model is not None and not diverged and not model.lost:
            violation = oracles.check_tree(model.tree, report.tree_after)
            if violation is not None:
                report.violations.append(violation)
    return report


def _within_deadline(call: Callable[[], Any], settings: Settings) -> Any:
    """`call()`; watched from another thread when its timeout could carry it past the deadline, and
    then ABANDONED if it is still running STEP_GRACE after the deadline (Python cannot stop a
    thread: an in-process call goes on in the background, an adapter is killed when the run closes
    its target)."""
    if settings.deadline is None:
        return call()
    left = settings.deadline - time.monotonic()
    if settings.step_timeout is not None and left > settings.step_timeout:
        return call()
    box: queue.Queue[Tuple[bool, Any]] = queue.Queue(maxsize=1)

    def watched() -> None:
        try:
            box.put((True, call()))
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread as it is
            box.put((False, exc))

    threading.Thread(target=watched, name="refmem-fuzz-step", daemon=True).start()
    try:
        returned, value = box.get(timeout=max(left, 0.0) + STEP_GRACE)
    except queue.Empty:
        return ABANDONED
    if not returned:
        raise value
    return value


def finding_from_report(
    report: Report, layout: Layout, target: str, harness: str, differential: bool, oracle: Optional[str] = None
) -> finding_files.Finding:
    """The finding a report shows; `oracle` picks which violation is the finding (default: the primary)."""
    primary = next((v for v in report.violations if v.oracle == oracle), None) or report.primary
    assert primary is not None
    observed = []
    for command, step in zip(report.commands, report.steps):
        entry: Dict[str, Any] = {
            "input": command,
            "output": scrub(step.output, layout),
            "is_error": step.is_error,
        }
        for flag in ("crashed", "timed_out", "raised"):
            if getattr(step, flag, False):
                entry[flag] = True
        observed.append(entry)
    return finding_files.Finding(
        target=target,
        harness=harness,
        oracle=primary.oracle,
        detail=scrub(primary.detail, layout),
        step=primary.step,
        hostile_layout=layout.hostile,
        differential=differential,
        commands=list(report.commands),
        observed=observed,
        tree_after={key: scrub(value, layout) for key, value in model_render_tree(report.tree_after).items()}
        if report.tree_after is not None
        else None,
        other_oracles=sorted({v.oracle for v in report.violations} - {primary.oracle}),
        cost=next((dict(record) for record in report.costs if record["step"] == primary.step), None)
        if primary.family == "cost"
        else None,
    )
