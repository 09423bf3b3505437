#!/usr/bin/env python3
"""ClusterFuzzLite fuzzer: `refmem exec` on any argument vector and standard input: exit 0, 1 or 2,
never a traceback (fuzz/robustness.py, `exec`).
"""

import sys

from robustness_entry import run

if __name__ == "__main__":
    run("exec", sys.argv)
