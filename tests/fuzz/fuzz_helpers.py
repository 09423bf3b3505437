"""Shared set-up for the fuzzer's tests: a harness on a scratch directory."""

from __future__ import annotations

import pathlib
from typing import Optional

from refmem_fuzz.harness import HARNESSES, Harness, Options

VULNERABLE = "python:vulnerable_backend:make"
VULNERABLE_PERCENT_ONLY = "python:vulnerable_backend:make_percent_only"
QUADRATIC = "python:quadratic_backend:make"
PREFIX_REFERENCE = "python:prefix_reference:make"


def harness(
    tmp: pathlib.Path,
    target: str = "refmem",
    kind: str = "sequence",
    hostile: bool = True,
    findings: Optional[pathlib.Path] = None,
) -> Harness:
    options = Options(target=target, hostile=hostile, findings_dir=findings, engine="random", seed=7)
    return HARNESSES[kind](options, tmp / "work")
