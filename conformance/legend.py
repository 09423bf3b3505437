"""The words the report pages use to explain themselves: what each figure's numbers count, what each cell colour,
class of finding and outcome means. One table each, shown by the HTML pages (htmlpage.py, matrixpage.py) and the
Markdown report (reports.py), so that no page explains a figure differently from another.
"""

from __future__ import annotations

from typing import Dict, Tuple

from .tiers import class_rows

FIGURE_UNITS: Dict[str, str] = {
    "safe": "yes, or the safety findings (cases and stress tier together) and the cases they are in",
    "documented": "x/y = must cases passing / must cases run",
    "wording": "x/y = should cases on its strings passing / run",
    "suggested": "x/y = should cases on suggested safeguards passing / run",
    "reference": "x/y = reference cases passing / run",
    "hardening": "x/y = hardening cases passing / run",
    "signalling": "x/y = cases whose is_error agrees / cases with an is_error expectation run",
    "cost_findings": "findings in the stress tier",
    "conformant": "judged under the report's own profile, over the cases that gate under it",
}
"""What each figure's numbers count (figures.ROWS by key), said beside it: "passing" is meeting the case's own
tier's expectations, and "run" leaves skipped cases out. A class's own figure: `figure_unit`."""

CLASS_FIGURE_UNIT = "findings, in how many cases"


def figure_unit(key: str) -> str:
    """What the figure `key` counts: its line above, or a class's own figure (tiers.FindingClass.figure)."""
    if key in FIGURE_UNITS:
        return FIGURE_UNITS[key]
    figured = {f"{row.slug}_findings" for row in class_rows() if row.figure is not None}
    return CLASS_FIGURE_UNIT if key in figured else ""


STATE_LEGEND: Dict[str, Tuple[str, str]] = {
    "unsafe": ("unsafe", "a safety finding: fails the run whatever the profile or the expectations file says"),
    "fail": ("fails", "fails under the column's profile: a finding in a class that profile counts"),
    "known": ("known", "listed in the column's expectations file: xfail fails as listed, xpass passes although listed"),
    "shown": ("shown", "findings the column's profile shows but does not count (the reference's wording under the "
              "documented profile, say)"),
    "clean": ("clean", "no finding"),
    "none": ("not run", "skipped (the reason is in the cell's tooltip), or not in the column's report"),
}
"""Each cell state (families.STATES): its word and what it means. A family takes its worst case's state."""

def class_legend() -> Dict[str, str]:
    """Each class of finding in one line: its row's legend (tiers.CLASS_ROWS)."""
    return {row.name: row.legend for row in class_rows()}


CLASS_LEGEND: Dict[str, str] = class_legend()
"""The legend of the rows as they are written (class_legend() for rows added since)."""

OUTCOME_LEGEND: Dict[str, str] = {
    "pass": "nothing fails under the column's profile (a case may still show findings it does not count)",
    "fail": "fails under the column's profile",
    "xfail": "fails, as the expectations file says",
    "xpass": "passes, though the expectations file lists it",
    "skip": "not run: an option the target lacks, a feature left out, or running as root",
    "-": "the column's report does not have the case (another edition, or left out by --run)",
}
