"""The GitHub Action's own run step, executed here as a backend's CI runs it: an unsafe backend fails the job even
with an expectations file that lists its unsafe case, and `baseline` refuses to record that case in the first place.

The step's script is taken from action.yml itself (the block under `id: run`), so what is tested is what ships.
"""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import subprocess
import sys
import textwrap
from typing import Dict, Tuple

import pytest
from conformance_support import run_cli

REPO = pathlib.Path(__file__).resolve().parents[2]
HERE = pathlib.Path(__file__).resolve().parent
UNSAFE_CASE = "sec-fs-link-in-delete-path"  # the link's target is lost: data loss, a safety finding
SELECTION = f"--run {UNSAFE_CASE} --run view-file-001 --timeout 5"

pytestmark = pytest.mark.skipif(os.name != "posix" or shutil.which("bash") is None, reason="the step is bash")


def run_step_script() -> str:
    """The `run:` block of the step whose id is `run`, dedented as YAML reads a literal block."""
    lines = (REPO / "action.yml").read_text(encoding="utf-8").split("\n")
    start = next(index for index, line in enumerate(lines) if line.strip() == "id: run")
    run = next(index for index in range(start, len(lines)) if lines[index].strip() == "run: |")
    indent = len(lines[run]) - len(lines[run].lstrip())
    block = []
    for line in lines[run + 1 :]:
        if line.strip() and len(line) - len(line.lstrip()) <= indent:
            break
        block.append(line)
    return textwrap.dedent("\n".join(block))


def run_action(
    tmp_path: pathlib.Path, target: str, expectations: str = "", badges: str = "false"
) -> Tuple[int, Dict[str, str], str]:
    """(exit status, the step's outputs, the job summary) of the action's run step."""
    (tmp_path / "runner").mkdir()
    summary, outputs = tmp_path / "summary.md", tmp_path / "outputs.txt"
    env = dict(
        os.environ,
        TARGET=target,
        EXPECTATIONS=expectations,
        STRICT="false",
        BADGES=badges,
        EXTRA_ARGS=SELECTION,
        RUNNER_TEMP=str(tmp_path / "runner"),
        GITHUB_STEP_SUMMARY=str(summary),
        GITHUB_OUTPUT=str(outputs),
        PYTHONPATH=os.pathsep.join([str(HERE), str(REPO), os.environ.get("PYTHONPATH", "")]),
        PATH=os.pathsep.join([str(pathlib.Path(sys.executable).parent), os.environ.get("PATH", "")]),
    )
    script = tmp_path / "step.sh"
    script.write_text(run_step_script(), encoding="utf-8")
    done = subprocess.run(["bash", str(script)], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    written = outputs.read_text() if outputs.exists() else ""
    values = dict(line.split("=", 1) for line in written.splitlines() if "=" in line)
    return done.returncode, values, summary.read_text() if summary.exists() else ""


def test_an_unsafe_backend_fails_the_job_even_with_its_case_listed_as_expected(tmp_path: pathlib.Path) -> None:
    known = tmp_path / "known.json"
    known.write_text(json.dumps([{"id": UNSAFE_CASE, "expect": "fail", "reason": "we know", "issue": ""}]))
    status, outputs, summary = run_action(tmp_path, "python:plain_backends:make_delete_follows_link", str(known))
    assert status == 1 and outputs["status"] == "1" and outputs["safe"] == "no", outputs
    assert "**NO" in summary and os.path.exists(outputs["report"])
    report = json.loads(pathlib.Path(outputs["report"]).read_text())
    assert report["unsafe"] == [UNSAFE_CASE] and report["verdict"]["exit"] == 1


def test_the_careful_backend_passes_the_same_step(tmp_path: pathlib.Path) -> None:
    status, outputs, summary = run_action(tmp_path, "python:plain_backends:make_clean")
    assert (status, outputs["status"], outputs["safe"]) == (0, "0", "yes"), summary[-2000:]
    assert outputs["badges"] == ""  # not asked for


def test_the_step_writes_badges_when_asked_and_says_where(tmp_path: pathlib.Path) -> None:
    status, outputs, _summary = run_action(
        tmp_path, "python:plain_backends:make_delete_follows_link", badges="true"
    )
    assert status == 1 and outputs["safe"] == "no"  # the badge does not soften the gate
    folder = pathlib.Path(outputs["badges"])
    assert sorted(path.name for path in folder.iterdir()) == ["documented.json", "safe.json"]
    safe = json.loads((folder / "safe.json").read_text())
    assert (safe["schemaVersion"], safe["message"], safe["color"], safe["isError"]) == (1, "no", "red", True)
    report = json.loads(pathlib.Path(outputs["report"]).read_text())
    documented = json.loads((folder / "documented.json").read_text())
    assert report["figures"]["documented"] == [0, 0]  # SELECTION has no must case: the badge says so, in grey
    assert (documented["message"], documented["color"]) == ("no must case run", "lightgrey")


def test_the_badges_input_is_true_or_false(tmp_path: pathlib.Path) -> None:
    status, _outputs, _summary = run_action(tmp_path, "python:plain_backends:make_clean", badges="yes")
    assert status == 2


def test_baseline_refuses_to_record_an_unsafe_case_and_says_why(tmp_path: pathlib.Path) -> None:
    out_file = tmp_path / "known.json"
    status, _out, err = run_cli(
        "baseline", "--target", "python:plain_backends:make_delete_follows_link",
        *SELECTION.split(), "--output", str(out_file),
    )
    assert status == 1, err
    assert f"NOT RECORDED {UNSAFE_CASE}: unsafe (data_loss:" in err
    assert "an expectation cannot cover a safety finding" in err
    assert UNSAFE_CASE not in out_file.read_text()
