"""Loading cases (hand-written files and the generated security matrix) and choosing which to run."""

from __future__ import annotations

import dataclasses
import fnmatch
import json
import pathlib
import re
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

from .tiers import tier_of

CASES_DIR = pathlib.Path(__file__).resolve().parent / "cases"
GENERATED_DIR = pathlib.Path(__file__).resolve().parent / "security" / "cases"
"""The committed expansion of the security matrix (`python -m refmem_conformance.security.matrix --write`)."""
GENERATED_SOURCE = "conformance/security/cases"
MATRIX_MISSING = (
    "WARNING: the generated security matrix (conformance/security/cases/) is missing: "
    "the security cases are NOT being run and the figures below do not cover path traversal."
)


SOURCE_URL = re.compile(r"https://github\.com/([A-Za-z0-9_.-]+)/([A-Za-z0-9_.-]+)/(issues|pull)/([0-9]+)")
"""A case's `sources` entry (the schema's pattern): an issue or pull request on GitHub."""


def source_label(url: str) -> Optional[str]:
    """`owner/repo#N` for a source URL a report may link, or None for anything else (never linked)."""
    found = SOURCE_URL.fullmatch(url)
    return f"{found.group(1)}/{found.group(2)}#{found.group(4)}" if found else None


class CaseLoadError(Exception):
    """A case file or the generator could not be read."""


class _Text:
    """A case's text field (CASE-FORMAT.md): what the case says, or `default` where it says nothing."""

    def __init__(self, default: str = "") -> None:
        self.default = default

    def __set_name__(self, owner: type, name: str) -> None:
        self.key = name

    def __get__(self, case: Case, owner: type) -> str:
        return str(case.raw.get(self.key, self.default))


@dataclasses.dataclass(frozen=True)
class Case:
    """One case as data (the format of CASE-FORMAT.md) and where it came from."""

    raw: Dict[str, Any]
    source: str
    group: str

    @property
    def id(self) -> str:
        return str(self.raw["id"])

    level = _Text("must")
    basis = _Text("reference")
    decision = _Text()
    cite = _Text()
    """The documentation sentence a `doc` case relies on (an ID of conformance/documentation.json)."""
    description = _Text()

    @property
    def requires(self) -> str:
        """What the target must offer to run the case (an OpenClaw case always lays files out, and says so)."""
        return str(self.raw.get("requires", "portable"))

    @property
    def tier(self) -> str:
        """The class its own expectations are judged in (conformance/tiers.py)."""
        return tier_of(self.basis)

    @property
    def sources(self) -> List[str]:
        """Where the behaviour the case pins was reported in the field (issue or pull request URLs), for a report
        to link; empty for most cases."""
        found = self.raw.get("sources", [])
        return [str(url) for url in found] if isinstance(found, list) else []

    @property
    def features(self) -> List[str]:
        return list(self.raw.get("features", []))

    @property
    def steps(self) -> List[Dict[str, Any]]:
        return list(self.raw.get("steps", []))

    @property
    def setup(self) -> Dict[str, Any]:
        return dict(self.raw.get("setup") or {})

    @property
    def options(self) -> Dict[str, Any]:
        """How the implementation is configured for this case (CASE-FORMAT.md `options`); empty for the defaults."""
        return dict(self.raw.get("options") or {})


def read_case_files(cases_dir: pathlib.Path = CASES_DIR) -> List[Tuple[pathlib.Path, Any]]:
    """Every `*.json` under `cases_dir`, parsed, in path order."""
    files = []
    for path in sorted(cases_dir.rglob("*.json")) if cases_dir.is_dir() else []:
        try:
            files.append((path, json.loads(path.read_text(encoding="utf-8"))))
        except (OSError, ValueError) as exc:
            raise CaseLoadError(f"{path}: {exc}") from exc
    return files


def generated_cases(directory: pathlib.Path = GENERATED_DIR) -> Optional[List[Dict[str, Any]]]:
    """The security matrix's cases as committed (one file per family), or None when they are not there.

    The runner reads the files, never the generator: what runs is what is committed, and
    `python -m refmem_conformance validate` checks that the generator still makes exactly these files.
    """
    files = read_case_files(directory)
    if not files:
        return None
    cases: List[Dict[str, Any]] = []
    for path, doc in files:
        if not isinstance(doc, dict) or not isinstance(doc.get("cases"), list):
            raise CaseLoadError(f'{path}: expected {{"group": ..., "cases": [...]}}')
        if not all(isinstance(case, dict) for case in doc["cases"]):
            raise CaseLoadError(f"{path}: every case must be an object")
        cases.extend(doc["cases"])
    return cases


def load_cases(cases_dir: pathlib.Path = CASES_DIR, with_matrix: bool = True) -> Tuple[List[Case], List[str]]:
    """All cases, hand-written first, and the warnings met while loading them.

    A file's `"$schema"` (and the generated files' `"generated_by"`) is accepted and not read: this repository's
    files all name the case schema, which `validate` checks, but a `--cases-dir` of one's own may leave it out.
    """
    cases: List[Case] = []
    for path, doc in read_case_files(cases_dir):
        if not isinstance(doc, dict) or not isinstance(doc.get("cases"), list):
            raise CaseLoadError(f'{path}: expected {{"group": ..., "cases": [...]}}')
        group = str(doc.get("group", path.stem))
        for raw in doc["cases"]:
            if not isinstance(raw, dict) or not isinstance(raw.get("id"), str):
                raise CaseLoadError(f"{path}: a case without a string id")
            cases.append(Case(raw, str(path), group))
    warnings: List[str] = []
    if with_matrix:
        generated = generated_cases()
        if generated is None:
            warnings.append(MATRIX_MISSING)
        else:
            cases.extend(Case(raw, GENERATED_SOURCE, "security") for raw in generated)
    return cases, warnings


def _any_glob(case_id: str, globs: Iterable[str]) -> bool:
    return any(fnmatch.fnmatchcase(case_id, pattern) for pattern in globs)


@dataclasses.dataclass(frozen=True)
class Selection:
    """Which cases to run: ID globs, features and levels (empty means no restriction)."""

    run: Sequence[str] = ()
    skip: Sequence[str] = ()
    features: Sequence[str] = ()
    skip_features: Sequence[str] = ()
    levels: Sequence[str] = ()

    def admits(self, case: Case) -> bool:
        return (
            (not self.run or _any_glob(case.id, self.run))
            and not _any_glob(case.id, self.skip)
            and (not self.features or bool(set(self.features) & set(case.features)))
            and not set(self.skip_features) & set(case.features)
            and (not self.levels or case.level in self.levels)
        )

    def apply(self, cases: Iterable[Case]) -> List[Case]:
        return [case for case in cases if self.admits(case)]
