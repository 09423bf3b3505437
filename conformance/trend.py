"""What changed between reports of one implementation: versions of it, or one version run at suite editions.

`refmem-conformance matrix --trend OLD.json ... NEW.json` lays the reports side by side (oldest first, in the
order given) and, for each consecutive pair, says what moved: the figures (figures.ROWS) whose text changed,
per class of finding the cases that started and stopped having one, the cases that started or stopped failing,
and the cases only one of the two has (a new edition's cases, retired ones) or that one of them skipped.

"Failing" here is having a finding of any class, whatever the profile: two runs under different profiles (or an
edition that moves cases between `must` and `should`) still compare case by case. Cases whose level or tier
differs between the two are listed too, since that alone moves the figures.
"""

from __future__ import annotations

import dataclasses
from typing import Dict, List, Sequence, Tuple

from .families import CaseEntry, Report, by_id, part
from .figures import all_rows
from .htmlpage import row_text
from .tiers import class_names


class TrendError(Exception):
    """The reports are not of one implementation, or too few to compare."""


def implementation_name(report: Report) -> str:
    return str(part(report, "implementation").get("name", ""))


def check_one_implementation(reports: Sequence[Report]) -> None:
    """Refuse reports of several implementations, or fewer than two: a trend is one implementation over time."""
    if len(reports) < 2:
        raise TrendError("--trend compares two or more reports of one implementation")
    names = list(dict.fromkeys(implementation_name(report) for report in reports))
    if len(names) > 1:
        shown = ", ".join(repr(name)[:80] for name in names)
        raise TrendError(
            f"--trend compares reports of one implementation; these are of {len(names)}: {shown} (leave out --trend "
            "to lay implementations side by side)"
        )


def one_implementation(reports: Sequence[Report]) -> bool:
    """All reports name the same implementation (a hint that --trend was meant)."""
    return len(reports) > 1 and len({implementation_name(report) for report in reports}) == 1


@dataclasses.dataclass(frozen=True)
class ClassMove:
    cls: str
    before: int
    after: int
    started: int
    stopped: int


@dataclasses.dataclass(frozen=True)
class Step:
    """From report `before` to report `after` (indices into the reports given)."""

    before: int
    after: int
    figures: List[Tuple[str, str, str, str]]
    """(figure key, name, text before, text after) for every figure whose text changed."""
    classes: List[ClassMove]
    """Classes with a finding in either report."""
    started: List[str]
    """Cases run in both: no finding before, a finding after."""
    stopped: List[str]
    """Cases run in both: a finding before, none after."""
    added: List[str]
    removed: List[str]
    skipped: List[str]
    """Cases in both that one of the two did not run."""
    reclassified: List[str]
    """Cases in both whose level or tier differs."""

    @property
    def quiet(self) -> bool:
        return not (self.figures or self.started or self.stopped or self.added or self.removed or self.reclassified)


def _ran(case: CaseEntry) -> bool:
    return bool(case.get("outcome", case.get("status")) != "skip")


def _classes(case: CaseEntry) -> List[str]:
    return [str(cls) for cls in case.get("classes") or []]


def _figure_moves(old: Report, new: Report) -> List[Tuple[str, str, str, str]]:
    before, after = dict(part(old, "figures")), dict(part(new, "figures"))
    moved = []
    for row in all_rows():
        if row.shown(before) or row.shown(after):
            was, now = row_text(row, before), row_text(row, after)
            if was != now:
                moved.append((row.key, row.name, was, now))
    return moved


def step(old: Report, new: Report, before: int = 0, after: int = 1) -> Step:
    old_cases, new_cases = by_id(old), by_id(new)
    common = [case_id for case_id in new_cases if case_id in old_cases]
    both = [case_id for case_id in common if _ran(old_cases[case_id]) and _ran(new_cases[case_id])]
    had: Dict[str, set[str]] = {cls: set() for cls in class_names()}
    has: Dict[str, set[str]] = {cls: set() for cls in class_names()}
    for cases, into in ((old_cases, had), (new_cases, has)):
        for case_id, case in cases.items():
            if _ran(case):
                for cls in _classes(case):
                    into.setdefault(cls, set()).add(case_id)
    compared = set(both)
    moves = [
        ClassMove(
            cls,
            len(had[cls]),
            len(has.get(cls, set())),
            len((has.get(cls, set()) - had[cls]) & compared),
            len((had[cls] - has.get(cls, set())) & compared),
        )
        for cls in list(had) + [cls for cls in has if cls not in had]
        if had.get(cls) or has.get(cls)
    ]
    return Step(
        before=before,
        after=after,
        figures=_figure_moves(old, new),
        classes=moves,
        started=[c for c in both if not _classes(old_cases[c]) and _classes(new_cases[c])],
        stopped=[c for c in both if _classes(old_cases[c]) and not _classes(new_cases[c])],
        added=[case_id for case_id in new_cases if case_id not in old_cases],
        removed=[case_id for case_id in old_cases if case_id not in new_cases],
        skipped=[case_id for case_id in common if case_id not in compared],
        reclassified=[
            case_id
            for case_id in common
            if any(old_cases[case_id].get(key) != new_cases[case_id].get(key) for key in ("level", "tier"))
        ],
    )


def steps(reports: Sequence[Report]) -> List[Step]:
    """What changed between each report and the next, in the order given."""
    return [step(reports[index - 1], reports[index], index - 1, index) for index in range(1, len(reports))]
