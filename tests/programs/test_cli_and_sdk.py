"""The command line (`refmem exec`, `refmem prune`) and the Anthropic SDK adapter."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from memory_support import Memory

from refmem.cli import main


def run(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "refmem", *argv], capture_output=True, text=True, timeout=60)


def test_exec_prints_the_result_and_exits_by_is_error(tmp_path: Path) -> None:
    root = str(tmp_path / "memories")
    created = run(
        "exec", "--root", root, json.dumps({"command": "create", "path": "/memories/a.md", "file_text": "x\n"})
    )
    assert (created.returncode, created.stdout) == (0, "File created successfully at: /memories/a.md\n")
    missing = run("exec", "--root", root, json.dumps({"command": "view", "path": "/memories/nope.md"}))
    assert missing.returncode == 1
    assert missing.stdout == "The path /memories/nope.md does not exist. Please provide a valid path.\n"


def test_exec_read_only_and_bad_json(tmp_path: Path) -> None:
    root = str(tmp_path / "memories")
    refused = run("exec", "--root", root, "--read-only", json.dumps({"command": "delete", "path": "/memories/a"}))
    assert refused.returncode == 1
    assert refused.stdout == "Error: The memory directory is read-only; delete is not allowed.\n"
    broken = run("exec", "--root", root, "{not json")
    assert broken.returncode == 2 and "not valid JSON" in broken.stderr and "Traceback" not in broken.stderr


def test_exec_reports_deep_nesting_without_a_traceback(tmp_path: Path) -> None:
    nested = run("exec", "--root", str(tmp_path), "[" * 100_000)
    assert (nested.returncode, nested.stdout) == (2, "")
    assert nested.stderr == "refmem: the input nests arrays or objects too deeply to read\n"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_exec_reports_an_unusable_root_without_a_traceback(tmp_path: Path) -> None:
    regular = tmp_path / "file"
    regular.write_text("x")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    view = json.dumps({"command": "view", "path": "/memories"})
    for root, reason in ((regular, "it is not a directory"), (fifo, "it is not a directory"), ("", "no such file")):
        done = run("exec", "--root", str(root), view)
        assert done.returncode == 2 and done.stdout == "", root
        expected = f"refmem: cannot use {str(root)!r} as the memory directory: {reason}"
        assert done.stderr.startswith(expected), done.stderr
        assert "Traceback" not in done.stderr


def test_exec_argument_errors_in_process(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    view = json.dumps({"command": "view", "path": "/memories"})
    monkeypatch.delenv("REFMEM_STORE", raising=False)
    assert main(["exec", view]) == 2  # neither --root nor --store (nor REFMEM_STORE)
    assert capsys.readouterr().err == "refmem: give --root DIRECTORY or --store sqlite:///PATH (or set REFMEM_STORE)\n"
    assert main(["exec", "--root", str(tmp_path) + "/a\x00b", view]) == 2
    assert "cannot use" in capsys.readouterr().err
    assert main(["exec", "--root", str(tmp_path), "\udcff"]) == 2  # undecodable argv bytes
    assert capsys.readouterr().err == "refmem: the input is not valid JSON\n"
    for argv in (["exec", "--root", str(tmp_path)], ["exec", "--root"], ["exec", "--bogus", "x"],
                 ["exec", "--root", str(tmp_path), "--store", "sqlite:m.db", view]):
        with pytest.raises(SystemExit) as exited:
            main(argv)
        assert exited.value.code == 2
        assert "Traceback" not in capsys.readouterr().err


def test_exec_survives_a_handler_that_breaks_its_promise(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from refmem import handler as handler_module

    def broken(self: object, tool_input: object) -> object:
        raise KeyError("boom")

    monkeypatch.setattr(handler_module.MemoryHandler, "execute", broken)
    assert main(["exec", "--root", str(tmp_path), "{}"]) == 2
    assert capsys.readouterr().err == "refmem: the handler failed on this input (KeyError); please report it\n"


def test_exec_writes_characters_stdout_cannot_encode_as_escapes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import io

    from refmem import handler as handler_module
    from refmem.messages import Result

    monkeypatch.setattr(handler_module.MemoryHandler, "execute", lambda self, tool_input: Result("a\ud800b", True))
    strict = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    monkeypatch.setattr(sys, "stdout", strict)
    assert main(["exec", "--root", str(tmp_path), "{}"]) == 1
    strict.flush()
    assert strict.buffer.getvalue() == b"a\\ud800b\n"


def test_prune_dry_run_then_real(memory: Memory, capsys: pytest.CaptureFixture[str]) -> None:
    stale = memory.put("old/stale.md", "old\n")
    fresh = memory.put("fresh.md", "new\n")
    long_ago = time.time() - 40 * 86400
    os.utime(stale, (long_ago, long_ago))
    root = str(memory.root)
    assert main(["prune", "--root", root, "--older-than", "30d", "--dry-run"]) == 0
    assert "would remove /memories/old/stale.md" in capsys.readouterr().out
    assert stale.exists()
    assert main(["prune", "--root", root, "--older-than", "30d"]) == 0
    assert "removed /memories/old/stale.md" in capsys.readouterr().out
    assert not stale.exists() and fresh.exists()


def test_prune_reports_bad_input_without_a_traceback(tmp_path: Path) -> None:
    bad_duration = run("prune", "--root", str(tmp_path), "--older-than", "soon")
    assert bad_duration.returncode == 2 and "Traceback" not in bad_duration.stderr
    missing_root = run("prune", "--root", str(tmp_path / "absent"), "--older-than", "1d")
    assert missing_root.returncode == 2 and "Traceback" not in missing_root.stderr


def test_sdk_adapter_routes_to_the_handler_and_raises_tool_error(tmp_path: Path) -> None:
    pytest.importorskip("anthropic")
    from anthropic.lib.tools import ToolError
    from anthropic.types.beta import BetaMemoryTool20250818ViewCommand

    from refmem.sdk import RefmemMemoryTool

    tool = RefmemMemoryTool(tmp_path / "memories", read_only=False)
    assert tool.to_dict() == {"type": "memory_20250818", "name": "memory"}
    assert tool.call({"command": "create", "path": "/memories/n.md", "file_text": "hi\n"}) == (
        "File created successfully at: /memories/n.md"
    )
    typed = BetaMemoryTool20250818ViewCommand(command="view", path="/memories/n.md")
    assert tool.view(typed) == "Here's the content of /memories/n.md with line numbers:\n     1\thi"
    with pytest.raises(ToolError) as raised:
        tool.call({"command": "view", "path": "/memories/../etc/passwd"})
    assert str(raised.value) == ('Error: Invalid path /memories/../etc/passwd: "." and ".." segments are not allowed.')


def test_handler_is_a_context_manager_that_releases_its_descriptors(tmp_path: Path) -> None:
    from refmem import MemoryHandler

    gc.collect()  # what earlier tests left in reference cycles closes now, not while this one counts
    before = len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else None
    with MemoryHandler(tmp_path / "memories") as memory:
        assert not memory.execute({"command": "create", "path": "/memories/a.md", "file_text": "x"}).is_error
    after_use = memory.execute({"command": "view", "path": "/memories/a.md"})
    assert after_use.is_error and "Traceback" not in after_use.output
    if before is not None:
        assert len(os.listdir("/proc/self/fd")) == before
