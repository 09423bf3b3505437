"""Reports of a run: the human summary, JSON, JUnit XML and Markdown (a CI step summary or a published page).

The figures (conformance/figures.py) come first, one per class of finding; then the failures, each finding
with its class, each documented failure with the documentation sentence it relies on. The Markdown page is
bounded: the generated security matrix is one row per payload family, not one per case.
"""

from __future__ import annotations

import json
import pathlib
import re
import xml.etree.ElementTree as ET
from typing import Any, Callable, Dict, List

from refmem_harness.visible import clip, log_safe, printable, redact, redact_secrets

from . import excerpt, traceability
from .cases import source_label
from .checks import Finding
from .documentation import quote
from .families import family_titles, matrix_family
from .figures import figures, run_verdict, text_lines, tier_passed
from .figures import rows as figure_rows
from .legend import figure_unit
from .results import CUT_SHORT, SKIP, STATES, CaseResult, RunResult
from .tiers import DOCUMENTED, SAFETY, SIGNALLING, TIERS, class_names, class_rows, describe_profile


def counts(run: RunResult) -> Dict[str, int]:
    tally = {name: 0 for name in ("pass", "fail", "xfail", "xpass", "skip")}
    for result in run.results:
        tally[result.outcome or result.status] += 1
    return tally


def states(run: RunResult) -> Dict[str, int]:
    """How many cases ended in each state (results.STATES): timeouts, crashes, restarts and errors are failures."""
    tally = {name: 0 for name in STATES}
    for result in run.results:
        tally[result.state] += 1
    return tally


def _cut_short_text(run: RunResult) -> str:
    """"; of the failures: 1 timeout, ..." for the summary line, or "" when no case was cut short."""
    tally = states(run)
    shown = [f"{tally[state]} {state}" for state in CUT_SHORT.values() if tally[state]]
    return f" ({', '.join(shown)} among the failures)" if shown else ""


def _implementation(run: RunResult) -> str:
    info = run.implementation
    text = " ".join(printable(part)[:200] for part in (info.get("name", "?"), info.get("version", "")) if part)
    return f"{text} ({printable(info.get('language', '?'))[:40]}, storage: {printable(run.storage)})"


def _label(result: CaseResult) -> str:
    case = result.case
    return f"{case.level}, {case.tier}" + (f", {case.decision}" if case.decision else "")


# --- human --------------------------------------------------------------------------------------


def _finding_body(finding: Finding, full: bool) -> List[str]:
    """What a finding shows under its message: the first difference (or every line, with `full`)."""
    if finding.kind == "output" and finding.expected is not None and finding.actual is not None:
        if full:
            return excerpt.full_diff(finding.expected, finding.actual)
        return excerpt.first_difference(finding.expected, finding.actual)
    if finding.detail:
        detail = [printable(line) for line in finding.detail.split("\n")]
        if full:
            return detail
        if detail[0].startswith("--- expected"):
            return excerpt.first_hunk(detail)
        shown = [excerpt.clip_line(line) for line in detail[: excerpt.DETAIL_LINES]]
        return shown + excerpt.more(len(detail) - excerpt.DETAIL_LINES)
    if finding.actual is not None and finding.kind != "output":
        drawn = excerpt.drawn_lines(finding.actual) if full else excerpt.head(finding.actual)
        return ["actual: " + drawn[0]] + ["        " + line for line in drawn[1:] if line]
    return []


def describe_failure(result: CaseResult, full: bool = False) -> str:
    """The case, its class and sentence, and each finding with a bounded excerpt (`full`: everything)."""
    case = result.case
    lines = [f"{result.shown().upper()} {case.id} [{_label(result)}] {printable(case.description)}"]
    if case.cite and result.failed_in(DOCUMENTED):
        lines.append(f"    documentation: {printable(quote(case.cite))}")
    lines += [f"    reported in the field: {url}" for url in case.sources if source_label(url)]
    lines += finding_lines(result.findings, full)
    return log_safe(redact("\n".join(lines)))


