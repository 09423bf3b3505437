"""Tests of refmem.openclaw: memory_get, memory_search, the index, daily logs, the conformance cases and the fuzzer."""
