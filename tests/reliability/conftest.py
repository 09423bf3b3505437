"""Fixtures for the reliability tests; helpers live in `reliability_support.py`."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest


@pytest.fixture
def root(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "memories"
    path.mkdir()
    yield path
