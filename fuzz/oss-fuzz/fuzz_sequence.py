#!/usr/bin/python3
"""OSS-Fuzz / ClusterFuzzLite fuzzer: command sequences against the reference, differential."""

import sys

from refmem_fuzz.libfuzzer_entry import run

if __name__ == "__main__":
    run("sequence", "refmem", sys.argv)
