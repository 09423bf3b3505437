#!/usr/bin/python3
"""OSS-Fuzz / ClusterFuzzLite fuzzer: any bytes as a path, through the reference's parser and walk."""

import sys

from refmem_fuzz.libfuzzer_entry import run

if __name__ == "__main__":
    run("paths", "refmem", sys.argv)
