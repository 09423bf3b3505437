"""HTML pages from JSON reports: one implementation's report here, several side by side in matrixpage.py.

Both are built from the JSON report (`as_json`), so a page can be made again from published JSON without a
run. A page is one self-contained file: inline CSS, no script, nothing fetched (its Content-Security-Policy
forbids it too); every text is drawn printable (refmem_harness/visible.py) and then HTML-escaped, and failures are
the bounded excerpts of the text report (conformance/excerpt.py), drawn with visible whitespace.
"""

from __future__ import annotations

import html
import pathlib
from typing import Any, Dict, List, Mapping, Tuple

from refmem_harness.visible import printable, redact, redact_secrets

from .cases import source_label
from .checks import Finding
from .figures import Row, all_rows
from .figures import rows as figure_rows
from .legend import figure_unit
from .reports import finding_lines
from .results import shown_state
from .tiers import (
    COST,
    DOCUMENTED,
    HARDENING,
    MUST,
    PROFILES,
    REFERENCE,
    SHOULD,
    SIGNALLING,
    describe_profile,
    gates,
)

OUTCOMES = ("pass", "fail", "xfail", "xpass", "skip")

STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:1em auto;max-width:96em;padding:0 1em;color:#1b1b1b}
h1{font-size:1.6em;margin:.2em 0 .3em}h2{margin:1em 0 .3em}
table{border-collapse:collapse;margin:.4em 0 1.2em}
caption{text-align:left;padding:.2em 0;color:#444}
th,td{border:1px solid #ccc;padding:.25em .6em;text-align:left;vertical-align:top}
th{background:#f3f3f3}
td.num{text-align:right;font-variant-numeric:tabular-nums}
.yes{background:#dff2d8}.no{background:#fbd3cf}
.st-unsafe{background:#f4a6a0}.st-fail{background:#fdc68a}.st-known{background:#c9dcf5}
.st-shown{background:#fff0a8}.st-clean{background:#dff2d8}.st-none{background:#eeeeee;color:#555}
.sw{display:inline-block;width:.9em;height:.9em;border:1px solid #888;vertical-align:-.1em;margin-right:.3em}
.note{color:#444;font-size:92%}.tag{font-size:85%;color:#333}.meaning{font-weight:normal}
th.figure{font-weight:normal}table.wide{width:100%}
.legend{border:1px solid #ccc;background:#fafafa;padding:.4em .8em;margin:.4em 0 1em}
.legend p{margin:.3em 0}.legend table{margin:.2em 0;width:100%;table-layout:fixed}
.legend td{font-size:92%;border-color:#ddd}#legend-classes th{width:8%}
.legend dl{display:grid;grid-template-columns:repeat(2,1fr);gap:.1em 2em;margin:.3em 0;font-size:92%}
.legend dt{font-weight:bold;display:inline}.legend dd{margin:0;display:inline}
nav a{margin-right:1em}
pre{background:#f7f7f7;border:1px solid #ddd;padding:.6em;overflow-x:auto;white-space:pre}
details{margin:.3em 0}
summary{cursor:pointer}
code{font-size:90%}
table.cases td:first-child{white-space:nowrap}
"""

CSP = "default-src 'none'; style-src 'unsafe-inline'"
"""The page's Content-Security-Policy: its own inline style, nothing else (no script, image, font or fetch)."""


def escape(value: Any) -> str:
    """Any text (a backend's included) as HTML: drawn printable on one line, then escaped (attributes too)."""
    return html.escape(printable(str(value)), quote=True)


def escape_block(text: str) -> str:
    """Several lines for a `<pre>`: each drawn printable and escaped, the line breaks kept."""
    return "\n".join(escape(line) for line in text.split("\n"))


_e = escape


def figure_text(figures: Dict[str, Any], key: str) -> str:
    """A figure as every writer shows it (conformance/figures.py ROWS)."""
    row = next(row for row in all_rows() if row.key == key)
    return row.text(figures)


def document(title: str, body: List[str]) -> str:
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en">',
            "<head>",
            '<meta charset="utf-8">',
            f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
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


def name(report: Mapping[str, Any]) -> str:
    """The implementation's name and version as a report gives them."""
    info = report.get("implementation")
    info = info if isinstance(info, Mapping) else {}
    return " ".join(str(part) for part in (info.get("name", "?"), info.get("version", "")) if part)


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
    word = shown_state(str(case.get("state", "")), str(case.get("outcome", ""))).upper()
    lines = [f"{word} {case['id']} [{case.get('level')}, {case.get('tier')}]"]
    if case.get("documentation"):
        lines.append(f"    documentation: {printable(str(case['documentation']))}")
    lines += finding_lines(findings, full=False)
    return redact("\n".join(lines))


def figure_header(row: Row) -> str:
    """A figure's name, what it means and what its numbers count, as a table header cell's content."""
    unit = figure_unit(row.key)
    counts = f' <span class="note">({_e(unit)})</span>' if unit else ""
    return f'<b>{_e(row.name)}</b>: <span class="meaning">{_e(row.meaning)}</span>{counts}'


FIGURE_CLASS: Dict[str, Tuple[str, str]] = {
    "documented": (DOCUMENTED, MUST),
    "wording": (DOCUMENTED, SHOULD),
    "suggested": (DOCUMENTED, SHOULD),
    "reference": (REFERENCE, SHOULD),
    "hardening": (HARDENING, SHOULD),
    "signalling": (SIGNALLING, SHOULD),
    "cost_findings": (COST, SHOULD),
}
"""The class of finding (and level) behind each figure that counts cases, to say whether a figure that falls short
decides anything under a report's profile (tiers.gates); a class's own figure names its class (`Row.cls`)."""


def row_text(row: Row, figures: Mapping[str, Any]) -> str:
    """A figure's text as every writer shows it, or `?` where a report's figures are not what this version
    writes (an unknown profile, a pair that is not one): a page is made from any report without failing."""
    try:
        return row.text(dict(figures))
    except (KeyError, TypeError, ValueError, IndexError):
        return "?"


def figure_state(row: Row, figures: Dict[str, Any]) -> str:
    """The cell state (families.STATES) of a figure: clean when it holds; when it does not, unsafe for `safe`,
    fail when it counts under the report's profile, shown when the profile only shows it."""
    try:
        if row.ok(figures):
            return "clean"
    except (KeyError, TypeError, ValueError, IndexError):
        return "none"
    if row.key == "safe":
        return "unsafe"
    profile = str(figures.get("profile", ""))
    found = (row.cls, SHOULD) if row.cls else FIGURE_CLASS.get(row.key)
    if found is None or profile not in PROFILES:
        return "fail"
    cls, level = found
    return "fail" if gates(profile, cls, cls, level) else "shown"


def profile_text(profile: Any) -> str:
    """A profile and what gates under it; a profile this version does not know is shown as it is."""
    known = str(profile) in PROFILES
    return f"{profile}: {describe_profile(str(profile))}" if known else f"{profile} (unknown profile)"


def _figures_table(figures: Dict[str, Any]) -> List[str]:
    rows = ["<table>", "<tr><th>figure</th><th>value</th></tr>"]
    for row in figure_rows(figures):
        rows.append(
            f'<tr id="figure-{row.key}"><th class="figure">{figure_header(row)}</th>'
            f'<td class="num st-{figure_state(row, figures)}">{_e(row_text(row, figures))}</td></tr>'
        )
    return rows + ["</table>"]


def _feature_table(report: Dict[str, Any]) -> List[str]:
    rows = ['<table id="features">', "<tr><th>feature</th>" + "".join(f"<th>{o}</th>" for o in OUTCOMES) + "</tr>"]
    for feature, tally in feature_outcomes(report).items():
        cells = "".join(f'<td class="num">{tally.get(outcome, 0)}</td>' for outcome in OUTCOMES)
        rows.append(f"<tr><th>{_e(feature)}</th>{cells}</tr>")
    return rows + ["</table>"]


FIGURE_COLOURS = (
    "Colours: green, the figure holds; yellow, it falls short where the report's profile only shows it; orange, it "
    "falls short where the profile counts it; red, not safe."
)


def report_page(report: Dict[str, Any], title: str = "") -> str:
    """One implementation: what it is, the figures by tier, features by outcome, every failure."""
    shown = name(report)
    title = title or f"Memory tool conformance: {shown}"
    versions = report.get("versions", {})
    body = [
        f"<h1>{_e(title)}</h1>",
        "<table>",
        f"<tr><th>implementation</th><td>{_e(shown)}</td></tr>",
        f"<tr><th>target</th><td><code>{_e(report.get('target', ''))}</code></td></tr>",
        f"<tr><th>storage</th><td>{_e(report.get('storage', ''))}</td></tr>",
        f"<tr><th>profile</th><td>{_e(profile_text(report.get('profile', '')))}</td></tr>",
        "<tr><th>suite / protocol / case format</th><td>"
        + _e(f"{versions.get('suite')} / {versions.get('protocol')} / {versions.get('case_format')}")
        + "</td></tr>",
        "</table>",
        "<h2>Figures by tier</h2>",
        f'<p class="note">{_e(FIGURE_COLOURS)}</p>',
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
            f"<summary><code>{_e(case['id'])}</code> [{_e(classes)}] {_e(case.get('description', ''))}"
            f"{source_links(case.get('sources'))}</summary>",
            f"<pre>{escape_block(case_text(case))}</pre>",
            "</details>",
        ]
    return document(title, body)


def source_links(urls: Any) -> str:
    """Links to a case's field reports (only URLs of the case schema's sources pattern), after its description."""
    links = [
        f'<a href="{_e(url)}">{_e(label)}</a>'
        for url in (urls if isinstance(urls, list) else [])
        for label in [source_label(str(url))]
        if label
    ]
    return f" (reported in the field: {', '.join(links)})" if links else ""


def write(page: str, path: pathlib.Path) -> None:
    path.write_text(redact_secrets(page), encoding="utf-8", errors="backslashreplace")
