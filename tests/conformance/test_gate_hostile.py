"""The harness as a victim: what a backend leaves on disk or sends back is read bounded, a report stays small, and a
run that is interrupted or piped into `head` ends cleanly.

Each test runs the command line in a child process, as a CI job does, and measures the child (its peak resident
memory, its exit status, what it leaves behind), never the wall clock.
"""

from __future__ import annotations

import json
import os
import pathlib
import resource
import signal
import subprocess
import sys
import time
from typing import List, Tuple

import pytest

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parents[1]

pytestmark = pytest.mark.skipif(os.name != "posix", reason="POSIX processes, signals and sparse files")


def _env() -> dict:
    return dict(os.environ, PYTHONPATH=os.pathsep.join([str(HERE), str(REPO), os.environ.get("PYTHONPATH", "")]))


def _cli(*argv: str, timeout: float = 600) -> Tuple[int, str, str]:
    done = subprocess.run(
        [sys.executable, "-m", "refmem_conformance", *argv], env=_env(), capture_output=True, text=True,
        timeout=timeout,
    )
    return done.returncode, done.stdout, done.stderr


def _peak_child_kib(*argv: str) -> Tuple[int, int]:
    """(exit status, peak resident KiB) of `python -m refmem_conformance ARGV` run as a fresh child."""
    probe = (
        "import resource, subprocess, sys\n"
        "status = subprocess.run([sys.executable, '-m', 'refmem_conformance', *sys.argv[1:]],"
        " stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode\n"
        "print(status, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, *argv], env=_env(), capture_output=True, text=True, timeout=600, check=True
    )
    status, peak = done.stdout.split()
    return int(status), int(peak)


def test_a_sparse_8_gib_file_left_in_the_root_is_never_read_whole(tmp_path: pathlib.Path) -> None:
    """Audit point 6: every regular file in the root was read whole after each case (MemoryError on a sparse
    8 GiB file, 7.4 GB of memory for a 2 GiB one). Now a file is hashed only where a check needs it."""
    status, peak_kib = _peak_child_kib(
        "--target", "python:hostile_backends:make_sparse", "--run", "create-00*", "--run", "delete-00*",
        "--workdir", str(tmp_path), "--report-json", str(tmp_path / "r.json"),
    )
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["figures"]["passed"][1] > 0  # the cases ran to the end and were judged
    assert peak_kib < 400 * 1024, f"the runner held {peak_kib // 1024} MiB"
    assert status in (0, 1)


def test_huge_outputs_leave_a_small_report(tmp_path: pathlib.Path) -> None:
    """A failing case stores a bounded excerpt of an output (head, tail, length and sha256), not the output: the
    report of 20 cases whose every output is 2 MB stays well under a megabyte per case."""
    report = tmp_path / "r.json"
    status, out, _ = _cli(
        "--target", "python:hostile_backends:make_verbose", "--run", "view-file-0[01]*", "--profile", "standard",
        "--report-json", str(report), "--markdown", str(tmp_path / "r.md"), "--workdir", str(tmp_path),
    )
    data = json.loads(report.read_text())
    ran = data["figures"]["passed"][1]
    assert status == 1 and ran >= 10
    assert report.stat().st_size < 64 * 1024 * ran, report.stat().st_size
    actual = [f.get("actual", "") for c in data["cases"] for f in c.get("findings", []) if f.get("actual")]
    assert actual and any("characters cut:" in text and "sha256" in text for text in actual)
    assert len(out) < 200_000  # the streamed failures are bounded too


def _a_case_started(work: pathlib.Path) -> bool:
    """Whether a case folder past the start folder exists under the run's work folder (which the run removes
    case by case as it goes: a folder may vanish while it is looked at)."""
    try:
        return any(not case.name.startswith("00000-") for run in work.iterdir() for case in run.iterdir())
    except FileNotFoundError:
        return False


def test_an_interrupted_run_writes_its_reports_marked_and_leaves_no_work_folder(tmp_path: pathlib.Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    report = tmp_path / "r.json"
    child = subprocess.Popen(
        [sys.executable, "-m", "refmem_conformance", "--target", "python:hostile_backends:make_slow",
         "--run", "view-*", "--report-json", str(report), "--workdir", str(work)],
        env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    # wait until the run is under way (a case folder, past the start folder, exists), then interrupt it
    for _ in range(2400):
        if _a_case_started(work):
            break
        time.sleep(0.05)
    child.send_signal(signal.SIGINT)
    out, err = child.communicate(timeout=300)
    assert child.returncode == 130, out + err
    data = json.loads(report.read_text())
    assert data["interrupted"] is True and data["verdict"]["exit"] == 130
    assert "INTERRUPTED" in out and "Traceback" not in err
    assert list(work.iterdir()) == []  # the work folder went on this exit path too


def test_sigterm_ends_a_run_like_ctrl_c(tmp_path: pathlib.Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    child = subprocess.Popen(
        [sys.executable, "-m", "refmem_conformance", "--target", "python:hostile_backends:make_slow",
         "--run", "view-*", "--workdir", str(work)],
        env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    for _ in range(600):
        if any(work.iterdir()):
            break
        time.sleep(0.05)
    child.send_signal(signal.SIGTERM)
    out, err = child.communicate(timeout=300)
    assert child.returncode == 130 and "Traceback" not in err
    assert list(work.iterdir()) == []


@pytest.mark.parametrize("argv", [["list"], ["--target", "refmem", "--run", "view-dir-*", "-v"]])
def test_a_closed_pipe_ends_quietly(argv: List[str]) -> None:
    shell = f"{sys.executable} -m refmem_conformance {' '.join(argv)} | head -n 1"
    done = subprocess.run(["bash", "-c", shell], env=_env(), capture_output=True, text=True, timeout=600)
    assert done.stdout.count("\n") == 1
    assert "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr, done.stderr


def test_a_selection_with_no_gating_case_is_not_judged_rather_than_not_conformant() -> None:
    status, out, _ = _cli("--target", "refmem", "--run", "paths-009")  # a hardening case: shown, not gating
    assert status == 0
    assert "conformant: not judged: no case that gates under the standard profile ran" in out
    assert "conformant: no:" not in out
