"""Shared by the robustness fuzzers: one of fuzz/robustness.py's harnesses under libFuzzer.

The harness is used as is; only what a farm needs is added here: `refmem` imported under atheris'
instrumentation first (so libFuzzer sees its coverage), and a standard input made of the input's
own bytes, so that `refmem exec ... -` reads something of the fuzzer's choosing and never the
farm's own stdin (a terminal or a pipe that stays open would block the run).
"""

from __future__ import annotations

import io
import sys
from typing import Callable, List

import atheris  # type: ignore[import-untyped]

with atheris.instrument_imports(include=["refmem"]):
    import refmem.cli  # noqa: F401 - imported for its instrumentation; the harness imports it again
    import refmem.policy  # noqa: F401
    import refmem.protocol  # noqa: F401
    import refmem.serve  # noqa: F401

from refmem_fuzz import robustness  # noqa: E402 - after the instrumented imports, on purpose


def _with_stdin(one_input: Callable[[bytes], None]) -> Callable[[bytes], None]:
    def test_one_input(data: bytes) -> None:
        sys.stdin = io.TextIOWrapper(io.BytesIO(data), encoding="utf-8")
        one_input(data)

    return test_one_input


def run(harness: str, argv: List[str]) -> None:
    atheris.Setup(argv, _with_stdin(robustness.HARNESSES[harness]))
    atheris.Fuzz()
