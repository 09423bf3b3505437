#!/usr/bin/env python3
"""ClusterFuzzLite fuzzer: `refmem serve` on any request lines: one well-formed reply per line, never
`internal` (fuzz/robustness.py, `serve`).
"""

import sys

from robustness_entry import run

if __name__ == "__main__":
    run("serve", sys.argv)
