"""refmem: the reference client-side handler for the `memory_20250818` tool.

Standard library only. `MemoryHandler(root).execute(tool_input)` runs one command against a real
directory that stands for `/memories`, and always returns a `Result`.

The names below are the package's public interface (D-PUBLIC-NAMES, guarded by tests/project/test_public_names.py):
the handler and its bounds and results, the paths it accepts, and what a store implements (`storage`).
Modules whose names start with `_` are internal: import them only from inside refmem. docs/vendoring.md
lists the files a vendored copy needs.
"""

from ._optional import MissingModule
from .directory import open_directory
from .handler import MemoryHandler
from .limits import DEFAULT_LIMITS, Limits
from .messages import Result
from .paths import PathError, VirtualPath, parse_path
from .store_protocol import Edit, Entry, Listed, ReadFile, Store, TenantError, TenantStore, tenant_name

try:  # the optional protocols (D-STORE-EXTRAS); a vendored copy may leave `_store_extras.py` out (D-VENDOR-SET)
    from ._store_extras import AccessRecords, ChangeJournal, VersionedStore
except ModuleNotFoundError as absent:
    if absent.name != f"{__name__}._store_extras":
        raise
    _EXTRAS_COPIED = False
else:
    _EXTRAS_COPIED = True

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
if not _EXTRAS_COPIED:  # a vendored copy without them: `import *` works, and the names are absent
    __all__ = [name for name in __all__ if name not in ("AccessRecords", "ChangeJournal", "VersionedStore")]
