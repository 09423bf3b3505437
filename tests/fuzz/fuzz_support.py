"""Shared set-up for the fuzzer's tests: a harness on a scratch directory."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
from typing import Optional

from refmem_fuzz.harness import Harness, Options
from refmem_fuzz.harnesses import HARNESSES

VULNERABLE = "python:vulnerable_backend:make"
VULNERABLE_PERCENT_ONLY = "python:vulnerable_backend:make_percent_only"
QUADRATIC = "python:quadratic_backend:make"
PREFIX_REFERENCE = "python:prefix_backend:make"
HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent.parent


def harness(
    tmp: pathlib.Path,
    target: str = "refmem",
    kind: str = "sequence",
    hostile: bool = True,
    findings: Optional[pathlib.Path] = None,
) -> Harness:
    options = Options(target=target, hostile=hostile, findings_dir=findings, engine="random", seed=7)
    return HARNESSES[kind](options, tmp / "work")


def atheris_run(
    target: str, findings: pathlib.Path, max_time: int, timeout: float, *options: str
) -> subprocess.CompletedProcess:
    """`python -m refmem_fuzz.cli` with the atheris engine, stopping at the first finding, as a user would run it."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), str(HERE)]))
    command = [sys.executable, "-m", "refmem_fuzz.cli", "--target", target, "--plain-layout", "--engine", "atheris",
               "--max-time", str(max_time), "--stop-on-first", "--findings", str(findings), *options]
    return subprocess.run(command, env=env, cwd=findings, capture_output=True, text=True, timeout=timeout)
