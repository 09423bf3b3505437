"""A slow memory backend with the vulnerable backend's planted escapes: the run's time bound must hold against it.

Every command first sleeps STEP_SECONDS (wall time, no work), so a growth form of a hundred commands takes a
minute, and each finding's minimisation re-runs many such sequences. Nothing here is a cost the cost oracle
measures (sleeping takes no CPU); what it tests is that `--max-time` bounds the whole run. Never use this as a
real backend.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from planted_support import Result
from vulnerable_backend import VulnerableMemory

STEP_SECONDS = 0.5


class SlowMemory(VulnerableMemory):
    def execute(self, command: Any) -> Result:
        time.sleep(STEP_SECONDS)
        return super().execute(command)


def make(root: Path) -> SlowMemory:
    return SlowMemory(root)
