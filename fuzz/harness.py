"""The harnesses: each turns one fuzzer input (bytes) into runs, checks the oracles, and records
findings (minimised, deduplicated by oracle class, written as finding files).

- `paths`     the reference's path parser, then a `view` through the reference's walk on a hostile
              layout: for any bytes, no exception, no location outside the root, no leak.
- `sequence`  a command list decoded from the bytes, against any target (the reference by
              default), in a fresh layout with a canary tree around the root; optionally
              differential against the model of the reference.
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
import unicodedata
import urllib.parse
from typing import Any, Callable, Dict, FrozenSet, List, Optional, Set

from . import finding as finding_files
from . import reach
from .byte_reader import ByteReader
from .decode import decode
from .finding import Finding
from .layout import Layout
from .minimise import minimise
from .oracles import Violation, check_outside, check_step
from .session import Report, Settings, run_sequence

REFERENCE_SPECS = ("refmem", "reference")


@dataclasses.dataclass
class Options:
    target: str = "refmem"
    hostile: bool = True
    differential: Optional[bool] = None  # None: on for the reference, off for others
    strict: Optional[bool] = None  # None: on for the reference, off for others
    step_timeout: Optional[float] = 5.0
    findings_dir: Optional[pathlib.Path] = None
    minimise_budget: int = 200
    engine: str = ""
    seed: Optional[int] = None
    on_finding: Optional[Callable[[Finding, Optional[pathlib.Path]], None]] = None

    @property
    def is_reference(self) -> bool:
        return self.target in REFERENCE_SPECS


class Harness:
    name = ""

    def __init__(self, options: Options, work: pathlib.Path) -> None:
        self.options = options
        self.work = work
        self.runs = 0
        self.findings: List[Finding] = []
        self.seen: Set[str] = set()
        self.last_features: FrozenSet[Any] = frozenset()

    def one_input(self, data: bytes) -> Optional[Finding]:
        raise NotImplementedError

    def close(self) -> None:
        pass

    def _record(self, found: Finding) -> Finding:
        found.engine = self.options.engine
        found.seed = self.options.seed
        found.runs = self.runs
        self.seen.add(found.signature)
        self.findings.append(found)
        path = None
        if self.options.findings_dir is not None:
            path = finding_files.save(found, self.options.findings_dir)
        if self.options.on_finding is not None:
            self.options.on_finding(found, path)
        return found


class SequenceHarness(Harness):
    name = "sequence"

    def __init__(self, options: Options, work: pathlib.Path) -> None:
        super().__init__(options, work)
        self.layout = Layout(work / "seq", hostile=options.hostile)
        self.layout.reset()
        self.target = reach.open(options.target, self.layout.root, options.step_timeout)
        differential = options.is_reference if options.differential is None else options.differential
        strict = options.is_reference if options.strict is None else options.strict
        parse = None
        if differential:
            from refmem.paths import parse_path

            parse = parse_path
        self.settings = Settings(strict=strict, differential=differential, parse=parse)

    def run(self, commands: List[Any]) -> Report:
        return run_sequence(commands, self.target, self.layout, self.settings)

    def one_input(self, data: bytes) -> Optional[Finding]:
        self.runs += 1
        commands = decode(data)
        report = self.run(commands)
        self.last_features = _features(report)
        primary = report.primary
        if primary is None or primary.oracle in self.seen:
            return None
        return self._record(self.shrink(report))

    def shrink(self, report: Report) -> Finding:
        oracle = report.primary.oracle  # type: ignore[union-attr]
        smallest = minimise(report.commands, lambda cmds: self.run(cmds).has(oracle), self.options.minimise_budget)
        final = self.run(smallest)
        if not final.has(oracle):  # flaky: keep the original sequence
            final = self.run(report.commands)
        differential = self.settings.differential
        return finding_files.from_report(final, self.layout, self.options.target, self.name, differential, oracle)

    def close(self) -> None:
        self.target.close()
        self.layout.remove()


class PathsHarness(Harness):
    """The reference's parser and walk: any string as a path."""

    name = "paths"

    def __init__(self, options: Options, work: pathlib.Path) -> None:
        super().__init__(options, work)
        from refmem.paths import PathError, parse_path

        self.parse_path = parse_path
        self.path_error = PathError
        self.layout = Layout(work / "paths", hostile=True)
        self.layout.reset()
        self.target = reach.open(options.target, self.layout.root, options.step_timeout)
        self.root = str(self.layout.root)

    def one_input(self, data: bytes) -> Optional[Finding]:
        self.runs += 1
        raw = path_from_bytes(data)
        violations = self.check_parser(raw)
        command = {"command": "view", "path": raw}
        step = self.target.execute(command)
        violations += check_step(0, command, step, self.layout, strict=True)
        outside = check_outside(self.layout)
        if outside:
            violations += outside
            self.layout.reset()
            self.target.reset(self.layout.root)
        self.last_features = frozenset({(step.is_error, step.output.split(" /", 1)[0][:40])})
        fresh = [v for v in violations if v.oracle not in self.seen]
        if not fresh:
            return None
        report = Report([command], [step], [], fresh)
        found = finding_files.from_report(report, self.layout, self.options.target, self.name, False)
        return self._record(found)

    def check_parser(self, raw: str) -> List[Violation]:
        try:
            vpath = self.parse_path(raw)
        except self.path_error:
            return []
        except Exception as exc:  # noqa: BLE001 - any other exception is the finding
            return [Violation(f"exception:parser:{type(exc).__name__}", 0, str(exc)[:200])]
        problems = _parsed_path_problems(vpath, self.root)
        if problems and problems[0].startswith("escape"):
            return [Violation("escape:parser", 0, problems[0])]
        if problems:
            return [Violation("parser:invariant", 0, problems[0])]
        try:
            again = self.parse_path(vpath.canonical)
        except Exception as exc:  # noqa: BLE001
            return [Violation("parser:canonical-refused", 0, f"{type(exc).__name__}: {exc}"[:200])]
        if again.parts != vpath.parts:
            return [Violation("parser:canonical-unstable", 0, "the canonical spelling parses differently")]
        return []

    def close(self) -> None:
        self.target.close()
        self.layout.remove()


