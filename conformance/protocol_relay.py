"""`--validate`: a relay between the runner and a `cmd:` adapter that checks every message on the wire.

    python conformance/protocol_relay.py LOG -- ADAPTER COMMAND LINE...

The runner starts the relay as if it were the adapter; the relay starts the adapter, passes every byte both
ways unchanged, and checks each line against the published schemas (schema/protocol/): requests by their
`cmd`, replies by the request they answer. Each message that does not follow its schema, and each one that
cannot be read or checked at all (longer than the protocol's line bound, nested too deeply, not JSON), is
appended to LOG as a JSON line, which the runner reads after the run; so is the relay's own failure, should
one of its threads stop, so that a run it could not check never passes. Lines are read in chunks and passed
on as they come (refmem_harness/adapter_wire.py): the relay holds at most one line of the protocol's bound.

Standard library, `jsonschema` and `refmem.protocol` only, with no import of the conformance package: its two
sibling modules it needs are loaded by path, so it runs as a file from a vendored copy too.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import pathlib
import subprocess
import sys
import threading
from types import ModuleType
from typing import IO, Any, Callable, Dict, List, Optional, Tuple

HERE = pathlib.Path(__file__).resolve().parent
SCHEMA_DIR = HERE / "schema" / "protocol"

REQUEST_SCHEMAS = {
    "start": "start-request",
    "reset": "reset-request",
    "execute": "execute-request",
    "stop": "stop-request",
}
REPLY_SCHEMAS = {"start": "start-reply", "reset": "reset-reply", "execute": "execute-reply"}
"""A request's `cmd` -> the schema of its reply; any reply carrying `error` (and no `ready`) is an error reply."""

RUNNER_TO_ADAPTER = "runner -> adapter"
ADAPTER_TO_RUNNER = "adapter -> runner"

MESSAGE_CHARS = 500
"""Characters of an offending message kept in the log."""
PROBLEM_CHARS = 300
"""Characters kept of each problem found in a message."""
PROBLEMS_KEPT = 5
ENTRIES_KEPT = 1000
"""Log entries written at most; the last one says that more were not written."""


