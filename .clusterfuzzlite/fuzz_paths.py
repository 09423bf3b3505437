#!/usr/bin/env python3
"""ClusterFuzzLite fuzzer: any bytes as a path, through the reference's parser and walk on the hostile
layout (fuzz/harness.py, `paths`).
"""

import sys

from refmem_fuzz.libfuzzer_entry import run

if __name__ == "__main__":
    run("paths", "refmem", sys.argv)
