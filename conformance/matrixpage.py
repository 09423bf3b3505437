"""The matrix page: several JSON reports on one page, as columns.

    refmem-conformance matrix A.json B.json --html matrix.html            # implementations side by side
    refmem-conformance matrix v1.json v2.json v3.json --trend --html t.html  # one implementation, oldest first

Top to bottom: what each column is (implementation, version, target, profile, suite edition, verdict); a legend
(what each colour, class and outcome means); the figures (figures.ROWS) with what their numbers count; with
`--trend`, what changed from each report to the next (trend.py); one row per case family (families.py) with its
description and a tally per column; and the drill-down: per family, each case with its description and its outcome
and classes per column, each with an anchor (`#case-ID`, `#family-KEY`).

Columns are judged under their own report's profile: the colour of a cell says what that column's profile makes
of it. The page is self-contained (htmlpage.document) and every text goes through htmlpage.escape.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

from .families import STATES, CaseEntry, Family, Report, by_id, case_state, failing_somewhere, families, part, tally
from .figures import all_rows
from .htmlpage import document, escape, figure_header, figure_state, name, profile_text, row_text
from .legend import OUTCOME_LEGEND, STATE_LEGEND
from .tiers import class_rows
from .trend import Step, steps

_e = escape

DESCRIBED_FAILURES = 3
"""Cases with a finding named under a family's description, at most (the drill-down has them all)."""


def _label(report: Report, trend: bool) -> str:
    """A column's heading: the implementation (or, in a trend, its version) and the suite edition."""
    info = part(report, "implementation")
    suite = part(report, "versions").get("suite", "?")
    if trend:
        return f"{info.get('version') or 'no version'} ({suite})"
    return f"{name(report)} ({suite})"


def _columns(reports: Sequence[Report], labels: List[str]) -> List[str]:
    def info(report: Report, key: str) -> str:
        return str(part(report, "implementation").get(key, "")) or "-"

    def versions(report: Report) -> str:
        found = part(report, "versions")
        return f"{found.get('suite', '?')} / {found.get('protocol', '?')} / {found.get('case_format', '?')}"

    def run(report: Report) -> str:
        passed = part(report, "figures").get("passed") or [0, 0]
        ran = passed[1] if isinstance(passed, list) and len(passed) == 2 else "?"
        return f"{ran} run, {part(report, 'figures').get('skipped', '?')} skipped"

    def verdict(report: Report) -> str:
        found = part(report, "verdict")
        if not found:
            return "-"
        word = "PASS" if found.get("exit") == 0 else "FAIL"
        return f"{word} (exit {found.get('exit')}): {found.get('why', '')}"

    rows: List[Tuple[str, Any]] = [
        ("version, language", lambda r: f"{info(r, 'version')}, {info(r, 'language')}"),
        ("target (storage)", lambda r: f"{r.get('target', '')} ({r.get('storage', '')})"),
        ("profile: what fails a case in this column", lambda r: profile_text(r.get("profile", ""))),
        ("suite edition / protocol / case format; cases", lambda r: f"{versions(r)}; {run(r)}"),
        ("verdict (the run's exit status)", verdict),
    ]
    if any(report.get("interrupted") for report in reports):
        rows.append(("interrupted", lambda r: "yes: the figures cover what ran" if r.get("interrupted") else "no"))
    lines = ['<table id="columns">', "<tr><th></th>" + "".join(f"<th>{_e(label)}</th>" for label in labels) + "</tr>"]
    for heading, value in rows:
        cells = "".join(f"<td>{_e(value(report))}</td>" for report in reports)
        lines.append(f"<tr><th>{_e(heading)}</th>{cells}</tr>")
    return lines + ["</table>"]


