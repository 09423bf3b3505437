"""refmem: the reference client-side handler for the `memory_20250818` tool.

Standard library only. `MemoryHandler(root).execute(tool_input)` runs one command against a real
directory that stands for `/memories`, and always returns a `Result`.

The names below are the package's public interface (D-PUBLIC-NAMES, guarded by tests/project/test_public_names.py):
the handler and its bounds and results, the paths it accepts, and what a store implements (`storage`).
Modules whose names start with `_` are internal: import them only from inside refmem. docs/vendoring.md
lists the files a vendored copy needs.
"""

from typing import TYPE_CHECKING

from ._optional import MissingModule, optional_module
from .directory import open_directory
from .handler import MemoryHandler
from .limits import DEFAULT_LIMITS, Limits
from .messages import Result
from .paths import PathError, VirtualPath, parse_path
from .store_protocol import Edit, Entry, Listed, ReadFile, Store, TenantError, TenantStore, tenant_name

if TYPE_CHECKING:  # the optional protocols: `_store_extras.py`, loaded when named (a vendored copy may leave it out)
    from ._store_extras import AccessRecords, ChangeJournal, VersionedStore

__all__ = [
    "DEFAULT_LIMITS",
    "AccessRecords",
    "ChangeJournal",
    "Edit",
    "Entry",
    "Limits",
    "Listed",
    "MemoryHandler",
    "MissingModule",
    "PathError",
    "ReadFile",
    "Result",
    "Store",
    "TenantError",
    "TenantStore",
    "VersionedStore",
    "VirtualPath",
    "open_directory",
    "parse_path",
    "tenant_name",
]
__version__ = "0.1.0"
_EXTRAS = ("AccessRecords", "ChangeJournal", "VersionedStore")
if optional_module("_store_extras", "", required=False) is None:  # a vendored copy without it: `import *` works
    __all__ = [name for name in __all__ if name not in _EXTRAS]


def __getattr__(name: str) -> object:
    """The optional protocols, from `store_protocol` (which loads `_store_extras.py` for them: D-VENDOR-SET)."""
    if name in _EXTRAS:
        from . import store_protocol

        return getattr(store_protocol, name)
    raise AttributeError(name)
