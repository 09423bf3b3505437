"""The command line for the people who run it: --version, a reader that goes away early, tool input on
standard input, help texts that read well in a terminal, and the SDK adapter's missing-extra message."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Tuple

import pytest

import refmem
from refmem import cli
from refmem.protocol import VERSION as PROTOCOL_VERSION

REFMEM = [sys.executable, "-m", "refmem"]
VIEW_ROOT = json.dumps({"command": "view", "path": "/memories"})


def run(*argv: str, stdin: bytes = b"") -> subprocess.CompletedProcess:
    return subprocess.run([*REFMEM, *argv], input=stdin, capture_output=True, timeout=60)


def run_into_closed_pipe(*argv: str) -> Tuple[int, str]:
    """Run refmem with its stdout a pipe whose only reader is already gone: every write fails with
    EPIPE, whatever the timing (what `| head -c1` does once head has its byte)."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run([*REFMEM, *argv], stdout=write_end, stderr=subprocess.PIPE, timeout=60)
    finally:
        os.close(write_end)
    return done.returncode, done.stderr.decode("utf-8", "replace")


def wide_file(root: Path) -> str:
    """A memory whose view is far larger than a pipe's buffer (200 KB of four-byte characters)."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "wide.md").write_text(("\U0001f600" * 200 + "\n") * 250, encoding="utf-8")
    return json.dumps({"command": "view", "path": "/memories/wide.md"})


# --- --version -----------------------------------------------------------------------------------


def test_version_names_the_package_and_the_protocol_serve_speaks() -> None:
    done = run("--version")
    assert done.returncode == 0 and done.stderr == b""
    assert done.stdout.decode() == f"refmem {refmem.__version__} (adapter protocol {PROTOCOL_VERSION})\n"


def test_the_wheel_version_is_the_package_version() -> None:
    """pyproject reads its version from refmem/__init__.py; nothing else may state one."""
    pyproject = (Path(__file__).resolve().parents[2] / "pyproject.toml").read_text(encoding="utf-8")
    project = pyproject.split("[project]", 1)[1].split("\n[", 1)[0]
    assert 'dynamic = ["version"]' in project and not re.search(r"^version\s*=", project, re.M)
    assert '[tool.hatch.version]\npath = "refmem/__init__.py"' in pyproject
    assert re.fullmatch(r"\d+\.\d+\.\d+", refmem.__version__)


# --- a reader that goes away -------------------------------------------------------------------


def test_exec_into_a_closed_pipe_ends_quietly(tmp_path: Path) -> None:
    view = wide_file(tmp_path / "memories")
    status, said = run_into_closed_pipe("exec", "--root", str(tmp_path / "memories"), view)
    assert (status, said) == (cli.STATUS_READER_GONE, "")


@pytest.mark.skipif(shutil.which("head") is None, reason="needs head(1)")
def test_piped_to_head_prints_what_head_takes_and_no_traceback(tmp_path: Path) -> None:
    view = wide_file(tmp_path / "memories")
    refmem_line = " ".join(f"'{arg}'" for arg in REFMEM)
    root = str(tmp_path / "memories")
    first = subprocess.run(f"{refmem_line} exec --root '{root}' '{view}' | head -c1", shell=True,
                           capture_output=True, timeout=60)  # fmt: skip
    assert first.stdout == b"H" and b"Traceback" not in first.stderr and b"Error" not in first.stderr
    usage = subprocess.run(f"{refmem_line} --help | head -1", shell=True, capture_output=True, timeout=60)
    assert usage.stdout.startswith(b"usage: refmem ") and usage.stdout.count(b"\n") == 1
    assert b"Traceback" not in usage.stderr and b"Error" not in usage.stderr


# --- exec reads its input from stdin -----------------------------------------------------------


def test_exec_dash_reads_the_tool_input_from_stdin(tmp_path: Path) -> None:
    root = str(tmp_path / "memories")
    # Longer than one command-line argument may be on Linux (128 KiB), which is why stdin exists.
    text = "a" * (512 * 1024) + "\n"
    created = run("exec", "--root", root, "-", stdin=json.dumps(
        {"command": "create", "path": "/memories/big.md", "file_text": text}).encode())  # fmt: skip
    assert (created.returncode, created.stdout) == (0, b"File created successfully at: /memories/big.md\n")
    assert (tmp_path / "memories" / "big.md").read_text() == text
    missing = run("exec", "--root", root, "-", stdin=b'{"command": "view", "path": "/memories/nope"}')
    assert missing.returncode == 1 and missing.stdout.startswith(b"The path /memories/nope does not exist")


@pytest.mark.parametrize(
    ("stdin", "reason"),
    [
        (b"", "the input is not valid JSON"),
        (b'{"command": "view", "path": "/memories/\xff"}', "the input is not valid JSON"),
        (b"[" * 100_000, "the input nests arrays or objects too deeply to read"),
    ],
    ids=["empty", "not-utf8", "deep"],
)
def test_exec_dash_refuses_bad_stdin_in_one_line(tmp_path: Path, stdin: bytes, reason: str) -> None:
    done = run("exec", "--root", str(tmp_path), "-", stdin=stdin)
    assert (done.returncode, done.stdout, done.stderr.decode()) == (2, b"", f"refmem: {reason}\n")


def test_exec_dash_without_stdin(tmp_path: Path) -> None:
    done = subprocess.run([*REFMEM, "exec", "--root", str(tmp_path), "-"], stdin=subprocess.DEVNULL,
                          capture_output=True, timeout=60)  # fmt: skip
    assert (done.returncode, done.stderr) == (2, b"refmem: the input is not valid JSON\n")
    closed = subprocess.run(f"'{sys.executable}' -m refmem exec --root '{tmp_path}' - <&-", shell=True,
                            capture_output=True, timeout=60)  # fmt: skip
    assert (closed.returncode, closed.stderr) == (2, b"refmem: cannot read the tool input from standard input\n")


def test_exec_dash_bounds_what_it_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The bound is what serve allows one request line; shown with a small bound, in process."""
    assert cli.MAX_STDIN_BYTES == 16 * 1024 * 1024
    monkeypatch.setattr(cli, "MAX_STDIN_BYTES", len(VIEW_ROOT))
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(VIEW_ROOT.encode() + b" ")))
    assert cli.main(["exec", "--root", str(tmp_path), "-"]) == 2
    assert capsys.readouterr().err == f"refmem: the input on standard input is longer than {len(VIEW_ROOT)} bytes\n"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(VIEW_ROOT.encode())))
    assert cli.main(["exec", "--root", str(tmp_path), "-"]) == 0
    assert capsys.readouterr().out.startswith("Here're the files and directories")


