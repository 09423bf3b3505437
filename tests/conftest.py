"""The one fixture every module shares: `memory`, a handler over a fresh folder (see memory_support.Memory).

Folders below keep their own conftest files for their own fixtures; none of them defines `memory`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest
from memory_support import Memory


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    """A `Memory` over `tmp_path/memories`; every handler it made is closed after the test."""
    made = Memory(tmp_path)
    yield made
    made.close()