def finding_lines(findings: List[Finding], full: bool = False) -> List[str]:
    """Each finding with its excerpt, safety first; bounded to FINDINGS_SHOWN unless `full`."""
    lines: List[str] = []
    ordered = sorted(findings, key=lambda finding: finding.cls != SAFETY)  # safety first, else as found
    shown = ordered if full else ordered[: excerpt.FINDINGS_SHOWN]
    for finding in shown:
        where = f"step {finding.step}: " if finding.step else ""
        message = printable(finding.message) if full else excerpt.clip_line(printable(finding.message))
        lines.append(f"    {where}[{finding.cls}] {finding.kind}: {message}")
        lines.extend("      " + line for line in _finding_body(finding, full))
    rest: Dict[str, int] = {}
    for finding in ordered[len(shown) :]:
        rest[f"[{finding.cls}] {finding.kind}"] = rest.get(f"[{finding.cls}] {finding.kind}", 0) + 1
    if rest:
        counted = ", ".join(f"{count} {name}" for name, count in rest.items())
        lines.append(f"    ... {sum(rest.values())} more findings: {counted} (--full-diff shows all)")
    return lines


def summary(run: RunResult, stale: List[Dict[str, str]], strict: bool, violations: int = 0) -> str:
    """The terminal summary: who was run, the figures (one table: figures.ROWS), the counts, and last the
    verdict the exit status gives, with why."""
    tally = counts(run)
    numbers = figures(run).as_dict()
    lines = [f"refmem conformance {run.versions['suite']}: {_implementation(run)}, target {printable(run.target)}"]
    if run.interrupted:
        lines.append("  INTERRUPTED: the figures cover the cases that ran before the interrupt")
    lines += [f"  {line}" for line in text_lines(numbers)]
    lines.append(
        "  "
        + ", ".join(f"{count} {name}" for name, count in tally.items())
        + _cut_short_text(run)
        + f" (profile {run.profile}); {run.restarts} restarts; {run.seconds:.1f}s"
    )
    for item in run.stress or []:
        lines.append(f"  stress [{item.get('class')}] {item.get('check')}: {printable(str(item.get('detail', '')))}")
    deployment = run.deployment or {}
    for item in deployment.get("findings", []):
        detail = printable(str(item.get("detail", "")))
        lines.append(f"  deployment [{item.get('class')}] {item.get('check')}: {detail}")
    lines += [f"  deployment: {printable(str(note))}" for note in deployment.get("notes", [])]
    for check, measured in deployment.get("figures", {}).items():
        shown = ", ".join(f"{key} {value}" for key, value in measured.items() if not isinstance(value, list))
        lines.append(f"  deployment {check}: {printable(shown)}")
    for entry in stale:
        why = entry.get("stale", "matches no case")
        lines.append(f"  STALE expectation {printable(entry['id'])!r}: {printable(why)}")
    lines.extend("  " + printable(warning) for warning in run.warnings)
    suggestion = prefix_suggestion(run)
    if suggestion:
        lines.append("  " + suggestion)
    unsafe = unsafe_ids(run)
    if unsafe:
        more = f" and {len(unsafe) - UNSAFE_SHOWN} more" if len(unsafe) > UNSAFE_SHOWN else ""
        shown = ", ".join(unsafe[:UNSAFE_SHOWN]) + more
        lines.append(f"  unsafe cases ({len(unsafe)}): {shown}")
    status, why = run_verdict(run, strict, violations)
    lines.append(f"  verdict: {'PASS' if status == 0 else 'FAIL'} (exit {status}): {why}")
    return log_safe(redact("\n".join(lines)))


UNSAFE_SHOWN = 50
"""Unsafe case IDs listed at the end of the summary at most (the JSON report lists them all)."""