# --- help texts ----------------------------------------------------------------------------------


def help_text(*argv: str) -> str:
    done = run(*argv, "--help")
    assert done.returncode == 0 and done.stderr == b""
    return str(done.stdout.decode())


@pytest.mark.parametrize("command", [(), ("exec",), ("serve",), ("prune",)])
def test_help_is_plain_text(command: Tuple[str, ...]) -> None:
    text = help_text(*command)
    assert "`" not in text and "**" not in text


def test_every_option_says_what_it_is() -> None:
    for command in ("exec", "prune"):
        parser = cli.build_parser()._subparsers._group_actions[0].choices[command]  # type: ignore[union-attr]
        for action in parser._actions:
            assert action.help, (command, action.dest)
    prune = help_text("prune")
    assert re.search(r"--root ROOT\s+the real directory that /memories stands for", prune)


def test_serve_help_names_the_protocol_file_and_version() -> None:
    text = " ".join(help_text("serve").split())
    assert "conformance/PROTOCOL.md" in text and f"protocol version {PROTOCOL_VERSION}" in text
    assert f"adapter protocol (version {PROTOCOL_VERSION})" in " ".join(help_text().split())


def test_exec_help_says_how_to_read_stdin_and_what_the_status_means() -> None:
    text = " ".join(help_text("exec").split())
    assert "- reads it from standard input" in text
    assert "0 for a success result, 1 for an error result, 2 when the command could not run" in text


# --- the SDK adapter without its extra -----------------------------------------------------------


def test_sdk_without_anthropic_says_what_to_install() -> None:
    probe = (
        "import sys\n"
        "sys.modules['anthropic'] = None\n"
        "try:\n"
        "    import refmem.sdk\n"
        "except ImportError as error:\n"
        "    print(type(error).__name__, error)\n"
        "else:\n"
        "    print('imported')\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == (
        'ImportError refmem.sdk needs the Anthropic Python SDK (anthropic>=0.69): pip install "refmem[anthropic]"'
    )
