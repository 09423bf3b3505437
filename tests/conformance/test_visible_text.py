"""What the harness prints of text it did not write: printable on one line, and host paths redacted in linear time."""

from __future__ import annotations

import math
import re
import time
from typing import Callable

from hypothesis import given
from hypothesis import strategies as st

from refmem_harness import visible

OLD_RUN_DIR = re.compile(r"(?:/[^/\s'\"`]+)*/refmem-conformance-[A-Za-z0-9_]+")
"""The regular expression redact used before its scan (it backtracks: quadratic on runs of /name): the
oracle for which text is drawn as <RUN>."""

PATH_PIECES = ["/", "a", "x_1", "Z9", "-", ".", " ", "\t", '"', "'", "`", "\u00a0"]
PATH_PIECES += ["refmem-conformance-", "/refmem-conformance-"]


@given(st.lists(st.sampled_from(PATH_PIECES), max_size=14).map("".join))
def test_run_folders_are_drawn_as_before(text: str) -> None:
    assert visible._run_dirs(text) == OLD_RUN_DIR.sub("<RUN>", text)


def test_a_run_folder_and_what_follows_it() -> None:
    text = 'at "/var/x/refmem-conformance-ab_1/case-0002/memories/a.txt" and /y/refmem-conformance-c/d'
    assert visible.redact(text) == 'at "<RUN>/case-0002/memories/a.txt" and <RUN>/d'


def _cpu_per_call(function: Callable[[str], str], text: str) -> float:
    """CPU seconds one call takes: the least of three rounds, each long enough to be measured."""
    best = math.inf
    for _ in range(3):
        calls, start = 0, time.process_time()
        while True:
            function(text)
            calls += 1
            spent = time.process_time() - start
            if spent >= 0.02:
                break
        best = min(best, spent / calls)
    return best


def test_redact_is_linear_in_runs_of_names() -> None:
    def text(names: int) -> str:
        return "/name" * names + " in /tmp/refmem-conformance-ab_1/case-0001/memories\n"

    small, large = _cpu_per_call(visible.redact, text(500)), _cpu_per_call(visible.redact, text(4000))
    assert large / small < 24, (small, large)  # eight times the text: 8 times the work if linear, 64 if quadratic


def test_printable_breaks_ci_log_commands() -> None:
    assert visible.printable("::error::forged") == "\\x3a:error::forged"
    assert visible.printable("   ::set-output name=x::1") == "   \\x3a:set-output name=x::1"
    assert visible.printable("said ##[error]forged") == "said ##\\x5berror]forged"
    assert visible.printable("std::string at a::b") == "std::string at a::b"  # mid-line `::` is plain text
    assert visible.printable("\x1b[2J\r\n\u202e") == "\\x1b[2J\\x0d↵\\u202e"


@given(st.text())
def test_printable_is_one_harmless_line_and_idempotent(text: str) -> None:
    drawn = visible.printable(text)
    assert all(char == " " or char.isprintable() for char in drawn)
    assert "##[" not in drawn and not drawn.lstrip(" ").startswith("::")
    assert visible.printable(drawn) == drawn