def _parsed_path_problems(vpath: Any, root: str) -> List[str]:
    problems = []
    for part in vpath.parts:
        if part in ("", ".", "..") or "/" in part or "\\" in part or "\x00" in part:
            problems.append(f"escape: a name the walk would misread: {part!r}")
        folded = unicodedata.normalize("NFKC", part)
        if folded in (".", "..") or "/" in folded:
            problems.append(f"escape: a name that normalises to a separator or dot segment: {part!r}")
        decoded = urllib.parse.unquote(part)
        if decoded in (".", "..") or "/" in decoded:
            problems.append(f"escape: a name that percent-decodes to a separator or dot segment: {part!r}")
    host = os.path.normpath(os.path.join(root, *vpath.parts)) if vpath.parts else root
    if host != root and not host.startswith(root + os.sep):
        problems.insert(0, "escape: the parsed path lands outside the root")
    if vpath.canonical != "/memories" + "".join("/" + part for part in vpath.parts):
        problems.append("the canonical spelling is not /memories joined with the names")
    return problems


def path_from_bytes(data: bytes) -> str:
    reader = ByteReader(data[:1])
    mode = reader.below(5)
    body = data[1:]
    if mode == 0:
        return "/memories/" + body.decode("utf-8", "replace")
    if mode == 1:
        return "/memories/" + body.decode("utf-8", "surrogateescape")
    if mode == 2:
        return body.decode("latin-1")
    if mode == 3:
        return body.decode("utf-8", "replace")
    commands = decode(body)
    first = commands[0] if commands else None
    path = first.get("path") or first.get("old_path") if isinstance(first, dict) else None
    return path if isinstance(path, str) else "/memories"


def _features(report: Report) -> FrozenSet[Any]:
    """A cheap picture of what a run did, for engines without code coverage."""
    feats = set()
    for command, step in zip(report.commands, report.steps):
        name = command.get("command") if isinstance(command, dict) else type(command).__name__
        feats.add((str(name)[:12], step.is_error, step.output.split(" /", 1)[0][:40]))
    return frozenset(feats)


HARNESSES: Dict[str, Callable[[Options, pathlib.Path], Harness]] = {
    "sequence": SequenceHarness,
    "paths": PathsHarness,
}