def unsafe_ids(run: RunResult) -> List[str]:
    """The IDs of the cases with a safety finding, in run order."""
    return [result.case.id for result in run.results if result.failed_in(SAFETY)]


def prefix_suggestion(run: RunResult) -> str:
    """When error results came back as plain strings read as successes, the `error_prefix` list that would
    have read them as errors (and begins no output that was a success), as a line to paste."""
    misread: Dict[str, int] = {}
    successes = {opening for result in run.results for opening in result.success_openings}
    for result in run.results:
        for finding in result.findings:
            if finding.cls == SIGNALLING and finding.message.startswith("is_error is false") and finding.actual:
                prefix = _distinguishing_prefix(finding.actual, successes)
                if prefix:
                    misread[prefix] = misread.get(prefix, 0) + 1
    if not misread:
        return ""
    prefixes = [prefix for prefix, _count in sorted(misread.items(), key=lambda item: (-item[1], item[0]))][:8]
    quoted = ", ".join(json.dumps(prefix, ensure_ascii=True) for prefix in prefixes)
    return (
        f"signalling: {sum(misread.values())} error results were plain strings read as successes; declare "
        f'SIGNALLING = {{"error_prefix": [{quoted}]}} next to the factory (or repeat --error-prefix) to read them'
    )


def _distinguishing_prefix(output: str, successes: set[str]) -> str:
    """The shortest run of leading words (one to four) of `output` that begins no success seen."""
    words = output.split("\n", 1)[0].split(" ")
    for count in range(1, min(4, len(words)) + 1):
        prefix = " ".join(words[:count])
        if len(prefix) < 3:
            continue
        if not any(opening.startswith(prefix) for opening in successes):
            return prefix[:60]
    return ""


# --- JSON ---------------------------------------------------------------------------------------


def _finding_dicts(result: CaseResult) -> List[Dict[str, Any]]:
    found = []
    for finding in result.findings:
        entry = finding.as_dict()
        if result.case.decision and finding.cls == result.case.tier:
            entry["decision"] = result.case.decision
        found.append(entry)
    loaded: List[Dict[str, Any]] = json.loads(redact(json.dumps(found)))
    return loaded


def _case_dict(result: CaseResult) -> Dict[str, Any]:
    case = result.case
    entry: Dict[str, Any] = {
        "id": case.id,
        "group": case.group,
        "level": case.level,
        "basis": case.basis,
        "tier": case.tier,
        "features": case.features,
        "description": case.description,
        "status": result.status,
        "state": result.state,
        "outcome": result.outcome or result.status,
        "seconds": round(result.seconds, 4),
    }
    if case.decision:
        entry["decision"] = case.decision
    if case.cite:
        entry["cite"] = case.cite
        entry["documentation"] = quote(case.cite)
    if case.sources:
        entry["sources"] = [url for url in case.sources if source_label(url)]
    if result.reason:
        entry["reason"] = result.reason
    if result.expectation:
        entry["expectation"] = result.expectation
    if result.findings:
        entry["classes"] = result.classes()
        entry["findings"] = _finding_dicts(result)
    return entry


def as_json(run: RunResult) -> Dict[str, Any]:
    return {
        "versions": run.versions,
        "target": redact_secrets(run.target),
        "implementation": run.implementation,
        "storage": run.storage,
        "profile": run.profile,
        "signalling": run.signalling,
        "figures": figures(run).as_dict(),
        "counts": counts(run),
        "states": states(run),
        "restarts": run.restarts,
        "seconds": round(run.seconds, 3),
        "stale_expectations": run.stale,
        "warnings": run.warnings,
        "stress": run.stress,
        "deployment": run.deployment,
        "interrupted": run.interrupted,
        "unsafe": unsafe_ids(run),
        "verdict": dict(zip(("exit", "why"), run_verdict(run, False))),
        "cases": [_case_dict(result) for result in run.results],
        "documentation_coverage": traceability.coverage(run.results),
    }


