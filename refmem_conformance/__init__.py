"""`conformance/` under its installed name, `refmem_conformance`, in a source tree (a checkout, or an editable install).

A wheel installs the folder `conformance/` itself as the package `refmem_conformance` (pyproject.toml `sources`), so
that a user project's own `conformance` package never hides it. In a source tree this package stands in: its search
path is the folder, so `refmem_conformance.cli` is conformance/cli.py, and it exports what the folder's
`__init__.py` exports by the same relative import. The code inside imports itself relatively, so it is the same
code under either name; this project's tools, tests and documentation use `refmem_conformance` only.
"""

import pathlib as _pathlib

__path__ = [str(_pathlib.Path(__file__).resolve().parent.parent / "conformance")]

from .versions import CASE_FORMAT_VERSION, PROTOCOL_VERSION, SUITE_VERSION  # noqa: E402  (found on the path above)

__all__ = ["CASE_FORMAT_VERSION", "PROTOCOL_VERSION", "SUITE_VERSION"]