def _sibling(name: str) -> ModuleType:
    """refmem_harness/NAME.py, beside this folder, loaded by its path: the relay runs as a file, outside packages."""
    spec = importlib.util.spec_from_file_location(
        f"_protocol_relay_{name}", HERE.parent / "refmem_harness" / f"{name}.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _load_helpers() -> Tuple[ModuleType, ModuleType]:
    """(adapter_wire, visible). The first needs `refmem`: in a source tree it sits beside this folder."""
    try:
        importlib.import_module("refmem.protocol")
    except ImportError:
        sys.path.append(str(HERE.parent))
    return _sibling("adapter_wire"), _sibling("visible")


class Checker:
    """The schemas, what each pending request was, and the log of violations."""

    def __init__(self, log: pathlib.Path) -> None:
        self.wire, self.visible = _load_helpers()
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
        self.recorded = 0

    def _shown(self, text: str, limit: int) -> str:
        drawn: str = self.visible.printable(text[:limit])
        return drawn[:limit]

    def record(self, direction: str, schema: str, message: str, problems: List[str]) -> None:
        """One log entry; every text in it printable and bounded, for it is shown in reports as it is."""
        with self.lock:
            self.recorded += 1
            if self.recorded > ENTRIES_KEPT:
                return
            if self.recorded == ENTRIES_KEPT:
                schema, message, problems = "relay", "", [f"more than {ENTRIES_KEPT - 1} messages; the rest not logged"]
            entry = {
                "direction": direction,
                "schema": schema,
                "message": self._shown(message, MESSAGE_CHARS),
                "problems": [self._shown(problem, PROBLEM_CHARS) for problem in problems[:PROBLEMS_KEPT]],
            }
            with self.log.open("a", encoding="utf-8") as out:
                out.write(json.dumps(entry) + "\n")

    def _check(self, direction: str, schema: Optional[str], line: Any, message: Any) -> None:
        self.checked += 1
        quoted = self.wire.excerpt(line)
        if schema is None:
            self.record(direction, "", quoted, ["no schema for this message"])
            return
        try:
            validator = self.validators[schema]
            leaves = [self.best_match([error]) for error in validator.iter_errors(message)]  # inside oneOf, too
            problems = [f"{'/'.join(map(str, leaf.absolute_path)) or '(top)'}: {leaf.message}" for leaf in leaves]
        except Exception as exc:  # noqa: BLE001 - a message the validator cannot walk is not a valid one
            problems = [f"the message could not be checked ({type(exc).__name__})"]
        if problems:
            self.record(direction, schema, quoted, problems)

    def _read(self, direction: str, line: Any) -> Any:
        """The message on a line, or None after logging why it cannot be read."""
        try:
            return self.wire.decode(line)
        except self.wire.Unreadable as exc:
            self.record(direction, "", self.wire.excerpt(line), [f"the line cannot be read: {exc}"])
            return None

    def request(self, line: Any) -> None:
        message = self._read(RUNNER_TO_ADAPTER, line)
        if message is None:
            return
        cmd = message.get("cmd") if isinstance(message, dict) else None
        if isinstance(cmd, str):
            with self.lock:
                self.pending[message.get("seq")] = cmd
        self._check(RUNNER_TO_ADAPTER, REQUEST_SCHEMAS.get(str(cmd)), line, message)

    def reply(self, line: Any) -> None:
        message = self._read(ADAPTER_TO_RUNNER, line)
        if message is None:
            return
        if not isinstance(message, dict):
            self._check(ADAPTER_TO_RUNNER, None, line, message)
            return
        with self.lock:
            try:
                cmd = self.pending.pop(message.get("seq"), None)
            except TypeError:  # a seq that is an array or an object answers no request
                cmd = None
        if "error" in message and "ready" not in message:
            schema: Optional[str] = "error-reply"
        else:
            schema = REPLY_SCHEMAS.get(str(cmd))
        self._check(ADAPTER_TO_RUNNER, schema, line, message)

    def broken(self, direction: str, exc: BaseException) -> None:
        """The relay could not go on checking one direction: the run must not pass as checked."""
        what = "requests" if direction == RUNNER_TO_ADAPTER else "replies"
        problem = f"the relay stopped checking the {what} ({type(exc).__name__}: {exc}); the rest went unchecked"
        self.record(direction, "relay", "", [problem])
        sys.stderr.write(f"protocol_relay: {self._shown(problem, PROBLEM_CHARS)}\n")


def forward(source: IO[bytes], sink: IO[bytes], check: Callable[[Any], None], wire: Any) -> None:
    """Pass every byte of `source` to `sink` as it comes, and each line to `check` before the newline that
    completes it is passed on (a request is known before its reply can arrive)."""
    assembler = wire.LineAssembler()
    for piece, ends_line in wire.pieces(wire.reader(source)):
        found = assembler.add(piece, ends_line)
        if found is not None:
            check(found)
        sink.write(piece + b"\n" if ends_line else piece)
        sink.flush()
    last = assembler.finish()
    if last is not None:
        check(last)


def _guarded(checker: Checker, direction: str, work: Callable[[], None]) -> Callable[[], None]:
    """`work`, with any failure of the relay's own logged: a broken pipe only means the other side has gone."""

    def run() -> None:
        try:
            work()
        except BrokenPipeError:
            pass
        except BaseException as exc:  # noqa: BLE001 - logged so that the run fails, then the thread ends
            checker.broken(direction, exc)

    return run


def relay(log: pathlib.Path, command: List[str]) -> int:
    checker = Checker(log)
    child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert child.stdin is not None and child.stdout is not None
    to_adapter, from_adapter = child.stdin, child.stdout

    def replies() -> None:
        forward(from_adapter, sys.stdout.buffer, checker.reply, checker.wire)
        # The adapter's output ended, so does the relay's, and the runner sees it at once: the pipe is swapped
        # for the null device (not closed, so that no file opened later can take its number).
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)

    def requests() -> None:
        forward(sys.stdin.buffer, to_adapter, checker.request, checker.wire)

    pump = threading.Thread(target=_guarded(checker, ADAPTER_TO_RUNNER, replies), daemon=True)
    pump.start()
    _guarded(checker, RUNNER_TO_ADAPTER, requests)()
    try:
        to_adapter.close()
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
