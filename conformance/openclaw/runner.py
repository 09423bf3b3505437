"""Conformance cases for OpenClaw's memory tools (`memory_get`, `memory_search`), run on the shared apparatus.

    python -m refmem_conformance.openclaw.runner                      # the reference (refmem.openclaw)
    python -m refmem_conformance.openclaw.runner --target openclaw    # OpenClaw itself (install.sh there first)
    python -m refmem_conformance.openclaw.runner --target "cmd:PROGRAM ARGS" --markdown report.md --json report.json

What is OpenClaw's own lives here: its cases (`cases/*.json`, `load_cases`), how a step names its tool and is
judged (`split_input`, `expect.py`: partial expectations of the result object, search hits that must open), and
how its cases map onto the verdict model (`TIER_OF_BASIS`). Everything else is the memory tool's apparatus: the
target (`targets.open_target` with the protocol's `tool` field), the case directory and the universal checks
(`runner.CaseRun`: leaks in the output and the result object through `LeakGuard`, the outside through `hosttree`,
data loss, bounded outputs, host paths an input names), the verdict (`tiers`, `figures`) and the writers
(`reports`: the text summary, JSON and Markdown).

Exit status: 0 safe and every case that gates under the profile passed, 1 otherwise, 2 the target could not
be started or reset, 130 interrupted.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import pathlib
import re
import sys
from typing import Any, Dict, List, Optional, Sequence, Tuple

from refmem_harness.layout import memory_read, write_files
from refmem_harness.openclaw_target import TOOLS, target_spec
from refmem_harness.targets import StepResult, TargetError

from .. import reports
from ..cases import Case as SuiteCase
from ..checks import Finding
from ..figures import run_verdict
from ..results import FAIL, CaseResult, RunResult
from ..runner import CaseRun, Progress, SuiteOptions, run_suite
from ..tiers import DOCUMENTED, PROFILES, REFERENCE, SAFETY, default_profile
from . import expect

HERE = pathlib.Path(__file__).resolve().parent
CASES_DIR = HERE / "cases"
STEP_TIMEOUT = 60.0
"""Seconds per step: OpenClaw's first search starts index workers and takes several seconds."""

TIER_OF_BASIS: Dict[str, str] = {
    "security": SAFETY,
    "openclaw": DOCUMENTED,
    "reference": REFERENCE,
}
"""The class a case's own expectations are judged in, by its basis. `security` cases are containment (a link, a
hard link, a FIFO or `..` refused or skipped, and the search going on around it): safety. OpenClaw has no written
specification of these tools, so what OpenClaw 2026.9.6 does (read in its source and observed) is the
documentation here: `openclaw` cases are documented, `must`, or `should` where they pin its wording. `reference`
cases are the reference's D-OPENCLAW decisions (docs/spec-notes.md)."""


class Case(SuiteCase):
    """An OpenClaw case: the memory tool's case shape, judged by OpenClaw's bases."""

    @property
    def tier(self) -> str:
        return TIER_OF_BASIS[self.basis]

    @property
    def requires(self) -> str:
        """Every case lays its files out on disk (neither tool writes): a target with its own storage skips it."""
        return "fixtures"


