"""Running cases against a target: the layout, setup, steps, final state and leak checks of each case.

The runner compares; the target only executes. A case passes when it has no finding.
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
import secrets
import tempfile
import time
from typing import Any, Callable, Dict, List, Optional

from conformance import CASE_FORMAT_VERSION, PROTOCOL_VERSION, SUITE_VERSION
from conformance.cases import Case
from conformance.checks import (
    Finding,
    LeakGuard,
    check_final_tree,
    check_final_views,
    check_outside,
    check_step,
    misbehaviour,
    strings_in,
)
from conformance.layout import (
    CaseDir,
    FixtureUnavailable,
    apply_fixtures,
    make_case_dir,
    memory_tree,
    outside_snapshot,
    remove,
)
from conformance.targets import DEFAULT_STEP_TIMEOUT, StepResult, Target, open_target

PASS, FAIL, SKIP = "pass", "fail", "skip"


@dataclasses.dataclass
class CaseResult:
    case: Case
    status: str
    findings: List[Finding] = dataclasses.field(default_factory=list)
    reason: str = ""
    seconds: float = 0.0
    outcome: str = ""
    """After expectations: pass, fail, skip, xfail (expected failure), xpass (unexpected pass)."""
    expectation: Optional[Dict[str, str]] = None


@dataclasses.dataclass
class RunResult:
    target: str
    implementation: Dict[str, str]
    storage: str
    results: List[CaseResult]
    restarts: int
    seconds: float
    warnings: List[str] = dataclasses.field(default_factory=list)
    stale: List[Dict[str, str]] = dataclasses.field(default_factory=list)
    versions: Dict[str, Any] = dataclasses.field(
        default_factory=lambda: {
            "suite": SUITE_VERSION,
            "protocol": PROTOCOL_VERSION,
            "case_format": CASE_FORMAT_VERSION,
        }
    )


class CaseRun:
    """One case in its own directory: setup, steps, final state, leak and outside checks."""

    def __init__(self, target: Target, case: Case, directory: CaseDir, canary: str, base: pathlib.Path) -> None:
        self.target = target
        self.case = case
        self.directory = directory
        self.base = base
        self.findings: List[Finding] = []
        secrets = [("the canary text", canary)]
        secrets += [("the host path", path) for path in sorted({str(base), os.path.realpath(base)})]
        self.guard = LeakGuard(tuple(secrets), "\x00".join(strings_in(case.raw)))

    def _execute(self, input: Any, number: int) -> Optional[StepResult]:
        """Run one input; record leaks and misbehaviour. None when the case cannot go on."""
        result = self.target.execute(input)
        self.findings.extend(self.guard.check(result.output, number))
        trouble = misbehaviour(result, number)
        self.findings.extend(trouble)
        return None if trouble else result

    def setup(self) -> bool:
        for path, text in self.case.setup.get("files", {}).items():
            result = self._execute({"command": "create", "path": f"/memories/{path}", "file_text": text}, 0)
            if result is None:
                return False
            if result.is_error:
                self.findings.append(Finding("setup", f"creating /memories/{path} failed", actual=result.output))
                return False
        return True

    def steps(self) -> None:
        for number, step in enumerate(self.case.steps, 1):
            result = self._execute(step["input"], number)
            if result is None:
                return
            self.findings.extend(check_step(step, result, number))

    def final(self) -> None:
        final = self.case.raw.get("final")
        if not final:
            return
        if self.target.storage == "filesystem":
            self.findings.extend(check_final_tree(final, memory_tree(self.directory)))
            return

        def view(path: str) -> StepResult:
            result = self._execute({"command": "view", "path": path}, 0)
            return result or StepResult("", True)

        self.findings.extend(check_final_views(final, view))

    def run(self) -> List[Finding]:
        outside = outside_snapshot(self.directory)
        base_before = set(os.listdir(self.base))
        # inside the watch: a reset must not write outside either
        self.target.reset(self.directory.root, self.case.options or None)
        if self.setup():
            self.steps()
            if not any(f.kind in ("crashed", "timed_out") for f in self.findings):
                self.final()
        self.findings.extend(check_outside(outside, outside_snapshot(self.directory)))
        new = sorted(set(os.listdir(self.base)) - base_before)
        self.findings.extend(Finding("outside", f"{name}: appeared next to the case directory") for name in new)
        return self.findings


def skip_reason(case: Case, target: Target) -> str:
    if case.requires == "fixtures" and target.storage != "filesystem":
        return "needs on-disk fixtures; the target keeps its own storage"
    missing = target.unsupported(case.options)
    if missing is not None:
        return f"option {missing} not supported"
    return ""


def run_case(target: Target, case: Case, base: pathlib.Path, index: int, canary: str, keep: bool = False) -> CaseResult:
    started = time.monotonic()
    reason = skip_reason(case, target)
    if reason:
        return CaseResult(case, SKIP, reason=reason)
    directory = make_case_dir(base / f"{index:05d}-{case.id}"[:120], canary)
    try:
        apply_fixtures(directory, case.setup.get("fixtures", []))
        findings = CaseRun(target, case, directory, canary, base).run()
    except FixtureUnavailable as exc:
        return CaseResult(case, SKIP, reason=str(exc))
    finally:
        if not keep:
            remove(directory.path)
    return CaseResult(case, FAIL if findings else PASS, findings, seconds=time.monotonic() - started)


Progress = Callable[[CaseResult], None]


def run_suite(
    spec: str,
    cases: List[Case],
    *,
    timeout: float = DEFAULT_STEP_TIMEOUT,
    keep: bool = False,
    progress: Optional[Progress] = None,
    workdir: Optional[pathlib.Path] = None,
) -> RunResult:
    """Run `cases` against the target `spec`; raises TargetError when the target cannot be used at all."""
    started = time.monotonic()
    base = pathlib.Path(tempfile.mkdtemp(prefix="refmem-conformance-", dir=workdir))
    canary = "canary-" + secrets.token_hex(8)
    start_dir = make_case_dir(base / "00000-start", canary)
    results: List[CaseResult] = []
    try:
        target = open_target(spec, start_dir.root, timeout)
        try:
            remove(start_dir.path)
            for index, case in enumerate(cases, 1):
                result = run_case(target, case, base, index, canary, keep)
                results.append(result)
                if progress is not None:
                    progress(result)
        finally:
            target.close()
    finally:
        if not keep:
            remove(base)
    return RunResult(
        spec, dict(target.implementation), target.storage, results, max(target.restarts, 0), time.monotonic() - started
    )