def _legend() -> List[str]:
    states = "".join(
        f'<td class="st-{state}"><b>{_e(word)}</b>: {_e(meaning)}</td>'
        for state, (word, meaning) in STATE_LEGEND.items()
    )
    pairs = class_rows()
    classes = [
        "<tr>" + "".join(
            f'<th style="border-left: 0.4em solid {_e(cls.colour)}">{_e(cls.name)}</th><td>{_e(cls.legend)}</td>'
            for cls in pairs[index : index + 2]
        )
        + "</tr>"
        for index in range(0, len(pairs), 2)
    ]
    outcomes = "; ".join(f"<b>{_e(word)}</b> {_e(meaning)}" for word, meaning in OUTCOME_LEGEND.items())
    outcomes += "; in brackets, the classes of the case's findings"
    return [
        '<h2 id="legend">Legend</h2>',
        '<div class="legend">',
        f'<table id="legend-states"><tr>{states}</tr></table>',
        "<p><b>Colours</b>: each cell as its column's profile judges it; a family takes its worst case's colour. "
        "<b>Numbers</b>: a family cell reads <b>x/y</b> = cases with no finding of any class / cases run (skipped "
        "cases not counted), then per class the cases with a finding of that class. Each figure says what it counts."
        "</p>",
        "<p>Classes of finding:</p>",
        '<table id="legend-classes">',
        *classes,
        "</table>",
        f'<p id="legend-outcomes">Outcomes in the drill-down: {outcomes}.</p>',
        "</div>",
    ]


def _figures(reports: Sequence[Report], labels: List[str]) -> List[str]:
    all_figures = [part(report, "figures") for report in reports]
    lines = [
        '<h2 id="figures-heading">Figures</h2>',
        '<table id="figures" class="wide">',
        "<tr><th>figure (what it counts)</th>" + "".join(f"<th>{_e(label)}</th>" for label in labels) + "</tr>",
    ]
    for row in all_rows():
        if not any(row.shown(dict(figures)) for figures in all_figures):
            continue
        values = "".join(
            f'<td class="num st-{figure_state(row, dict(figures))}">{_e(row_text(row, figures))}</td>'
            for figures in all_figures
        )
        lines.append(f'<tr id="figure-{row.key}"><th class="figure">{figure_header(row)}</th>{values}</tr>')
    return lines + ["</table>"]


def _short(description: str, title: str) -> str:
    """A generated case's description without its family title (the row already says it)."""
    return description[len(title) + 2 :] if title and description.startswith(title + ": ") else description


def _family_rows(
    found: List[Family], cases: List[Dict[str, CaseEntry]], labels: List[str]
) -> List[str]:
    lines = [
        '<h2 id="families-heading">Case families</h2>',
        '<table id="families">',
        "<caption>One row per family: a group of hand-written cases, or a payload family or filesystem hazard of the "
        "generated security matrix. Each cell: cases with no finding / cases run, then the cases with a finding of "
        "each class; its colour is its worst case under that column's profile.</caption>",
        "<tr><th>family</th><th>description</th><th>cases</th>"
        + "".join(f"<th>{_e(label)}</th>" for label in labels)
        + "</tr>",
    ]
    for family in found:
        kind = "security matrix" if family.generated else "hand-written"
        failing = failing_somewhere(family, cases)
        named = []
        for case_id in failing[:DESCRIBED_FAILURES]:
            entry = next(c[case_id] for c in cases if case_id in c)
            text = _short(str(entry.get("description", "")), family.title)
            named.append(f'<li><a href="#case-{_e(case_id)}"><code>{_e(case_id)}</code></a> {_e(text)}</li>')
        if len(failing) > DESCRIBED_FAILURES:
            more = len(failing) - DESCRIBED_FAILURES
            named.append(f'<li><a href="#family-{_e(family.key)}">{more} more with a finding</a></li>')
        listed = f'<ul class="note">{"".join(named)}</ul>' if named else ""
        cells = []
        for by_case in cases:
            counted = tally([by_case.get(case_id) for case_id in family.case_ids])
            word = STATE_LEGEND[counted.state][0]
            detail = f"<br><small>{_e(counted.classes_text())}</small>" if counted.by_class else ""
            cells.append(
                f'<td class="num st-{counted.state}"><span class="tag">{_e(word)}</span> '
                f"<b>{_e(counted.text())}</b>{detail}</td>"
            )
        lines.append(
            f'<tr id="row-{_e(family.key)}"><th><a href="#family-{_e(family.key)}"><code>{_e(family.key)}</code></a>'
            f'<br><small>{kind}</small></th><td>{_e(family.title)}{listed}</td>'
            f'<td class="num">{len(family.case_ids)}</td>{"".join(cells)}</tr>'
        )
    return lines + ["</table>"]


def _first_finding(case: CaseEntry) -> str:
    findings = case.get("findings") or []
    first = findings[0] if findings and isinstance(findings[0], dict) else None
    if first is None:
        return str(case.get("reason", ""))
    return f"[{first.get('class', '')}] {first.get('kind', '')}: {first.get('message', '')}"[:300]


