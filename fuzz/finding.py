"""Finding files: a minimal command sequence, the oracle it broke, and what was observed.

A finding file is plain JSON a reviewer can read and attach to a bug report. It never holds a host
path or the run's canary value: both are replaced by placeholders (`<CASE>`, `<WORK>`, `<CANARY>`).

Cost findings need large inputs (a megabyte of `a\n`); a long parameter that repeats a short unit is
stored as `{"$repeat": UNIT, "times": N, "then": REST}` and expanded again on loading, and long
outputs and file contents are cut (they are what was observed, not what is replayed).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import pathlib
from typing import Any, Dict, List, Optional

from .layout import Layout
from .model import render_tree
from .session import Report

FORMAT = "refmem-fuzz-finding/2"
READABLE = ("refmem-fuzz-finding/1", FORMAT)
"""/2 added packed repeated parameters and the `cost` record; /1 files read the same."""
PACK_MIN_CHARS = 1024
PACK_MAX_UNIT = 64
KEPT_CHARS = 4096
"""Observed outputs and file contents longer than this are cut in the file."""
REPEAT = "$repeat"


@dataclasses.dataclass
class Finding:
    target: str
    harness: str
    oracle: str
    detail: str
    step: Optional[int]
    hostile_layout: bool
    differential: bool
    commands: List[Any]
    observed: List[Dict[str, Any]]
    tree_after: Optional[Dict[str, Any]] = None
    engine: str = ""
    seed: Optional[int] = None
    runs: Optional[int] = None
    other_oracles: List[str] = dataclasses.field(default_factory=list)
    cost: Optional[Dict[str, Any]] = None
    """For a cost finding: the step's input size, what it cost, the budget, and the confirming runs."""

    @property
    def signature(self) -> str:
        return self.oracle

    def key(self) -> str:
        blob = json.dumps([self.oracle, self.commands], sort_keys=True, ensure_ascii=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:12]

    def file_name(self) -> str:
        safe = "".join(ch if ch.isalnum() or ch in "-_" else "-" for ch in self.oracle)
        return f"{safe}-{self.key()}.json"

    def to_json(self) -> Dict[str, Any]:
        data: Dict[str, Any] = {"format": FORMAT}
        data.update(dataclasses.asdict(self))
        data["commands"] = [pack_command(command) for command in self.commands]
        data["observed"] = [
            dict(entry, input=pack_command(entry.get("input")), output=cut(entry.get("output")))
            for entry in self.observed
        ]
        if self.tree_after is not None:
            data["tree_after"] = {key: cut(value) for key, value in self.tree_after.items()}
        if data["cost"] is None:
            del data["cost"]
        return data

    @classmethod
    def from_json(cls, data: Dict[str, Any]) -> Finding:
        if data.get("format") not in READABLE:
            raise ValueError(f"not a finding file (format {data.get('format')!r})")
        fields = {field.name for field in dataclasses.fields(cls)}
        found = cls(**{key: value for key, value in data.items() if key in fields})
        found.commands = [unpack_command(command) for command in found.commands]
        return found


def from_report(
    report: Report, layout: Layout, target: str, harness: str, differential: bool, oracle: Optional[str] = None
) -> Finding:
    """The finding a report shows; `oracle` picks which violation is the finding (default: the primary)."""
    primary = next((v for v in report.violations if v.oracle == oracle), None) or report.primary
    assert primary is not None
    observed = []
    for command, step in zip(report.commands, report.steps):
        entry: Dict[str, Any] = {
            "input": command,
            "output": scrub(step.output, layout),
            "is_error": step.is_error,
        }
        for flag in ("crashed", "timed_out", "raised"):
            if getattr(step, flag, False):
                entry[flag] = True
        observed.append(entry)
    return Finding(
        target=target,
        harness=harness,
        oracle=primary.oracle,
        detail=scrub(primary.detail, layout),
        step=primary.step,
        hostile_layout=layout.hostile,
        differential=differential,
        commands=list(report.commands),
        observed=observed,
        tree_after={key: scrub(value, layout) for key, value in render_tree(report.tree_after).items()}
        if report.tree_after is not None
        else None,
        other_oracles=sorted({v.oracle for v in report.violations} - {primary.oracle}),
        cost=next((dict(record) for record in report.costs if record["step"] == primary.step), None)
        if primary.family == "cost"
        else None,
    )


def cut(text: Any) -> Any:
    if not isinstance(text, str) or len(text) <= KEPT_CHARS:
        return text
    return text[:KEPT_CHARS] + f"...[{len(text) - KEPT_CHARS} more characters cut in this file]"


def pack(text: str) -> Any:
    """A long string that repeats a short unit as a `$repeat` object; anything else as it is."""
    if len(text) < PACK_MIN_CHARS:
        return text
    for period in range(1, PACK_MAX_UNIT + 1):
        if text[period:] == text[:-period]:
            times = len(text) // period
            return {REPEAT: text[:period], "times": times, "then": text[times * period :]}
    return text


def unpack(value: Any) -> Any:
    if isinstance(value, dict) and set(value) == {REPEAT, "times", "then"}:
        unit, times, then = value[REPEAT], value["times"], value["then"]
        if isinstance(unit, str) and isinstance(then, str) and isinstance(times, int) and 0 <= times <= 1 << 24:
            return unit * times + then
    return value


def pack_command(command: Any) -> Any:
    if not isinstance(command, dict):
        return command
    return {key: pack(value) if isinstance(value, str) else value for key, value in command.items()}


def unpack_command(command: Any) -> Any:
    if not isinstance(command, dict):
        return command
    return {key: unpack(value) for key, value in command.items()}


def scrub(text: str, layout: Layout) -> str:
    if not isinstance(text, str):
        return text
    for host_path in layout.host_paths():
        placeholder = "<WORK>" if host_path == str(layout.work) else "<CASE>"
        text = text.replace(host_path, placeholder)
    return text.replace(layout.canary, "<CANARY>")


def dumps(finding: Finding) -> str:
    data = finding.to_json()
    try:
        text = json.dumps(data, indent=2, ensure_ascii=False)
        text.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates: keep them as JSON escapes
        text = json.dumps(data, indent=2, ensure_ascii=True)
    return text + "\n"


def save(finding: Finding, directory: pathlib.Path) -> pathlib.Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / finding.file_name()
    path.write_text(dumps(finding), encoding="utf-8")
    return path


def load(path: pathlib.Path) -> Finding:
    return Finding.from_json(json.loads(path.read_text(encoding="utf-8")))
