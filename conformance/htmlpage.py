"""HTML pages from JSON reports: one implementation's report, and several side by side (a matrix).

Both are built from the JSON report (`as_json`), so a page can be made again from published JSON without a
run. A page is one self-contained file: inline CSS, no script, nothing fetched; every text is escaped and its
failures are the bounded excerpts of the text report (conformance/excerpt.py), drawn with visible whitespace.
"""

from __future__ import annotations

import html
import pathlib
from typing import Any, Dict, List, Sequence

from .checks import Finding
from .figures import ROWS
from .figures import rows as figure_rows
from .reports import finding_lines
from .visible import printable, redact

OUTCOMES = ("pass", "fail", "xfail", "xpass", "skip")

STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:80em;padding:0 1em;color:#1b1b1b}
table{border-collapse:collapse;margin:.5em 0 1.5em}
th,td{border:1px solid #ccc;padding:.25em .6em;text-align:left;vertical-align:top}
th{background:#f3f3f3}
td.num{text-align:right;font-variant-numeric:tabular-nums}
.yes{background:#e5f5e0}.no{background:#fde0dd}
pre{background:#f7f7f7;border:1px solid #ddd;padding:.6em;overflow-x:auto;white-space:pre}
details{margin:.3em 0}
summary{cursor:pointer}
code{font-size:90%}
"""


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def figure_text(figures: Dict[str, Any], key: str) -> str:
    """A figure as every writer shows it (conformance/figures.py ROWS)."""
    row = next(row for row in ROWS if row.key == key)
    return row.text(figures)


def _document(title: str, body: List[str]) -> str:
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en">',
            "<head>",
            '<meta charset="utf-8">',
            f"<title>{_e(title)}</title>",
            f"<style>{STYLE}</style>",
            "</head>",
            "<body>",
            *body,
            "</body>",
            "</html>",
            "",
        ]
    )


def _name(report: Dict[str, Any]) -> str:
    info = report.get("implementation", {})
    return " ".join(part for part in (info.get("name", "?"), info.get("version", "")) if part)


def failing(report: Dict[str, Any]) -> List[Dict[str, Any]]:
    """Cases whose outcome fails the run (fail, or an unexpected pass), in the report's order."""
    return [case for case in report.get("cases", []) if case.get("outcome") in ("fail", "xpass")]


def feature_outcomes(report: Dict[str, Any]) -> Dict[str, Dict[str, int]]:
    """feature -> outcome -> number of cases."""
    table: Dict[str, Dict[str, int]] = {}
    for case in report.get("cases", []):
        for feature in case.get("features", []):
            row = table.setdefault(feature, {outcome: 0 for outcome in OUTCOMES})
            row[case.get("outcome", "skip")] = row.get(case.get("outcome", "skip"), 0) + 1
    return dict(sorted(table.items()))


def _finding(entry: Dict[str, Any]) -> Finding:
    return Finding(
        str(entry.get("kind", "")),
        str(entry.get("message", "")),
        int(entry.get("step", 0)),
        entry.get("expected"),
        entry.get("actual"),
        str(entry.get("detail", "")),
        str(entry.get("class", "")),
    )


def case_text(case: Dict[str, Any]) -> str:
    """A failing case as the text report shows it: bounded, safety first, visible whitespace."""
    findings = [_finding(entry) for entry in case.get("findings", [])]
    lines = [f"{case.get('outcome', '').upper()} {case['id']} [{case.get('level')}, {case.get('tier')}]"]
    if case.get("documentation"):
        lines.append(f"    documentation: {printable(str(case['documentation']))}")
    lines += finding_lines(findings, full=False)
    return redact("\n".join(lines))


def _figures_table(figures: Dict[str, Any]) -> List[str]:
    rows = ["<table>", "<tr><th>figure</th><th>value</th></tr>"]
    for row in figure_rows(figures):
        css = "yes" if row.ok(figures) else "no"
        rows.append(
            f'<tr id="figure-{row.key}"><td>{_e(row.name)}: {_e(row.meaning)}</td>'
            f'<td class="num {css}">{_e(row.text(figures))}</td></tr>'
        )
    return rows + ["</table>"]


def _feature_table(report: Dict[str, Any]) -> List[str]:
    rows = ['<table id="features">', "<tr><th>feature</th>" + "".join(f"<th>{o}</th>" for o in OUTCOMES) + "</tr>"]
    for feature, tally in feature_outcomes(report).items():
        cells = "".join(f'<td class="num">{tally.get(outcome, 0)}</td>' for outcome in OUTCOMES)
        rows.append(f"<tr><th>{_e(feature)}</th>{cells}</tr>")
    return rows + ["</table>"]


def report_page(report: Dict[str, Any], title: str = "") -> str:
    """One implementation: what it is, the figures by tier, features by outcome, every failure."""
    name = _name(report)
    title = title or f"Memory tool conformance: {name}"
    versions = report.get("versions", {})
    body = [
        f"<h1>{_e(title)}</h1>",
        "<table>",
        f"<tr><th>implementation</th><td>{_e(name)}</td></tr>",
        f"<tr><th>target</th><td><code>{_e(report.get('target', ''))}</code></td></tr>",
        f"<tr><th>storage</th><td>{_e(report.get('storage', ''))}</td></tr>",
        f"<tr><th>profile</th><td>{_e(report.get('profile', ''))}</td></tr>",
        "<tr><th>suite / protocol / case format</th><td>"
        + _e(f"{versions.get('suite')} / {versions.get('protocol')} / {versions.get('case_format')}")
        + "</td></tr>",
        "</table>",
        "<h2>Figures by tier</h2>",
        *_figures_table(report.get("figures", {})),
        "<h2>Features by outcome</h2>",
        *_feature_table(report),
    ]
    failed = failing(report)
    body.append(f"<h2>Failures ({len(failed)})</h2>")
    body.append("<p>Invisible characters are drawn: ␣ space, —» tab, ↵ newline, ∎ no final newline.</p>")
    for case in failed:
        classes = ", ".join(case.get("classes", []))
        body += [
            f'<details class="failure" id="case-{_e(case["id"])}">',
            f"<summary><code>{_e(case['id'])}</code> [{_e(classes)}] {_e(printable(case.get('description', '')))}"
            "</summary>",
            f"<pre>{_e(case_text(case))}</pre>",
            "</details>",
        ]
    return _document(title, body)


def matrix_page(reports: Sequence[Dict[str, Any]], title: str = "") -> str:
    """Several implementations side by side: the figures, then every case that any of them fails."""
    title = title or "Memory tool conformance: implementations side by side"
    names = [_name(report) for report in reports]
    head = "<tr><th></th>" + "".join(f"<th>{_e(name)}</th>" for name in names) + "</tr>"
    body = [f"<h1>{_e(title)}</h1>", "<h2>Figures by tier</h2>", '<table id="figures">', head]
    for figure in ROWS:
        all_figures = [report.get("figures", {}) for report in reports]
        if not any(figure.shown(figures) for figures in all_figures):
            continue
        values = "".join(
            f'<td class="num {"yes" if figure.ok(figures) else "no"}">{_e(figure.text(figures))}</td>'
            for figures in all_figures
        )
        body.append(f'<tr id="figure-{figure.key}"><th>{_e(figure.name)}: {_e(figure.meaning)}</th>{values}</tr>')
    body.append("</table>")
    outcomes = [{case["id"]: case for case in report.get("cases", [])} for report in reports]
    order = list(dict.fromkeys(case_id for by_id in outcomes for case_id in by_id))
    failed = [
        case_id
        for case_id in order
        if any(by_id.get(case_id, {}).get("outcome") in ("fail", "xpass") for by_id in outcomes)
    ]
    body += [f"<h2>Cases any implementation fails ({len(failed)})</h2>", '<table id="cases">', "<tr><th>case</th>"]
    body[-1] += "".join(f"<th>{_e(name)}</th>" for name in names) + "</tr>"
    for case_id in failed:
        cells = []
        for by_id in outcomes:
            case = by_id.get(case_id)
            if case is None:
                cells.append("<td>-</td>")
                continue
            outcome = case.get("outcome", "")
            css = "no" if outcome in ("fail", "xpass") else "yes" if outcome in ("pass", "xfail") else ""
            cells.append(f'<td class="{css}">{_e(outcome)} {_e(", ".join(case.get("classes", [])))}</td>')
        body.append(f"<tr><td><code>{_e(case_id)}</code></td>{''.join(cells)}</tr>")
    body.append("</table>")
    return _document(title, body)


def write(page: str, path: pathlib.Path) -> None:
    path.write_text(page, encoding="utf-8", errors="backslashreplace")
