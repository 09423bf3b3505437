"""`python -m refmem_fuzz`: the same as the `refmem-fuzz` command."""

import sys

from .cli import main

sys.exit(main())
