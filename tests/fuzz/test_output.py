"""What `refmem-fuzz` prints from a file or a backend is escaped and bounded, and a reader that leaves early
(`| head`) ends it quietly."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
from typing import Any, Dict

import pytest
from fuzz_support import HERE, REPO
from refmem_fuzz.cli import main
from refmem_fuzz.printed import SHOWN_CHARS, printable_cut

FORGED = "\x1b]0;owned\x07\x1b[2J\r\nREPRODUCED: forged\u2028\x00"
"""A terminal title, a screen clear, a line of its own that looks like a verdict, a line separator, a NUL."""
LONGEST_LINE = 2 * max(SHOWN_CHARS.values()) + 200


def _finding(**changes: Any) -> Dict[str, Any]:
    data: Dict[str, Any] = {
        "format": "refmem-fuzz-finding/2", "target": "refmem", "harness": "sequence", "oracle": "leak:canary:view",
        "detail": "", "step": 1, "hostile_layout": False, "differential": False,
        "commands": [{"command": "create", "path": "/memories/a.md", "file_text": FORGED * 500},
                     {"command": "view", "path": "/memories/a.md"}],
        "observed": [],
    }
    data.update(changes)
    return data


def _check_printed(text: str) -> None:
    assert "\x1b" not in text and "\x07" not in text and "\x00" not in text and "\r" not in text
    assert "\u2028" not in text
    for line in text.splitlines():
        assert not line.startswith("REPRODUCED: forged"), line
        assert len(line) <= LONGEST_LINE, len(line)


def test_shown_escapes_and_cuts() -> None:
    drawn = printable_cut(FORGED * 100, "output")
    assert drawn.isprintable() and "\\x1b" in drawn and drawn.endswith("characters]")
    assert len(drawn) <= SHOWN_CHARS["output"] + 30
    assert printable_cut("plain text", "name") == "plain text"


def test_replay_prints_a_backends_output_and_a_files_names_escaped(tmp_path: pathlib.Path,
                                                                     capsys: pytest.CaptureFixture) -> None:
    sent = tmp_path / "sent.json"
    sent.write_text(json.dumps(_finding(target="cmd:" + FORGED * 100)), encoding="utf-8")
    assert main(["replay", str(sent)]) == 0
    captured = capsys.readouterr()
    _check_printed(captured.out + captured.err)
    assert "\\x1b]0;owned" in captured.out  # the file's bytes, as the reference showed them, escaped
    assert "NOT REPRODUCED: leak:canary:view on refmem" in captured.out


def test_error_messages_are_escaped_and_bounded(tmp_path: pathlib.Path, capsys: pytest.CaptureFixture) -> None:
    sent = tmp_path / ("name" + FORGED.replace("\x00", "").replace("\r\n", "").replace("/", "") + ".json")
    sent.write_text(json.dumps(_finding(**{"unknown" + FORGED: 1})), encoding="utf-8")
    assert main(["replay", str(sent)]) == 2
    captured = capsys.readouterr()
    _check_printed(captured.out + captured.err)
    assert len(captured.err.splitlines()) == 1


def _pipeline(command: str, tmp_path: pathlib.Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), str(HERE)]))
    script = f"set -o pipefail; {sys.executable} -m refmem_fuzz {command} 2>{tmp_path / 'err'} | head -1"
    return subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True, timeout=300,
                          cwd=tmp_path)


def test_a_reader_that_leaves_early_ends_the_output_quietly(tmp_path: pathlib.Path) -> None:
    many = tmp_path / "many.json"
    long_path = "/memories/" + "x" * 400
    many.write_text(json.dumps(_finding(commands=[{"command": "view", "path": long_path}] * 256)), encoding="utf-8")
    done = _pipeline(f"replay {many}", tmp_path)
    assert done.returncode == 0 and done.stdout.startswith("finding leak:canary:view")
    assert (tmp_path / "err").read_text() == ""
    done = _pipeline("--target refmem --engine random --max-time 2 --findings findings", tmp_path)
    assert done.returncode == 0 and done.stdout.startswith("refmem-fuzz: target refmem")
    assert (tmp_path / "err").read_text() == ""