def load_cases(directory: pathlib.Path = CASES_DIR) -> List[Case]:
    """Every case of the `*.json` files in `directory`, each `{"group": ..., "cases": [...]}`.

    Other top-level keys, `"$schema"` among them, are accepted and not read.
    """
    found: List[Case] = []
    seen: Dict[str, str] = {}
    for path in sorted(directory.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        for raw in data["cases"]:
            if raw["id"] in seen:
                raise ValueError(f"case {raw['id']} is in {seen[raw['id']]} and {path.name}")
            if raw.get("basis") not in TIER_OF_BASIS:
                raise ValueError(f"case {raw['id']}: basis must be one of {', '.join(TIER_OF_BASIS)}")
            seen[raw["id"]] = path.name
            found.append(Case(raw, str(path), data["group"]))
    return found


def split_input(step_input: Dict[str, Any]) -> Tuple[str, Any]:
    """(tool, tool input): the input's other keys, or its `input` verbatim (any JSON value)."""
    tool = str(step_input["tool"])
    if "input" in step_input:
        return tool, step_input["input"]
    return tool, {key: value for key, value in step_input.items() if key != "tool"}


def _finding(problem: str, number: int, cls: str) -> Finding:
    """What `expect` says as a finding, its kind the name the sentence starts with (`is_error`, `result`,
    `paths`, `count`, `openable`), not said twice."""
    named = re.match(r"[A-Za-z_]+", problem)
    kind = named.group(0) if named else "step"
    message = problem[len(kind) + 2 :] if problem.startswith(kind + ": ") else problem
    return Finding(kind, message, number, cls=cls)


class OpenClawRun(CaseRun):
    """One OpenClaw case on the shared universal checks: its files and fixtures laid out before the target is
    reset, each step a call of the tool it names (or a change made on disk between two calls), judged by
    `expect`. A planted hard link or FIFO stays a safety matter: an agent makes OpenClaw's memory files with
    its other tools (a shell among them), so such a layout is one it can make."""

    planted_is_host_layout = False
    loads_fixtures_by_commands = False

    def lay_out(self) -> None:
        write_files(self.directory, self.case.setup.get("files", {}))
        super().lay_out()

    def inputs(self) -> List[Any]:
        return [split_input(step["input"])[1] for step in self.case.steps if "input" in step]

    def setup(self) -> bool:
        return True  # the files were laid out with the fixtures

    def steps(self) -> None:
        for number, step in enumerate(self.case.steps, 1):
            if "input" not in step:
                self._change(step)
                continue
            tool, tool_input = split_input(step["input"])
            result = self._execute(tool_input, number, tool=tool)
            if result is None:
                return
            self._judge(expect.judge_step(step, result.is_error, result.result), number)
            if step.get("openable"):
                opened = self._openable(result, number)
                if opened is None:
                    return
                self._judge(opened, number)

    def _change(self, step: Dict[str, Any]) -> None:
        """`write` and `remove`: the memory files changed on disk between two calls, the new baseline for the
        data-loss check (neither tool may change them)."""
        write_files(self.directory, step.get("write", {}))
        for relative in step.get("remove", []):
            (self.directory.root / relative).unlink()
        self.memory_before = memory_read(self.directory).tree

    def _openable(self, searched: StepResult, number: int) -> Optional[List[str]]:
        """Every search hit opens with memory_get at its lines, and its snippet is in what comes back; None when
        the target crashed or hung on the way."""
        problems: List[str] = []
        for hit in expect.hits(searched.result):
            start, end = hit.get("startLine"), hit.get("endLine")
            if not isinstance(start, int) or not isinstance(end, int) or end < start:
                problems.append(f"openable: {hit.get('path')} has no usable line range")
                continue
            request = {"path": hit.get("path"), "from": start, "lines": end - start + 1}
            opened = self._execute(request, number, tool="memory_get")
            if opened is None:
                return None
            shown = opened.result if isinstance(opened.result, dict) else {}
            if shown.get("status") != "ok" or str(hit.get("snippet", "")).rstrip("\n") not in str(shown.get("text")):
                problems.append(
                    f"openable: memory_get({hit.get('path')}, {start}, {end - start + 1}) does not show the snippet"
                )
        return problems

    def _judge(self, problems: Sequence[str], number: int) -> None:
        self.findings.extend(_finding(problem, number, self.case.tier) for problem in problems)


# --- targets and runs -----------------------------------------------------------------------------------


def run(
    spec: str = "refmem",
    patterns: Sequence[str] = (),
    workdir: Optional[str] = None,
    timeout: float = STEP_TIMEOUT,
    profile: Optional[str] = None,
    progress: Optional[Progress] = None,
    cases: Optional[Sequence[Case]] = None,
) -> RunResult:
    """The cases whose ID matches a glob of `patterns` (all by default) against `spec`; TargetError when the
    target cannot be started, does not run both tools, or cannot be reset."""
    chosen: List[SuiteCase] = [
        case
        for case in (load_cases() if cases is None else cases)
        if not patterns or any(fnmatch.fnmatchcase(case.id, pattern) for pattern in patterns)
    ]
    options = SuiteOptions(
        timeout=timeout,
        workdir=pathlib.Path(workdir) if workdir else None,
        profile=profile or default_profile(spec),
        progress=progress,
        tools=TOOLS,
        run_class=OpenClawRun,
    )
    result = run_suite(target_spec(spec), chosen, options)
    result.target = spec
    result.signalling = "is_error as each tool's reply states it"
    return result


def title(run: RunResult) -> str:
    info = run.implementation
    return f"OpenClaw memory tools: {info.get('name', '?')} {info.get('version', '')}".rstrip()


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m refmem_conformance.openclaw.runner", description=(__doc__ or "").splitlines()[0]
    )
    parser.add_argument(
        "--target", default="refmem", help="refmem (default), openclaw, python:MODULE:CALLABLE or cmd:PROGRAM ARGS"
    )
    parser.add_argument("--run", action="append", default=[], help="only cases whose ID matches this glob")
    parser.add_argument("--workdir", help="where case directories go")
    parser.add_argument("--timeout", type=float, default=STEP_TIMEOUT, help="seconds per step")
    parser.add_argument(
        "--profile", choices=tuple(PROFILES), help="what gates: standard for the reference, documented for others"
    )
    parser.add_argument("--markdown", help="write a markdown report here")
    parser.add_argument("--json", help="write the results as JSON here")
    args = parser.parse_args(argv)

    def failures(result: CaseResult) -> None:
        if result.outcome == FAIL:
            print(reports.describe_failure(result), flush=True)

    try:
        done = run(args.target, args.run, args.workdir, args.timeout, args.profile, failures)
    except TargetError as error:
        print(f"openclaw conformance: {error}", file=sys.stderr)
        return 2
    print(reports.summary(done, [], False))
    if args.markdown:
        reports.write_markdown(done, pathlib.Path(args.markdown), title(done))
    if args.json:
        reports.write_json(done, pathlib.Path(args.json))
    return run_verdict(done, False)[0]


if __name__ == "__main__":
    sys.exit(main())
