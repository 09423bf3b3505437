"""What a person running the suite reads: bounded failures with visible whitespace, progress, versions."""

from __future__ import annotations

import io
import pathlib
import subprocess
import sys
from typing import List

import pytest
from conformance_support import WORKDIR, case, run_cli, view, write_cases

import refmem
import refmem_conformance as conformance
from refmem_conformance import excerpt

LINES = 400


def _long_case(tmp_path: pathlib.Path) -> pathlib.Path:
    """A view of a 400-line file whose stated output differs from the truth at lines 201 and 301 (spaces for a tab)."""
    text = "".join(f"line {n}\n" for n in range(1, LINES + 1))
    shown = [f"{n:6}\tline {n}" for n in range(1, LINES + 1)]
    shown[200] = shown[200].replace("\t", "  ")
    shown[300] = shown[300].replace("\t", "  ")
    output = "Here's the content of /memories/a.txt with line numbers:\n" + "\n".join(shown)
    long = case(
        "t-001",
        [view("/memories/a.txt", False, output=output)],
        level="should",
        basis="reference",
        setup={"files": {"a.txt": text}},
    )
    return write_cases(tmp_path / "cases", [long])


def _failure_block(stdout: str) -> List[str]:
    lines = stdout.splitlines()
    start = next(index for index, line in enumerate(lines) if line.startswith("FAIL t-001"))
    end = next(index for index, line in enumerate(lines) if line.startswith("refmem conformance"))
    return lines[start:end]


def test_a_failure_shows_its_first_difference_and_counts_the_rest(tmp_path: pathlib.Path) -> None:
    cases = _long_case(tmp_path)
    status, bounded, _ = run_cli("--cases-dir", str(cases), "--no-matrix", "--run", "t-001")
    assert status == 1
    block = _failure_block(bounded)
    assert len(block) <= 10, block
    assert "first difference at line 202 of expected, line 202 of actual:" in bounded  # the header is line 1
    assert [line.strip() for line in block[3:7]] == [
        "␣␣␣200—»line␣200↵",
        "-␣␣␣201␣␣line␣201↵",
        "+␣␣␣201—»line␣201↵",
        "... 2 more lines (--full-diff shows all)",
    ]

    status, full, _ = run_cli("--cases-dir", str(cases), "--no-matrix", "--run", "t-001", "--full-diff")
    assert status == 1
    whole = _failure_block(full)
    assert len(whole) > len(block)
    stripped = [line.strip() for line in whole]
    assert {"--- expected", "+␣␣␣201—»line␣201↵", "-␣␣␣301␣␣line␣301↵", "+␣␣␣301—»line␣301↵"} <= set(stripped)


def test_a_long_output_is_cut_with_a_count() -> None:
    text = "".join(f"{n}\n" for n in range(50))
    shown = excerpt.head(text)
    assert shown == ["0↵", "1↵", "2↵", "... 47 more lines (--full-diff shows all)"]
    assert excerpt.head("one line, no newline") == ["one␣line,␣no␣newline∎"]


def test_the_first_difference_counts_every_other_changed_line() -> None:
    expected = "".join(f"{n}\n" for n in range(100))
    actual = expected.replace("10\n", "ten\n").replace("90\n", "ninety\n")
    shown = excerpt.first_difference(expected, actual)
    assert shown == [
        "first difference at line 11 of expected, line 11 of actual:",
        "   9↵",
        "  -10↵",
        "  +ten↵",
        "... 2 more lines (--full-diff shows all)",
    ]
    assert excerpt.first_difference(expected, expected) == []


def test_a_very_long_line_is_cut() -> None:
    shown = excerpt.first_difference("a" * 5000, "b" * 5000)
    assert all(len(line) < excerpt.LINE_CHARS + 60 for line in shown)
    assert "more characters]" in shown[1]


def test_a_case_with_many_findings_shows_a_few_and_counts_the_rest() -> None:
    from refmem_conformance.cases import Case
    from refmem_conformance.checks import Finding
    from refmem_conformance.reports import describe_failure
    from refmem_conformance.runner import CaseResult

    raw = case("t-009", [view("/memories/x", True)] * 20)
    findings = [Finding("is_error", "expected an error", step, cls="documented") for step in range(1, 20)]
    findings.append(Finding("outside", "x: appeared next to the case directory"))
    result = CaseResult(Case(raw, "t.json", "t"), "fail", findings)
    text = describe_failure(result)
    assert text.splitlines()[2].startswith("    [safety] outside")  # safety first
    assert text.splitlines()[-1] == "    ... 15 more findings: 15 [documented] is_error (--full-diff shows all)"
    assert len(describe_failure(result, full=True).splitlines()) == 2 + len(findings)


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _main(stream: io.StringIO, *argv: str, basic: pathlib.Path) -> int:
    from refmem_conformance.cli import main

    return main(["--cases-dir", str(basic), "--no-matrix", *argv, *WORKDIR], out=io.StringIO(), err=stream)


def test_progress_goes_to_a_terminal_only(basic_cases: pathlib.Path) -> None:
    quiet = io.StringIO()
    _main(quiet, basic=basic_cases)
    assert quiet.getvalue() == ""  # CI: stderr is not a terminal

    terminal = _Terminal()
    _main(terminal, basic=basic_cases)
    assert "\r[1/4] t" in terminal.getvalue() and terminal.getvalue().endswith("[4/4] t".ljust(79) + "\n")

    asked = io.StringIO()
    _main(asked, "--progress", basic=basic_cases)
    assert asked.getvalue() == "[4/4] t\n"  # every PROGRESS_EVERY cases and the last, one line each


def test_conformance_version(capsys: pytest.CaptureFixture[str]) -> None:
    status, _, _ = run_cli("--version")
    assert status == 0
    assert capsys.readouterr().out == (
        f"refmem-conformance {refmem.__version__} ({conformance.SUITE_VERSION}, adapter protocol "
        f"{conformance.PROTOCOL_VERSION}, case format {conformance.CASE_FORMAT_VERSION})\n"
    )


def test_fuzz_version() -> None:
    done = subprocess.run(
        [sys.executable, "-c", "import sys, refmem_fuzz.cli; sys.exit(refmem_fuzz.cli.main(['--version']))"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=str(pathlib.Path(__file__).resolve().parents[2]),
    )
    assert (done.returncode, done.stdout) == (0, f"refmem-fuzz {refmem.__version__}\n"), done.stderr
