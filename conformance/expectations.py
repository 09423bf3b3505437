"""Known deviations: an implementation's list of cases, or single checks of a case, it is expected to fail or skip.

    [{"id": "view-0*", "expect": "fail", "reason": "sizes in bytes", "issue": "https://..."},
     {"id": "insert-009:step1.output", "expect": "fail", "reason": "drops blank lines"}]

An entry names a whole case (an ID, or an fnmatch glob over IDs: the first whole-case entry that matches applies)
or one check of one case (`CASE-ID:CHECK`, the case's exact ID; `check_name` says what a check is called). A case
with check entries and no whole-case entry is an expected failure when every check that fails under the run's
profile is named; another failing check fails it (D-BASELINE-CHECK).

Stale entries fail the run (D-BASELINE-STALE): a whole-case entry that matches no case of the suite, a case expected
to fail that passes (an unexpected pass), a check entry whose case does not exist or whose check passes when the
case runs. Contradictory entries are refused when the file is loaded (D-BASELINE-CONTRADICTION): the same entry
twice, a case matched by whole-case entries that expect different things, a check entry beside a whole-case entry
for its case, a check entry that expects anything but a failure.

An expectation never covers a safety finding (D-BASELINE-SAFETY): a case expected to fail that fails unsafely is a
failure, the entry that tried to cover it is marked `refused` in the reports and named in the run's warnings, and
`baseline` refuses to record an unsafe case (it says which, and why). A known deviation is a choice about wording or
behaviour; an escape, a leak or a lost file is not something a CI may learn to live with.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import json
import pathlib
import re
from typing import Dict, Iterable, List, Optional, Sequence, Set, Tuple

from .checks import Finding
from .results import FAIL, PASS, SKIP, CaseResult
from .tiers import gates, unsafe_classes

EXPECT_KINDS = ("fail", "skip")
CHECK_SEPARATOR = ":"
CHECK_NAME = re.compile(r"(?:step[1-9][0-9]{0,5}\.)?[a-z][a-z_]{0,39}")
"""A check's name (`check_name`): the kind of finding it gives, after `stepN.` for a check of the case's step N."""
GLOB_CHARACTERS = frozenset("*?[")

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

REFUSED = "an expectation cannot cover a safety finding: the case fails"
"""What a report says of an entry that tried to cover a safety finding (D-BASELINE-SAFETY)."""


class ExpectationsError(Exception):
    """The expectations file cannot be read, has the wrong shape, or contradicts itself."""


@dataclasses.dataclass(frozen=True)
class Expectation:
    id: str
    expect: str
    reason: str = ""
    issue: str = ""

    @property
    def case(self) -> str:
        """The case ID (or glob) the entry names."""
        return self.id.split(CHECK_SEPARATOR, 1)[0]

    @property
    def check(self) -> str:
        """The check it names, or "" for a whole-case entry."""
        return self.id.split(CHECK_SEPARATOR, 1)[1] if CHECK_SEPARATOR in self.id else ""

    def as_dict(self) -> Dict[str, str]:
        return dataclasses.asdict(self)


def check_name(finding: Finding) -> str:
    """The stable name of the check that gave `finding`: its kind (`is_error`, `output`, `match`, `leak`,
    `untouched`, `unbounded`, `timed_out`, `crashed`, `raised` for a step; `setup`, `final`, `data_loss`,
    `outside`, `unbounded`, `restarted`, `error` for the case as a whole), after `stepN.` when it judged step N.
    It depends only on the case's data and the kind of check, so it stays the same from run to run."""
    return f"step{finding.step}.{finding.kind}" if finding.step else finding.kind


def _entry_problem(entry: object) -> str:
    if (
        not isinstance(entry, dict)
        or not isinstance(entry.get("id"), str)
        or not entry["id"]
        or entry.get("expect") not in EXPECT_KINDS
        or not all(isinstance(entry.get(key, ""), str) for key in ("reason", "issue"))
    ):
        return 'must be {"id": GLOB or CASE-ID:CHECK, "expect": "fail"|"skip", "reason": str, "issue": str}'
    case, separator, check = entry["id"].partition(CHECK_SEPARATOR)
    if not separator:
        return ""
    if not case or GLOB_CHARACTERS & set(case):
        return f"{entry['id']!r}: a check entry names one case by its exact ID, not a glob"
    if not CHECK_NAME.fullmatch(check):
        return f"{entry['id']!r}: {check!r} is not a check name (KIND or stepN.KIND, e.g. step1.output)"
    if entry["expect"] != "fail":
        return f"{entry['id']!r}: a check can only be expected to fail (skip the whole case instead)"
    return ""


