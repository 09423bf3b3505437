"""What a run produces: one result per case and the run's whole record, shared by the runner, the
expectations, the figures and every report writer.

A case's `state` is what the run found, decided by one function (`case_state`): pass, fail, timeout, crash,
restart, skip or error. Its `status` is that state as pass, fail or skip (every state but pass and skip fails), and
its `outcome` is the status read against the expectations file (pass, fail, skip, xfail, xpass), set once, when the
result is made. Every report and the exit status read these; none decides pass or fail on its own (D-VERDICT-STATE).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Dict, List, Optional, Sequence

from . import CASE_FORMAT_VERSION, PROTOCOL_VERSION, SUITE_VERSION
from .cases import Case
from .checks import Finding
from .tiers import DEFAULT_PROFILE, gates

PASS, FAIL, SKIP = "pass", "fail", "skip"
TIMEOUT, CRASH, RESTART, ERROR = "timeout", "crash", "restart", "error"
STATES = (PASS, FAIL, TIMEOUT, CRASH, RESTART, SKIP, ERROR)
"""Every state a case can end in (`case_state`)."""
CUT_SHORT: Dict[str, str] = {"crashed": CRASH, "timed_out": TIMEOUT, "restarted": RESTART, "error": ERROR}
"""A finding kind that cut the case short -> the state it gives, first match wins: a crash, then a hang, then a
restart of the target inside the case, then a case the harness could not finish. Each fails the case whatever the
profile, the case's tier or its level: the call it cut short was never judged (D-VERDICT-HANG)."""
OUTCOMES = ("pass", "fail", "xfail", "xpass", "skip")


def case_state(findings: Sequence[Finding], profile: str, case: Case) -> str:
    """The one decision of a case's state under `profile` from its findings (a skipped case never gets here)."""
    kinds = {finding.kind for finding in findings}
    for kind, state in CUT_SHORT.items():
        if kind in kinds:
            return state
    return FAIL if any(gates(profile, finding.cls, case.tier, case.level) for finding in findings) else PASS


def shown_state(state: str, outcome: str) -> str:
    """The word a report shows for a case: its outcome, or the state that cut it short in its place (a timeout
    reads as TIMEOUT, never as a plain fail, and never as a pass)."""
    return state if state in CUT_SHORT.values() else outcome


def status_of(state: str) -> str:
    """A state as pass, fail or skip: every state but pass and skip fails."""
    return state if state in (PASS, SKIP) else FAIL


@dataclasses.dataclass
class CaseResult:
    case: Case
    status: str
    findings: List[Finding] = dataclasses.field(default_factory=list)
    reason: str = ""
    seconds: float = 0.0
    outcome: str = ""
    """After expectations: pass, fail, skip, xfail (expected failure), xpass (unexpected pass)."""
    expectation: Optional[Dict[str, str]] = None
    success_openings: List[str] = dataclasses.field(default_factory=list)
    """The first words of outputs that were expected to succeed and did (for the signalling suggestion)."""
    state: str = ""
    """One of STATES (`case_state`); a result made with a status alone gets that status as its state."""

    def __post_init__(self) -> None:
        if not self.state:
            self.state = self.status
        self.status = status_of(self.state)

    @classmethod
    def judged(cls, case: Case, findings: List[Finding], profile: str, **fields: Any) -> CaseResult:
        """A run case's result, its state (and so its status) from `case_state`."""
        state = case_state(findings, profile, case)
        return cls(case, status_of(state), findings, state=state, **fields)

    def shown(self) -> str:
        """The word every report shows for the case (`shown_state`)."""
        return shown_state(self.state, self.outcome or self.status)

    def classes(self) -> List[str]:
        """The classes of its findings, each once, in the order found."""
        return list(dict.fromkeys(finding.cls for finding in self.findings))

    def failed_in(self, cls: str) -> bool:
        return any(finding.cls == cls for finding in self.findings)


Classify = Callable[[CaseResult], None]
"""Sets a result's `outcome` (and `expectation`) from its status; the default reads no expectations."""


def as_found(result: CaseResult) -> None:
    result.outcome = result.status


@dataclasses.dataclass
class RunResult:
    target: str
    implementation: Dict[str, str]
    storage: str
    results: List[CaseResult]
    restarts: int
    seconds: float
    warnings: List[str] = dataclasses.field(default_factory=list)
    stale: List[Dict[str, str]] = dataclasses.field(default_factory=list)
    profile: str = DEFAULT_PROFILE
    signalling: str = ""
    """How the target's plain results and exceptions were read (refmem_harness/signalling.py), for the report."""
    stress: Optional[List[Dict[str, Any]]] = None
    """The stress tier's findings ({"class", "check", "detail"}) when it ran; None when it did not."""
    deployment: Optional[Dict[str, Any]] = None
    """The deployment tier's report ({"findings", "notes", "figures"}: conformance/deployment.py) when it ran."""
    interrupted: bool = False
    """The run was stopped (Ctrl-C, SIGTERM) before every case ran: its figures cover the cases that did."""
    versions: Dict[str, Any] = dataclasses.field(
        default_factory=lambda: {
            "suite": SUITE_VERSION,
            "protocol": PROTOCOL_VERSION,
            "case_format": CASE_FORMAT_VERSION,
        }
    )