REPORT_SCHEMA = pathlib.Path(__file__).resolve().parent / "schema" / "report.schema.json"


def report_schema() -> Dict[str, Any]:
    """The JSON report's schema with its class part made from the rows (tiers.CLASS_ROWS): the file names the
    classes as the rows are written (a test holds the two together), and a class added as a row since is valid
    too, with its own figure's counts."""
    schema: Dict[str, Any] = json.loads(REPORT_SCHEMA.read_text(encoding="utf-8"))
    defs, names = schema["$defs"], list(class_names())
    defs["case"]["properties"]["classes"]["items"]["enum"] = names
    defs["finding"]["properties"]["class"]["enum"] = names
    for row in class_rows():
        if row.figure is not None:
            for key in (f"{row.slug}_findings", f"{row.slug}_cases"):
                defs["figures"]["properties"][key] = {"type": "integer", "minimum": 0}
    return schema


def write_json(run: RunResult, path: pathlib.Path) -> None:
    # A lone surrogate (outputs may hold one) becomes the JSON escape \udXXX through backslashreplace.
    text = redact_secrets(json.dumps(as_json(run), indent=2, ensure_ascii=False))
    path.write_text(text + "\n", encoding="utf-8", errors="backslashreplace")


# --- JUnit --------------------------------------------------------------------------------------


def _xml_text(text: str) -> str:
    """XML 1.0 cannot carry most control characters: draw them as escapes (and take secrets out)."""
    return "".join(
        ch
        if ch in "\t\n\r" or (ord(ch) >= 0x20 and not 0xD800 <= ord(ch) <= 0xDFFF and ch not in "\ufffe\uffff")
        else f"\\x{ord(ch):02x}"
        if ord(ch) < 0x100
        else f"\\u{ord(ch):04x}"
        for ch in redact_secrets(text)
    )


def _properties(testcase: ET.Element, result: CaseResult) -> None:
    case = result.case
    values = [("tier", case.tier), ("level", case.level), ("basis", case.basis)]
    values += [("decision", case.decision), ("cite", case.cite), ("classes", ",".join(result.classes()))]
    values += [("sources", " ".join(url for url in case.sources if source_label(url)))]
    properties = ET.SubElement(testcase, "properties")
    for name, value in values:
        if value:
            ET.SubElement(properties, "property", {"name": name, "value": _xml_text(value)})


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
        _properties(testcase, result)
        outcome = result.outcome or result.status
        if outcome in ("fail", "xpass"):
            cut = [finding for finding in result.findings if finding.kind in CUT_SHORT]
            first = (cut or result.findings)[0] if result.findings else None
            message = f"[{first.cls}] {first.message}" if first else "unexpected pass"
            kind = {"type": result.shown()}
            failure = ET.SubElement(testcase, "failure", {"message": _xml_text(message[:500]), **kind})
            failure.text = _xml_text(describe_failure(result))
        elif outcome in ("skip", "xfail"):
            reason = result.reason or (result.expectation or {}).get("reason", "expected failure")
            ET.SubElement(testcase, "skipped", {"message": _xml_text(f"{outcome}: {reason}"[:500])})
    ET.ElementTree(suite).write(str(path), encoding="utf-8", xml_declaration=True)


# --- Markdown -----------------------------------------------------------------------------------


_MARKDOWN_SYNTAX = re.compile(r"([\\`*_\[\]()<>|~&])")
"""Characters that open Markdown syntax anywhere in a line: links and images, emphasis, code, raw HTML and
entities, a table's cell boundary."""
_AUTOLINK = re.compile(r"(?i)(:)(//)|\b(www)(\.)|(@)")
"""What a GitHub-flavoured renderer makes a link of with no syntax at all: `scheme://`, `www.`, an e-mail address."""


