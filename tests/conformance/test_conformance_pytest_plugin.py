"""The pytest plugin: one collected item per case (node IDs, -k, markers), expectations as skips and xfails."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
from typing import Any, List

import pytest
from conformance_support import BASIC, HERE, write_cases

REPO = HERE.parents[1]

pytest_plugins = ["pytester"]


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
            "refmem_conformance.pytest_plugin",
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
        timeout=600,  # a hang guard: the stress tier's run took 55 s on a machine at load 8
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


@pytest.mark.slow
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


# --- through pytester: a temporary project with its own test, the plugin loaded as installed (pytest11) --------


def _project(pytester: pytest.Pytester) -> List[str]:
    """A project with one test of its own; the options that point the plugin at the basic cases."""
    cases = write_cases(pytester.path / "cases", BASIC)
    pytester.makepyfile(test_own="def test_own():\n    assert True\n")
    return ["-p", "no:cacheprovider", "--memory-cases-dir", str(cases), "--memory-no-matrix"]


def test_the_entry_point_names_the_plugin() -> None:
    points = [point for point in entry_points_pytest11() if point.value == "refmem_conformance.pytest_plugin"]
    assert [point.name for point in points] == ["refmem_conformance.pytest_plugin"]


def entry_points_pytest11() -> List[Any]:
    from importlib.metadata import entry_points

    return list(entry_points().select(group="pytest11"))


def test_collect_only_lists_every_case(pytester: pytest.Pytester) -> None:
    options = _project(pytester)
    result = pytester.runpytest(*options, "--memory-target", "python:conformance_fakes:tiny", "--collect-only", "-q")
    listed = [line for line in result.outlines if "::" in line]
    assert listed == ["test_own.py::test_own"] + [f"memory-conformance::t-00{n}" for n in range(1, 5)]
    assert "5 tests collected" in result.stdout.str()


def test_without_a_target_only_the_projects_own_tests_run(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest(*_project(pytester))
    result.assert_outcomes(passed=1)


def test_a_node_id_selects_one_case(pytester: pytest.Pytester) -> None:
    options = _project(pytester)
    target = ["--memory-target", "python:conformance_fakes:tiny"]
    result = pytester.runpytest(*options, *target, "memory-conformance::t-003")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*1 passed*"])


def test_keywords_and_markers_choose_cases(pytester: pytest.Pytester) -> None:
    options = _project(pytester) + ["--memory-target", "python:conformance_fakes:tiny", "--strict-markers"]
    by_level = pytester.runpytest(*options, "-m", "memory_should")
    by_level.assert_outcomes(passed=1, deselected=4)  # t-001 is the only should case
    by_feature = pytester.runpytest(*options, "-m", "memory_feature_view and memory_documented", "-k", "not t-001")
    by_feature.assert_outcomes(passed=3, deselected=2)
    by_keyword = pytester.runpytest(*options, "-k", "t-002 or t-004")
    by_keyword.assert_outcomes(passed=2, deselected=3)


def test_expected_failures_come_from_the_expectations_file(pytester: pytest.Pytester) -> None:
    options = _project(pytester)
    known = pytester.path / "known.json"
    known.write_text(json.dumps([{"id": "t-001", "expect": "fail", "reason": "trailing space", "issue": ""}]))
    result = pytester.runpytest(
        *options, "--memory-target", "python:conformance_fakes:wrong", "--memory-expectations", str(known), "-m",
        "memory_should",
    )
    result.assert_outcomes(xfailed=1, deselected=4)
