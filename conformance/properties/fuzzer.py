"""The fuzzer's modules the property suite shares, reached under the name that matches this package's own.

Installed, the suite is `refmem_conformance` and the fuzzer `refmem_fuzz`; in a source tree they are the folders
`conformance/` and `fuzz/` behind the shims of the same names. A process must hold one copy of each (the fuzzer
reaches the suite the same way, fuzz/suite.py), so the fuzzer's name is derived from this package's, never guessed.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

__all__ = ["byte_reader", "decode", "finding", "model", "oracles", "tokens"]

if TYPE_CHECKING:
    from fuzz import byte_reader, decode, finding, model, oracles, tokens
else:
    _SUITE = __package__.rsplit(".", 1)[0]
    NAME = _SUITE[: -len("conformance")] + "fuzz"
    globals().update({module: importlib.import_module(f"{NAME}.{module}") for module in __all__})