def markdown_text(text: str, limit: int = 160) -> str:
    """Any text a backend or a user handed the harness, as Markdown that renders as that text and nothing else:
    non-printable characters escaped (`printable`: no line break, no escape sequence), every character that
    opens syntax backslash-escaped (no link, image, emphasis, HTML or table boundary), and bare URLs, `www.` and
    e-mail addresses broken by an escape so that no renderer links them."""
    escaped = _MARKDOWN_SYNTAX.sub(r"\\\1", printable(clip(text, limit)))
    return _AUTOLINK.sub(lambda found: "".join(part if part in ("//", "www") else "\\" + part
                                               for part in found.groups() if part), escaped)


def _cell(text: str, limit: int = 160) -> str:
    """Any text (a backend's included) as one Markdown table cell (`markdown_text`)."""
    return markdown_text(text, limit)


def _code(text: str, limit: int = 160) -> str:
    """Any text as the inside of a Markdown code span in a table cell: nothing in a code span is a link; a
    backtick would end it and a bar the cell, so they are drawn as `'` and `\\|`."""
    return printable(clip(text, limit)).replace("`", "'").replace("|", "\\|")


# The Markdown report is a page to read (a CI step summary, a published report): it is bounded.
# The JSON report has every finding.
TABLE_LIMIT = 300
DETAIL_CASES = 30
DETAIL_LIMIT = 1500


def _headline(run: RunResult) -> List[str]:
    numbers = figures(run).as_dict()
    rows = []
    for row in figure_rows(numbers):
        name = f"**{row.name}**" if row.headline else row.name
        value = row.text(numbers)
        value = f"**{_cell(value, 300)}**" if row.headline else _cell(value, 300)
        unit = figure_unit(row.key)
        counts = f"; {_cell(unit, 200)}" if unit else ""
        rows.append(f"| {name} ({_cell(row.meaning, 300)}{counts}) | {value} |")
    return rows


def _class_table(run: RunResult) -> List[str]:
    tally: Dict[str, List[int]] = {name: [0, 0] for name in class_names()}
    for result in run.results:
        for cls in result.classes():
            tally[cls][1] += 1
        for finding in result.findings:
            tally[finding.cls][0] += 1
    for item in (run.stress or []) + list((run.deployment or {}).get("findings", [])):
        cls = str(item.get("class", ""))
        if cls in tally:
            tally[cls][0] += 1
    rows = [f"| {cls} | {found} | {cases} |" for cls, (found, cases) in tally.items() if found]
    return ["## Findings by class", "", "| class | findings | cases |", "|---|---|---|", *rows, ""] if rows else []


def _deployment_table(report: Dict[str, Any]) -> List[str]:
    """The deployment tier: its findings, then what each check counted, then what was skipped and why."""
    lines = ["## Deployment tier", "", "| check | found | counted |", "|---|---|---|"]
    for check, measured in report.get("figures", {}).items():
        found = "; ".join(str(item.get("detail")) for item in report.get("findings", []) if item.get("check") == check)
        counted = ", ".join(f"{key} {value}" for key, value in measured.items() if not isinstance(value, list))
        lines.append(f"| {_cell(check)} | {_cell(found or 'nothing')} | {_cell(counted)} |")
    lines += [""] + [f"> {_cell(str(note), 500)}" for note in report.get("notes", [])]
    return lines + ([""] if report.get("notes") else [])


