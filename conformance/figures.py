"""The headline figures of a run, one per class of finding, and the one table every writer renders them from.

  safe             no safety finding anywhere, cases and stress tier in ONE count; otherwise how many
  host layouts     findings caused only by a layout the suite planted on the host (hard links, FIFOs, modes)
  documented       `doc` cases of level `must` (behaviour the documentation states) free of documented findings
  wording          `doc` cases of level `should` that pin the documentation's strings (it lets them change)
  suggested        `doc` cases of level `should` that pin a safeguard it only suggests ("Consider...")
  reference-exact  `reference` cases free of reference findings
  hardening        `hardening` cases free of hardening findings
  signalling       cases with an `is_error` expectation free of signalling findings
  robustness       exceptions that were not the implementation's error signal
  cost             the stress tier's cost findings, when it ran
  deployment       the deployment tier, when it ran: its safety findings (counted in `safe` too), the lost-updates
                   rate per thousand commands, or why it was skipped
  conformant       under the run's profile: safe, and every case that gates under it passes (tiers.gates);
                   "not judged" when no such case ran

`conformant` is what the exit status says before expectations: the two cannot disagree. A case cut short by a
crash or a hang counts as failing its tier too: its expectations could not be checked.

`ROWS` is the one description of the figures: the text summary, the Markdown report and the HTML pages all
render it, from the same `as_dict()` values (a page can be remade from a published JSON report).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Dict, List, Optional, Tuple

from .documentation import suggested
from .results import CUT_SHORT, PASS, SKIP, CaseResult, RunResult, case_state
from .tiers import (
    COST,
    DOCUMENTED,
    EVERY_PROFILE,
    HARDENING,
    MUST,
    REFERENCE,
    SHOULD,
    SIGNALLING,
    FindingClass,
    class_rows,
    describe_profile,
    gates,
    gating_case,
    unsafe_classes,
)


def _cut_short(result: CaseResult) -> bool:
    """The case ended in a state that cut it short (timeout, crash, restart, error: results.CUT_SHORT)."""
    return result.state in CUT_SHORT.values()


def tier_passed(result: CaseResult) -> bool:
    """The case's own expectations hold (judged in its tier's class) and nothing cut it short."""
    return not result.failed_in(result.case.tier) and not _cut_short(result)


def gate_failed(result: CaseResult, profile: str) -> bool:
    """The case fails under `profile`: its state (results.case_state, the one decision), never decided here."""
    if result.state == SKIP:
        return False
    return case_state(result.findings, profile, result.case) != PASS


def _has_signal_check(result: CaseResult) -> bool:
    return any(isinstance(step.get("is_error"), bool) for step in result.case.steps)


def _ratio(results: List[CaseResult], passed: Callable[[CaseResult], bool]) -> Tuple[int, int]:
    return sum(1 for result in results if passed(result)), len(results)


@dataclasses.dataclass(frozen=True)
class Figures:
    safety_findings: int
    """Every safety finding of the run: cases and stress tier together."""
    unsafe_cases: int
    stress_safety: int
    """Of `safety_findings`, those of the stress tier."""
    documented: Tuple[int, int]
    wording: Tuple[int, int]
    suggested: Tuple[int, int]
    reference: Tuple[int, int]
    hardening: Tuple[int, int]
    signalling: Tuple[int, int]
    cost_findings: int
    stress_ran: bool
    deployment_safety: int
    """Of `safety_findings`, those of the deployment tier (lost updates, torn reads, tenant leaks, half-applied
    calls)."""
    deployment_ran: bool
    lost_per_thousand: Optional[float]
    """The deployment tier's lost (and duplicated) updates per thousand commands; None when that check did not run."""
    deployment_skipped: List[str]
    """Why the deployment tier, or one of its checks, did not run (shown, never silent)."""
    passed: Tuple[int, int]
    skipped: int
    profile: str
    gating: Tuple[int, int]
    """Cases that gate under the profile: (passing, run)."""
    gating_failures: int
    """Cases that fail under the profile, gating cases or not (a safety finding fails any case)."""
    by_class: Dict[str, Tuple[int, int]] = dataclasses.field(default_factory=dict)
    """(findings, cases with one) of each class with a figure of its own (tiers.FindingClass.figure); shown as
    `<slug>_findings` and `<slug>_cases`."""

    @property
    def safe(self) -> bool:
        return self.safety_findings == 0

    @property
    def conformant(self) -> Optional[bool]:
        """Safe, and nothing fails under the profile; None (not judged) when no gating case ran."""
        if not self.safe or self.gating_failures or self.cost_findings:
            return False
        return True if self.gating[1] else None

    def as_dict(self) -> Dict[str, Any]:
        shown: Dict[str, Any] = {"safe": self.safe, "conformant": self.conformant}
        shown.update(
            (field.name, list(value) if isinstance(value, tuple) else value)
            for field in dataclasses.fields(self)
            if field.name != "by_class"
            for value in [getattr(self, field.name)]
        )
        for row in class_rows():
            if row.name in self.by_class:
                shown[f"{row.slug}_findings"], shown[f"{row.slug}_cases"] = self.by_class[row.name]
        return shown


