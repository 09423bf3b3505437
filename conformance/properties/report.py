"""A property failure as a finding file, and as text: the class, the shrunk sequence, the commands that replay it.

The reproduction is a finding file (refmem_harness/finding.py, `conformance/schema/fuzz-finding.schema.json`),
so that what exists reads it: `refmem-conformance --replay FILE --target SPEC` replays it with every property
check of a profile (replay.py), `refmem-fuzz to-case FILE` turns it into a case file (the reference's outcome
for each step and its final tree pinned; the runner's own checks catch a leak, an escape or data loss whatever
the steps say), and `refmem-fuzz replay FILE --target SPEC` runs the fuzzer's oracles on it. The file's
`oracle` is the fuzzer's name for the finding's kind (data loss and documented findings have none of their
own: `diverge`); its `detail` names the property class and the check. Like every finding file it holds no host
path and no canary (`<WORK>`, `<CANARY>`), and the target it names is shown, never started, by a replay.
"""

from __future__ import annotations

import json
import pathlib
import re
import shlex
import tempfile
from typing import Any, Dict, List, Optional, Sequence, Tuple

from refmem_harness import finding as finding_files
from refmem_harness import model
from refmem_harness.targets import StepResult
from refmem_harness.visible import clip, log_safe, printable, redact, redact_secrets

from ..checks import Finding
from ..reports import finding_lines
from ..tiers import ROBUSTNESS, SAFETY
from .outcome import Failure, SearchResult

ENGINE = "hypothesis"
ROOT_NAME = "memory-properties"
COMMAND_CHARS = 400
OUTPUT_CHARS = 200
DETAIL_CHARS = 500
_EXCEPTION = re.compile(r"([A-Za-z_][\w.]*)\(")


def _label(command: Any) -> str:
    """A command's name as the fuzzer's oracles name it: the name when it is an identifier, else `input`."""
    name = command.get("command") if isinstance(command, dict) else None
    return name if isinstance(name, str) and name.isidentifier() and len(name) <= 64 else "input"


def oracle(finding: Finding, command: Any, result: Optional[StepResult]) -> str:
    """The fuzzer's oracle name (refmem_harness/finding.py ORACLE_PATTERN) for a property finding."""
    label = _label(command)
    if finding.kind == "leak":
        if finding.cls == ROBUSTNESS or "traceback" in finding.message:
            return f"leak:traceback:{label}"
        return f"leak:host-path:{label}" if "host path" in finding.message else f"leak:canary:{label}"
    if finding.kind == "raised":
        found = _EXCEPTION.match(result.output if result is not None else "")
        return f"exception:{found.group(1).rsplit('.', 1)[-1][:100] if found else 'unknown'}"
    fixed = {
        "outside": "escape:outside-changed",
        "timed_out": f"hang:{label}",
        "crashed": f"crash:{label}",
        "unbounded": f"cost:output:{label}",
    }
    if finding.kind in fixed:
        return fixed[finding.kind]
    if finding.kind == "is_error" and result is not None:
        got = "error" if result.is_error else "ok"
        return f"diverge:{label}:{'ok' if result.is_error else 'error'}-vs-{got}"
    return "diverge:tree"


def _hide(text: Any, hidden: Sequence[Tuple[str, str]]) -> Any:
    if not isinstance(text, str):
        return text
    for secret, placeholder in hidden:
        text = text.replace(secret, placeholder)
    return text


def as_finding(failure: Failure, spec: str, seed: int, runs: int) -> Any:
    """The failure as the fuzzer's Finding (refmem_harness/finding.py)."""
    step = failure.finding.step
    command = failure.commands[step - 1] if 0 < step <= len(failure.commands) else None
    result = failure.results[step - 1] if 0 < step <= len(failure.results) else None
    name = oracle(failure.finding, command, result)
    observed: List[Dict[str, Any]] = []
    for entry, outcome in zip(failure.commands, failure.results):
        seen: Dict[str, Any] = {
            "input": entry,
            "output": _hide(outcome.output, failure.hidden),
            "is_error": outcome.is_error,
        }
        seen.update({flag: True for flag in ("crashed", "timed_out", "raised") if getattr(outcome, flag)})
        observed.append(seen)
    tree = None
    if failure.tree_after is not None:
        tree = {key: _hide(value, failure.hidden) for key, value in model.render_tree(failure.tree_after).items()}
    detail = _hide(f"[{failure.cls}] {failure.finding.kind}: {failure.finding.message}", failure.hidden)
    return finding_files.Finding(
        target=redact_secrets(spec),
        harness="sequence",
        oracle=name,
        detail=detail[:DETAIL_CHARS],
        step=step - 1 if step else None,
        hostile_layout=False,
        differential=name.startswith("diverge:"),
        commands=list(failure.commands),
        observed=observed,
        tree_after=tree,
        engine=ENGINE,
        seed=seed,
        runs=runs,
    )


