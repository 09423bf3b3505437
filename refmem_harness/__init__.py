"""What the conformance suite and the fuzzer both stand on: how a target is reached, the case directory and the
host tree, visible output, the meter, the command model, decoding, oracles and tokens.

It imports only `refmem` and the standard library; `conformance` (installed as `refmem_conformance`) and `fuzz`
(`refmem_fuzz`) import it, and it imports neither (tests/project/test_imports.py holds the direction). Installed under
this name, like the two others, so that no user project's own `harness` package can hide it.

- `targets`, `target_base`, `signalling`, `adapter_client`, `adapter_wire`  one way to reach an implementation
- `reference_target`, `reference_sqlite_target`, `reference_postgres_target`  the embedded reference targets
- `layout`           the case directory: root, fixtures, canary tree, snapshots
- `sequence_layout`  the directory a command sequence runs in (the hostile layout)
- `hosttree`         the host tree under a folder, read bounded
- `visible`          text made safe to print; host paths hidden
- `finding`          finding files: read bounded, checked field by field, written without host paths
- `openclaw_target`  the name `openclaw` as a target spec; `suite_files` the suite's data files beside the harness
- `usage`            what one call cost: CPU or wall seconds, peak memory
- `model`            a pure in-memory model of the reference semantics
- `byte_reader`, `grow`, `tokens`, `decode`  bytes -> tool inputs
- `oracles`          what must hold after every step and every sequence
"""