def _matrix_table(run: RunResult) -> List[str]:
    families: Dict[str, List[CaseResult]] = {}
    for result in run.results:
        family = matrix_family(result.case.id)
        if family is not None and result.status != SKIP:
            families.setdefault(family, []).append(result)
    if not families:
        return []
    titles = family_titles()
    lines = [
        "## Security matrix by payload family",
        "",
        "Containment is checked for every payload (safety); the refusal itself is judged in the case's tier. "
        "*passing / run*: the family's cases meeting their own tier's expectations / its cases run; *findings by "
        "class*: how many of its cases have a finding of each class.",
        "",
        "| family | tiers | cases run | safe (unsafe cases) | passing / run | findings by class | "
        "sentence behind documented failures |",
        "|---|---|---|---|---|---|---|",
    ]
    for family, results in families.items():
        tiers = "/".join(sorted({result.case.tier for result in results}))
        unsafe = sum(result.failed_in(SAFETY) for result in results)
        passes = sum(tier_passed(result) for result in results)
        tally: Dict[str, int] = {}
        for result in results:
            for cls in result.classes():
                tally[cls] = tally.get(cls, 0) + 1
        found = ", ".join(f"{cls} {count}" for cls, count in tally.items()) or "-"
        title = _cell(titles.get(family, family), 70)
        cites = sorted({r.case.cite for r in results if r.case.cite and r.failed_in(DOCUMENTED)})
        cited = "<br>".join(_cell(quote(cite), 200) for cite in cites) or "-"
        lines.append(
            f"| `{family}` {title} | {tiers} | {len(results)} | "
            f"{'yes' if not unsafe else f'**NO ({unsafe})**'} | {passes}/{len(results)} | {found} | {cited} |"
        )
    return lines + [""]


def _feature_table(run: RunResult) -> List[str]:
    tally: Dict[str, List[int]] = {}
    for result in run.results:
        if result.status == SKIP:
            continue
        for feature in result.case.features:
            passed, ran = tally.setdefault(feature, [0, 0])
            tally[feature] = [passed + tier_passed(result), ran + 1]
    rows = [f"| {feature} | {passed}/{ran} |" for feature, (passed, ran) in sorted(tally.items())]
    header = ["## By feature (hand-written and generated cases meeting their own tier)", ""]
    return header + ["| feature | cases passing |", "|---|---|", *rows, ""] if rows else []


def _tier_order(tier: str) -> int:
    """Where a case's tier sorts: a plug-in's case judged in the safety class first, then TIERS in order."""
    return TIERS.index(tier) if tier in TIERS else -1


def _first(result: CaseResult) -> str:
    finding = result.findings[0] if result.findings else None
    return f"[{finding.cls}] {finding.kind}: {finding.message}" if finding else "-"


