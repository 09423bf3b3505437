"""Reports of a run: the human summary, JSON, JUnit XML and Markdown (a CI step summary or a published page).

Two figures describe an implementation, whatever its expectations file says:
  conformant  every `must` case that ran passes (behaviour: success or error, state, no leaks)
  byte-exact  every case that ran passes (the exact wording as well)
"""

from __future__ import annotations

import dataclasses
import json
import pathlib
import xml.etree.ElementTree as ET
from typing import Any, Dict, List

from conformance.runner import PASS, SKIP, CaseResult, RunResult
from conformance.visible import clip, printable, redact, visible


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


@dataclasses.dataclass(frozen=True)
class Figures:
    must_passed: int
    must_ran: int
    all_passed: int
    all_ran: int
    skipped: int

    @property
    def conformant(self) -> bool:
        return self.must_ran > 0 and self.must_passed == self.must_ran

    @property
    def byte_exact(self) -> bool:
        return self.all_ran > 0 and self.all_passed == self.all_ran

    def lines(self) -> List[str]:
        return [
            f"conformant: {_yes(self.conformant)} ({self.must_passed}/{self.must_ran} must cases pass)",
            f"byte-exact: {_yes(self.byte_exact)} ({self.all_passed}/{self.all_ran} cases pass)",
        ]


def figures(run: RunResult) -> Figures:
    ran = [result for result in run.results if result.status != SKIP]
    must = [result for result in ran if result.case.level == "must"]
    return Figures(
        sum(result.status == PASS for result in must),
        len(must),
        sum(result.status == PASS for result in ran),
        len(ran),
        len(run.results) - len(ran),
    )


def counts(run: RunResult) -> Dict[str, int]:
    tally = {name: 0 for name in ("pass", "fail", "xfail", "xpass", "skip")}
    for result in run.results:
        tally[result.outcome or result.status] += 1
    return tally


def _implementation(run: RunResult) -> str:
    info = run.implementation
    text = " ".join(part for part in (info.get("name", "?"), info.get("version", "")) if part)
    return f"{text} ({info.get('language', '?')}, storage: {run.storage})"


# --- human --------------------------------------------------------------------------------------


def describe_failure(result: CaseResult) -> str:
    case = result.case
    lines = [f"{(result.outcome or result.status).upper()} {case.id} [{case.level}] {printable(case.description)}"]
    for finding in result.findings:
        where = f"step {finding.step}: " if finding.step else ""
        lines.append(f"    {where}{finding.kind}: {printable(finding.message)}")
        if finding.detail:
            lines.extend("      " + printable(line) for line in clip(finding.detail, 3000).split("\n"))
        elif finding.actual is not None and finding.kind != "output":
            lines.append("      actual: " + visible(clip(finding.actual, 600)).replace("\n", "\n              "))
    return redact("\n".join(lines))


def summary(run: RunResult, stale: List[Dict[str, str]], strict: bool) -> str:
    tally = counts(run)
    lines = [f"refmem conformance suite {run.versions['suite']}: {_implementation(run)}, target {run.target}"]
    lines += [f"  {line}" for line in figures(run).lines()]
    lines.append(
        "  "
        + ", ".join(f"{count} {name}" for name, count in tally.items())
        + f"; {run.restarts} restarts; {run.seconds:.1f}s"
    )
    for entry in stale:
        lines.append(f"  {'STALE' if strict else 'stale'} expectation {entry['id']!r}: matches no case")
    lines.extend(run.warnings)
    return "\n".join(lines)


# --- JSON ---------------------------------------------------------------------------------------


def _case_dict(result: CaseResult) -> Dict[str, Any]:
    case = result.case
    entry: Dict[str, Any] = {
        "id": case.id,
        "group": case.group,
        "level": case.level,
        "basis": case.raw.get("basis", ""),
        "features": case.features,
        "description": case.description,
        "status": result.status,
        "outcome": result.outcome or result.status,
        "seconds": round(result.seconds, 4),
    }
    if result.reason:
        entry["reason"] = result.reason
    if result.expectation:
        entry["expectation"] = result.expectation
    if result.findings:
        entry["findings"] = json.loads(redact(json.dumps([finding.as_dict() for finding in result.findings])))
    return entry


def as_json(run: RunResult) -> Dict[str, Any]:
    numbers = figures(run)
    return {
        "versions": run.versions,
        "target": run.target,
        "implementation": run.implementation,
        "storage": run.storage,
        "figures": dict(dataclasses.asdict(numbers), conformant=numbers.conformant, byte_exact=numbers.byte_exact),
        "counts": counts(run),
        "restarts": run.restarts,
        "seconds": round(run.seconds, 3),
        "stale_expectations": run.stale,
        "warnings": run.warnings,
        "cases": [_case_dict(result) for result in run.results],
    }


def write_json(run: RunResult, path: pathlib.Path) -> None:
    # A lone surrogate (outputs may hold one) becomes the JSON escape \udXXX through backslashreplace.
    path.write_text(
        json.dumps(as_json(run), indent=2, ensure_ascii=False) + "\n", encoding="utf-8", errors="backslashreplace"
    )


# --- JUnit --------------------------------------------------------------------------------------


