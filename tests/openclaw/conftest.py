"""Fixtures of the OpenClaw tests: a case folder with the workspace and a canary tree beside it."""

from __future__ import annotations

import pathlib

import pytest

from .openclaw_support import CANARY


@pytest.fixture()
def case(tmp_path: pathlib.Path) -> pathlib.Path:
    """CASE/memories (the workspace, with an empty memory/), and CASE/outside holding the canary in
    secret.md and secret.db: what no tool may ever read, write or show."""
    (tmp_path / "memories" / "memory").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.md").write_text(f"{CANARY} outside zebra\n")
    (tmp_path / "outside" / "secret.db").write_text(f"{CANARY}\n")
    return tmp_path
