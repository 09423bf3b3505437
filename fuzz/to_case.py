"""A finding as a conformance case file (conformance/CASE-FORMAT.md): one group holding one case.

The expected behaviour comes from the reference: the finding's commands are run against `refmem` in
the case's own layout, and the case pins each step's `is_error` and the final tree. The layout checks
every case gets (canary tree unchanged, nothing new outside the root, no canary or host path in
outputs) are the runner's, so an escape or a leak fails the case whatever its steps say.

The case lays out only the hostile fixtures the commands may reach (named in a path, under a folder a
path names, or on the way to one), so that a reader sees what the finding is about; the reference is
run on that same smaller layout. Everything taken from the finding into the description (its target
and oracle, a stranger's text) is escaped and cut, since the description is one printed line.
"""

from __future__ import annotations

import pathlib
import re
import tempfile
import unicodedata
import urllib.parse
from typing import Any, Dict, Iterator, List, Optional, Set, Tuple

from refmem import tool
from refmem_harness import visible
from refmem_harness.finding import Finding
from refmem_harness.model import DIR, Tree
from refmem_harness.sequence_layout import HOSTILE_FIXTURES, Fixture, Layout, scratch_dir_base

from . import reach
from .session import Settings, run_sequence

CASE_SCHEMA_ID = "https://github.com/refmem/refmem/raw/main/conformance/schema/case.schema.json"
"""The case schema's `$id`, which a case file names first."""
GROUP = re.compile(r"[a-z][a-z0-9_]*(?:-[a-z0-9_]+)*")
CASE_ID = re.compile(r"[a-z0-9][a-z0-9_.-]*")
"""The case schema's patterns for a group name and a case ID (tests/fuzz/test_to_case.py compares)."""
MAX_ID_CHARS = 120
GROUP_CASE_ID = re.compile(r"(.+)-(\d{3,})")
"""A hand-written case's ID is its group's name, a dash and a number (`validate` checks it)."""
DESCRIPTION_CHARS = 200
PATH_KEYS = ("path", "old_path", "new_path")
ROOT = "/memories"

COMMAND_FEATURES = tool.NAMES
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
DECISION = re.compile(r"D-[A-Z0-9]+(?:-[A-Z0-9]+)*")
PINNED_TEXT_CHARS = 65_536
"""A behaviour finding's case pins the reference's final texts when each is at most this long."""


class _CaseLayout(Layout):
    """The fuzzer's layout with a chosen subset of the hostile fixtures."""

    def __init__(self, work: pathlib.Path, fixtures: List[Fixture]) -> None:
        super().__init__(work, hostile=bool(fixtures))
        self._chosen = fixtures

    @property
    def fixtures(self) -> List[Fixture]:
        return self._chosen


def reference_run(finding: Finding, fixtures: List[Fixture]) -> Any:
    with tempfile.TemporaryDirectory(prefix="refmem-fuzz-case-", dir=scratch_dir_base()) as work:
        layout = _CaseLayout(pathlib.Path(work) / "w", fixtures)
        layout.reset()
        target = reach.open("refmem", layout.root, timeout=10.0)
        try:
            return run_sequence(finding.commands, target, layout, Settings())
        finally:
            target.close()


def to_case_file(finding: Finding, case_id: Optional[str] = None, decision: Optional[str] = None) -> Dict[str, Any]:
    """`{"$schema", "group", "cases": [case]}`: a file `refmem-conformance --cases-dir` runs as it is.
    Raises ValueError for an ID or a decision the case schema would refuse."""
    group, case_id = names(finding, case_id)
    return {"$schema": CASE_SCHEMA_ID, "group": group, "cases": [to_case(finding, case_id, decision)]}


