"""Re-run a finding's commands, from a fresh layout, against a target, with the finding's oracles.

The target is always the caller's: the embedded reference unless another is asked for. A finding
file names the target it was found on, but a file is something a stranger may send (SECURITY.md asks
reporters for one), and a `cmd:` or `python:` spec in it is code to run: replaying it would run the
sender's command. So the file's target is shown to the reader and never started.
"""

from __future__ import annotations

import pathlib
import tempfile
from typing import Optional

from refmem_harness.finding import Finding
from refmem_harness.sequence_layout import Layout, scratch_dir_base

from . import cost, harnesses, reach
from .meter import Meter
from .session import Report, Settings, run_sequence

REFERENCE = "refmem"


def replay(finding: Finding, target: str = REFERENCE, step_timeout: Optional[float] = 5.0) -> Report:
    """One run of the finding's commands on `target` (never `finding.target`) with its oracles; a
    cost finding is measured as it was found (time, or memory under tracemalloc; the same budget
    factor) against budgets calibrated on this machine. A plug-in's finding (fuzz/plugin.py) runs on
    the plug-in's layout with its oracles, and `target` must run the plug-in's tools."""
    tools = harnesses.find(finding.harness)
    parse = None
    if finding.differential:
        from refmem.paths import parse_path

        parse = parse_path
    strict = target in (REFERENCE, "reference")
    with tempfile.TemporaryDirectory(prefix="refmem-fuzz-replay-", dir=scratch_dir_base()) as work:
        where = pathlib.Path(work) / "w"
        layout = tools.layout(where) if tools is not None else Layout(where, hostile=finding.hostile_layout)
        layout.reset()
        handle = reach.open(target, layout.root, step_timeout, tools.tools if tools is not None else None)
        try:
            if tools is not None:
                return run_sequence(finding.commands, handle, layout, tools.settings(strict=strict))
            if finding.harness == "paths":
                return run_sequence(finding.commands, handle, layout, Settings(strict=True))
            settings = Settings(strict, finding.differential, parse)
            if finding.oracle.startswith("cost:"):
                memory = finding.oracle.startswith("cost:memory:")
                settings.meter = Meter(handle, memory=memory)
                settings.budget = cost.make_budget(memory, _factor(finding), folders_in=layout.work)
                settings.trace_memory = memory
            return run_sequence(finding.commands, handle, layout, settings)
        finally:
            handle.close()


def _factor(finding: Finding) -> float:
    """The budget factor the finding was found with; 1 for anything but a positive number up to a
    million (the `cost` record is the file's, so only what can be a factor is taken from it)."""
    formula = (finding.cost or {}).get("budget_formula")
    factor = formula.get("factor", 1.0) if isinstance(formula, dict) else 1.0
    usable = isinstance(factor, (int, float)) and not isinstance(factor, bool) and 0 < factor <= 1e6
    return float(factor) if usable else 1.0


def finding_from_raw_input(data: bytes, target: str, harness: str, hostile: bool) -> Finding:
    """A raw fuzzer input (a libFuzzer crash file) as an unjudged finding: its decoded commands."""
    from refmem_harness.decode import decode

    from .harness import REFERENCE_SPECS, path_from_bytes

    tools = harnesses.find(harness)
    if tools is not None:
        commands = tools.decode(data)
    elif harness == "paths":
        commands = [{"command": "view", "path": path_from_bytes(data)}]
    else:
        commands = decode(data)
    return Finding(
        target=target,
        harness=harness,
        oracle="",
        detail="",
        step=None,
        hostile_layout=hostile or harness == "paths",
        differential=harness == "sequence" and target in REFERENCE_SPECS,
        commands=commands,
        observed=[],
    )
