"""The headline figures of a run, one per class of finding, in the order an implementer asks for them:

  safe             no safety finding anywhere (cases and stress); otherwise how many
  documented       `doc` cases of level `must` (behaviour the documentation states) free of documented findings;
                   the documented wording (`doc` cases of level `should`) beside it
  reference-exact  `reference` cases free of reference findings
  hardening        `hardening` cases free of hardening findings (counted for pass/fail only in that profile)
  signalling       cases with an `is_error` expectation free of signalling findings
  robustness       exceptions that were not the implementation's error signal
  cost             the stress tier's cost findings, when it ran

conformant = safe and every documented `must` case passes. A case cut short by a crash or a hang counts
as failing its tier too: its expectations could not be checked.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Dict, List, Tuple

from .runner import PASS, SKIP, CaseResult, RunResult
from .tiers import COST, DOCUMENTED, HARDENING, REFERENCE, ROBUSTNESS, SAFETY, SIGNALLING, counted


def _cut_short(result: CaseResult) -> bool:
    return any(finding.kind in ("crashed", "timed_out") for finding in result.findings)


def tier_passed(result: CaseResult) -> bool:
    """The case's own expectations hold (judged in its tier's class)."""
    return not result.failed_in(result.case.tier) and not _cut_short(result)


def _has_signal_check(result: CaseResult) -> bool:
    return any(isinstance(step.get("is_error"), bool) for step in result.case.steps)


def _ratio(results: List[CaseResult], passed: Any) -> Tuple[int, int]:
    return sum(1 for result in results if passed(result)), len(results)


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


@dataclasses.dataclass(frozen=True)
class Figures:
    safety_findings: int
    unsafe_cases: int
    stress_safety: int
    documented: Tuple[int, int]
    wording: Tuple[int, int]
    reference: Tuple[int, int]
    hardening: Tuple[int, int]
    signalling: Tuple[int, int]
    robustness_findings: int
    robustness_cases: int
    cost_findings: int
    stress_ran: bool
    passed: Tuple[int, int]
    skipped: int
    profile: str

    @property
    def safe(self) -> bool:
        return self.safety_findings == 0 and self.stress_safety == 0

    @property
    def conformant(self) -> bool:
        passed, ran = self.documented
        return self.safe and ran > 0 and passed == ran

    @property
    def hardening_counted(self) -> bool:
        return HARDENING in counted(self.profile)

    def as_dict(self) -> Dict[str, Any]:
        shown: Dict[str, Any] = {"safe": self.safe, "conformant": self.conformant}
        shown.update(
            (field.name, list(value) if isinstance(value, tuple) else value)
            for field in dataclasses.fields(self)
            for value in [getattr(self, field.name)]
        )
        return shown

    def lines(self) -> List[str]:
        def pair(value: Tuple[int, int]) -> str:
            return f"{value[0]}/{value[1]}"

        if self.safe:
            safe = "safe: yes (no safety finding)"
        else:
            safe = f"safe: NO ({self.safety_findings} safety findings in {self.unsafe_cases} cases"
            safe += f", {self.stress_safety} in the stress tier)" if self.stress_ran else ")"
        hardening = "counted" if self.hardening_counted else "not counted: opt in with --profile hardening"
        lines = [
            safe,
            f"documented: {pair(self.documented)} must cases behave as documented; "
            f"documented wording {pair(self.wording)}",
            f"reference-exact: {pair(self.reference)} cases match the reference's decisions",
            f"hardening: {pair(self.hardening)} ({hardening})",
            f"signalling: {pair(self.signalling)} cases set is_error as their output says",
            f"robustness: {self.robustness_findings} unexpected exceptions in {self.robustness_cases} cases",
        ]
        if self.stress_ran:
            lines.append(f"cost (stress): {self.cost_findings} findings")
        lines.append(f"conformant: {_yes(self.conformant)} (safe, and every documented must case passes)")
        return lines


def figures(run: RunResult) -> Figures:
    ran = [result for result in run.results if result.status != SKIP]

    def tier(name: str, level: str = "") -> List[CaseResult]:
        return [r for r in ran if r.case.tier == name and (not level or r.case.level == level)]

    stress = run.stress or []
    return Figures(
        safety_findings=sum(finding.cls == SAFETY for result in ran for finding in result.findings),
        unsafe_cases=sum(result.failed_in(SAFETY) for result in ran),
        stress_safety=sum(item.get("class") == SAFETY for item in stress),
        documented=_ratio(tier(DOCUMENTED, "must"), tier_passed),
        wording=_ratio(tier(DOCUMENTED, "should"), tier_passed),
        reference=_ratio(tier(REFERENCE), tier_passed),
        hardening=_ratio(tier(HARDENING), tier_passed),
        signalling=_ratio(
            [r for r in ran if _has_signal_check(r)], lambda r: not r.failed_in(SIGNALLING) and not _cut_short(r)
        ),
        robustness_findings=sum(finding.cls == ROBUSTNESS for result in ran for finding in result.findings),
        robustness_cases=sum(result.failed_in(ROBUSTNESS) for result in ran),
        cost_findings=sum(item.get("class") == COST for item in stress),
        stress_ran=run.stress is not None,
        passed=_ratio(ran, lambda r: r.status == PASS),
        skipped=len(run.results) - len(ran),
        profile=run.profile,
    )