def _case_cell(case: Optional[CaseEntry]) -> str:
    state = case_state(case)
    if case is None:
        return '<td class="st-none">-</td>'
    outcome = str(case.get("outcome", case.get("status", "")))
    classes = ", ".join(str(cls) for cls in case.get("classes") or [])
    tip = _first_finding(case)
    title = f' title="{_e(tip)}"' if tip else ""
    found = f" <small>({_e(classes)})</small>" if classes else ""
    return f'<td class="st-{state}"{title}>{_e(outcome)}{found}</td>'


def _drill_down(found: List[Family], cases: List[Dict[str, CaseEntry]], labels: List[str]) -> List[str]:
    heads = "".join(f"<th>{_e(label)}</th>" for label in labels)
    lines = [
        '<h2 id="cases">Every case, by family</h2>',
        '<p class="note">Open a family to see its cases: outcome and classes per column (legend above); a failing '
        "cell's tooltip is its first finding. Each column's own report page (<code>--html</code> on a run) has every "
        "failure's diff.</p>",
    ]
    for family in found:
        failing = failing_somewhere(family, cases)
        states = [case_state(c.get(case_id)) for case_id in family.case_ids for c in cases]
        worst = min(states, key=STATES.index) if states else "none"
        lines += [
            f'<details id="family-{_e(family.key)}" class="family">',
            f'<summary><span class="sw st-{worst}"></span><code>{_e(family.key)}</code> {_e(family.title)} '
            f"({len(family.case_ids)} cases, {len(failing)} with a finding)</summary>",
            '<table class="cases">',
            f"<tr><th>case</th><th>description</th><th>level, tier</th>{heads}</tr>",
        ]
        for case_id in family.case_ids:
            entry = next(c[case_id] for c in cases if case_id in c)
            kind = f"{entry.get('level', '')}, {entry.get('tier', '')}"
            description = _short(str(entry.get("description", "")), family.title)
            lines.append(
                f'<tr id="case-{_e(case_id)}"><td><code>{_e(case_id)}</code></td><td>{_e(description)}</td>'
                f"<td>{_e(kind)}</td>{''.join(_case_cell(c.get(case_id)) for c in cases)}</tr>"
            )
        lines += ["</table>", "</details>"]
    return lines


def _case_list(heading: str, ids: List[str], cases: Dict[str, CaseEntry], show: str) -> List[str]:
    """A folded list of cases: ID (linked to the drill-down), description, and `show` (classes or level)."""
    if not ids:
        return []
    lines = [f"<details><summary>{_e(heading)} ({len(ids)})</summary>", "<table>"]
    for case_id in ids:
        entry = cases.get(case_id, {})
        if show == "classes":
            extra = ", ".join(str(cls) for cls in entry.get("classes") or [])
        else:
            extra = f"{entry.get('level', '')}, {entry.get('tier', '')}"
        lines.append(
            f'<tr><td><a href="#case-{_e(case_id)}"><code>{_e(case_id)}</code></a></td>'
            f"<td>{_e(entry.get('description', ''))}</td><td>{_e(extra)}</td></tr>"
        )
    return lines + ["</table>", "</details>"]


def _changes(reports: Sequence[Report], labels: List[str]) -> List[str]:
    lines = [
        '<h2 id="changes">What changed from each report to the next</h2>',
        '<p class="note">In the order given (oldest first). A case "fails" here when it has a finding of any class, '
        "whatever the profile; it is compared only where both reports ran it.</p>",
    ]
    for moved in steps(reports):
        lines += _step(moved, reports, labels)
    return lines


def _trends(trends: Sequence[Tuple[str, Sequence[Report]]]) -> List[str]:
    """Each implementation's versions, oldest first, and what changed from each to the next (the matrix page's
    own section, so that one page shows every implementation with its versions and its trend)."""
    if not trends:
        return []
    lines = [
        '<h2 id="trends">Versions over time</h2>',
        '<p class="note">For each implementation run at more than one version, oldest first. A case "fails" here when '
        "it has a finding of any class, whatever the profile; it is compared only where both reports ran it.</p>",
    ]
    for number, (family, ordered) in enumerate(trends):
        labels = [_label(report, True) for report in ordered]
        lines.append(f'<h3 id="trend-{number}">{_e(family)}: {_e(", ".join(labels))}</h3>')
        for moved in steps(ordered):
            lines += _step(moved, ordered, labels, anchor=f"trend-{number}-change")
    return lines


