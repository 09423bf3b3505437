"""Re-run a finding's commands, from a fresh layout, against a target, with the finding's oracles."""

from __future__ import annotations

import pathlib
import tempfile
from typing import Optional

from . import cost, reach
from .finding import Finding
from .layout import Layout, scratch_dir_base
from .meter import Meter
from .session import Report, Settings, run_sequence


def replay(finding: Finding, target: Optional[str] = None, step_timeout: Optional[float] = 5.0) -> Report:
    """One run of the finding's commands with its oracles; a cost finding is measured as it was
    found (time, or memory under tracemalloc; the same budget factor) against budgets calibrated on
    this machine."""
    spec = target or finding.target
    parse = None
    if finding.differential:
        from refmem.paths import parse_path

        parse = parse_path
    strict = spec in ("refmem", "reference")
    with tempfile.TemporaryDirectory(prefix="refmem-fuzz-replay-", dir=scratch_dir_base()) as work:
        layout = Layout(pathlib.Path(work) / "w", hostile=finding.hostile_layout)
        layout.reset()
        handle = reach.open(spec, layout.root, step_timeout)
        try:
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
    formula = (finding.cost or {}).get("budget_formula") or {}
    factor = formula.get("factor", 1.0)
    return float(factor) if isinstance(factor, (int, float)) else 1.0


def finding_from_raw_input(data: bytes, target: str, harness: str, hostile: bool) -> Finding:
    """A raw fuzzer input (a libFuzzer crash file) as an unjudged finding: its decoded commands."""
    from .decode import decode
    from .harness import REFERENCE_SPECS, path_from_bytes

    if harness == "paths":
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