def _table(
    heading: str, head: List[str], results: List[CaseResult], row: Callable[[CaseResult], str], more: str
) -> List[str]:
    """A Markdown section: the heading, a table of the first TABLE_LIMIT results, and a line saying how many more."""
    lines = [heading, "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += [row(result) for result in results[:TABLE_LIMIT]]
    if len(results) > TABLE_LIMIT:
        lines += ["", f"{len(results) - TABLE_LIMIT} {more}: see the JSON report (`--report-json`)."]
    return lines + [""]


def source_links(urls: List[str]) -> str:
    """Markdown links to a case's field reports: only URLs of the sources pattern, labelled `owner/repo#N`."""
    return ", ".join(f"[{label}]({url})" for url in urls for label in [source_label(url)] if label)


def _failing_row(result: CaseResult) -> str:
    cited = _cell(quote(result.case.cite), 200) if result.failed_in(DOCUMENTED) else ""
    links = source_links(result.case.sources)
    cited = f"{cited}<br>{links}" if cited and links else cited or links
    return (
        f"| `{result.case.id}` | {_label(result)} | {_cell(result.case.description)} | "
        f"{', '.join(result.classes())} | {_cell(_first(result))} | {cited} |"
    )


def _failing_table(failed: List[CaseResult]) -> List[str]:
    head = ["id", "level, tier", "description", "classes", "first finding", "documentation"]
    return _table(f"## Failing hand-written cases ({len(failed)})", head, failed, _failing_row, "more failing cases")


def _unsafe_row(result: CaseResult) -> str:
    finding = next(f for f in result.findings if f.cls == SAFETY)
    return f"| `{result.case.id}` | {_cell(finding.kind + ': ' + finding.message, 240)} |"


def _unsafe_table(unsafe: List[CaseResult]) -> List[str]:
    if not unsafe:
        return []
    head = ["id", "first safety finding"]
    return _table(f"## Cases with safety findings ({len(unsafe)})", head, unsafe, _unsafe_row, "more")


def _details(failed: List[CaseResult]) -> List[str]:
    if not failed:
        return []
    shown = [clip(describe_failure(result), DETAIL_LIMIT) for result in failed[:DETAIL_CASES]]
    fence = "`" * max([3] + [len(run) + 1 for text in shown for run in re.findall(r"`+", text)])
    lines = [f"<details><summary>Details of the first {min(len(failed), DETAIL_CASES)}</summary>", "", fence + "text"]
    return lines + shown + [fence, "", "</details>", ""]


def markdown(run: RunResult, title: str = "") -> str:
    info = run.implementation
    numbers = figures(run)
    lines = [
        f"# {markdown_text(title, 300) if title else 'Memory tool conformance: ' + _cell(info.get('name', '?'))}",
        "",
        "| | |",
        "|---|---|",
        f"| implementation | {_cell(info.get('name', ''))} {_cell(info.get('version', ''))} |",
        f"| language | {_cell(info.get('language', ''))} |",
        f"| homepage | {_cell(info.get('homepage', '')) or '-'} |",
        f"| storage | {run.storage} |",
        f"| target | `{_code(run.target, 300)}` |",
        f"| error signalling | {_cell(run.signalling)} |",
        "| suite / protocol / case format | {suite} / {protocol} / {case_format} |".format(**run.versions),
        f"| profile | {run.profile}: {describe_profile(run.profile)} |",
        *_headline(run),
        f"| cases run / skipped | {numbers.passed[1]} / {numbers.skipped} |",
        f"| adapter restarts | {run.restarts} |",
        "",
    ]
    lines += [f"> {_cell(warning, 2000)}" for warning in run.warnings] + ([""] if run.warnings else [])
    status, why = run_verdict(run, False)
    if run.interrupted:
        lines += ["> **Interrupted**: the figures cover the cases that ran before the interrupt.", ""]
    lines += [f"**Verdict**: {'PASS' if status == 0 else 'FAIL'} (exit {status}): {_cell(why, 500)}", ""]
    lines += _class_table(run)
    if run.stress:
        lines += ["## Stress tier", "", "| class | check | detail |", "|---|---|---|"]
        lines += [
            f"| {_cell(str(item.get('class')))} | {_cell(str(item.get('check')))} | {_cell(str(item.get('detail')))} |"
            for item in run.stress
        ] + [""]
    if run.deployment is not None:
        lines += _deployment_table(run.deployment)
    lines += _matrix_table(run)
    lines += _feature_table(run)
    lines += traceability.markdown_lines(run.results)
    lines += _unsafe_table([r for r in run.results if r.failed_in(SAFETY)])
    failed = [r for r in run.results if r.status == "fail" and matrix_family(r.case.id) is None]
    failed.sort(key=lambda r: (not r.failed_in(SAFETY), not r.failed_in(DOCUMENTED), _tier_order(r.case.tier)))
    if failed:
        lines += _failing_table(failed)
    everything = [r for r in run.results if r.status == "fail"]
    lines += _details(sorted(everything, key=lambda r: (not r.failed_in(SAFETY), not r.failed_in(DOCUMENTED))))
    skipped = [result for result in run.results if result.status == SKIP]
    if skipped:
        reasons: Dict[str, int] = {}
        for result in skipped:
            reasons[result.reason] = reasons.get(result.reason, 0) + 1
        lines += ["## Skipped", ""] + [f"- {count} cases: {reason}" for reason, count in sorted(reasons.items())] + [""]
    return redact("\n".join(lines))


def write_markdown(run: RunResult, path: pathlib.Path, title: str = "") -> None:
    path.write_text(markdown(run, title), encoding="utf-8", errors="backslashreplace")