def figures(run: RunResult) -> Figures:
    ran = [result for result in run.results if result.status != SKIP]
    profile = run.profile

    def doc(level: str, suggestion: bool) -> List[CaseResult]:
        return [
            r for r in ran
            if r.case.tier == DOCUMENTED and r.case.level == level and suggested(r.case.cite) == suggestion
        ]

    def tier(name: str) -> List[CaseResult]:
        return [r for r in ran if r.case.tier == name]

    unsafe = unsafe_classes()  # the rows' classes that make a run unsafe (safety)
    stress = run.stress or []
    stress_safety = sum(item.get("class") in unsafe for item in stress)
    deployment = run.deployment or {}
    deployment_safety = sum(item.get("class") in unsafe for item in deployment.get("findings", []))
    lost = deployment.get("figures", {}).get("lost-updates")
    return Figures(
        safety_findings=sum(finding.cls in unsafe for r in ran for finding in r.findings) + stress_safety
        + deployment_safety,
        unsafe_cases=sum(any(finding.cls in unsafe for finding in result.findings) for result in ran),
        stress_safety=stress_safety,
        documented=_ratio([r for r in tier(DOCUMENTED) if r.case.level == MUST], tier_passed),
        wording=_ratio(doc(SHOULD, False), tier_passed),
        suggested=_ratio(doc(SHOULD, True), tier_passed),
        reference=_ratio(tier(REFERENCE), tier_passed),
        hardening=_ratio(tier(HARDENING), tier_passed),
        signalling=_ratio(
            [r for r in ran if _has_signal_check(r)], lambda r: not r.failed_in(SIGNALLING) and not _cut_short(r)
        ),
        cost_findings=sum(item.get("class") == COST for item in stress),
        stress_ran=run.stress is not None,
        deployment_safety=deployment_safety,
        deployment_ran=run.deployment is not None,
        lost_per_thousand=float(lost["per_thousand"]) if lost else None,
        deployment_skipped=[str(note) for note in deployment.get("notes", [])],
        passed=_ratio(ran, lambda r: r.status == PASS),
        skipped=len(run.results) - len(ran),
        profile=profile,
        gating=_ratio(
            [r for r in ran if gating_case(profile, r.case.tier, r.case.level)], lambda r: not gate_failed(r, profile)
        ),
        gating_failures=sum(gate_failed(result, profile) for result in ran),
        by_class={
            row.name: (
                sum(finding.cls == row.name for r in ran for finding in r.findings),
                sum(result.failed_in(row.name) for result in ran),
            )
            for row in class_rows()
            if row.figure is not None
        },
    )


# --- the one table of figures -------------------------------------------------------------------


def _pair(value: Any) -> str:
    return f"{value[0]}/{value[1]}" if isinstance(value, (list, tuple)) and len(value) == 2 else str(value)


def _safe_text(f: Dict[str, Any]) -> str:
    if f.get("safe"):
        return "yes"
    text = f"NO: {f.get('safety_findings', 0)} safety findings"
    if f.get("unsafe_cases"):
        text += f" in {f['unsafe_cases']} cases"
    if f.get("stress_safety"):
        text += f" ({f['stress_safety']} of them in the stress tier)"
    if f.get("deployment_safety"):
        text += f" ({f['deployment_safety']} of them in the deployment tier)"
    return text


