"""Running cases against a target: the layout, setup, steps, final state and the universal checks of each case.

The runner compares; the target only executes. Every finding has a class (conformance/tiers.py); a case
fails when it has a finding of a class its profile counts.
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
import secrets
import tempfile
import time
from typing import Any, Callable, Dict, List, Optional, Set

from . import CASE_FORMAT_VERSION, PROTOCOL_VERSION, SUITE_VERSION
from .cases import Case
from .checks import (
    Finding,
    LeakGuard,
    check_final_tree,
    check_final_views,
    check_outside,
    check_step,
    describe,
    misbehaviour,
    output_bound,
    strings_in,
)
from .dataloss import lost, shared_inodes, touched
from .hostwatch import HostWatch, named_paths
from .layout import (
    CaseDir,
    FixtureUnavailable,
    apply_fixtures,
    make_case_dir,
    memory_tree,
    outside_snapshot,
    remove,
    tree_bytes,
    write_files,
)
from .targets import DEFAULT_STEP_TIMEOUT, StepResult, Target, open_target
from .tiers import DEFAULT_PROFILE, counted

PASS, FAIL, SKIP = "pass", "fail", "skip"

OUTPUT_BOUND_BASE = 65_536
OUTPUT_BOUND_FACTOR = 16
"""An output may be at most BASE + FACTOR x (bytes in the case directory + characters sent so far)
characters, unless the step states its own `max_output_chars`: a view of N bytes numbered and paginated
stays far below it; an output past it is unbounded (a safety finding)."""


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

    def classes(self) -> List[str]:
        """The classes of its findings, each once, in the order found."""
        return list(dict.fromkeys(finding.cls for finding in self.findings))

    def failed_in(self, cls: str) -> bool:
        return any(finding.cls == cls for finding in self.findings)


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
    profile: str = DEFAULT_PROFILE
    signalling: str = ""
    """How the target's plain results and exceptions were read (conformance/signalling.py), for the report."""
    stress: Optional[List[Dict[str, Any]]] = None
    """The stress tier's findings ({"class", "check", "detail"}) when it ran; None when it did not."""
    versions: Dict[str, Any] = dataclasses.field(
        default_factory=lambda: {
            "suite": SUITE_VERSION,
            "protocol": PROTOCOL_VERSION,
            "case_format": CASE_FORMAT_VERSION,
        }
    )


class CaseRun:
    """One case in its own directory: setup, steps, final state, and the universal checks."""

    def __init__(self, target: Target, case: Case, directory: CaseDir, canary: str, base: pathlib.Path) -> None:
        self.target = target
        self.case = case
        self.directory = directory
        self.base = base
        self.findings: List[Finding] = []
        secrets = [("the canary text", canary)]
        secrets += [("the host path", path) for path in sorted({str(base), os.path.realpath(base)})]
        self.guard = LeakGuard(tuple(secrets), "\x00".join(strings_in(case.raw)))
        self.sent = 0
        self.size = 0

    def _execute(self, input: Any, number: int, limit: Optional[int] = None) -> Optional[StepResult]:
        """Run one input; record leaks, its bound and misbehaviour. None when the case cannot go on."""
        self.sent += sum(len(text) for text in strings_in(input))
        result = self.target.execute(input)
        self.findings.extend(self.guard.check(result.output, number, result.raised))
        bound = limit if limit is not None else OUTPUT_BOUND_BASE + OUTPUT_BOUND_FACTOR * (self.size + self.sent)
        self.findings.extend(output_bound(result, bound, number))
        self.findings.extend(misbehaviour(result, number))
        return None if result.crashed or result.timed_out else result

    def setup(self) -> bool:
        """`setup.files`: written into the root directly when the target stores there, else created."""
        files: Dict[str, str] = self.case.setup.get("files", {})
        if self.target.storage == "filesystem":
            write_files(self.directory, files)
            return True
        for path, text in files.items():
            result = self._execute({"command": "create", "path": f"/memories/{path}", "file_text": text}, 0)
            if result is None:
                return False
            if result.is_error:
                message = f"creating /memories/{path} failed"
                self.findings.append(Finding("setup", message, actual=result.output, cls=self.case.tier))
                return False
        return True

    def steps(self) -> None:
        for number, step in enumerate(self.case.steps, 1):
            result = self._execute(step["input"], number, step.get("max_output_chars"))
            if result is None:
                return
            self.findings.extend(check_step(step, result, number, self.case.tier))

    def final(self) -> None:
        final = self.case.raw.get("final")
        if not final:
            return
        if self.target.storage == "filesystem":
            self.findings.extend(check_final_tree(final, memory_tree(self.directory), self.case.tier))
            return

        def view(path: str) -> StepResult:
            result = self._execute({"command": "view", "path": path}, 0)
            return result or StepResult("", True)

        self.findings.extend(check_final_views(final, view, self.case.tier))

    def data_loss(self, before: Dict[str, Any], shared: Dict[str, Any]) -> None:
        names = touched((step["input"] for step in self.case.steps), before, shared)
        for path, was, now in lost(before, memory_tree(self.directory), names):
            message = (
                f"{path}: no command of the case acts on it, but it was {describe(was)[:120]}, "
                f"now {describe(now)[:120]}"
            )
            self.findings.append(Finding("data_loss", message))

    def run(self) -> List[Finding]:
        outside = outside_snapshot(self.directory)
        base_before = set(os.listdir(self.base))
        host = HostWatch(named_paths((step["input"] for step in self.case.steps), str(self.directory.path)))
        try:
            self._run(outside, base_before)
        finally:
            # last, and always: what the case did to host paths it names is reported and undone
            for path, change in host.settle():
                self.findings.append(Finding("outside", f"host path {path}: {change} (put back)"))
        return self.findings

    def _run(self, outside: Dict[str, Any], base_before: Set[str]) -> None:
        # inside the watch: a reset must not write outside either
        self.target.reset(self.directory.root, self.case.options or None)
        if self.setup():
            on_disk = self.target.storage == "filesystem"
            before = memory_tree(self.directory) if on_disk else {}
            shared = shared_inodes(str(self.directory.root), before) if on_disk else {}
            self.size = tree_bytes(self.directory)
            self.steps()
            if not any(f.kind in ("crashed", "timed_out") for f in self.findings):
                self.final()
            if on_disk:
                self.data_loss(before, shared)
        self.findings.extend(check_outside(outside, outside_snapshot(self.directory)))
        new = sorted(set(os.listdir(self.base)) - base_before)
        self.findings.extend(Finding("outside", f"{name}: appeared next to the case directory") for name in new)


