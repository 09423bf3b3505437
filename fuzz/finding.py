"""Finding files: a minimal command sequence, the oracle it broke, and what was observed.

A finding file is plain JSON a reviewer can read and attach to a bug report. It never holds a host
path or the run's canary value: both are replaced by placeholders (`<CASE>`, `<WORK>`, `<CANARY>`).
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

FORMAT = "refmem-fuzz-finding/1"


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
        data = {"format": FORMAT}
        data.update(dataclasses.asdict(self))
        return data

    @classmethod
    def from_json(cls, data: Dict[str, Any]) -> Finding:
        if data.get("format") != FORMAT:
            raise ValueError(f"not a finding file (format {data.get('format')!r})")
        fields = {field.name for field in dataclasses.fields(cls)}
        return cls(**{key: value for key, value in data.items() if key in fields})


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
    )


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