def _deployment_text(f: Dict[str, Any]) -> str:
    if not f.get("deployment_ran"):
        return "not run (--deployment)"  # a column of the matrix page whose report did not ask for it
    parts = [f"{f.get('deployment_safety', 0)} findings"]
    if f.get("lost_per_thousand") is not None:
        parts.append(f"{f['lost_per_thousand']:g} lost or duplicated updates per thousand commands")
    skipped = f.get("deployment_skipped") or []
    if skipped:
        parts.append(f"{len(skipped)} skipped ({skipped[0]})")
    return "; ".join(parts)


def _conformant_text(f: Dict[str, Any]) -> str:
    verdict = f.get("conformant")
    passing, ran = f.get("gating", [0, 0])
    if verdict is None:
        return f"not judged: no case that gates under the {f.get('profile')} profile ran"
    if verdict:
        return f"yes: safe, and all {ran} cases that gate under the {f.get('profile')} profile pass"
    reasons = []
    if not f.get("safe"):
        reasons.append("not safe")
    if f.get("gating_failures"):
        reasons.append(f"{f['gating_failures']} cases fail under the {f.get('profile')} profile")
    if f.get("cost_findings"):
        reasons.append(f"{f['cost_findings']} cost findings")
    return "no: " + ", ".join(reasons)


def _counted(f: Dict[str, Any], tier: str, level: str = "") -> str:
    counts = gates(str(f.get("profile", "standard")), tier, tier, level or SHOULD)
    return "gates" if counts else "shown, not gating"


@dataclasses.dataclass(frozen=True)
class Row:
    """One figure: its name, what it counts, how its value reads, whether it holds, and whether it is shown."""

    key: str
    name: str
    meaning: str
    text: Callable[[Dict[str, Any]], str]
    ok: Callable[[Dict[str, Any]], bool]
    shown: Callable[[Dict[str, Any]], bool] = lambda f: True
    headline: bool = False
    cls: str = ""
    """The class of finding the figure counts (a class's own figure), or empty."""


def _all_pass(key: str) -> Callable[[Dict[str, Any]], bool]:
    return lambda f: _pair(f.get(key)) == f"{f.get(key, [0, 0])[1]}/{f.get(key, [0, 0])[1]}"


def _counted_row(key: str, name: str, meaning: str, tier: str, level: str = "") -> Row:
    """A row of passed/all cases that says whether the tier (at that level) gates the verdict."""
    return Row(key, name, meaning, lambda f: f"{_pair(f.get(key))} ({_counted(f, tier, level)})", _all_pass(key))


def _class_row(cls: FindingClass) -> Row:
    """The figure of a class shown on its own (host layouts, robustness): its findings and the cases they are in,
    and whether it gates when it does not gate under every profile."""
    assert cls.figure is not None
    found, cases = f"{cls.slug}_findings", f"{cls.slug}_cases"

    def text(f: Dict[str, Any]) -> str:
        if cls.gates == EVERY_PROFILE:
            return f"{f.get(found, 0)} in {f.get(cases, 0)} cases"
        return f"{f.get(found, 0)} findings in {f.get(cases, 0)} cases ({_counted(f, cls.name)})"

    return Row(found, cls.figure.name, cls.figure.meaning, text, lambda f: not f.get(found), cls=cls.name)


_FIXED_ROWS: Tuple[Row, ...] = (
    Row(
        "safe", "safe",
        "nothing outside the root read, changed, created or removed; no canary, outside name or size, host path or "
        "traceback shown; no data lost; no hang, crash or unbounded output",
        _safe_text, lambda f: bool(f.get("safe")), headline=True,
    ),
    Row(
        "documented", "documented",
        "must cases: behaviour the documentation states, every reading it allows accepted",
        lambda f: _pair(f.get("documented")), _all_pass("documented"), headline=True,
    ),
    _counted_row(
        "wording", "documented wording",
        "should cases: the documentation's strings, which it lets an implementation change", DOCUMENTED, SHOULD,
    ),
    _counted_row(
        "suggested", "suggested safeguards",
        "should cases: refusals the documentation suggests (\"Consider...\"); escaping is a safety finding anyway",
        DOCUMENTED, SHOULD,
    ),
    _counted_row(
        "reference", "reference-exact", "the reference's decisions (docs/spec-notes.md), byte for byte", REFERENCE,
    ),
    _counted_row(
        "hardening", "hardening", "safe refusals not required on this platform", HARDENING,
    ),
    Row(
        "signalling", "signalling",
        "cases whose is_error agrees with what their output says",
        lambda f: _pair(f.get("signalling")), _all_pass("signalling"),
    ),
    Row(
        "cost_findings", "cost (stress)",
        "time or memory out of proportion to the input, in the stress tier",
        lambda f: f"{f.get('cost_findings', 0)} findings", lambda f: not f.get("cost_findings"),
        shown=lambda f: bool(f.get("stress_ran")),
    ),
    Row(
        "deployment_safety", "deployment",
        "several sessions over one store: lost updates (tokens counted, the rate per thousand commands), torn "
        "reads, one tenant's text in another's output, calls cut off half applied; every finding is a safety one",
        _deployment_text, lambda f: not f.get("deployment_safety"),
        shown=lambda f: bool(f.get("deployment_ran")),
    ),
    Row(
        "conformant", "conformant",
        "under the run's profile: safe, and every case that gates under it passes",
        _conformant_text, lambda f: f.get("conformant") is not False, headline=True,
    ),
)


