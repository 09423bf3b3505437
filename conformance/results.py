"""What a run produces: one result per case and the run's whole record, shared by the runner, the
expectations, the figures and every report writer.

A case's `status` is what the run found (pass, fail, skip under the profile); its `outcome` is that status
read against the expectations file (pass, fail, skip, xfail, xpass), set once, when the result is made.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Dict, List, Optional

from . import CASE_FORMAT_VERSION, PROTOCOL_VERSION, SUITE_VERSION
from .cases import Case
from .checks import Finding
from .tiers import DEFAULT_PROFILE

PASS, FAIL, SKIP = "pass", "fail", "skip"
OUTCOMES = ("pass", "fail", "xfail", "xpass", "skip")


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
