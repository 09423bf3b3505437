"""Modules a copy of refmem may leave out, and the clear error when a feature that needs one is asked for.

A vendored copy holds only the files docs/vendoring.md lists (D-VENDOR-SET). A feature built on a module left
out (a named content policy, the change journal and access records, ...) is refused with `MissingModule`, which
names the module and the file to copy, never with a ModuleNotFoundError from deep inside. A module that is there
but fails to import (one of its own imports missing) is not hidden: its own error goes up as it is.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Optional

# A feature whose module a vendored copy left out (refmem._optional, D-VENDOR-SET): told to the application when it
# asks for the feature, never a ModuleNotFoundError from inside.
MODULE_NOT_COPIED = (
    "{feature} needs the module {module}, which is not part of this copy of refmem: copy {file} beside the others "
    "(docs/vendoring.md lists what each feature adds)"
)


class MissingModule(ImportError):
    """A feature was asked for whose module this copy of refmem does not hold; the message names it."""


def optional_module(name: str, feature: str, required: bool) -> Optional[ModuleType]:
    """The sibling module `name` of this package, or None when this copy does not hold it; with `required`,
    MissingModule (saying that `feature` needs it) instead of None."""
    package = __name__.rpartition(".")[0]
    full = f"{package}.{name}"
    try:
        return importlib.import_module(full)
    except ModuleNotFoundError as error:
        if error.name != full:
            raise
        if required:
            raise MissingModule(MODULE_NOT_COPIED.format(feature=feature, module=full, file=f"{name}.py")) from None
        return None


def required_module(name: str, feature: str) -> ModuleType:
    """The sibling module `name`, which `feature` needs: MissingModule, naming it, when this copy does not hold it."""
    module = optional_module(name, feature, True)
    if module is None:  # pragma: no cover - optional_module raises instead
        raise MissingModule(name)
    return module
