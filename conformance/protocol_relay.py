"""`--validate`: a relay between the runner and a `cmd:` adapter that checks every message on the wire.

    python conformance/protocol_relay.py LOG -- ADAPTER COMMAND LINE...

The runner starts the relay as if it were the adapter; the relay starts the adapter, passes every line both
ways unchanged, and checks each one against the published schemas (schema/protocol/): requests by their
`cmd`, replies by the request they answer. Each message that does not follow its schema is appended to LOG as
a JSON line, which the runner reads after the run. Standard library and `jsonschema` only, and no import of
the conformance package, so it runs as a file from a vendored copy too.
"""

from __future__ import annotations

import importlib
import json
import pathlib
import subprocess
import sys
import threading
from typing import Any, Dict, List, Optional

SCHEMA_DIR = pathlib.Path(__file__).resolve().parent / "schema" / "protocol"

REQUEST_SCHEMAS = {
    "start": "start-request",
    "reset": "reset-request",
    "execute": "execute-request",
    "stop": "stop-request",
}
REPLY_SCHEMAS = {"start": "start-reply", "reset": "reset-reply", "execute": "execute-reply"}
"""A request's `cmd` -> the schema of its reply; any reply carrying `error` (and no `ready`) is an error reply."""


class Checker:
    """The schemas, what each pending request was, and the log of violations."""

    def __init__(self, log: pathlib.Path) -> None:
        jsonschema: Any = importlib.import_module("jsonschema")  # the caller has checked that it is installed
        self.validators = {
            path.name[: -len(".schema.json")]: jsonschema.Draft202012Validator(json.loads(path.read_text("utf-8")))
            for path in SCHEMA_DIR.glob("*.schema.json")
        }
        self.best_match = jsonschema.exceptions.best_match
        self.log = log
        self.lock = threading.Lock()
        self.pending: Dict[Any, str] = {}
        self.checked = 0

    def _record(self, direction: str, schema: str, line: bytes, problems: List[str]) -> None:
        entry = {"direction": direction, "schema": schema, "message": line[:500].decode("utf-8", "replace"),
                 "problems": problems[:5]}
        with self.lock, self.log.open("a", encoding="utf-8") as out:
            out.write(json.dumps(entry) + "\n")

    def _check(self, direction: str, schema: Optional[str], line: bytes, message: Any) -> None:
        self.checked += 1
        if schema is None:
            self._record(direction, "", line, ["no schema for this message"])
            return
        validator = self.validators[schema]
        leaves = [self.best_match([error]) for error in validator.iter_errors(message)]  # inside oneOf, too
        problems = [f"{'/'.join(map(str, leaf.absolute_path)) or '(top)'}: {leaf.message}" for leaf in leaves]
        if problems:
            self._record(direction, schema, line, problems)

    @staticmethod
    def _parse(line: bytes) -> Any:
        try:
            return json.loads(line.decode("utf-8"))
        except ValueError:
            return None

    def request(self, line: bytes) -> None:
        message = self._parse(line)
        cmd = message.get("cmd") if isinstance(message, dict) else None
        if isinstance(cmd, str):
            with self.lock:
                self.pending[message.get("seq")] = cmd
        self._check("runner -> adapter", REQUEST_SCHEMAS.get(str(cmd)), line, message)

    def reply(self, line: bytes) -> None:
        message = self._parse(line)
        if not isinstance(message, dict):
            self._check("adapter -> runner", None, line, message)
            return
        with self.lock:
            cmd = self.pending.pop(message.get("seq"), None)
        if "error" in message and "ready" not in message:
            schema: Optional[str] = "error-reply"
        else:
            schema = REPLY_SCHEMAS.get(str(cmd))
        self._check("adapter -> runner", schema, line, message)


def relay(log: pathlib.Path, command: List[str]) -> int:
    checker = Checker(log)
    child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert child.stdin is not None and child.stdout is not None
    replies = child.stdout

    def pump_replies() -> None:
        for line in replies:
            checker.reply(line)
            sys.stdout.buffer.write(line)
            sys.stdout.buffer.flush()

    pump = threading.Thread(target=pump_replies, daemon=True)
    pump.start()
    try:
        for line in sys.stdin.buffer:
            checker.request(line)
            child.stdin.write(line)
            child.stdin.flush()
    except BrokenPipeError:
        pass
    finally:
        try:
            child.stdin.close()
        except BrokenPipeError:
            pass
    status = child.wait()
    pump.join()
    return status


def main(argv: List[str]) -> int:
    if len(argv) < 3 or argv[1] != "--":
        sys.stderr.write("usage: protocol_relay.py LOG -- ADAPTER COMMAND LINE...\n")
        return 2
    return relay(pathlib.Path(argv[0]), argv[2:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