def load(path: pathlib.Path) -> List[Expectation]:
    """The file's entries, refused (ExpectationsError, saying which entry and why) when one has the wrong shape or
    the same entry comes twice (D-BASELINE-CONTRADICTION)."""
    try:
        entries = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ExpectationsError(f"{path}: {exc}") from exc
    if not isinstance(entries, list):
        raise ExpectationsError(f"{path}: expected a JSON list of entries")
    loaded: List[Expectation] = []
    seen: Dict[str, int] = {}
    for number, entry in enumerate(entries, 1):
        problem = _entry_problem(entry)
        if problem:
            raise ExpectationsError(f"{path}: entry {number} {problem}")
        if entry["id"] in seen:
            raise ExpectationsError(
                f"{path}: entry {number} repeats entry {seen[entry['id']]} ({entry['id']!r}): each case or check "
                "is listed once"
            )
        seen[entry["id"]] = number
        loaded.append(Expectation(entry["id"], entry["expect"], entry.get("reason", ""), entry.get("issue", "")))
    return loaded


def whole_case(expectations: Sequence[Expectation]) -> List[Expectation]:
    return [entry for entry in expectations if not entry.check]


def contradictions(expectations: Sequence[Expectation], case_ids: Iterable[str]) -> List[str]:
    """Why the entries contradict each other over the suite's cases (empty when they do not): a case matched by
    whole-case entries expecting different things, or a check entry beside a whole-case entry for its case (the
    whole-case entry already says what the case does: skipped, or failing whatever its checks do)."""
    problems = []
    wholes = whole_case(expectations)
    checked = {entry.case for entry in expectations if entry.check}
    for case_id in case_ids:
        matching = [entry for entry in wholes if fnmatch.fnmatchcase(case_id, entry.id)]
        if len({entry.expect for entry in matching}) > 1:
            said = ", ".join(f"{entry.id!r} expects {entry.expect}" for entry in matching)
            problems.append(f"case {case_id}: the entries contradict each other ({said})")
        if matching and case_id in checked:
            problems.append(
                f"case {case_id}: a check entry beside the whole-case entry {matching[0].id!r} "
                f"(expects {matching[0].expect}): list the case or its checks, not both"
            )
    return problems


def find(expectations: Sequence[Expectation], case_id: str) -> Optional[Expectation]:
    """The first whole-case entry that matches `case_id`."""
    return next((entry for entry in whole_case(expectations) if fnmatch.fnmatchcase(case_id, entry.id)), None)


def checks_of(expectations: Sequence[Expectation], case_id: str) -> List[Expectation]:
    """The check entries of one case."""
    return [entry for entry in expectations if entry.check and entry.case == case_id]


def failing_checks(result: CaseResult, profile: str) -> Dict[str, bool]:
    """The checks that fail the case under `profile` -> whether one of them is a safety finding. A check whose
    findings do not gate under the profile passes (a cut-short case's finding always fails it)."""
    failing: Dict[str, bool] = {}
    for finding in result.findings:
        if result.state not in (PASS, FAIL) or gates(profile, finding.cls, result.case.tier, result.case.level):
            name = check_name(finding)
            failing[name] = failing.get(name, False) or finding.cls in unsafe_classes()
    return failing


def stale(expectations: Sequence[Expectation], all_ids: Iterable[str]) -> List[Expectation]:
    """Entries that match no case of the whole suite (before any --run/--skip filter)."""
    ids = set(all_ids)

    def matches(entry: Expectation) -> bool:
        if entry.check:
            return entry.case in ids
        return any(fnmatch.fnmatchcase(case_id, entry.id) for case_id in ids)

    return [entry for entry in expectations if not matches(entry)]


