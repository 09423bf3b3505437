"""--validate: every adapter protocol message checked against the published schemas, through the relay."""

from __future__ import annotations

import pathlib
import sys

import pytest
from conformance_support import FAKE_ADAPTER, adapter, run_cli

# An adapter that answers as the fake one does, except that its start reply gives implementation.version as a
# number (the schema says a string): the runner itself accepts that, --validate must not.
NUMBER_VERSION = """
import json, subprocess, sys
child = subprocess.Popen([sys.executable, {fake!r}], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
for line in sys.stdin:
    child.stdin.write(line)
    child.stdin.flush()
    request = json.loads(line)
    if request.get("cmd") == "stop":
        break
    reply = json.loads(child.stdout.readline())
    if request.get("cmd") == "start":
        reply["implementation"]["version"] = 0
    print(json.dumps(reply), flush=True)
"""


def test_a_conforming_adapter_passes(basic_cases: pathlib.Path) -> None:
    status, out, err = run_cli("--cases-dir", str(basic_cases), "--no-matrix", "--target", adapter(), "--validate")
    assert status == 0, out + err
    assert "protocol (--validate): every message follows its schema" in out


def test_a_message_off_its_schema_fails_the_run(basic_cases: pathlib.Path, tmp_path: pathlib.Path) -> None:
    script = tmp_path / "number_version.py"
    script.write_text(NUMBER_VERSION.format(fake=str(FAKE_ADAPTER)))
    target = f"cmd:{sys.executable} {script}"
    status, out, _ = run_cli("--cases-dir", str(basic_cases), "--no-matrix", "--target", target)
    assert status == 0  # the runner alone does not look at implementation.version's type
    status, out, _ = run_cli("--cases-dir", str(basic_cases), "--no-matrix", "--target", target, "--validate")
    assert status == 1, out
    assert "protocol (--validate): 1 message does not follow its schema" in out
    assert "protocol adapter -> runner (start-reply)" in out and "implementation/version" in out


def test_validate_needs_an_adapter_and_jsonschema(basic_cases: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    common = ["--cases-dir", str(basic_cases), "--no-matrix", "--validate"]
    status, _, err = run_cli(*common, "--target", "refmem")
    assert status == 2 and "it needs a cmd: target" in err
    monkeypatch.setitem(sys.modules, "jsonschema", None)  # as if it were not installed
    status, _, err = run_cli(*common, "--target", adapter())
    assert status == 2 and "--validate needs jsonschema" in err