def names(finding: Finding, case_id: Optional[str]) -> Tuple[str, str]:
    """(group, case ID): `fuzz-KEY` and `fuzz-KEY-001` by default, else the group `case_id` names."""
    if case_id is None:
        group = f"fuzz-{finding.key()}"
        return group, f"{group}-001"
    shape = GROUP_CASE_ID.fullmatch(case_id)
    if not (shape and GROUP.fullmatch(shape.group(1)) and CASE_ID.fullmatch(case_id) and len(case_id) <= MAX_ID_CHARS):
        raise ValueError("--id must be GROUP-NNN (a lower-case group name, a dash, three digits or more; at most "
                         f"{MAX_ID_CHARS} characters), e.g. fuzz-001")
    return shape.group(1), case_id


def to_case(finding: Finding, case_id: Optional[str] = None, decision: Optional[str] = None) -> Dict[str, Any]:
    """The case alone (for a file of one's own, `to_case_file`). A memory tool case: a plug-in's finding
    (fuzz/plugin.py) is refused, since its tools have cases of their own (conformance/openclaw/)."""
    if finding.harness not in ("sequence", "paths"):
        raise ValueError(f"to-case writes memory tool cases; a finding of the {finding.harness} harness is not one")
    if decision is not None and not DECISION.fullmatch(decision):
        raise ValueError("--decision must be a spec-notes ID such as D-VIEW-RANGE")
    fixtures = used_fixtures(finding.commands) if finding.hostile_layout else []
    report = reference_run(finding, fixtures)
    touched = list(dict.fromkeys(fixture["type"] for fixture in fixtures if fixture["type"] in FIXTURE_FEATURES))
    security = finding.oracle.split(":", 1)[0] != "diverge"
    features: List[str] = []
    for command in finding.commands:
        name = command.get("command") if isinstance(command, dict) else None
        if name in COMMAND_FEATURES and name not in features:
            features.append(name)
    features += [FIXTURE_FEATURES[kind] for kind in touched]
    features.append("security" if security else "errors")
    if not any(isinstance(c, dict) and c.get("command") in COMMAND_FEATURES for c in finding.commands):
        features.append("input")
    case: Dict[str, Any] = {
        "id": case_id or names(finding, None)[1],
        "description": description(finding),
        "features": list(dict.fromkeys(features)),
        "basis": "security" if security else "reference",
        "level": "must" if security else "should",
    }
    if not security:
        case["decision"] = decision or _guess_decision(finding, touched)
    case["requires"] = "fixtures" if fixtures else "portable"
    if fixtures:
        case["setup"] = {"fixtures": [dict(fixture) for fixture in fixtures]}
    case["steps"] = [
        {"input": command, "is_error": bool(step.is_error)} for command, step in zip(report.commands, report.steps)
    ]
    if report.tree_after is not None:
        final = _final(report.tree_after, finding.tree_after or {}, fixtures, texts=not security)
        if final:
            case["final"] = final
    return case


def description(finding: Finding) -> str:
    """One printable line: the finding's target and oracle are a file's text, escaped and cut."""
    text = visible.printable(f"Fuzz finding on {finding.target[:DESCRIPTION_CHARS]}: {finding.oracle}")
    return text if len(text) <= DESCRIPTION_CHARS else text[: DESCRIPTION_CHARS - 3] + "..."


# --- the fixtures a sequence may reach ----------------------------------------------------------


def used_fixtures(commands: List[Any]) -> List[Fixture]:
    """The hostile fixtures (in layout order) a command's path may reach, read generously: a fixture
    whose name occurs in a path (as written, percent-decoded, NFKC-folded, any case), one below a
    folder a path names (`/memories` reaches them all), the folders above those, and the file a link
    inside points at. Keeping one too many costs a line of set-up; one too few loses the finding."""
    spellings = [spelling for text in _path_texts(commands) for spelling in _spellings(text)]
    reached: Set[str] = set()
    for fixture in HOSTILE_FIXTURES:
        parts = tuple(fixture["path"].split("/"))
        if any(parts[-1].casefold() in spelling for spelling in spellings):
            reached.add(fixture["path"])
        for spelling in spellings:
            names = _names_below_root(spelling)
            if names is not None and (parts[: len(names)] == names or names[: len(parts)] == parts):
                reached.add(fixture["path"])
    for fixture in HOSTILE_FIXTURES:
        if fixture["path"] in reached and fixture["type"] == "symlink" and "/" not in fixture["target"]:
            inside = "/".join(fixture["path"].split("/")[:-1] + [fixture["target"]]).lstrip("/")
            reached.add(inside)  # a link to a file beside it (link_inside -> notes.md)
    for path in list(reached):
        above = path.split("/")
        reached.update("/".join(above[:depth]) for depth in range(1, len(above)))
    return [fixture for fixture in HOSTILE_FIXTURES if fixture["path"] in reached]