def _step(moved: Step, reports: Sequence[Report], labels: List[str], anchor: str = "change") -> List[str]:
    old, new = by_id(reports[moved.before]), by_id(reports[moved.after])
    lines = [f'<h3 id="{anchor}-{moved.after}">{_e(labels[moved.before])} → {_e(labels[moved.after])}</h3>']
    if moved.quiet:
        return lines + ["<p>Nothing changed: the same figures, and every case as before.</p>"]
    summary = (
        f"{len(moved.started)} cases started failing, {len(moved.stopped)} stopped; {len(moved.added)} new cases, "
        f"{len(moved.removed)} gone, {len(moved.reclassified)} with another level or tier, {len(moved.skipped)} "
        "run by only one of the two"
    )
    lines.append(f"<p>{_e(summary)}.</p>")
    if moved.figures:
        lines += [
            f'<table id="{anchor}-{moved.after}-figures">', "<tr><th>figure</th><th>before</th><th>after</th></tr>"
        ]
        lines += [
            f"<tr><th>{_e(figure)}</th><td>{_e(was)}</td><td>{_e(now)}</td></tr>"
            for _key, figure, was, now in moved.figures
        ]
        lines.append("</table>")
    if moved.classes:
        lines += [
            f'<table id="{anchor}-{moved.after}-classes">',
            "<tr><th>class</th><th>cases with one, before</th><th>after</th><th>started</th><th>stopped</th></tr>",
        ]
        lines += [
            f'<tr><th>{_e(item.cls)}</th><td class="num">{item.before}</td><td class="num">{item.after}</td>'
            f'<td class="num">{item.started}</td><td class="num">{item.stopped}</td></tr>'
            for item in moved.classes
        ]
        lines.append("</table>")
    lines += _case_list("Started failing", moved.started, new, "classes")
    lines += _case_list("Stopped failing (their findings before)", moved.stopped, old, "classes")
    lines += _case_list("New cases", moved.added, new, "level")
    lines += _case_list("Cases gone", moved.removed, old, "level")
    lines += _case_list("Another level or tier (now)", moved.reclassified, new, "level")
    lines += _case_list("Run by only one of the two", moved.skipped, new, "level")
    return lines


def matrix_page(
    reports: Sequence[Report],
    title: str = "",
    trend: bool = False,
    trends: Sequence[Tuple[str, Sequence[Report]]] = (),
) -> str:
    """The page for `reports`: implementations side by side, or with `trend` one implementation over versions
    (trend.check_one_implementation is the caller's to enforce). `trends` adds, on the same page, each named
    implementation's versions (oldest first) and what changed from each to the next."""
    if trend:
        title = title or f"Memory tool conformance: {name(reports[0])} across {len(reports)} reports"
        intro = (
            f"One implementation, {len(reports)} reports, in the order given (oldest first): each column is one "
            "version of it, or one version run at one suite edition; what changed between consecutive reports is "
            "under \u201cWhat changed\u201d."
        )
    else:
        title = title or "Memory tool conformance: implementations side by side"
        intro = f"{len(reports)} reports side by side, one column each, each judged under its own profile."
    labels = [_label(report, trend) for report in reports]
    cases = [by_id(report) for report in reports]
    found = families(reports)
    sections = [("columns-heading", "Columns"), ("legend", "Legend"), ("figures-heading", "Figures")]
    sections += [("changes", "What changed")] if trend else []
    sections += [("trends", "Versions over time")] if trends else []
    sections += [("families-heading", "Case families"), ("cases", "Every case")]
    body = [
        f"<h1>{_e(title)}</h1>",
        f"<p>{_e(intro)}</p>",
        "<nav>" + "".join(f'<a href="#{anchor}">{_e(text)}</a>' for anchor, text in sections) + "</nav>",
        '<h2 id="columns-heading">Columns</h2>',
        *_columns(reports, labels),
        *_legend(),
        *_figures(reports, labels),
    ]
    if trend:
        body += _changes(reports, labels)
    body += _trends(trends)
    body += _family_rows(found, cases, labels)
    body += _drill_down(found, cases, labels)
    return document(title, body)