def save(failure: Failure, spec: str, seed: int, runs: int, directory: Optional[pathlib.Path]) -> pathlib.Path:
    """Write the finding file into `directory` (made when missing; None: a new temporary folder)."""
    folder = directory if directory is not None else pathlib.Path(tempfile.mkdtemp(prefix="refmem-properties-"))
    return pathlib.Path(finding_files.save(as_finding(failure, spec, seed, runs), folder))


def replay_line(path: pathlib.Path, spec: str, profile: str) -> str:
    return f"refmem-conformance --replay {shlex.quote(str(path))} --target {shlex.quote(spec)} --profile {profile}"


def failures_text(result: SearchResult, spec: str, profile: str, seed: int, full: bool = False) -> str:
    """Every distinct failure of the class (`failure_text` each), the first first."""
    paths: List[Optional[pathlib.Path]] = list(result.finding_files)
    paths += [None] * (len(result.failures) - len(paths))
    return "\n".join(
        failure_text(result, spec, profile, seed, path, full, failure)
        for failure, path in zip(result.failures, paths)
    )


def failure_text(
    result: SearchResult, spec: str, profile: str, seed: int, path: Optional[pathlib.Path], full: bool = False,
    failure: Optional[Failure] = None,
) -> str:
    """A failure (`result.failure` unless given) for a terminal or a CI log: its class and findings, the shrunk
    sequence step by step (each command as JSON, each output's head), and the commands that replay it and turn it
    into a case."""
    failure = failure if failure is not None else result.failure
    assert failure is not None
    count = len(failure.commands)
    lines = [
        f"FAIL {ROOT_NAME}::{failure.cls} [{failure.cls}] shrunk to {count} command{'s' * (count != 1)} "
        f"({result.runs} sequences run, seed {seed}, profile {profile})"
    ]
    if failure.flaky:
        lines.append("    (flaky: the last run of this sequence did not break the class again; it broke it before)")
    lines += [redact(line) for line in finding_lines([failure.finding, *failure.others], full)]
    lines.append("  the sequence:")
    for number, (command, outcome) in enumerate(zip(failure.commands, failure.results), 1):
        shown = json.dumps(command, ensure_ascii=True)
        lines.append(f"    {number}. {shown if full else clip(shown, COMMAND_CHARS)}")
        flags = "".join(f" {flag}" for flag in ("crashed", "timed_out", "raised") if getattr(outcome, flag))
        head = printable(outcome.output if full else clip(outcome.output, OUTPUT_CHARS))
        lines.append(f"       -> is_error={str(outcome.is_error).lower()}{flags}: {redact(head)}")
    if path is not None:
        lines.append(f"  replay: {replay_line(path, spec, profile)}")
        lines.append(f"  as a case: refmem-fuzz to-case {shlex.quote(str(path))} --out CASES/{path.stem}.json, "
                     "then refmem-conformance --cases-dir CASES --target SPEC")
    return log_safe("\n".join(lines))


def verdict(results: Sequence[SearchResult], profile: str) -> Tuple[int, str]:
    """(exit status, why): every class searched gates under the profile, so any failure fails the run; a
    safety failure is named first (it fails the run whatever the profile)."""
    failed = [result.failure.cls for result in results if result.failure is not None]
    if not failed:
        return 0, f"no sequence broke {', '.join(result.cls for result in results)} (profile {profile})"
    unsafe = "not safe; " if SAFETY in failed else ""
    return 1, f"{unsafe}{', '.join(failed)} broken (profile {profile})"


def class_line(result: SearchResult) -> str:
    count = len(result.failures)
    state = f"FAIL ({count} distinct failure{'s' * (count != 1)})" if result.failure is not None else "pass"
    return f"  {result.cls}: {state} ({result.examples} examples, {result.runs} sequences, {result.seconds:.1f}s)"

