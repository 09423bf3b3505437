"""The default verdict for other people's code: the documentation, not our decisions; and signalling made easy.

A backend written from the documentation alone (its strings, plain text, errors declared as prefixes and one
pattern) passes the default run: safe, every documented must case, exit status 0. The same backend without a
declaration is told the list that would read its errors.
"""

from __future__ import annotations

import pathlib
import sys

import pytest
from conformance_support import run_cli

SELECTION = ("--skip", "big-*")  # the 100 MB fixtures add time and nothing to this verdict


def test_a_documentation_faithful_plain_string_backend_passes_the_default_profile() -> None:
    status, out, err = run_cli("--target", "python:docfaithful_backend:make", "-q", *SELECTION)
    assert status == 0, out[-3000:] + err
    assert "profile documented:" in out
    assert "conformant: yes: safe, and all" in out and "verdict: PASS (exit 0)" in out
    # our own decisions are shown, never gating, for somebody else's code
    assert "reference-exact:" in out and "(shown, not gating)" in out


def test_the_reference_is_held_to_its_own_decisions_by_default() -> None:
    status, out, _ = run_cli("--target", "refmem", "-q", "--run", "view-dir-*")
    assert status == 0 and "profile standard:" in out


def test_an_undeclared_plain_string_backend_is_told_the_prefixes(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "undeclared_backend.py").write_text(
        "from docfaithful_backend import DocFaithfulMemory\n\ndef make(root):\n    return DocFaithfulMemory(root)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("undeclared_backend", None)
    status, out, _ = run_cli("--target", "python:undeclared_backend:make", "-q", "--run", "view-*", "--run", "str_replace-*")
    assert status == 1
    line = next(line for line in out.splitlines() if "error_prefix" in line)
    assert '"The path"' in line and '"No replacement"' in line
    # the suggested prefixes begin no success: the suggestion reads errors as errors and nothing else
    assert '"File' not in line and '"Here' not in line
