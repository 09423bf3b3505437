"""The harnesses: each turns one fuzzer input (bytes) into runs, checks the oracles, and records
findings (minimised, deduplicated by oracle class, written as finding files).

- `paths`     the reference's path parser, then a `view` through the reference's walk on a hostile
              layout: for any bytes, no exception, no location outside the root, no leak.
- `sequence`  a command list decoded from the bytes, against any target (the reference by
              default), in a fresh layout with a canary tree around the root; optionally
              differential against the model of the reference; every step measured against a
              cost budget (fuzz/cost.py) unless that is turned off.
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
import time
import unicodedata
import urllib.parse
from typing import Any, Callable, Dict, FrozenSet, List, Optional, Set

from refmem_harness import finding as finding_files
from refmem_harness.byte_reader import ByteReader
from refmem_harness.decode import decode
from refmem_harness.finding import Finding
from refmem_harness.oracles import Violation, check_outside, check_step
from refmem_harness.sequence_layout import Layout

from . import cost, reach
from .meter import Meter
from .minimise import MEMORY_TOOL, Fields, grow_texts, minimise
from .session import Report, Settings, finding_from_report, run_sequence

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
    cost: bool = True
    """Measure every step of a sequence against a budget linear in the input (fuzz/cost.py)."""
    cost_memory: bool = True
    """Also measure peak memory (tracemalloc in process, which slows allocation-heavy code)."""
    cost_factor: float = 1.0
    cost_minimise_budget: int = 12
    growth: bool = True
    """Decode growth forms (grow.py) and start the engines from their seeds; off: only small inputs."""
    """Runs a cost finding's minimisation may take: each one may be slow by definition."""
    engine: str = ""
    seed: Optional[int] = None
    on_finding: Optional[Callable[[Finding, Optional[pathlib.Path]], None]] = None
    deadline: Optional[float] = None
    """`time.monotonic()` at which the run ends: sequences, confirmations and minimisation stop there."""

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
        self.last_cost_bucket = 0
        """How close the last run's costliest step came to its budget (cost.bucket), for engines."""

    def one_input(self, data: bytes) -> Optional[Finding]:
        raise NotImplementedError

    def close(self) -> None:
        pass

    def minimised(
        self, report: Report, oracle: str, run: Callable[[List[Any]], Report], fields: Fields = MEMORY_TOOL
    ) -> Report:
        """The run of the smallest sequence `minimise` finds that still breaks `oracle`; the original run when
        that one does not break it again (flaky: a hang near the timeout)."""
        smallest = minimise(report.commands, lambda cmds: run(cmds).has(oracle), self.options.minimise_budget,
                            self.options.deadline, fields)
        final = run(smallest)
        return final if final.has(oracle) else report

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
        self.settings = Settings(strict=strict, differential=differential, parse=parse, deadline=options.deadline,
                                 step_timeout=options.step_timeout)
        if options.cost:
            self.settings.meter = Meter(self.target, memory=options.cost_memory)
            self.settings.budget = cost.make_budget(options.cost_memory, options.cost_factor,
                                                    folders_in=self.layout.work)

    def run(self, commands: List[Any]) -> Report:
        return run_sequence(commands, self.target, self.layout, self.settings)

    def run_measuring(self, commands: List[Any], memory: bool) -> Report:
        """A run whose in-process steps are measured for memory (tracemalloc) or else for time."""
        self.settings.trace_memory = memory and self.options.cost_memory
        try:
            return self.run(commands)
        finally:
            self.settings.trace_memory = False

    def one_input(self, data: bytes) -> Optional[Finding]:
        self.runs += 1
        commands = decode(data, self.options.growth)
        report = self.run_measuring(commands, self.runs % cost.MEMORY_EVERY == 0)
        self.last_features = _features(report)
        self.last_cost_bucket = max((record["bucket"] for record in report.costs), default=0)
        fresh_cost = sorted({v.oracle for v in report.violations if v.family == "cost" and v.oracle not in self.seen})
        fresh_other = any(v.family != "cost" and v.oracle not in self.seen for v in report.violations)
        confirmed = self.confirm(report.commands, fresh_cost[0], report) if fresh_cost and not fresh_other else None
        if confirmed is not None:
            report = confirmed
        else:  # an unconfirmed cost figure is noise until shown otherwise
            report.violations = [v for v in report.violations if v.family != "cost"]
        primary = report.primary
        if primary is None or primary.oracle in self.seen:
            return None
        return self._record(self.shrink(report))

    def confirm(self, commands: List[Any], oracle: str, first: Optional[Report] = None) -> Optional[Report]:
        """A cost finding stands only if re-runs break the same budget again; noise rarely does twice.
        On a stalled machine (cost.STALL) every run, the first included, is judged against budgets
        scaled by the slowdown measured now.

        Returns the run that cost least (so the finding shows the smallest figure), or None.
        """
        runs: List[Report] = [first] if first is not None else []
        budget = self.settings.budget
        slowdown = cost.slowdown() if budget is not None else 1.0
        if budget is not None and slowdown >= cost.STALL:
            self.settings.budget = dataclasses.replace(budget, factor=budget.factor * slowdown)
            runs = []
        try:
            for _ in range(cost.CONFIRM_RUNS + (not runs)):
                again = self.run_measuring(commands, oracle.startswith("cost:memory:"))
                if not again.has(oracle):
                    return None
                runs.append(again)
        finally:
            self.settings.budget = budget
        kept = min(runs, key=lambda run: _step_cost(run, oracle))
        kept.violations = [v for v in kept.violations if v.family != "cost" or v.oracle == oracle]
        kept.confirmed = [_step_cost(run, oracle) for run in runs]
        return kept

    def shrink(self, report: Report) -> Finding:
        oracle = report.primary.oracle  # type: ignore[union-attr]
        if oracle.startswith("cost:"):
            memory = oracle.startswith("cost:memory:")
            margin = cost.REPLAY_MARGIN if oracle.startswith("cost:time:") else 1.0
            smallest = minimise(report.commands, lambda cmds: _over_by(self.run_measuring(cmds, memory), oracle)
                                >= margin, self.options.cost_minimise_budget, self.options.deadline)
            final = self.confirm(smallest, oracle) if smallest != report.commands else None
            final = final or report  # too small to break the budget every time: keep the confirmed sequence
            if _over_by(final, oracle) < margin:
                final = self._grown(final, oracle) or final
        else:
            final = self.minimised(report, oracle, self.run)
        final.violations = [v for v in final.violations if v.family != "cost" or v.oracle == oracle]
        differential = self.settings.differential
        found = finding_from_report(final, self.layout, self.options.target, self.name, differential, oracle)
        if found.cost is not None and self.settings.budget is not None:
            found.cost["runs_over_budget"] = final.confirmed
            found.cost["budget_formula"] = self.settings.budget.to_json()
        return found

    def _grown(self, report: Report, oracle: str) -> Optional[Report]:
        """The finding with its texts doubled until its time is REPLAY_MARGIN over budget and confirmed (cost.py
        says why), or None when GROW_STEPS doublings do not get there: linear work keeps its ratio as it grows."""
        commands = report.commands
        for _ in range(cost.GROW_STEPS):
            if self.options.deadline is not None and time.monotonic() >= self.options.deadline:
                return None
            commands = grow_texts(commands)
            if _over_by(self.run_measuring(commands, False), oracle) >= cost.REPLAY_MARGIN:
                return self.confirm(commands, oracle)
        return None

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
        found = finding_from_report(report, self.layout, self.options.target, self.name, False)
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
    """A cheap picture of what a run did, for engines without code coverage.

    Besides the outcome of each command, the sizes it was given and gave back (in powers of two) are
    part of the picture, so inputs that make commands handle more are kept and grown: the
    deterministic half of PerfFuzz's idea (the measured cost is not used here, so that a seed still
    replays the same run; the atheris engine gets the measured cost as coverage, `cost_ladder`).
    """
    feats: Set[Any] = set()
    for command, step in zip(report.commands, report.steps):
        name = str(command.get("command") if isinstance(command, dict) else type(command).__name__)[:12]
        feats.add((name, step.is_error, step.output.split(" /", 1)[0][:40]))
        feats.add(("in", name, cost.input_chars(command).bit_length() // 2))
        feats.add(("out", name, len(step.output).bit_length() // 2))
    return frozenset(feats)


def _broken(report: Report, oracle: str) -> Optional[Dict[str, Any]]:
    """The cost record of the step that broke `oracle`, or None."""
    step = next((v.step for v in report.violations if v.oracle == oracle), None)
    return next((r for r in report.costs if r["step"] == step), None) if step is not None else None


_COST_KEYS = {"time": "seconds", "output": "output_chars", "memory": "memory_bytes"}


def _over_by(report: Report, oracle: str) -> float:
    """How many times over its budget the step that broke a cost oracle went; 0 when none broke it."""
    record = _broken(report, oracle)
    key = _COST_KEYS[oracle.split(":")[1]]
    limit = float(record["budget"][key] or 0) if record is not None else 0.0
    return float(record["measured"][key] or 0) / limit if record is not None and limit > 0 else 0.0


def _step_cost(report: Report, oracle: str) -> float:
    """The measured figure a cost oracle is about, for the step that broke it."""
    record = _broken(report, oracle)
    return float(record["measured"][_COST_KEYS[oracle.split(":")[1]]] or 0) if record is not None else 0.0


MEMORY_HARNESSES: Dict[str, Callable[[Options, pathlib.Path], Harness]] = {
    "sequence": SequenceHarness,
    "paths": PathsHarness,
}
