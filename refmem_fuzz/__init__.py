"""`fuzz/` under its installed name, `refmem_fuzz`, in a source tree (a checkout, or an editable install).

A wheel installs the folder `fuzz/` itself as the package `refmem_fuzz`, so that a user project's own `fuzz` package
never hides it. In a source tree this file stands in: it points the package's search path at the folder and runs the
folder's `__init__.py` as the package's own. The code inside imports itself relatively, so it is the same code under
either name; this project's tools, tests and documentation use `refmem_fuzz` only.
"""

import pathlib as _pathlib

__path__ = [str(_pathlib.Path(__file__).resolve().parent.parent / "fuzz")]
_INIT = _pathlib.Path(__path__[0]) / "__init__.py"
exec(compile(_INIT.read_bytes(), str(_INIT), "exec"))  # noqa: S102  (this project's own file, by a fixed path)
