"""A target that keeps its own storage but does not say that handlers on one root share it: the runner cannot
build a handler without the case's options over a case's storage, so it loads and reads back through the case's
own handler (D-STORE-OWN-SETUP, D-STORE-OWN-FINAL)."""

from __future__ import annotations

import inspect
import pathlib
from typing import Any

from refmem_harness.reference_sqlite_target import make as make_sqlite


def unshared(root: pathlib.Path, **options: Any) -> Any:
    """The reference over SQLite, declaring own storage and nothing about sharing it (nor taking a tenant)."""
    return make_sqlite(root, **options)


_SQLITE = inspect.signature(make_sqlite)
unshared.__signature__ = _SQLITE.replace(  # type: ignore[attr-defined]
    parameters=[parameter for name, parameter in _SQLITE.parameters.items() if name != "tenant"]
)
unshared.storage = "own"  # type: ignore[attr-defined]


class _DropsLastLine:
    """`create` keeps every line of `file_text` but the last: the state it keeps is wrong."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def close(self) -> None:
        self.inner.close()

    def execute(self, command: Any) -> Any:
        if isinstance(command, dict) and command.get("command") == "create" and isinstance(command.get("file_text"),
                                                                                           str):
            kept = command["file_text"].split("\n")
            command = dict(command, file_text="\n".join(kept[:-2] + [""] if kept[-1] == "" else kept[:-1]))
        return self.inner.execute(command)


def odd_views(root: pathlib.Path, **options: Any) -> Any:
    """The reference over SQLite, its views numbered `  1 | ` under a header of its own: its state is right, only
    the format of its views differs."""
    from deployment_backends import OddViews

    return OddViews(root, inner=make_sqlite(root, **options))


def odd_views_dropping(root: pathlib.Path, **options: Any) -> Any:
    """The same views, over a store whose `create` drops the last line: its final state is really wrong."""
    from deployment_backends import OddViews

    return OddViews(root, inner=_DropsLastLine(make_sqlite(root, **options)))


for _factory in (odd_views, odd_views_dropping):
    _factory.__signature__ = unshared.__signature__  # type: ignore[attr-defined]
    _factory.storage = "own"  # type: ignore[attr-defined]
