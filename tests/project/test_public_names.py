"""refmem's public names (D-PUBLIC-NAMES): what `import refmem` exports, and which modules are public.

A name added to or dropped from `refmem.__all__`, or a new top-level module that is neither private (`_name`) nor
listed here, fails this test: a change to the public interface is made on purpose, here and in docs/vendoring.md.
"""

from __future__ import annotations

import pathlib

import refmem

PUBLIC_NAMES = {
    # the handler, its bounds and its results
    "MemoryHandler", "Limits", "DEFAULT_LIMITS", "Result",
    # the paths it accepts
    "PathError", "VirtualPath", "parse_path",
    # the stores: the interface and its optional protocols, tenants, the directory store, a missing module
    "Store", "ReadFile", "Edit", "Entry", "Listed", "ChangeJournal", "AccessRecords", "TenantStore", "VersionedStore",
    "TenantError", "tenant_name", "open_directory", "MissingModule",
}

PUBLIC_MODULES = {
    # the vendored handler's public modules (docs/vendoring.md)
    "handler", "tool", "messages", "limits", "paths", "problems", "store_protocol", "directory",
    # features of the installed package
    "tracked", "policy", "expiry", "prune", "sdk", "serve", "protocol", "oplog",
    # the command line (`refmem`, `python -m refmem`) and its subcommands
    "cli", "subcommands", "history_cli", "openclaw_cli", "mcp_cli", "transfer_cli", "terminal", "__main__",
    # packages
    "openclaw", "stores",
}


def test_the_package_exports_exactly_its_public_names() -> None:
    assert set(refmem.__all__) == PUBLIC_NAMES
    assert len(refmem.__all__) == len(PUBLIC_NAMES)
    for name in refmem.__all__:
        assert getattr(refmem, name) is not None


def test_every_top_level_module_is_private_or_listed_public() -> None:
    package = pathlib.Path(refmem.__file__).parent
    found = {path.stem for path in package.glob("*.py") if path.stem != "__init__"}
    found |= {path.parent.name for path in package.glob("*/__init__.py")}
    public = {name for name in found if not name.startswith("_") or name == "__main__"}
    assert public == PUBLIC_MODULES, f"new: {sorted(public - PUBLIC_MODULES)}, gone: {sorted(PUBLIC_MODULES - public)}"
