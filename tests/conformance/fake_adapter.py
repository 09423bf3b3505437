"""A fake protocol adapter around `fake_backends.Tiny`, with switchable misbehaviour.

Modes (argv): crash (exit on an input path containing "crash"), hang (sleep on "hang" for HANG_SECONDS, then
write the file $REFMEM_FAKE_ADAPTER_WOKE names, when it names one), garbage
(write a non-JSON line on "garbage"), oldversion (answer start with version 99), nostart (exit at once),
own (declare storage "own"; ignore the root and store in a private directory), readonly (list the option
read_only and honour it). A reset carrying an option the adapter did not list gets an error reply.
"""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import sys
import tempfile
import time

from fake_backends import ReadOnlyTiny  # run by path: this folder is sys.path[0]

MODES = set(sys.argv[1:])
OWN_FOLDERS: list = []
"""The private folders of "own" mode, removed when the adapter ends (a test leaves nothing behind)."""
HANG_SECONDS = 120


def reply(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def main() -> int:
    if "nostart" in MODES:
        return 3
    handler = None
    for line in sys.stdin:
        request = json.loads(line)
        cmd, seq = request.get("cmd"), request.get("seq")
        if cmd == "start":
            reply(
                {
                    "ready": True,
                    "version": 99 if "oldversion" in MODES else 1,
                    "implementation": {"name": "fake", "language": "python", "version": "0", "homepage": ""},
                    "storage": "own" if "own" in MODES else "filesystem",
                    **({"options": ["read_only"]} if "readonly" in MODES else {}),
                }
            )
        elif cmd == "reset":
            if "own" in MODES:
                root = pathlib.Path(tempfile.mkdtemp(prefix="fake-adapter-own-"))
                OWN_FOLDERS.append(root)
            else:
                root = pathlib.Path(request["root"])
            options = request.get("options", {})
            listed = {"read_only"} if "readonly" in MODES else set()
            if set(options) - listed:
                reply({"seq": seq, "error": {"code": "bad-request", "message": f"unlisted options {sorted(options)}"}})
                continue
            handler = ReadOnlyTiny(root, bool(options.get("read_only", False)))
            reply({"seq": seq, "ok": True})
        elif cmd == "execute":
            path = str(request["input"].get("path", "")) if isinstance(request["input"], dict) else ""
            if "crash" in MODES and "crash" in path:
                sys.stderr.write("fake adapter: crashing on purpose\n")
                return 1
            if "hang" in MODES and "hang" in path:
                time.sleep(HANG_SECONDS)
                woke = os.environ.get("REFMEM_FAKE_ADAPTER_WOKE")
                if woke:  # still alive: the runner waited for the hang instead of killing the adapter
                    pathlib.Path(woke).write_text("woke\n")
            if "garbage" in MODES and "garbage" in path:
                sys.stdout.write("this is not json\n")
                sys.stdout.flush()
                continue
            assert handler is not None
            result = handler.execute(request["input"])
            reply({"seq": seq, "output": result.output, "is_error": result.is_error})
        elif cmd == "stop":
            return 0
    return 0


if __name__ == "__main__":
    try:
        status = main()
    finally:
        for folder in OWN_FOLDERS:
            shutil.rmtree(folder, ignore_errors=True)
    sys.exit(status)
