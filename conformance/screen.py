"""What the deployment and stress tiers screen every result for: a hang, a crash, the canary from outside the root,
a host path, a traceback. One check's run holds its case directory and canary; each tier says where a problem goes.
"""

from __future__ import annotations

import os
from typing import List, Tuple

from refmem_harness.layout import CaseDir
from refmem_harness.target_base import StepResult

from .effects import CRASH, HANG, OUTSIDE_CONTENT_SHOWN, OUTSIDE_NAME_SHOWN


class ScreenedRun:
    """One check's run: `failed` is set once the target hung or crashed, and the check stops there."""

    crash = "the implementation crashed during {name}"
    """How a crash reads (`name` the command, `detail` what the target said)."""

    def __init__(self, check: str, case: CaseDir, canary: str) -> None:
        self.check = check
        self.case = case
        self.canary = canary
        self.host_paths = {str(case.path), os.path.realpath(case.path)}
        self.failed = False

    def problems(self, name: str, result: StepResult, cut: bool = False) -> List[str]:
        """What the result of command `name` shows that no result may (a hang not counted when the check `cut` the
        step's time short itself)."""
        return [problem for _effect, problem in self.effects(name, result, cut)]

    def effects(self, name: str, result: StepResult, cut: bool = False) -> List[Tuple[str, str]]:
        """`problems`, each with its effect (conformance/effects.py), which gives its class."""
        found: List[Tuple[str, str]] = []
        if result.timed_out and not cut:
            found.append((HANG, f"{name} did not answer within the step timeout (a hang)"))
            self.failed = True
        elif result.crashed:
            found.append((CRASH, self.crash.format(name=name, detail=result.detail[:200])))
            self.failed = True
        output = result.output
        if self.canary in output:
            found.append((OUTSIDE_CONTENT_SHOWN, f"a {name} result holds the canary text from outside the root"))
        if any(path in output for path in self.host_paths):
            found.append((OUTSIDE_NAME_SHOWN, f"a {name} result holds a host path"))
        if "Traceback (most recent call last)" in output:
            found.append((OUTSIDE_NAME_SHOWN, f"a {name} result holds a traceback"))
        return found
