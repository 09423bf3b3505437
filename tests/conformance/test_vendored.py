"""A vendored, unmodified copy of refmem/ is a conformance target as the README says: `python:myapp.refmem:
MemoryHandler` takes the runner's options as plain data (a `limits` mapping, a `content_policy` action name).

Before, the runner's dict and string reached `Limits` and `ContentPolicy` parameters as they were: 19 cases
ended in the internal-error result and the copy failed a run that said "conformant: yes".
"""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parents[2]


def test_a_vendored_copy_passes_as_its_own_target(tmp_path: pathlib.Path) -> None:
    app = tmp_path / "myapp"
    shutil.copytree(REPO / "refmem", app / "refmem", ignore=shutil.ignore_patterns("__pycache__"))
    (app / "__init__.py").write_text("")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), str(REPO)]))
    done = subprocess.run(
        [sys.executable, "-m", "refmem_conformance", "--target", "python:myapp.refmem:MemoryHandler",
         "--profile", "hardening", "--skip", "big-*", "-q", "--workdir", str(tmp_path)],
        env=env, capture_output=True, text=True, timeout=900,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "verdict: PASS (exit 0): safe and conformant under the hardening profile" in done.stdout
    assert " 0 fail," in done.stdout and "option" not in done.stdout  # no case skipped for an option


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