def _xml_text(text: str) -> str:
    """XML 1.0 cannot carry most control characters: draw them as escapes."""
    return "".join(
        ch
        if ch in "\t\n\r" or (ord(ch) >= 0x20 and not 0xD800 <= ord(ch) <= 0xDFFF and ch not in "\ufffe\uffff")
        else f"\\x{ord(ch):02x}"
        if ord(ch) < 0x100
        else f"\\u{ord(ch):04x}"
        for ch in text
    )


def write_junit(run: RunResult, path: pathlib.Path) -> None:
    tally = counts(run)
    suite = ET.Element(
        "testsuite",
        {
            "name": "refmem-conformance",
            "tests": str(len(run.results)),
            "failures": str(tally["fail"] + tally["xpass"]),
            "skipped": str(tally["skip"] + tally["xfail"]),
            "time": f"{run.seconds:.3f}",
        },
    )
    for result in run.results:
        testcase = ET.SubElement(
            suite,
            "testcase",
            {
                "classname": f"conformance.{result.case.group}",
                "name": result.case.id,
                "time": f"{result.seconds:.4f}",
            },
        )
        outcome = result.outcome or result.status
        if outcome in ("fail", "xpass"):
            message = result.findings[0].message if result.findings else "unexpected pass"
            failure = ET.SubElement(testcase, "failure", {"message": _xml_text(message[:500])})
            failure.text = _xml_text(describe_failure(result))
        elif outcome in ("skip", "xfail"):
            reason = result.reason or (result.expectation or {}).get("reason", "expected failure")
            ET.SubElement(testcase, "skipped", {"message": _xml_text(f"{outcome}: {reason}"[:500])})
    ET.ElementTree(suite).write(str(path), encoding="utf-8", xml_declaration=True)


# --- Markdown -----------------------------------------------------------------------------------


def _cell(text: str) -> str:
    return printable(clip(text, 160)).replace("|", "\\|").replace("`", "'")


# The Markdown report is a page to read (a CI step summary, a published report): it is bounded.
# The JSON report has every finding.
TABLE_LIMIT = 300
DETAIL_CASES = 30
DETAIL_LIMIT = 1500


def _feature_table(run: RunResult) -> List[str]:
    tally: Dict[str, List[int]] = {}
    for result in run.results:
        if result.status == SKIP:
            continue
        for feature in result.case.features:
            passed, ran = tally.setdefault(feature, [0, 0])
            tally[feature] = [passed + (result.status == PASS), ran + 1]
    rows = [f"| {feature} | {passed}/{ran} |" for feature, (passed, ran) in sorted(tally.items())]
    return ["## By feature", "", "| feature | cases passing |", "|---|---|", *rows, ""] if rows else []


def markdown(run: RunResult, title: str = "") -> str:
    numbers = figures(run)
    info = run.implementation
    lines = [
        f"# {title or 'Memory tool conformance: ' + info.get('name', '?')}",
        "",
        "| | |",
        "|---|---|",
        f"| implementation | {_cell(info.get('name', ''))} {_cell(info.get('version', ''))} |",
        f"| language | {_cell(info.get('language', ''))} |",
        f"| homepage | {_cell(info.get('homepage', '')) or '-'} |",
        f"| storage | {run.storage} |",
        f"| target | `{_cell(run.target)}` |",
        "| suite / protocol / case format | {suite} / {protocol} / {case_format} |".format(**run.versions),
        f"| **conformant** (all `must` cases pass) | **{_yes(numbers.conformant)}**: "
        f"{numbers.must_passed}/{numbers.must_ran} |",
        f"| **byte-exact** (every case passes) | **{_yes(numbers.byte_exact)}**: "
        f"{numbers.all_passed}/{numbers.all_ran} |",
        f"| skipped | {numbers.skipped} |",
        f"| adapter restarts | {run.restarts} |",
        "",
    ]
    lines += [f"> {warning}" for warning in run.warnings] + ([""] if run.warnings else [])
    lines += _feature_table(run)
    failed = [result for result in run.results if result.status == "fail"]
    if failed:
        lines += [
            f"## Failing cases ({len(failed)})",
            "",
            "| id | level | description | first finding |",
            "|---|---|---|---|",
        ]
        lines += [
            f"| `{result.case.id}` | {result.case.level} | {_cell(result.case.description)} | "
            f"{_cell(result.findings[0].kind + ': ' + result.findings[0].message)} |"
            for result in failed[:TABLE_LIMIT]
        ]
        if len(failed) > TABLE_LIMIT:
            lines += ["", f"{len(failed) - TABLE_LIMIT} more failing cases: see the JSON report (`--report-json`)."]
        lines += [
            "",
            f"<details><summary>Details of the first {min(len(failed), DETAIL_CASES)}</summary>",
            "",
            "```text",
        ]
        lines += [clip(describe_failure(result), DETAIL_LIMIT) for result in failed[:DETAIL_CASES]]
        lines += ["```", "", "</details>", ""]
    skipped = [result for result in run.results if result.status == SKIP]
    if skipped:
        reasons: Dict[str, int] = {}
        for result in skipped:
            reasons[result.reason] = reasons.get(result.reason, 0) + 1
        lines += ["## Skipped", ""] + [f"- {count} cases: {reason}" for reason, count in sorted(reasons.items())] + [""]
    return "\n".join(lines)


def write_markdown(run: RunResult, path: pathlib.Path, title: str = "") -> None:
    path.write_text(markdown(run, title), encoding="utf-8", errors="backslashreplace")
