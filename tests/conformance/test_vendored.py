"""A vendored, unmodified copy of refmem/ is a conformance target as the README says: `python:myapp.refmem:
MemoryHandler` takes the runner's options as plain data (a `limits` mapping, a `content_policy` action name).

Before, the runner's dict and string reached `Limits` and `ContentPolicy` parameters as they were: 19 cases
ended in the internal-error result and the copy failed a run that said "conformant: yes".

The whole suite against the smallest copy is tests/project/test_vendoring.py; here a copy of the whole package runs
the cases that pass options, which is what this file is about.
"""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parents[2]


def _cases_with_options() -> list:
    """Every case that hands the target options (limits, a content policy, ...), from the case files."""
    found = []
    for path in sorted((REPO / "conformance" / "cases").glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        for case in data.get("cases", []) if isinstance(data, dict) else []:
            if case.get("options"):
                found.append(case["id"])
    return found


def test_a_vendored_copy_passes_as_its_own_target(tmp_path: pathlib.Path) -> None:
    app = tmp_path / "myapp"
    shutil.copytree(REPO / "refmem", app / "refmem", ignore=shutil.ignore_patterns("__pycache__"))
    (app / "__init__.py").write_text("")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), str(REPO)]))
    chosen = _cases_with_options()
    assert len(chosen) >= 20, chosen  # the option cases are found (29 when this was written)
    command = [sys.executable, "-m", "refmem_conformance", "--target", "python:myapp.refmem:MemoryHandler",
               "--profile", "hardening", "-q", "--workdir", str(tmp_path)]
    for case in chosen:
        command += ["--run", case]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "verdict: PASS (exit 0): safe and conformant under the hardening profile" in done.stdout
    assert f"{len(chosen)} pass, 0 fail," in done.stdout and "option" not in done.stdout  # none skipped for an option


def test_the_handler_takes_plain_options() -> None:
    import tempfile

    from refmem import MemoryHandler
    from refmem.limits import Limits

    with tempfile.TemporaryDirectory() as root:
        handler = MemoryHandler(root, limits={"max_file_bytes": 200}, content_policy="reject")
        assert handler.limits == Limits(max_file_bytes=200)
        big = handler.execute({"command": "create", "path": "/memories/a.txt", "file_text": "x" * 201})
        pem = "-----BEGIN RSA " + "PRIVATE KEY-----\n" + "QUJD" * 16 + "\n-----END RSA " + "PRIVATE KEY-----"
        key = handler.execute({"command": "create", "path": "/memories/b.txt", "file_text": pem})
        handler.close()
    assert big.is_error and "200 bytes" in big.output
    assert key.is_error and "private key" in key.output.lower()