def all_rows() -> Tuple[Row, ...]:
    """Every figure in order: the fixed ones, and each class's own figure (tiers.CLASS_ROWS) after the figure it
    names (`after`), so that a class added as a row is a figure too."""
    placed = list(_FIXED_ROWS)
    for cls in class_rows():
        if cls.figure is None:
            continue
        keys = [row.key for row in placed]
        at = keys.index(cls.figure.after) + 1 if cls.figure.after in keys else keys.index("conformant")
        placed.insert(at, _class_row(cls))
    return tuple(placed)


ROWS: Tuple[Row, ...] = all_rows()
"""The figures of the rows as they are written (all_rows() for classes added since)."""


def rows(f: Dict[str, Any]) -> List[Row]:
    """The rows shown for the figures `f` (an `as_dict()`), in order."""
    return [row for row in all_rows() if row.shown(f)]


def text_lines(f: Dict[str, Any]) -> List[str]:
    """The figures as the terminal summary shows them."""
    lines = [f"{row.name}: {row.text(f)}" for row in rows(f) if row.key != "conformant"]
    lines.append(f"profile {f.get('profile')}: {describe_profile(str(f.get('profile', 'standard')))}")
    lines.append(f"conformant: {_conformant_text(f)}")
    return lines


# --- the verdict the exit status gives ----------------------------------------------------------

EXIT_OK, EXIT_FAILED, EXIT_INTERRUPTED = 0, 1, 130


def run_verdict(run: RunResult, strict: bool, violations: int = 0) -> Tuple[int, str]:
    """(exit status, why): the one place that decides a run's exit status. Not safe is a failure whatever
    the expectations say; a failure under the profile that the expectations do not list is one; so is a cost
    finding, a protocol violation, an unexpected pass or a stale expectation (`strict` is kept for old callers)."""
    numbers = figures(run)
    reasons = []
    if not numbers.safe:
        reasons.append(f"not safe: {numbers.safety_findings} safety findings (no expectation can cover one)")
    outcomes = [result.outcome for result in run.results]
    failed = outcomes.count("fail")
    if failed and numbers.safe:
        reasons.append(f"{failed} cases fail under the {run.profile} profile")
    elif failed > numbers.unsafe_cases:
        reasons.append(f"{failed - numbers.unsafe_cases} more cases fail under the {run.profile} profile")
    if numbers.cost_findings:
        reasons.append(f"{numbers.cost_findings} cost findings in the stress tier")
    if violations:
        reasons.append(f"{violations} adapter protocol messages do not follow their schemas")
    if "xpass" in outcomes:  # a stale whole-case entry: the case passes (D-BASELINE-STALE)
        reasons.append(f"{outcomes.count('xpass')} unexpected passes (stale expectations)")
    if run.stale:
        reasons.append(f"{len(run.stale)} stale expectations")
    if reasons:
        return EXIT_FAILED, "; ".join(reasons)
    if run.interrupted:
        return EXIT_INTERRUPTED, "interrupted before every case ran"
    expected = outcomes.count("xfail")
    if expected:
        return EXIT_OK, (
            f"safe; every failure under the {run.profile} profile is a known deviation ({expected} expected "
            "failures in the expectations file), so the run passes"
        )
    if numbers.conformant is None:
        return EXIT_OK, f"safe; no case that gates under the {run.profile} profile ran"
    return EXIT_OK, f"safe and conformant under the {run.profile} profile"
