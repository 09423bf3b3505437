"""The pytest plugin: one collected item per case (node IDs, -k, markers), expectations as skips and xfails."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
from typing import Any, List

import pytest
from conformance_support import BASIC, HERE, WORKDIR, write_cases

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
            # the case folders (and the tiers' folders) on the tmpfs when there is one: the tiers fsync every write
            *(["--memory-workdir", WORKDIR[1]] if WORKDIR else []),
            *options,
            str(empty),
        ],
        capture_output=True,
        text=True,
        timeout=600,  # a hang guard: the stress tier's run took 55 s on a machine at load 8
        cwd=str(empty),
        env=env,
    )


def _expecting(known: pathlib.Path, fake: str) -> List[str]:
    """The options that run the fake target `fake` (fake_backends.py) with the expectations file."""
    return ["--memory-target", f"python:fake_backends:{fake}", "--memory-expectations", str(known)]


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
    result = _pytest(tmp_path, basic_cases, *_expecting(known, "wrong"), "-rA")
    assert result.returncode == 1, result.stdout
    assert "1 failed, 1 passed, 1 skipped, 1 xfailed" in result.stdout
    assert "FAIL t-002 [must, documented]" in result.stdout  # the runner's own description of the failure


def test_strict_turns_an_unexpected_pass_into_a_failure(basic_cases: pathlib.Path, tmp_path: pathlib.Path) -> None:
    known = tmp_path / "known.json"
    known.write_text(json.dumps([{"id": "t-001", "expect": "fail", "reason": "", "issue": ""}]))
    result = _pytest(tmp_path, basic_cases, *_expecting(known, "tiny"), "--memory-strict")
    assert result.returncode == 1, result.stdout
    assert "1 failed, 3 passed" in result.stdout


def test_check_entries_xfail_their_checks_and_a_stale_one_fails(
    basic_cases: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    """D-BASELINE-CHECK and -STALE under pytest: t-002's only failing check is named (xfail); t-003 passes, so its
    check entry is stale (a failure); a contradictory file is a usage error."""
    known = tmp_path / "known.json"
    entries = [{"id": "t-002:step1.is_error", "expect": "fail"}, {"id": "t-003:final", "expect": "fail"}]
    known.write_text(json.dumps(entries))
    result = _pytest(tmp_path, basic_cases, *_expecting(known, "wrong"), "-rA", "-k", "t-002 or t-003")
    assert "1 failed, 2 deselected, 1 xfailed" in result.stdout, result.stdout
    assert "STALE expectation 't-003:final': the case passes" in result.stdout
    known.write_text(json.dumps([{"id": "t-00*", "expect": "skip"}, {"id": "t-001:final", "expect": "fail"}]))
    result = _pytest(tmp_path, basic_cases, *_expecting(known, "wrong"))
    assert result.returncode == 4 and "a check entry beside the whole-case entry" in result.stderr, result.stderr


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


def test_the_deployment_tier_is_one_more_test(basic_cases: pathlib.Path, tmp_path: pathlib.Path) -> None:
    result = _pytest(
        tmp_path, basic_cases, "--memory-target", "refmem", "--memory-run", "t-002", "--memory-deployment", "-rA"
    )
    assert result.returncode == 0, result.stdout[-3000:]
    assert "2 passed" in result.stdout and "memory-conformance::deployment" in result.stdout


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
    result = pytester.runpytest(*options, "--memory-target", "python:fake_backends:tiny", "--collect-only", "-q")
    listed = [line for line in result.outlines if "::" in line]
    assert listed == ["test_own.py::test_own"] + [f"memory-conformance::t-00{n}" for n in range(1, 5)]
    assert "5 tests collected" in result.stdout.str()


def test_without_a_target_only_the_projects_own_tests_run(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest(*_project(pytester))
    result.assert_outcomes(passed=1)


def test_a_node_id_selects_one_case(pytester: pytest.Pytester) -> None:
    options = _project(pytester)
    target = ["--memory-target", "python:fake_backends:tiny"]
    result = pytester.runpytest(*options, *target, "memory-conformance::t-003")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*1 passed*"])


def test_keywords_and_markers_choose_cases(pytester: pytest.Pytester) -> None:
    options = _project(pytester) + ["--memory-target", "python:fake_backends:tiny", "--strict-markers"]
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
        *options, "--memory-target", "python:fake_backends:wrong", "--memory-expectations", str(known), "-m",
        "memory_should",
    )
    result.assert_outcomes(xfailed=1, deselected=4)


# --- node IDs, markers, ini options ---------------------------------------------------------------------------


def _printed_ids(lines: List[str]) -> List[str]:
    """The case node IDs as pytest printed them in its short summary (`PASSED <id>`, `FAILED <id> - ...`)."""
    return [
        line.split(" ")[1]
        for line in lines
        if line.startswith(("PASSED ", "FAILED ")) and "memory-conformance::" in line
    ]


def test_a_printed_node_id_is_pasteable_when_the_workdir_moves_the_rootdir(
    pytester: pytest.Pytester, tmp_path_factory: pytest.TempPathFactory
) -> None:
    # A path given as a separate option value takes part in pytest's choice of rootdir: outside the project, it
    # moves the rootdir up, and pytest prints node IDs relative to the current folder ("../../memory-...").
    workdir = tmp_path_factory.mktemp("elsewhere")
    options = _project(pytester) + ["--memory-target", "python:fake_backends:tiny", "--memory-workdir", str(workdir)]
    first = pytester.runpytest(*options, "-rA", "-k", "t-003")
    first.assert_outcomes(passed=1, deselected=4)
    printed = _printed_ids(first.outlines)
    assert len(printed) == 1 and printed[0].endswith("memory-conformance::t-003"), first.outlines
    again = pytester.runpytest(*options, printed[0])
    again.assert_outcomes(passed=1)


def test_our_node_id_reads_every_printed_form() -> None:
    from refmem_conformance.pytest_plugin import our_node_id

    for printed in ("memory-conformance::t-1", "../../memory-conformance::t-1", "/memory-conformance::t-1",
                    "..\\memory-conformance::t-1", "::memory-conformance::t-1"):
        assert our_node_id(printed) == "memory-conformance::t-1", printed
    assert our_node_id("memory-conformance") == "memory-conformance"
    for other in ("tests/memory-conformance", "tests/test_x.py::test_y", "memory-conformance-x::t-1", "x::t-1"):
        assert our_node_id(other) is None, other


def test_the_markers_are_listed_without_a_target(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("-p", "no:cacheprovider", "--markers")
    text = result.stdout.str()
    for marker in ("memory_documented", "memory_reference", "memory_hardening", "memory_must", "memory_should",
                   "memory_feature_view", "memory_feature_symlink", "memory_feature_special_files"):
        assert f"@pytest.mark.{marker}:" in text, marker


def test_every_option_is_an_ini_option(pytester: pytest.Pytester) -> None:
    from refmem_conformance.pytest_plugin import SETTINGS

    result = pytester.runpytest("-p", "no:cacheprovider", "--help")
    text = result.stdout.str()
    # An option's own line is indented two spaces; a description wrapped at the terminal's width may also begin
    # with an option's name (at COLUMNS=200, "--memory-examples," did), deeper.
    options = [line.split()[0].split("=")[0] for line in text.splitlines() if line.startswith("  --memory-")]
    assert sorted(options) == sorted(setting.option for setting in SETTINGS) and "--memory-skip-features" in options
    for setting in SETTINGS:
        assert f"{setting.dest} " in text or f"{setting.dest}(" in text, setting.dest  # listed under [pytest] ini


def test_the_ini_file_configures_the_plugin_and_the_command_line_wins(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    cases = write_cases(pytester.path / "cases", BASIC)
    pytester.makepyfile(test_own="def test_own():\n    assert True\n")
    pytester.makeini(
        "[pytest]\n"
        "memory_target = python:fake_backends:tiny\n"
        f"memory_cases_dir = {cases.name}\n"  # relative to the ini file's folder
        "memory_no_matrix = true\n"
        "memory_skip = t-001 t-002\n"
    )
    from_ini = pytester.runpytest("-p", "no:cacheprovider")
    from_ini.assert_outcomes(passed=3)  # test_own, t-003, t-004
    overridden = pytester.runpytest("-p", "no:cacheprovider", "--memory-skip", "t-004")
    overridden.assert_outcomes(passed=4)  # the command line's --memory-skip replaces the ini file's
    monkeypatch.chdir(pytester.mkdir("sub"))  # the ini file's paths are read from its folder, not from here
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=2)  # t-003, t-004 (no test_own here)


def test_pyproject_settings_and_a_bad_value_are_reported(pytester: pytest.Pytester) -> None:
    cases = write_cases(pytester.path / "cases", BASIC)
    pytester.makepyprojecttoml(
        "[tool.pytest.ini_options]\n"
        'memory_target = "python:fake_backends:wrong"\n'
        f'memory_cases_dir = "{cases.name}"\n'
        'memory_no_matrix = "true"\n'
        'memory_profile = "documented"\n'
        'memory_timeout = "soon"\n'
    )
    bad = pytester.runpytest("-p", "no:cacheprovider")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    assert "memory_timeout = 'soon': a number of seconds" in bad.stderr.str()
    good = pytester.runpytest("-p", "no:cacheprovider", "--memory-timeout", "5", "-m", "memory_should")
    good.assert_outcomes(failed=1, deselected=3)  # t-001: the trailing space, under the documented profile too


def test_skip_features_leaves_cases_out(pytester: pytest.Pytester) -> None:
    cases = write_cases(pytester.path / "cases", BASIC[:2] + [dict(BASIC[2], features=["delete"]), BASIC[3]])
    options = ["-p", "no:cacheprovider", "--memory-cases-dir", str(cases), "--memory-no-matrix"]
    target = ["--memory-target", "python:fake_backends:tiny", "--collect-only", "-q"]
    kept = pytester.runpytest(*options, *target, "--memory-skip-features", "delete")
    assert [line for line in kept.outlines if "::" in line] == [
        "memory-conformance::t-001", "memory-conformance::t-002", "memory-conformance::t-004"
    ]
    none = pytester.runpytest(*options, *target, "--memory-skip-features", "view,delete")
    assert not [line for line in none.outlines if "::" in line]
