"""Data files of the conformance suite that the harness reads: the hostile payloads, OpenClaw's adapter.

They are data, not modules, so reading them is no import: the harness stays below the suite. The suite's folder
stands beside this package, as `refmem_conformance/` where a wheel (or a bundle) installed it and as
`conformance/` in a source tree.
"""

from __future__ import annotations

from pathlib import Path

SUITE_FOLDERS = ("refmem_conformance", "conformance")
"""The suite's folder: under its installed name, else under its name in a source tree."""


def suite_path(*parts: str) -> Path:
    """The suite's file or folder `parts` where it exists, else where a source tree would hold it."""
    top = Path(__file__).resolve().parent.parent
    for folder in SUITE_FOLDERS:
        path = top.joinpath(folder, *parts)
        if path.exists():
            return path
    return top.joinpath(SUITE_FOLDERS[-1], *parts)
