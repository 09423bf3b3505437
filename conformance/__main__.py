"""`python -m conformance`: the same as the `refmem-conformance` command."""

from __future__ import annotations

import sys

from conformance.cli import main

sys.exit(main())
