"""`refmem-conformance --replay FILE --target SPEC`: one finding's commands again, every property check of a profile.

The file is read as the fuzzer reads a finding file (refmem_harness/finding.py: bounded, checked field by field), since
it may come from anyone; the target it names is shown, never started: the sequence runs on `--target`. The
commands run in a fresh conformance layout and each step is judged by every class the profile judges
(judge.py), the reference's outputs included under `standard`. No hypothesis here: nothing is drawn.
"""

from __future__ import annotations

import json
import pathlib
import secrets
import tempfile
from typing import List, Optional, TextIO, Tuple

from refmem_harness import finding as finding_files
from refmem_harness.layout import remove
from refmem_harness.signalling import ErrorPrefix
from refmem_harness.targets import StepResult
from refmem_harness.visible import clip, log_safe, printable, redact

from ..checks import Finding
from ..reports import finding_lines
from .judge import SequenceRun, gating_classes, open_context

SHOWN_CHARS = 300


class ReplayRefused(Exception):
    """The file cannot be replayed here (not a finding file, or one made on the fuzzer's hostile layout)."""


Step = Tuple[object, StepResult, List[Finding]]


def load(path: pathlib.Path) -> finding_files.Finding:
    """The finding in `path`; ReplayRefused when it is not one this replay can run."""
    try:
        found = finding_files.load(path)
    except (finding_files.FindingError, OSError) as exc:
        raise ReplayRefused(
            f"{printable(str(path))[:SHOWN_CHARS]}: not a finding file this can replay ({exc})"
        ) from None
    if found.hostile_layout:
        raise ReplayRefused(
            f"{printable(str(path))[:SHOWN_CHARS]}: found on the fuzzer's hostile layout (links, a FIFO, a hard link "
            "planted in the root), which the property suite does not lay out: refmem-fuzz replay FILE --target SPEC"
        )
    return found


def replay(
    path: pathlib.Path,
    spec: str,
    profile: str,
    timeout: Optional[float],
    error_prefix: ErrorPrefix = None,
    workdir: Optional[pathlib.Path] = None,
) -> Tuple[finding_files.Finding, List[Step]]:
    """(the finding, each step run: its command, its result, its findings in the classes `profile` judges)."""
    found = load(path)
    commands = list(found.commands)
    base = pathlib.Path(tempfile.mkdtemp(prefix="refmem-conformance-replay_", dir=workdir))
    steps: List[Step] = []
    try:
        classes = frozenset(gating_classes(profile))
        context = open_context(spec, base, "canary-" + secrets.token_hex(8), classes, timeout, error_prefix)
        try:
            run = SequenceRun(context)
            try:
                for command in commands:
                    if run.stopped:
                        break
                    findings = run.step(command)
                    steps.append((command, run.results[-1], findings))
            finally:
                run.close()
        finally:
            context.close()
    finally:
        remove(base)
    return found, steps


def write(
    found: finding_files.Finding, steps: List[Step], spec: str, profile: str, out: TextIO, full: bool = False
) -> int:
    """Print the replay (each step, its findings, the verdict last); the exit status: 1 when a step broke a
    class the profile judges, else 0."""
    target = printable(str(found.target))[:SHOWN_CHARS]
    lines = [
        f"replaying {len(steps)} command(s) of a finding made on {target} on {printable(spec)[:SHOWN_CHARS]} "
        f"(profile {profile}: {', '.join(gating_classes(profile))}); the file's target is not started"
    ]
    broken: List[Finding] = []
    for number, (command, result, findings) in enumerate(steps, 1):
        lines.append(f"[{number}] {clip(json.dumps(command, ensure_ascii=True), SHOWN_CHARS)}")
        flags = "".join(f" {flag}" for flag in ("crashed", "timed_out", "raised") if getattr(result, flag))
        lines.append(f"    is_error={str(result.is_error).lower()}{flags}: "
                     f"{redact(printable(clip(result.output, SHOWN_CHARS)))}")
        lines += [redact(line) for line in finding_lines(findings, full)]
        broken += findings
    classes = sorted({finding.cls for finding in broken})
    if broken:
        lines.append(f"verdict: FAIL (exit 1): {', '.join(classes)} broken (profile {profile})")
    else:
        lines.append(f"verdict: PASS (exit 0): no step broke a class the {profile} profile judges")
    out.write(log_safe("\n".join(lines)) + "\n")
    return 1 if broken else 0
