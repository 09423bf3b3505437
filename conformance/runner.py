"""Running cases against a target: the layout, setup, steps, final state and the universal checks of each case.

The runner compares; the target only executes. Every finding has a class (conformance/tiers.py); a case
fails when it has a finding of a class its profile counts.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import pathlib
import secrets
import tempfile
import time
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Set, Tuple, Type

from refmem_harness.hosttree import FILE, Tree, wanted_like
from refmem_harness.layout import (
    CaseDir,
    FixtureUnavailable,
    PlainFixtures,
    apply_fixtures,
    canary_files,
    make_case_dir,
    memory_read,
    outside_read,
    plain_fixtures,
    remove,
    write_files,
)
from refmem_harness.signalling import ErrorPrefix
from refmem_harness.target_base import clipped
from refmem_harness.targets import DEFAULT_STEP_TIMEOUT, TOOL_MEMORY, StepResult, Target, TargetError, open_target

from .cases import Case
from .checks import (
    REACHED,
    Finding,
    LeakGuard,
    check_final_tree,
    check_final_views,
    check_outside,
    check_step,
    describe,
    final_wanted,
    misbehaviour,
    opening,
    output_bound,
    outside_shown,
    planted_layout,
    reached_through_link,
    reads_as_error,
    strings_in,
)
from .dataloss import lost, shared_inodes, touched, why_lost
from .effects import CRASH as CRASH_EFFECT
from .effects import FILE_LOST, OUTSIDE_CHANGED, UNTOUCHED_BYTES_CHANGED, class_of
from .hostwatch import HostWatch, named_paths
from .results import CUT_SHORT, SKIP, CaseResult, Classify, RunResult, as_found, case_state, status_of
from .tiers import DEFAULT_PROFILE
from .untouched import edited_file, untouched_changed

FOLDER_FILE = "folder-fixture.md"
"""The file created, then deleted, to make a fixture's empty folder in a target's own storage."""

OUTPUT_BOUND_BASE = 65_536
OUTPUT_BOUND_FACTOR = 16
"""An output may be at most BASE + FACTOR x (bytes in the case directory + characters sent so far)
characters, unless the step states its own `max_output_chars`: a view of N bytes numbered and paginated
stays far below it; an output past it is unbounded (a safety finding)."""


class CaseRun:
    """One case in its own directory: setup, steps, final state, and the universal checks.

    A plug-in for other tools (conformance/openclaw/runner.py) subclasses it: its own layout (`lay_out`),
    inputs and steps, over the same universal checks (`_execute`, the outside, data loss, host paths).
    """

    planted_is_host_layout = True
    """Whether findings that only a planted hard link or FIFO explains are host-layout: the memory tool cannot
    make either. A plug-in whose files an agent makes with other tools says False: there they stay safety."""

    def __init__(self, target: Target, case: Case, directory: CaseDir, canary: str, base: pathlib.Path) -> None:
        self.target = target
        self.case = case
        self.directory = directory
        self.base = base
        self.findings: List[Finding] = []
        secrets: List[Tuple[str, str, str]] = [
            (f"the text of {item.path}", item.line, item.path) for item in canary_files(canary)
        ]
        secrets.append(("a name or text from the canary tree (outside the root)", canary, REACHED))
        secrets += [("the host path", path, "") for path in sorted({str(base), os.path.realpath(base)})]
        self.guard = LeakGuard(tuple(secrets), "\x00".join(strings_in(case.raw)))
        self.sent = 0
        self.size = 0
        self.memory_before: Tree = {}
        self.outside_before: Tree = {}
        self.success_openings: List[str] = []

    loads_fixtures_by_commands = True
    """Whether a target that keeps its own storage is given the case's plain fixtures (files of UTF-8 text,
    folders) through `create`; a plug-in whose cases lay everything out on disk says False."""

    @classmethod
    def own_fixtures(cls, case: Case) -> Optional[PlainFixtures]:
        """The fixtures an own-storage target is given through its commands; None when the case needs a real
        directory (or the plug-in lays its cases out on disk)."""
        if not cls.loads_fixtures_by_commands:
            return None
        return plain_fixtures(case.setup.get("fixtures", []), case.setup.get("files", {}))

    def lay_out(self) -> None:
        """What the case plants in its directory before the target is reset: `setup.fixtures` (for a target that
        keeps its own storage, created through its commands in `setup` instead)."""
        if self.target.storage == "filesystem":
            apply_fixtures(self.directory, self.case.setup.get("fixtures", []))

    def inputs(self) -> List[Any]:
        """The tool inputs the case sends (host paths they name are watched; data loss reads what they touch)."""
        return [step["input"] for step in self.case.steps]

    def _execute(
        self, input: Any, number: int, limit: Optional[int] = None, tool: str = TOOL_MEMORY
    ) -> Optional[StepResult]:
        """Run one input; record leaks (in the output and a tool's result object), its bound and misbehaviour.
        None when the case cannot go on."""
        self.sent += sum(len(text) for text in strings_in(input))
        result = self.target.execute(input, tool)
        shown = result.output if result.result is None else json.dumps(result.result, ensure_ascii=False)
        said = result.output if result.result is None else f"{result.output}\n{shown}"
        self.findings.extend(self.guard.check(said, number, result.raised, reached_through_link(input, self.case)))
        self.findings.extend(outside_shown(result.output, number, self.memory_before, self.outside_before))
        bound = limit if limit is not None else OUTPUT_BOUND_BASE + OUTPUT_BOUND_FACTOR * (self.size + self.sent)
        self.findings.extend(output_bound(result, bound, number))
        self.findings.extend(misbehaviour(result, number))
        return None if result.crashed or result.timed_out else result

    def setup(self) -> bool:
        """`setup.files`: written into the root directly when the target stores there. A target with its own
        storage is given them, and the case's plain fixtures before them, through `create`: by a handler without
        the case's options when its storage outlives a reset on the same root (`shared`; D-STORE-OWN-SETUP), so that a
        read-only or allow-listed case starts from the same files as on disk; else by the case's own handler."""
        files: Dict[str, str] = self.case.setup.get("files", {})
        if self.target.storage == "filesystem":
            write_files(self.directory, files)
            return True
        fixtures = self.own_fixtures(self.case) if self.case.setup.get("fixtures") else PlainFixtures({}, [])
        assert fixtures is not None  # skip_reason skipped the case otherwise
        with self._unconfigured():
            self._load_fixtures(fixtures)
            for path, text in files.items():
                result = self._create(path, text)
                if result is None:
                    return False
                if result.is_error:
                    message = f"creating /memories/{path} failed"
                    self.findings.append(Finding("setup", message, actual=result.output, cls=self.case.tier))
                    return False
        return True

    def _reopens(self) -> bool:
        """Whether a handler without the case's options can be built over the case's storage: an own-storage
        target whose handlers on one root share what they store (a reset then opens it as it is), in a case
        that sets options at all."""
        return bool(self.case.options) and bool(getattr(self.target, "shared", False))

    @contextlib.contextmanager
    def _unconfigured(self) -> Iterator[None]:
        """The target reset on the case's root without the case's options for the block, then with them again
        (only where `_reopens`; else the case's own handler throughout)."""
        if not self._reopens():
            yield
            return
        self.target.reset(self.directory.root, None)
        yield
        self.target.reset(self.directory.root, self.case.options)

    def _create(self, path: str, text: str) -> Optional[StepResult]:
        return self._execute({"command": "create", "path": f"/memories/{path}", "file_text": text}, 0)

    def _load_fixtures(self, fixtures: PlainFixtures) -> None:
        """The plain fixtures through `create` (an empty folder: a file created in it, then deleted); one the
        target refuses skips the case, as a fixture the platform cannot make does on disk."""
        made = [(path, text, False) for path, text in fixtures.files.items()]
        made += [(f"{folder}/{FOLDER_FILE}", "", True) for folder in fixtures.folders]
        for path, text, transient in made:
            result = self._create(path, text)
            if result is not None and not result.is_error and transient:
                result = self._execute({"command": "delete", "path": f"/memories/{path}"}, 0)
            if result is None or result.is_error:
                said = clipped(result.output if result is not None else "no result", 120)
                raise FixtureUnavailable(f"the fixture {path} cannot be made through the target's commands: {said}")

    def _file_bytes(self, relative: Optional[str]) -> Optional[bytes]:
        """The bytes of one plain file of the root (one link, read whole: hosttree bounds it), or None."""
        if relative is None or self.target.storage != "filesystem":
            return None
        node = memory_read(self.directory, lambda path, size: path == relative).tree.get(relative)
        if node is None or node.kind != FILE or node.nlink != 1:
            return None
        return node.data

    def steps(self) -> None:
        for number, step in enumerate(self.case.steps, 1):
            edited = edited_file(step["input"])
            before = self._file_bytes(edited)
            result = self._execute(step["input"], number, step.get("max_output_chars"))
            if result is None:
                return
            after = self._file_bytes(edited) if before is not None and not result.is_error else None
            said = untouched_changed(step["input"], before, after) if before is not None and after is not None else None
            if said is not None:
                self.findings.append(Finding("untouched", f"/memories/{edited}: {said}", number,
                                             cls=class_of(UNTOUCHED_BYTES_CHANGED)))
            found = check_step(step, result, number, self.case.tier)
            self.findings.extend(found)
            succeeded = step.get("is_error") is False and not result.is_error
            if succeeded and not reads_as_error(result.output, step["input"]):
                self.success_openings.append(opening(result.output))  # a success that reads as one

    def final(self, after: Tree) -> None:
        final = self.case.raw.get("final")
        if not final:
            return
        if self.target.storage == "filesystem":
            self.findings.extend(check_final_tree(final, after, self.case.tier))
            return

        def view(path: str) -> StepResult:
            result = self._execute({"command": "view", "path": path}, 0)
            return result or StepResult("", True)

        if self._reopens():  # read back whole: the case's limits cut views and listings (D-STORE-OWN-FINAL)
            self.target.reset(self.directory.root, None)
        self.findings.extend(check_final_views(final, view, self.case.tier))

    def data_loss(self, before: Tree, after: Tree) -> None:
        inputs = self.inputs()
        names = touched(inputs, before, shared_inodes(before))
        for path, was, now in lost(before, after, names):
            message = (
                f"{path}: {why_lost(path, inputs, before)}, but it was {describe(was)[:120]}, "
                f"now {describe(now)[:120]}"
            )
            self.findings.append(Finding("data_loss", message, cls=class_of(FILE_LOST)))

    def run(self) -> List[Finding]:
        outside = outside_read(self.directory)
        self.outside_before = outside.tree
        base_before = set(os.listdir(self.base))
        host = HostWatch(named_paths(self.inputs(), str(self.directory.path)))
        try:
            self._run(base_before)
        finally:
            # last, and always: what the case did to host paths it names is reported and undone
            for path, change in host.settle():
                self.findings.append(Finding("outside", f"host path {path}: {change} (put back)",
                                             cls=class_of(OUTSIDE_CHANGED)))
        if self.planted_is_host_layout:
            self.findings = planted_layout(self.findings, self.case.setup.get("fixtures", []))
        return self.findings

    def _run(self, base_before: Set[str]) -> None:
        # inside the watch: a reset must not write outside either
        self.target.reset(self.directory.root, self.case.options or None)
        started = self.target.restarts  # a restart before this point is the previous case's
        try:
            self._case(base_before)
        finally:
            if self.target.restarts > started and not any(f.kind in CUT_SHORT for f in self.findings):
                self.findings.append(
                    Finding("restarted", "the target stopped between calls and was started again during the case",
                            cls=class_of(CRASH_EFFECT))
                )

    def _case(self, base_before: Set[str]) -> None:
        if self.setup():
            on_disk = self.target.storage == "filesystem"
            read = memory_read(self.directory) if on_disk else None
            self.memory_before = read.tree if read is not None else {}
            self.size = (read.total_bytes if read is not None else 0) + sum(
                node.size for node in self.outside_before.values()
            )
            self.steps()
            after = self._after(on_disk)
            if not any(f.kind in CUT_SHORT for f in self.findings):
                self.final(after)
            if on_disk:
                self.data_loss(self.memory_before, after)
        outside_after = outside_read(self.directory, wanted_like(self.outside_before))
        if outside_after.truncated:
            self.findings.append(Finding("unbounded", "more entries appeared around the root than can be read"))
        if outside_after.unread:
            self.findings.append(Finding("unbounded", "around the root " + outside_after.budget_note()))
        self.findings.extend(check_outside(self.outside_before, outside_after.tree))
        new = sorted(set(os.listdir(self.base)) - base_before)
        self.findings.extend(
            Finding("outside", f"{name}: appeared next to the case directory", cls=class_of(OUTSIDE_CHANGED))
            for name in new
        )

    def _after(self, on_disk: bool) -> Tree:
        """The root's tree after the steps, its bytes read only where a check needs them: a file that was there
        with the same size (data loss), or a file `final` names with a text of that size."""
        if not on_disk:
            return {}
        before_wanted = wanted_like(self.memory_before)
        final_wanted_files = final_wanted(self.case.raw.get("final") or {})
        read = memory_read(
            self.directory, lambda path, size: before_wanted(path, size) or final_wanted_files(path, size)
        )
        if read.truncated:
            self.findings.append(Finding("unbounded", "the root holds more entries than can be read after the case"))
        if read.unread:
            self.findings.append(Finding("unbounded", "after the case " + read.budget_note()))
        return read.tree


def skip_reason(case: Case, target: Target, run_class: Type[CaseRun] = CaseRun) -> str:
    if case.requires == "fixtures" and target.storage != "filesystem" and run_class.own_fixtures(case) is None:
        return "needs on-disk fixtures; the target keeps its own storage"
    for number, step in enumerate(case.steps, 1):
        uncarried = target.uncarried(step["input"]) if "input" in step else None
        if uncarried is not None:
            return f"step {number}'s input cannot be sent to this target: {uncarried}"
    missing = target.unsupported(case.options)
    if missing is not None:
        return f"option {missing} not supported"
    return ""


def verdict(findings: List[Finding], profile: str, case: Case) -> str:
    """PASS or FAIL: the case's state (results.case_state) as a status."""
    return status_of(case_state(findings, profile, case))


Progress = Callable[[CaseResult], None]
StressRunner = Callable[[Callable[[pathlib.Path], Target], pathlib.Path], List[Dict[str, Any]]]
DeploymentRunner = Callable[[str, pathlib.Path], Dict[str, Any]]
"""The deployment tier as the runner calls it: (the target's spec, a work folder) -> its report as a dict. It
opens the target's sessions itself, from the spec: any target the runner can open."""
Skipped = Callable[[Case], Optional[str]]
"""A case the expectations file skips: the reason clipped, or None to run it."""


@dataclasses.dataclass(frozen=True)
class SuiteOptions:
    """Every choice of a run but the target and the cases, in one object: a caller names only what it changes
    (`SuiteOptions(profile="hardening", workdir=path)`), and a new choice is one field here with its default."""

    timeout: float = DEFAULT_STEP_TIMEOUT
    """Seconds one step may take before the target is judged hung."""
    keep: bool = False
    """Keep the work folder (each case's root and the canary tree) for a look afterwards."""
    progress: Optional[Progress] = None
    """Called with each result as soon as it is classified."""
    workdir: Optional[pathlib.Path] = None
    """Where the work folder is made (the system's temporary folder by default)."""
    profile: str = DEFAULT_PROFILE
    """What gates (tiers.py)."""
    error_prefix: ErrorPrefix = None
    """The target's error signal when it is a text prefix rather than is_error."""
    stress: Optional[StressRunner] = None
    """The stress tier, run after the cases when given."""
    deployment: Optional[DeploymentRunner] = None
    """The deployment tier, run after the cases (and stress) when given."""
    classify: Classify = as_found
    """Sets each result's outcome (the expectations file's reading of it)."""
    skipped: Optional[Skipped] = None
    """A case the caller skips, with its reason."""
    tools: Sequence[str] = (TOOL_MEMORY,)
    """The tools the target must run (a plug-in's cases name theirs)."""
    run_class: Type[CaseRun] = CaseRun
    """What runs each case (a plug-in's CaseRun for its own cases)."""


def run_case(
    target: Target,
    case: Case,
    base: pathlib.Path,
    index: int,
    canary: str,
    options: Optional[SuiteOptions] = None,
) -> CaseResult:
    """One case, its outcome set (by `options.classify`, from the expectations) before it is returned;
    `options.run_class` runs it (a plug-in's CaseRun for its own cases)."""
    options = options or SuiteOptions()
    keep, profile, classify, run_class = options.keep, options.profile, options.classify, options.run_class
    started = time.monotonic()
    reason = skip_reason(case, target, run_class)
    if reason:
        return _classified(CaseResult(case, SKIP, reason=reason), classify)
    directory = make_case_dir(base / f"{index:05d}-{case.id}"[:120], canary)
    run = run_class(target, case, directory, canary, base)
    try:
        run.lay_out()
        findings = run.run()
    except FixtureUnavailable as exc:
        return _classified(CaseResult(case, SKIP, reason=str(exc)), classify)
    except TargetError as exc:  # the target could not be reset or restarted for the case: it is not judged
        said = f"the target could not be reset or started again, so the case did not run to its end: {exc}"
        findings = run.findings + [Finding("error", clipped(said, 400), cls=class_of(CRASH_EFFECT))]
    finally:
        if not keep:
            remove(directory.path)
    result = CaseResult.judged(
        case, findings, profile, seconds=time.monotonic() - started, success_openings=run.success_openings
    )
    return _classified(result, classify)


def _classified(result: CaseResult, classify: Classify) -> CaseResult:
    classify(result)
    return result




def run_suite(spec: str, cases: List[Case], options: Optional[SuiteOptions] = None) -> RunResult:
    """Run `cases` (then `options.stress` and `options.deployment`, when given) against the target `spec`; raises
    TargetError when the target cannot be used at all. A plug-in's cases name the `tools` the target must run and
    the `run_class` that runs each case (SuiteOptions: every choice of a run, in one object).

    Each result's outcome is set once, when it is made (`classify`), and handed to `progress` at once, so a
    caller can show failures as they happen. An interrupt (KeyboardInterrupt: Ctrl-C, or SIGTERM turned into
    one by the command line) ends the run early: the cases run so far are returned with `interrupted` set, and
    the work folder is removed on that path as on every other.
    """
    options = options or SuiteOptions()
    timeout, error_prefix, progress, skipped = options.timeout, options.error_prefix, options.progress, options.skipped
    stress, deployment, profile = options.stress, options.deployment, options.profile
    started = time.monotonic()
    base = pathlib.Path(tempfile.mkdtemp(prefix="refmem-conformance-", dir=options.workdir))
    canary = "canary-" + secrets.token_hex(8)
    results: List[CaseResult] = []
    stress_findings: Optional[List[Dict[str, Any]]] = None
    deployment_report: Optional[Dict[str, Any]] = None
    interrupted = False
    target: Optional[Target] = None
    try:
        start_dir = make_case_dir(base / "00000-start", canary)
        target = open_target(spec, start_dir.root, timeout, error_prefix=error_prefix, tools=options.tools)
        try:
            remove(start_dir.path)
            for index, case in enumerate(cases, 1):
                why = skipped(case) if skipped is not None else None
                if why is not None:
                    result = _classified(CaseResult(case, SKIP, reason=why), options.classify)
                else:
                    result = run_case(target, case, base, index, canary, options)
                results.append(result)
                if progress is not None:
                    progress(result)
        except KeyboardInterrupt:
            interrupted = True
        finally:
            target.close()
        if stress is not None and not interrupted:
            stress_dir = base / "stress"
            stress_dir.mkdir()

            def open_fresh(root: pathlib.Path) -> Target:
                return open_target(spec, root, timeout, error_prefix=error_prefix)

            try:
                stress_findings = stress(open_fresh, stress_dir)
            except KeyboardInterrupt:
                interrupted = True
        if deployment is not None and not interrupted:
            deployment_dir = base / "deployment"
            deployment_dir.mkdir()
            try:
                deployment_report = deployment(spec, deployment_dir)
            except KeyboardInterrupt:
                interrupted = True
    finally:
        if not options.keep:
            remove(base)
    assert target is not None
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
        deployment=deployment_report,
        interrupted=interrupted,
    )
