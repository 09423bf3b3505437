"""Known deviations: an implementation's list of cases it is expected to fail or skip.

    [{"id": "view-0*", "expect": "fail", "reason": "sizes in bytes", "issue": "https://..."}]

The first entry whose `id` glob matches a case applies. An entry that matches no case of the suite is
stale; a case expected to fail that passes is an unexpected pass. `--strict` makes both failures.

An expectation never covers a safety finding: a case expected to fail that fails unsafely is a failure, and
`baseline` refuses to record an unsafe case (it says which, and why). A known deviation is a choice about
wording or behaviour; an escape, a leak or a lost file is not something a CI may learn to live with.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import json
import pathlib
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

from .results import FAIL, PASS, SKIP, CaseResult
from .tiers import UNSAFE

EXPECT_KINDS = ("fail", "skip")

# (status from the run, expectation) -> outcome. None stands for "no entry".
OUTCOMES: Dict[Tuple[str, Optional[str]], str] = {
    (PASS, None): "pass",
    (FAIL, None): "fail",
    (SKIP, None): "skip",
    (PASS, "fail"): "xpass",
    (FAIL, "fail"): "xfail",
    (SKIP, "fail"): "skip",
    (SKIP, "skip"): "skip",
    (PASS, "skip"): "pass",
    (FAIL, "skip"): "fail",
}


class ExpectationsError(Exception):
    """The expectations file cannot be read or has the wrong shape."""


@dataclasses.dataclass(frozen=True)
class Expectation:
    id: str
    expect: str
    reason: str = ""
    issue: str = ""

    def as_dict(self) -> Dict[str, str]:
        return dataclasses.asdict(self)


def load(path: pathlib.Path) -> List[Expectation]:
    try:
        entries = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ExpectationsError(f"{path}: {exc}") from exc
    if not isinstance(entries, list):
        raise ExpectationsError(f"{path}: expected a JSON list of entries")
    loaded = []
    for number, entry in enumerate(entries, 1):
        if (
            not isinstance(entry, dict)
            or not isinstance(entry.get("id"), str)
            or entry.get("expect") not in EXPECT_KINDS
            or not all(isinstance(entry.get(key, ""), str) for key in ("reason", "issue"))
        ):
            raise ExpectationsError(
                f'{path}: entry {number} must be {{"id": GLOB, "expect": "fail"|"skip", "reason": str, "issue": str}}'
            )
        loaded.append(Expectation(entry["id"], entry["expect"], entry.get("reason", ""), entry.get("issue", "")))
    return loaded


def find(expectations: Sequence[Expectation], case_id: str) -> Optional[Expectation]:
    return next((entry for entry in expectations if fnmatch.fnmatchcase(case_id, entry.id)), None)


def stale(expectations: Sequence[Expectation], all_ids: Iterable[str]) -> List[Expectation]:
    """Entries that match no case of the whole suite (before any --run/--skip filter)."""
    ids = list(all_ids)
    return [entry for entry in expectations if not any(fnmatch.fnmatchcase(case_id, entry.id) for case_id in ids)]


def unsafe(result: CaseResult) -> bool:
    """The case has a finding of a class no expectation can cover (tiers.UNSAFE)."""
    return any(finding.cls in UNSAFE for finding in result.findings)


def classify(result: CaseResult, expectations: Sequence[Expectation]) -> None:
    """Set `result.outcome` (and `result.expectation`) from its status and the matching entry; an unsafe
    failure stays a failure whatever the entry says."""
    entry = find(expectations, result.case.id)
    result.expectation = entry.as_dict() if entry else None
    outcome = OUTCOMES[(result.status, entry.expect if entry else None)]
    result.outcome = FAIL if outcome == "xfail" and unsafe(result) else outcome


def skipped_by_expectation(expectations: Sequence[Expectation], case_id: str) -> Optional[Expectation]:
    entry = find(expectations, case_id)
    return entry if entry is not None and entry.expect == "skip" else None


def baseline(
    results: Iterable[CaseResult], previous: Sequence[Expectation] = ()
) -> Tuple[List[Dict[str, str]], List[CaseResult]]:
    """An expectations list for today's failures, keeping the reason and issue of exact-ID entries, and the
    unsafe failures it refuses to record (an expectation cannot cover them: see the module docstring)."""
    known = {entry.id: entry for entry in previous}
    entries = [entry.as_dict() for entry in previous if entry.expect == "skip"]
    refused: List[CaseResult] = []
    for result in results:
        if result.status != FAIL:
            continue
        if unsafe(result):
            refused.append(result)
            continue
        old = known.get(result.case.id)
        first = result.findings[0].message if result.findings else "fails"
        entries.append(
            Expectation(
                result.case.id,
                "fail",
                old.reason if old and old.reason else first[:200],
                old.issue if old else "",
            ).as_dict()
        )
    return entries, refused


def write(path: pathlib.Path, entries: List[Dict[str, str]]) -> None:
    path.write_text(
        json.dumps(entries, indent=2, ensure_ascii=False) + "\n", encoding="utf-8", errors="backslashreplace"
    )
