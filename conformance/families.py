"""Case families: the rows of the pages people read, computed from JSON reports.

2,220 case IDs are not a table anyone reads. A family is a group of hand-written cases (`paths`, `view-range`, ...)
or one payload family or filesystem hazard of the generated security matrix (`dotdot`, `fs-link-out-file`, ...):
about sixty rows, each with a title and a tally per report. Everything here reads the JSON report (`as_json`),
never a run, so a page can be remade from published JSON.

A case's state in one report is what its cell shows, worst first:

  unsafe   a safety finding (a safety finding fails every case, whatever the profile)
  fail     fails under the report's profile (outcome fail)
  known    the expectations file lists it: xfail (fails as listed) or xpass (passes although listed)
  shown    findings that do not decide anything under the report's profile (the reference's wording under
           the documented profile, say)
  clean    no finding
  none     not run: skipped, or not in this report

A family takes the worst state of its cases; its figure is "cases with no finding / cases run".
"""

from __future__ import annotations

import dataclasses
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

GENERATED_PREFIX = "sec-"

STATES: Tuple[str, ...] = ("unsafe", "fail", "known", "shown", "clean", "none")
"""Cell states, worst first (the family's state is the first of these any of its cases is in)."""

Report = Mapping[str, Any]
CaseEntry = Mapping[str, Any]


def part(report: Report, key: str) -> Mapping[str, Any]:
    """A report's object `key` (implementation, versions, figures, verdict), or an empty one where a report given to
    the pages is not what this version writes."""
    found = report.get(key)
    return found if isinstance(found, Mapping) else {}


def matrix_family(case_id: str) -> Optional[str]:
    """The payload family of a generated case (`dotdot`, `fs-link-out-file`, ...); None for a hand-written one."""
    if not case_id.startswith(GENERATED_PREFIX):
        return None
    stem = case_id[len(GENERATED_PREFIX) :].rsplit("-", 2)[0]
    if stem.startswith("fs-"):
        return stem
    return stem.split("-", 1)[0]


def family_titles() -> Dict[str, str]:
    """Payload family and filesystem hazard titles from conformance/security/payloads.json, by family key."""
    try:
        from .security.matrix import load
    except ImportError:
        return {}
    data = load()
    titles = {str(family["key"]): str(family["title"]) for family in data["families"]}
    titles.update({f"fs-{hazard['key']}": str(hazard["title"]) for hazard in data.get("fs_hazards", [])})
    return titles


def family_of(case: CaseEntry) -> str:
    """The family key of a case entry of a JSON report: its matrix family, or its group."""
    return matrix_family(str(case.get("id", ""))) or str(case.get("group", "")) or "ungrouped"


def case_state(case: Optional[CaseEntry]) -> str:
    """The state (`STATES`) of one case entry of a report; `none` for a case the report does not have."""
    if case is None or case.get("outcome", case.get("status")) == "skip":
        return "none"
    classes = case.get("classes") or []
    outcome = case.get("outcome", case.get("status"))
    if "safety" in classes:
        return "unsafe"
    if outcome == "fail":
        return "fail"
    if outcome in ("xfail", "xpass"):
        return "known"
    return "shown" if classes else "clean"


def worst(states: Sequence[str]) -> str:
    return min(states, key=STATES.index) if states else "none"


@dataclasses.dataclass(frozen=True)
class Tally:
    """One family in one report."""

    ran: int
    clean: int
    by_class: Dict[str, int]
    """class -> cases with a finding of that class."""
    state: str

    def text(self) -> str:
        return f"{self.clean}/{self.ran}" if self.ran else "not run"

    def classes_text(self) -> str:
        return ", ".join(f"{cls} {count}" for cls, count in self.by_class.items())


def tally(cases: Sequence[Optional[CaseEntry]]) -> Tally:
    ran = [case for case in cases if case is not None and case_state(case) != "none"]
    by_class: Dict[str, int] = {}
    for case in ran:
        for cls in case.get("classes") or []:
            by_class[str(cls)] = by_class.get(str(cls), 0) + 1
    return Tally(
        ran=len(ran),
        clean=sum(not case.get("classes") for case in ran),
        by_class=by_class,
        state=worst([case_state(case) for case in cases]),
    )


@dataclasses.dataclass(frozen=True)
class Family:
    key: str
    generated: bool
    title: str
    """The payload family's or hazard's title; for a hand-written group, the features its cases cover."""
    case_ids: List[str]


def by_id(report: Report) -> Dict[str, CaseEntry]:
    return {str(case.get("id", "")): case for case in report.get("cases", []) if isinstance(case, dict)}


def families(reports: Sequence[Report], titles: Optional[Mapping[str, str]] = None) -> List[Family]:
    """Every family of any report: hand-written groups first, then the generated ones, each in the order the
    reports first name it; a family's cases in the same order."""
    titles = family_titles() if titles is None else titles
    members: Dict[str, List[str]] = {}
    features: Dict[str, Dict[str, None]] = {}
    for report in reports:
        for case_id, case in by_id(report).items():
            key = family_of(case)
            ids = members.setdefault(key, [])
            if case_id not in ids:
                ids.append(case_id)
            for feature in case.get("features") or []:
                features.setdefault(key, {})[str(feature)] = None
    made = []
    for key, ids in members.items():
        generated = matrix_family(ids[0]) is not None
        if generated:
            title = titles.get(key, key)
        else:
            title = "features: " + ", ".join(features.get(key, {})) if features.get(key) else ""
        made.append(Family(key, generated, title, ids))
    return sorted(made, key=lambda family: family.generated)  # stable: first-named order within each kind


def failing_somewhere(family: Family, reports_by_id: Sequence[Mapping[str, CaseEntry]]) -> List[str]:
    """The family's cases with a finding (or a known deviation) in any report, worst first (`STATES`: a case
    unsafe in some column before one that fails, before one that only shows findings), else in family order."""
    ranked = []
    for position, case_id in enumerate(family.case_ids):
        state = worst([case_state(cases.get(case_id)) for cases in reports_by_id])
        if state not in ("clean", "none"):
            ranked.append((STATES.index(state), position, case_id))
    return [case_id for _rank, _position, case_id in sorted(ranked)]
