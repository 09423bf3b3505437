"""The same backend gets the same verdicts run after run, even when it writes where a payload points on the host.

`simple_backend` trusts absolute paths below the system's temporary folder, so the matrix's
`/tmp/outside/secret.txt` lands on the host. Without the host watch, what the first run created there made
the second run's `view` succeed and its `create` fail ("already exists"): two cases flipped. The watch
reports the write (a safety finding) and puts the host back, so both runs agree.
"""

from __future__ import annotations

import io
import json
import pathlib
import tempfile
from typing import Dict, Tuple

import pytest
from refmem_conformance.cli import main

HOST_DIR = pathlib.Path(tempfile.gettempdir()) / "outside"


def _outcomes(report: pathlib.Path) -> Dict[str, Tuple[str, Tuple[str, ...]]]:
    cases = json.loads(report.read_text())["cases"]
    return {case["id"]: (case["status"], tuple(case.get("classes", []))) for case in cases}


def _run(tmp_path: pathlib.Path, name: str) -> Dict[str, Tuple[str, Tuple[str, ...]]]:
    report = tmp_path / f"{name}.json"
    # case folders on the same filesystem as the host path, so that a rename onto it succeeds
    argv = ["--target", "python:simple_backend:make", "--run", "sec-absolute-*", "--run", "sec-dotdot-plain-*"]
    argv += ["--workdir", str(tmp_path), "--report-json", str(report), "-q"]
    main(argv, out=io.StringIO(), err=io.StringIO())
    return _outcomes(report)


@pytest.mark.skipif(HOST_DIR.exists(), reason=f"{HOST_DIR} exists on this machine: the test would disturb it")
@pytest.mark.skipif(
    tempfile.gettempdir() != "/tmp",  # noqa: S108
    reason="the matrix's payload is /tmp/outside/...: simple_backend trusts it only when the temporary folder is /tmp",
)
def test_a_backend_writing_to_the_host_gets_the_same_verdicts_twice(tmp_path: pathlib.Path) -> None:
    first = _run(tmp_path, "first")
    assert not HOST_DIR.exists(), "the run left the host path behind"
    second = _run(tmp_path, "second")
    assert not HOST_DIR.exists()
    assert first == second
    assert len(first) == 7 * 11  # the absolute family (10 payloads) and one traversal payload, every slot
    for slot in ("create-path", "rename-new_path"):
        assert "safety" in first[f"sec-absolute-tmp-{slot}"][1], first[f"sec-absolute-tmp-{slot}"]
    assert first["sec-absolute-tmp-view-path"] == ("pass", ())
