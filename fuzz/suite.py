"""The conformance suite's modules, reached under the name that matches this package's own.

Installed, this package is `refmem_fuzz` and the suite `refmem_conformance` (names no user project has); in a
source tree the folders are `fuzz/` and `conformance/` and the shims at the top level give them the same
names. A process must hold one copy of the suite, because its exception classes are compared by identity, so
the suite's name is derived from this package's, never guessed or tried in turn.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from conformance import hosttree, layout, targets, terminal, usage, visible
    from conformance.openclaw import runner as openclaw_runner
else:
    NAME = __package__[: -len("fuzz")] + "conformance"
    _MODULES = ("hosttree", "layout", "targets", "openclaw.runner", "visible", "terminal", "usage")
    globals().update({module.replace(".", "_"): importlib.import_module(f"{NAME}.{module}") for module in _MODULES})

__all__ = ["hosttree", "layout", "openclaw_runner", "targets", "terminal", "usage", "visible"]
