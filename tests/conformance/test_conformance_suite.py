"""The real suite: the reference passes every case (in process and through the protocol), and the Anthropic
Python SDK target produces a report (the CI job that publishes conformance/reports/)."""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import sys
import tempfile

import pytest
from conformance_support import run_cli
from refmem_conformance.cases import load_cases


def _fast_workdir() -> tuple:
    """Case folders in memory when the machine has /dev/shm: the reference fsyncs every write."""
    shm = pathlib.Path("/dev/shm")
    return ("--workdir", str(shm)) if shm.is_dir() and os.access(shm, os.W_OK) else ()


def _suite_size() -> int:
    cases, _ = load_cases()
    assert cases, "conformance/cases/ holds no cases: the suite is empty"
    return len(cases)


def _reference_report(tmp_path: pathlib.Path) -> dict:
    """The report of the whole suite against the reference under the hardening profile (every tier counts):
    the one CI's conformance step just wrote (`REFMEM_REFERENCE_REPORT`, so CI runs the suite once), else a
    run made here."""
    given = os.environ.get("REFMEM_REFERENCE_REPORT")
    if given:
        report = json.loads(pathlib.Path(given).read_text())
        assert report["target"] == "refmem" and report["profile"] == "hardening", given
        return report  # type: ignore[no-any-return]
    path = tmp_path / "reference.json"
    status, out, err = run_cli(
        "--target", "refmem", "--report-json", str(path), "--strict", "--profile", "hardening", *_fast_workdir()
    )
    assert status == 0, out + err
    return json.loads(path.read_text())  # type: ignore[no-any-return]


def test_the_reference_passes_every_case(tmp_path: pathlib.Path) -> None:
    size = _suite_size()
    report = _reference_report(tmp_path)
    assert report["verdict"]["exit"] == 0, report["verdict"]
    counts = report["counts"]
    assert counts["pass"] + counts["skip"] == size and counts["fail"] == 0
    skipped = [entry for entry in report["cases"] if entry["status"] == "skip"]
    assert all(entry["reason"].startswith("running as root") for entry in skipped), skipped


def test_the_reference_passes_through_the_adapter_protocol(tmp_path: pathlib.Path) -> None:
    _suite_size()
    # The hand-written cases (the matrix runs in process above): enough to cover every message of the protocol.
    status, out, err = run_cli("--target", f"cmd:{sys.executable} -m refmem.serve", "--no-matrix")
    assert status == 0, out + err


def test_the_python_sdk_target_produces_a_report(tmp_path: pathlib.Path) -> None:
    pytest.importorskip("anthropic", reason="the anthropic package is not installed")
    _suite_size()
    json_report, markdown = tmp_path / "sdk.json", tmp_path / "sdk.md"
    status, out, err = run_cli(
        "--target",
        "python:refmem_conformance.adapters.anthropic_sdk:make",
        "--no-matrix",
        "--level",
        "must",
        "--report-json",
        str(json_report),
        "--markdown",
        str(markdown),
    )
    assert status in (0, 1), out + err
    report = json.loads(json_report.read_text())
    assert report["implementation"]["name"] == "anthropic BetaLocalFilesystemMemoryTool"
    assert report["figures"]["passed"][1] > 0
    published = markdown.read_text()
    assert "| reference-exact (" in published and "**safe**" in published
    # The published page must not carry this machine's paths (tracebacks and outputs are redacted).
    for host_path in (tempfile.gettempdir() + "/", sys.prefix, str(pathlib.Path.cwd())):
        assert host_path not in published


NODE_ADAPTER = pathlib.Path(__file__).resolve().parents[2] / "conformance" / "adapters" / "node"


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
@pytest.mark.skipif(
    not (NODE_ADAPTER / "node_modules").is_dir(),
    reason="the Node adapter's dependencies are not installed (npm ci --prefix conformance/adapters/node)",
)
def test_the_typescript_sdk_adapter_produces_a_report(tmp_path: pathlib.Path) -> None:
    _suite_size()
    json_report = tmp_path / "ts.json"
    status, out, err = run_cli(
        "--target",
        f"cmd:node {NODE_ADAPTER / 'adapter.mjs'}",
        "--no-matrix",
        "--run",
        "create-*",
        "--report-json",
        str(json_report),
    )
    assert status in (0, 1), out + err
    report = json.loads(json_report.read_text())
    assert report["implementation"]["language"] == "typescript" and report["restarts"] == 0
    assert report["figures"]["passed"][1] > 0
