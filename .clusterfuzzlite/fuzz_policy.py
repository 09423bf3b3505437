#!/usr/bin/env python3
"""ClusterFuzzLite fuzzer: the content policy on any text: never raises, reject keeps the text,
redaction is idempotent (fuzz/robustness.py, `policy`).
"""

import sys

from robustness_entry import run

if __name__ == "__main__":
    run("policy", sys.argv)
