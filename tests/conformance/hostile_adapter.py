"""A protocol adapter around `fake_backends.Tiny` that attacks the harness reading it, when a path asks.

Each attack is keyed by a word in the input path, so that one case set holds several:

  deep      the reply is `[[[...]]]`, DEPTH levels deep
  deepout   a well-formed execute reply whose `output` is nested DEPTH deep
  long      a reply line of HOSTILE_BYTES bytes (a JSON reply with a long output), written in chunks
  noisy     HOSTILE_BYTES of standard error on one line, then the normal reply
  raises    the normal reply with `raised` holding escape sequences and forged CI log commands
  refuse    an error reply whose message holds the same
  rawline   a line that is not JSON, holding the same
  crash     standard error lines holding the same, then exit
  deaf      the normal reply, then the adapter never reads its input again (a large request then fills the pipe)

argv `evilname`: the start reply's implementation fields hold the same. HOSTILE_BYTES comes from the
environment (default 64 MiB).
"""

from __future__ import annotations

import json
import os
import pathlib
import sys

from fake_backends import Tiny  # run by path: this folder is sys.path[0]

DEPTH = 100_000
HOSTILE_BYTES = int(os.environ.get("HOSTILE_BYTES", str(64 * 1024 * 1024)))
CHUNK = 1024 * 1024
EVIL = "\x1b[2J\x1b]0;owned\x07 ##[error]forged annotation\r\n::error::forged\n  ::set-output name=x::1\u202e"
"""Escape sequences (clear screen, set title), a legacy and a modern CI log command, a bidi override."""


def write(data: bytes) -> None:
    sys.stdout.buffer.write(data + b"\n")
    sys.stdout.buffer.flush()


def reply(message: dict) -> None:
    write(json.dumps(message).encode("ascii"))


def attack(word: str, seq: int) -> bool:
    """Carry out the attack named by `word`; False when the reply is to be the normal one."""
    if word == "deep":
        write(b"[" * DEPTH + b"]" * DEPTH)
    elif word == "deepout":
        write(b'{"seq": %d, "is_error": false, "output": ' % seq + b"[" * DEPTH + b"]" * DEPTH + b"}")
    elif word == "long":
        out = sys.stdout.buffer
        head = b'{"seq": %d, "is_error": false, "output": "' % seq
        out.write(head)
        for _ in range(HOSTILE_BYTES // CHUNK):
            out.write(b"a" * CHUNK)
        out.write(b'"}\n')
        out.flush()
    elif word == "rawline":
        write(EVIL.replace("\n", " ").encode("utf-8"))
    elif word == "refuse":
        reply({"seq": seq, "error": {"code": "internal", "message": EVIL}})
    elif word == "crash":
        sys.stderr.write(EVIL + "\n")
        sys.stderr.flush()
        sys.exit(1)
    else:
        return False
    return True


def main() -> int:
    handler = None
    for line in sys.stdin:
        request = json.loads(line)
        cmd, seq = request.get("cmd"), request.get("seq")
        if cmd == "start":
            name = EVIL if "evilname" in sys.argv[1:] else "hostile"
            implementation = {"name": name, "language": EVIL, "version": EVIL, "homepage": EVIL * 100}
            reply({"ready": True, "version": 1, "implementation": implementation})
        elif cmd == "reset":
            handler = Tiny(pathlib.Path(request["root"]))
            reply({"seq": seq, "ok": True})
        elif cmd == "execute":
            path = str(request["input"].get("path", "")) if isinstance(request["input"], dict) else ""
            word = path.rsplit("/", 1)[-1]
            if attack(word, seq):
                continue
            if word == "noisy":
                err = sys.stderr.buffer
                for _ in range(HOSTILE_BYTES // CHUNK):
                    err.write(b"n" * CHUNK)
                err.write(b"\nthe end of the noise\n")
                err.flush()
            assert handler is not None
            result = handler.execute(request["input"])
            message = {"seq": seq, "output": result.output, "is_error": result.is_error}
            if word == "raises":
                message["raised"] = "Traceback (most recent call last):\n" + EVIL
            reply(message)
            if word == "deaf":
                import time

                while True:
                    time.sleep(3600)
        elif cmd == "stop":
            return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
