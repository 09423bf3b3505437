"""`refmem-conformance new-adapter --lang python|node`: a commented starting point for a backend's adapter.

The file written already passes the handshake: the suite starts and runs its cases against a placeholder store that
the user replaces with their backend. The templates are data files in `templates/`, shipped with the package:

    adapter.py.txt    a `python:MODULE:make_handler` target; every shape such a factory may return, in comments
    adapter.mjs.txt   a `cmd:` adapter for Node 20 (no dependencies) speaking PROTOCOL.md, version 1

In a template, `@@MODULE@@` is replaced by the module name the file is imported as and `@@FILE@@` by its file name.
"""

from __future__ import annotations

import dataclasses
import pathlib
import shlex
import sys
from typing import Dict, List, Optional, TextIO

TEMPLATES_DIR = pathlib.Path(__file__).resolve().parent / "templates"
FACTORY = "make_handler"
"""The factory a python adapter defines: its target is `python:MODULE:make_handler`."""


@dataclasses.dataclass(frozen=True)
class Language:
    template: str
    default_name: str
    description: str


LANGUAGES: Dict[str, Language] = {
    "python": Language("adapter.py.txt", "memory_adapter.py", f"a python: target, factory {FACTORY}"),
    "node": Language("adapter.mjs.txt", "memory-adapter.mjs", "a cmd: adapter for Node 20, no dependencies"),
}

RESERVED_MODULES = frozenset({"refmem", "refmem_conformance", "refmem_fuzz", "conformance", "fuzz"})
"""Names a python adapter cannot take: the import would find these packages instead of the file."""


class ScaffoldError(Exception):
    """new-adapter cannot write its file: no --lang, an unusable file name, or a file already there."""


def module_name(path: pathlib.Path) -> str:
    """The module a python adapter at `path` is imported as; ScaffoldError when no import could reach it."""
    if path.suffix != ".py":
        raise ScaffoldError(f"{path}: a python adapter's file name must end in .py (the suite imports it)")
    name = path.stem
    if not name.isidentifier():
        raise ScaffoldError(
            f"{path}: {name!r} cannot be imported as a module: use letters, digits and underscores, e.g. "
            f"{LANGUAGES['python'].default_name}"
        )
    stdlib = set(getattr(sys, "stdlib_module_names", ())) | set(sys.builtin_module_names)
    if name in RESERVED_MODULES or name in stdlib:
        raise ScaffoldError(f"{path}: the module name {name!r} is taken (importing it would not find this file)")
    return name


def destination(lang: str, out: Optional[pathlib.Path]) -> pathlib.Path:
    """Where to write: `out`, the default name inside `out` when it is a directory, or the default name here."""
    default = LANGUAGES[lang].default_name
    if out is None:
        return pathlib.Path(default)
    return out / default if out.is_dir() else out


def render(lang: str, path: pathlib.Path) -> str:
    """The template of `lang` filled in for a file written at `path`."""
    text = (TEMPLATES_DIR / LANGUAGES[lang].template).read_text(encoding="utf-8")
    if lang == "python":
        text = text.replace("@@MODULE@@", module_name(path))
    return text.replace("@@FILE@@", path.name)


def commands(lang: str, path: pathlib.Path) -> List[str]:
    """The shell commands that run the suite against the adapter at `path` (the first is the plain run)."""
    if lang == "python":
        folder = shlex.quote(str(path.parent))
        return [f"PYTHONPATH={folder} refmem-conformance --target python:{module_name(path)}:{FACTORY}"]
    target = shlex.quote("cmd:node " + shlex.quote(str(path)))
    return [f"refmem-conformance --target {target}", f"refmem-conformance --target {target} --validate"]


def write(lang: str, out: Optional[pathlib.Path], force: bool = False) -> pathlib.Path:
    """Write the adapter of `lang` and return its path; an existing file is kept unless `force`."""
    path = destination(lang, out)
    text = render(lang, path)  # refuses an unusable name before anything is written
    if path.is_dir():
        raise ScaffoldError(f"{path}: is a directory")
    if path.exists() and not force:
        raise ScaffoldError(f"{path} already exists: not overwritten (--force replaces it)")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("w" if force else "x", encoding="utf-8", newline="\n") as stream:
            stream.write(text)
        if lang == "node":
            path.chmod(0o755)  # it starts with #!/usr/bin/env node
    except FileExistsError as exc:
        raise ScaffoldError(f"{path} already exists: not overwritten (--force replaces it)") from exc
    except OSError as exc:
        raise ScaffoldError(f"{path}: cannot write it: {exc}") from exc
    return path


def new_adapter(lang: Optional[str], out: Optional[pathlib.Path], force: bool, stream: TextIO) -> int:
    """The subcommand: write the file, then say how to run the suite against it. Exit status 0."""
    if lang not in LANGUAGES:
        raise ScaffoldError(f"new-adapter needs --lang: one of {', '.join(LANGUAGES)}")
    path = write(lang, out, force)
    stream.write(
        f"wrote {path}: {LANGUAGES[lang].description}, over a placeholder store to replace with your backend\n"
        "run the suite against it:\n"
    )
    for line in commands(lang, path):
        stream.write(f"  {line}\n")
    return 0
