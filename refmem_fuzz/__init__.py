"""`fuzz/` under its installed name, `refmem_fuzz`, in a source tree (a checkout, or an editable install).

A wheel installs the folder `fuzz/` itself as the package `refmem_fuzz` (pyproject.toml `sources`), so that a user
project's own `fuzz` package never hides it. In a source tree this package stands in: its search path is the
folder, so `refmem_fuzz.cli` is fuzz/cli.py (the folder's `__init__.py` holds only its docstring). The code inside
imports itself relatively, so it is the same code under either name; this project's tools, tests and documentation
use `refmem_fuzz` only.
"""

import pathlib as _pathlib

__path__ = [str(_pathlib.Path(__file__).resolve().parent.parent / "fuzz")]