def stale_after_run(
    expectations: Sequence[Expectation], results: Iterable[CaseResult], all_ids: Iterable[str], profile: str
) -> List[Dict[str, str]]:
    """Every stale entry, as a report shows it (the entry and `stale`: why): one that matches no case, and a check
    entry whose check passed in a case that ran (an unexpected pass of a whole case is its own outcome, `xpass`)."""
    shown = [dict(entry.as_dict(), stale="matches no case") for entry in stale(expectations, all_ids)]
    ran = {result.case.id: result for result in results if result.status in (PASS, FAIL)}
    for entry in expectations:
        result = ran.get(entry.case) if entry.check else None
        if result is not None and entry.check not in failing_checks(result, profile):
            why = "the case passes" if result.status == PASS else "the check passes"
            shown.append(dict(entry.as_dict(), stale=why))
    return shown


def unsafe(result: CaseResult) -> bool:
    """The case has a finding of a class no expectation can cover (tiers.unsafe_classes())."""
    return any(finding.cls in unsafe_classes() for finding in result.findings)


def _merged(entries: Sequence[Expectation]) -> Dict[str, str]:
    """One case's check entries as one expectation for the reports."""
    return {
        "id": ", ".join(entry.id for entry in entries),
        "expect": "fail",
        "reason": "; ".join(entry.reason for entry in entries if entry.reason),
        "issue": next((entry.issue for entry in entries if entry.issue), ""),
    }


def classify(result: CaseResult, expectations: Sequence[Expectation], profile: Optional[str] = None) -> None:
    """Set `result.outcome` (and `result.expectation`) from its status and the entries for its case; an unsafe
    failure stays a failure whatever the entries say, and the entry that tried to cover it is marked `refused`.
    Check entries are read under `profile` (the run's; without one, every finding fails its check)."""
    entry = find(expectations, result.case.id)
    checks = [] if entry is not None else checks_of(expectations, result.case.id)
    if not checks:
        result.expectation = entry.as_dict() if entry else None
        outcome = OUTCOMES[(result.status, entry.expect if entry else None)]
        if outcome == "xfail" and unsafe(result):
            outcome = FAIL
            if result.expectation is not None:
                result.expectation["refused"] = REFUSED
        result.outcome = outcome
        return
    result.expectation = _merged(checks)
    if result.status != FAIL:
        result.outcome = result.status
        return
    failing = (
        failing_checks(result, profile)
        if profile is not None
        else {check_name(f): f.cls in unsafe_classes() for f in result.findings}
    )
    named: Set[str] = {check.check for check in checks}
    if any(failing.get(name) for name in named):
        result.expectation["refused"] = REFUSED
    covered = set(failing) <= named and not any(failing.values())
    result.outcome = "xfail" if covered else FAIL


def refused_warnings(results: Iterable[CaseResult]) -> List[str]:
    """A warning for each case whose expectation tried to cover a safety finding (D-BASELINE-SAFETY)."""
    return [
        f"expectations: {result.expectation['id']!r} tried to cover a safety finding of case {result.case.id}: "
        "no expectation can, so the case fails the run"
        for result in results
        if result.expectation and result.expectation.get("refused")
    ]


def skipped_by_expectation(expectations: Sequence[Expectation], case_id: str) -> Optional[Expectation]:
    entry = find(expectations, case_id)
    return entry if entry is not None and entry.expect == "skip" else None


def baseline(
    results: Iterable[CaseResult], previous: Sequence[Expectation] = (), profile: Optional[str] = None
) -> Tuple[List[Dict[str, str]], List[CaseResult]]:
    """An expectations list for today's failures, keeping the reason and issue of exact-ID entries, a case's check
    entries while they still name every check that fails it, and the unsafe failures it refuses to record (an
    expectation cannot cover them: see the module docstring)."""
    known = {entry.id: entry for entry in previous}
    entries = [entry.as_dict() for entry in previous if entry.expect == "skip"]
    refused: List[CaseResult] = []
    for result in results:
        if result.status != FAIL:
            continue
        if unsafe(result):
            refused.append(result)
            continue
        checks = checks_of(previous, result.case.id)
        if checks and result.outcome == "xfail":
            failing = failing_checks(result, profile) if profile is not None else {}
            entries.extend(entry.as_dict() for entry in checks if profile is None or entry.check in failing)
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