def _path_texts(commands: List[Any]) -> Iterator[str]:
    """Every string under a command's path parameters, or anywhere in a command that is not an object."""
    for command in commands:
        pending = [command.get(key) for key in PATH_KEYS] if isinstance(command, dict) else [command]
        while pending:
            value = pending.pop()
            if isinstance(value, str):
                yield value
            elif isinstance(value, dict):
                pending.extend(value.values())
            elif isinstance(value, list):
                pending.extend(value)


def _spellings(text: str) -> Set[str]:
    """`text` as a backend might read it: percent-decoded up to three times, NFKC-folded, casefolded."""
    found = {text}
    for _ in range(3):
        text = urllib.parse.unquote(text)
        found.add(text)
    found |= {unicodedata.normalize("NFKC", spelling) for spelling in list(found)}
    return {spelling.replace("\\", "/").casefold() for spelling in found}


def _names_below_root(spelling: str) -> Optional[Tuple[str, ...]]:
    """The names of a path under /memories, `.` and `..` resolved as written; None for another path."""
    if spelling != ROOT and not spelling.startswith(ROOT + "/"):
        return None
    names: List[str] = []
    for name in spelling[len(ROOT) :].split("/"):
        if name == "..":
            if not names:
                return None  # above the root: no fixture is there
            names.pop()
        elif name not in ("", "."):
            names.append(name)
    return tuple(names)


def _final(tree: Tree, observed: Dict[str, Any], fixtures: List[Fixture], texts: bool = False) -> Dict[str, Any]:
    """The reference's final tree as present entries; what the backend left and the reference did not,
    as absent ones (except fixtures this case does not lay out). With `texts` (a behaviour finding, whose
    case is the reference's decisions) and a tree of plain files only, the reference's files byte for byte
    instead, and no other file (`exact`): a finding about what a file holds (an edit applied twice, a text
    changed) is then a case that fails."""
    files = {"/".join(parts): node for parts, node in sorted(tree.items()) if parts and node != DIR}
    if texts and files and all(node[0] == "file" and len(node[1]) <= PINNED_TEXT_CHARS for node in files.values()):
        return {"files": {path: node[1] for path, node in files.items()}, "exact": True}
    present = ["/".join(parts) + ("/" if node == DIR else "") for parts, node in sorted(tree.items()) if parts]
    names = {entry.rstrip("/") for entry in present}
    laid_out = {fixture["path"] for fixture in fixtures}
    dropped = [fixture["path"] for fixture in HOSTILE_FIXTURES if fixture["path"] not in laid_out]
    absent = sorted(
        path
        for path in observed
        if path not in names and not any(path == gone or path.startswith(gone + "/") for gone in dropped)
    )
    final: Dict[str, Any] = {}
    if present:
        final["present"] = present
    if absent:
        final["absent"] = absent
    return final


def _guess_decision(finding: Finding, touched: List[str]) -> str:
    if touched:
        return DECISION_BY_FIXTURE[touched[0]]
    step = finding.step if finding.step is not None else len(finding.commands) - 1
    command = finding.commands[min(step, len(finding.commands) - 1)] if finding.commands else None
    name = command.get("command") if isinstance(command, dict) else None
    if name == "view" and isinstance(command, dict) and command.get("view_range") is not None:
        return "D-VIEW-RANGE"
    return DECISION_BY_COMMAND.get(str(name), "D-IS-ERROR")
