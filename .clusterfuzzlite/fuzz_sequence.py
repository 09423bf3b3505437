#!/usr/bin/env python3
"""ClusterFuzzLite fuzzer: command sequences (1-8 commands) against the reference, with the escape,
leak, hang, crash, cost and differential oracles (fuzz/harness.py, `sequence`).
"""

import sys

from refmem_fuzz.libfuzzer_entry import run

if __name__ == "__main__":
    run("sequence", "refmem", sys.argv)
