"""Badges an implementation can show: shields.io endpoint JSON, written next to a report.

    refmem-conformance --target ... --report-json out/report.json --badges out/badges
    -> out/badges/safe.json        {"schemaVersion": 1, "label": "memory tool safe (suite-4)", "message": "yes", ...}
    -> out/badges/documented.json  {"schemaVersion": 1, "label": "memory tool documented (suite-4)",
                                    "message": "174/174 must cases", ...}

Publish the folder where shields.io can fetch it (a branch, GitHub Pages) and point a badge at each file:
`https://img.shields.io/endpoint?url=<the file's URL, percent-encoded>` (docs/ci.md, "Badges").

The badges are made from the JSON report (`as_json`), so they can be made again from a published report. The
label names the suite edition, because the figures of two editions are not the same count. A report that is
not safe gives a red "no" marked `isError`, so that a README cannot recolour it; an interrupted run's badges say
so and are grey, never green.
"""

from __future__ import annotations

import json
import pathlib
from typing import Any, Dict, Mapping

from refmem_harness.visible import printable

SCHEMA_VERSION = 1
"""The shields.io endpoint schema version (the only one there is)."""

BADGE_FILES = ("safe.json", "documented.json")

DOCUMENTED_COLOURS = ((1.0, "brightgreen"), (0.9, "yellow"), (0.0, "orange"))
"""(at least this share of must cases passing, colour), first match."""

TEXT_LIMIT = 60
"""Characters of any text a badge carries from a report."""


def _edition(report: Mapping[str, Any]) -> str:
    versions = report.get("versions") or {}
    return printable(str(versions.get("suite", "?")))[:TEXT_LIMIT]


def _badge(label: str, message: str, colour: str, error: bool = False) -> Dict[str, Any]:
    badge: Dict[str, Any] = {"schemaVersion": SCHEMA_VERSION, "label": label, "message": message, "color": colour}
    if error:
        badge["isError"] = True
    return badge


def safe_badge(report: Mapping[str, Any]) -> Dict[str, Any]:
    """yes (green), no (red, an error badge), or yes from an interrupted run (grey)."""
    figures = report.get("figures") or {}
    label = f"memory tool safe ({_edition(report)})"
    if figures.get("safe") is not True:
        return _badge(label, "no", "red", error=True)
    if report.get("interrupted"):
        return _badge(label, "yes (interrupted run)", "lightgrey")
    return _badge(label, "yes", "brightgreen")


def documented_badge(report: Mapping[str, Any]) -> Dict[str, Any]:
    """x/y must cases: behaviour the documentation states, passing / run."""
    figures = report.get("figures") or {}
    label = f"memory tool documented ({_edition(report)})"
    pair = figures.get("documented")
    if not (isinstance(pair, list) and len(pair) == 2 and all(isinstance(n, int) for n in pair)) or not pair[1]:
        return _badge(label, "no must case run", "lightgrey")
    passing, ran = pair
    message = f"{passing}/{ran} must cases"
    if report.get("interrupted"):
        return _badge(label, message + " (interrupted run)", "lightgrey")
    colour = next(colour for share, colour in DOCUMENTED_COLOURS if passing >= share * ran)
    return _badge(label, message, colour)


def badges(report: Mapping[str, Any]) -> Dict[str, Dict[str, Any]]:
    """File name -> endpoint JSON, for every badge of `report`."""
    return {"safe.json": safe_badge(report), "documented.json": documented_badge(report)}


def write_badges(report: Mapping[str, Any], directory: pathlib.Path) -> None:
    """Write every badge of `report` into `directory` (made if missing), one file each (`BADGE_FILES`)."""
    directory.mkdir(parents=True, exist_ok=True)
    for file_name, badge in badges(report).items():
        (directory / file_name).write_text(json.dumps(badge, ensure_ascii=True, indent=2) + "\n", encoding="utf-8")
