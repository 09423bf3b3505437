"""`python -m refmem_conformance`: the same as the `refmem-conformance` command."""

from __future__ import annotations

import sys

from .cli import main

sys.exit(main())
