"""A finding as a conformance case (conformance/CASE-FORMAT.md).

The expected behaviour comes from the reference: the finding's commands are run against `refmem` in
the same layout, and the case pins each step's `is_error` and the final tree. The layout checks every
case gets (canary tree unchanged, nothing new outside the root, no canary or host path in outputs)
are the runner's, so an escape or a leak fails the case whatever its steps say.
"""

from __future__ import annotations

import pathlib
import tempfile
from typing import Any, Dict, List, Optional

from . import reach
from .finding import Finding
from .layout import HOSTILE_FIXTURES, Layout, scratch_dir_base
from .model import DIR, Tree
from .session import Settings, run_sequence

COMMAND_FEATURES = ("view", "create", "str_replace", "insert", "delete", "rename")
FIXTURE_FEATURES = {"symlink": "symlink", "fifo": "special-files", "hardlink": "hardlink"}
DECISION_BY_COMMAND = {
    "view": "D-VIEW-LIST",
    "create": "D-CREATE-EXISTS",
    "str_replace": "D-STR-COUNT",
    "insert": "D-INSERT-SEMANTICS",
    "delete": "D-DELETE-RECURSIVE",
    "rename": "D-RENAME-NOREPLACE",
}
DECISION_BY_FIXTURE = {"symlink": "D-FS-SYMLINK", "fifo": "D-FS-SPECIAL", "hardlink": "D-FS-HARDLINK"}


def reference_run(finding: Finding) -> Any:
    with tempfile.TemporaryDirectory(prefix="refmem-fuzz-case-", dir=scratch_dir_base()) as work:
        layout = Layout(pathlib.Path(work) / "w", hostile=finding.hostile_layout)
        layout.reset()
        target = reach.open("refmem", layout.root, timeout=10.0)
        try:
            return run_sequence(finding.commands, target, layout, Settings())
        finally:
            target.close()


def to_case(finding: Finding, case_id: Optional[str] = None, decision: Optional[str] = None) -> Dict[str, Any]:
    report = reference_run(finding)
    touched = _touched_fixture_types(finding.commands) if finding.hostile_layout else []
    security = finding.oracle.split(":", 1)[0] != "diverge"
    features: List[str] = []
    for command in finding.commands:
        name = command.get("command") if isinstance(command, dict) else None
        if name in COMMAND_FEATURES and name not in features:
            features.append(name)
    features += [FIXTURE_FEATURES[kind] for kind in touched if FIXTURE_FEATURES[kind] not in features]
    features.append("security" if security else "errors")
    if not any(isinstance(c, dict) and c.get("command") in COMMAND_FEATURES for c in finding.commands):
        features.append("input")
    case: Dict[str, Any] = {
        "id": case_id or f"fuzz-{finding.key()}",
        "description": f"Fuzz finding on {finding.target}: {finding.oracle}".replace("\n", " "),
        "features": list(dict.fromkeys(features)),
        "basis": "security" if security else "reference",
        "level": "must",
    }
    if not security:
        case["decision"] = decision or _guess_decision(finding, touched)
    case["requires"] = "fixtures" if finding.hostile_layout else "portable"
    if finding.hostile_layout:
        case["setup"] = {"fixtures": [dict(fixture) for fixture in HOSTILE_FIXTURES]}
    case["steps"] = [
        {"input": command, "is_error": bool(step.is_error)} for command, step in zip(report.commands, report.steps)
    ]
    if report.tree_after is not None:
        final = _final(report.tree_after, finding.tree_after or {})
        if final:
            case["final"] = final
    return case


def _final(tree: Tree, observed: Dict[str, Any]) -> Dict[str, Any]:
    present = ["/".join(parts) + ("/" if node == DIR else "") for parts, node in sorted(tree.items()) if parts]
    names = {entry.rstrip("/") for entry in present}
    absent = sorted(path for path in observed if path not in names)
    final: Dict[str, Any] = {}
    if present:
        final["present"] = present
    if absent:
        final["absent"] = absent
    return final


def _touched_fixture_types(commands: List[Any]) -> List[str]:
    kinds: List[str] = []
    text = " ".join(str(c) for c in commands)
    for fixture in HOSTILE_FIXTURES:
        kind = fixture["type"]
        if kind in FIXTURE_FEATURES and fixture["path"].split("/")[-1] in text and kind not in kinds:
            kinds.append(kind)
    return kinds


def _guess_decision(finding: Finding, touched: List[str]) -> str:
    if touched:
        return DECISION_BY_FIXTURE[touched[0]]
    step = finding.step if finding.step is not None else len(finding.commands) - 1
    command = finding.commands[min(step, len(finding.commands) - 1)] if finding.commands else None
    name = command.get("command") if isinstance(command, dict) else None
    if name == "view" and isinstance(command, dict) and command.get("view_range") is not None:
        return "D-VIEW-RANGE"
    return DECISION_BY_COMMAND.get(str(name), "D-IS-ERROR")
