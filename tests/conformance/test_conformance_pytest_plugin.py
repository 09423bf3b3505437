"""The pytest plugin: one test per case, expectations as skips and (strict) xfails."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

from conformance_support import HERE

REPO = HERE.parents[1]


def _pytest(tmp_path: pathlib.Path, cases: pathlib.Path, *options: str) -> subprocess.CompletedProcess:
    empty = tmp_path / "empty"
    empty.mkdir(exist_ok=True)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), str(HERE), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "conformance.pytest_plugin",
            "-p",
            "no:cacheprovider",
            "-q",
            "--rootdir",
            str(empty),
            "--memory-cases-dir",
            str(cases),
            "--memory-no-matrix",
            *options,
            str(empty),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=str(empty),
        env=env,
    )


def test_each_case_is_a_test(basic_cases: pathlib.Path, tmp_path: pathlib.Path) -> None:
    known = tmp_path / "known.json"
    known.write_text(
        json.dumps(
            [
                {"id": "t-001", "expect": "fail", "reason": "trailing space", "issue": ""},
                {"id": "t-004", "expect": "skip", "reason": "later", "issue": ""},
            ]
        )
    )
    result = _pytest(
        tmp_path,
        basic_cases,
        "--memory-target",
        "python:conformance_fakes:wrong",
        "--memory-expectations",
        str(known),
        "-rA",
    )
    assert result.returncode == 1, result.stdout
    assert "1 failed, 1 passed, 1 skipped, 1 xfailed" in result.stdout
    assert "FAIL t-002 [must, documented]" in result.stdout  # the runner's own description of the failure


def test_strict_turns_an_unexpected_pass_into_a_failure(basic_cases: pathlib.Path, tmp_path: pathlib.Path) -> None:
    known = tmp_path / "known.json"
    known.write_text(json.dumps([{"id": "t-001", "expect": "fail", "reason": "", "issue": ""}]))
    result = _pytest(
        tmp_path,
        basic_cases,
        "--memory-target",
        "python:conformance_fakes:tiny",
        "--memory-expectations",
        str(known),
        "--memory-strict",
    )
    assert result.returncode == 1, result.stdout
    assert "1 failed, 3 passed" in result.stdout


def test_without_a_target_the_plugin_adds_nothing(basic_cases: pathlib.Path, tmp_path: pathlib.Path) -> None:
    result = _pytest(tmp_path, basic_cases)
    assert result.returncode == 5  # no tests collected


def test_the_stress_tier_is_one_more_test(basic_cases: pathlib.Path, tmp_path: pathlib.Path) -> None:
    result = _pytest(
        tmp_path,
        basic_cases,
        "--memory-target",
        "refmem",
        "--memory-run",
        "t-002",
        "--memory-stress",
        "quick",
        "-rA",
    )
    assert result.returncode == 0, result.stdout[-3000:]
    assert "2 passed" in result.stdout and "memory-conformance::stress" in result.stdout
