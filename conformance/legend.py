"""The words the report pages use to explain themselves: what each figure's numbers count, what each cell colour,
class of finding and outcome means. One table each, shown by the HTML pages (htmlpage.py, matrixpage.py) and the
Markdown report (reports.py), so that no page explains a figure differently from another.
"""

from __future__ import annotations

from typing import Dict, Tuple

FIGURE_UNITS: Dict[str, str] = {
    "safe": "yes, or the safety findings (cases and stress tier together) and the cases they are in",
    "host_layout_findings": "findings, in how many cases",
    "documented": "x/y = must cases passing / must cases run",
    "wording": "x/y = should cases on its strings passing / run",
    "suggested": "x/y = should cases on suggested safeguards passing / run",
    "reference": "x/y = reference cases passing / run",
    "hardening": "x/y = hardening cases passing / run",
    "signalling": "x/y = cases whose is_error agrees / cases with an is_error expectation run",
    "robustness_findings": "findings, in how many cases",
    "cost_findings": "findings in the stress tier",
    "conformant": "judged under the report's own profile, over the cases that gate under it",
}
"""What each figure's numbers count (figures.ROWS by key), said beside it: "passing" is meeting the case's own
tier's expectations, and "run" leaves skipped cases out."""


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

CLASS_LEGEND: Dict[str, str] = {
    "safety": "outside the root read, changed, created or removed; canary text, an outside name or size, a host path "
    "or a traceback shown; data lost; a hang, a crash or an unbounded output",
    "host-layout": "only a layout the suite planted and the tool cannot make explains it (hard links, FIFOs)",
    "documented": "behaviour or a string the documentation states (the case cites the sentence)",
    "reference": "a decision of the reference (docs/spec-notes.md), byte for byte",
    "hardening": "a safe refusal this platform does not require",
    "signalling": "is_error says one thing and the output another",
    "robustness": "an exception that is not the implementation's declared error signal",
    "cost": "time or memory out of proportion to the input (the stress tier)",
}
"""Each class of finding (tiers.CLASSES) in one line."""

OUTCOME_LEGEND: Dict[str, str] = {
    "pass": "nothing fails under the column's profile (a case may still show findings it does not count)",
    "fail": "fails under the column's profile",
    "xfail": "fails, as the expectations file says",
    "xpass": "passes, though the expectations file lists it",
    "skip": "not run: an option the target lacks, a feature left out, or running as root",
    "-": "the column's report does not have the case (another edition, or left out by --run)",
}