def skip_reason(case: Case, target: Target) -> str:
    if case.requires == "fixtures" and target.storage != "filesystem":
        return "needs on-disk fixtures; the target keeps its own storage"
    missing = target.unsupported(case.options)
    if missing is not None:
        return f"option {missing} not supported"
    return ""


def verdict(findings: List[Finding], profile: str) -> str:
    """FAIL when a finding is of a class the profile counts (safety, signalling and robustness always)."""
    classes = counted(profile)
    return FAIL if any(finding.cls in classes for finding in findings) else PASS


def run_case(
    target: Target,
    case: Case,
    base: pathlib.Path,
    index: int,
    canary: str,
    keep: bool = False,
    profile: str = DEFAULT_PROFILE,
) -> CaseResult:
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
    return CaseResult(case, verdict(findings, profile), findings, seconds=time.monotonic() - started)


Progress = Callable[[CaseResult], None]
StressRunner = Callable[[Callable[[pathlib.Path], Target], pathlib.Path], List[Dict[str, Any]]]


def run_suite(
    spec: str,
    cases: List[Case],
    *,
    timeout: float = DEFAULT_STEP_TIMEOUT,
    keep: bool = False,
    progress: Optional[Progress] = None,
    workdir: Optional[pathlib.Path] = None,
    profile: str = DEFAULT_PROFILE,
    error_prefix: Optional[str] = None,
    stress: Optional[StressRunner] = None,
) -> RunResult:
    """Run `cases` (then `stress`, when given) against the target `spec`; raises TargetError when the
    target cannot be used at all."""
    started = time.monotonic()
    base = pathlib.Path(tempfile.mkdtemp(prefix="refmem-conformance-", dir=workdir))
    canary = "canary-" + secrets.token_hex(8)
    start_dir = make_case_dir(base / "00000-start", canary)
    results: List[CaseResult] = []
    stress_findings: Optional[List[Dict[str, Any]]] = None
    try:
        target = open_target(spec, start_dir.root, timeout, error_prefix=error_prefix)
        try:
            remove(start_dir.path)
            for index, case in enumerate(cases, 1):
                result = run_case(target, case, base, index, canary, keep, profile)
                results.append(result)
                if progress is not None:
                    progress(result)
        finally:
            target.close()
        if stress is not None:
            stress_dir = base / "stress"
            stress_dir.mkdir()

            def open_fresh(root: pathlib.Path) -> Target:
                return open_target(spec, root, timeout, error_prefix=error_prefix)

            stress_findings = stress(open_fresh, stress_dir)
    finally:
        if not keep:
            remove(base)
    rules = getattr(target, "rules", None)
    return RunResult(
        spec,
        dict(target.implementation),
        target.storage,
        results,
        max(target.restarts, 0),
        time.monotonic() - started,
        profile=profile,
        signalling=rules.describe() if rules is not None else "is_error as the adapter replies",
        stress=stress_findings,
    )
