"""Robustness harnesses: the content policy, the protocol server and `refmem exec` on any input.

Each harness is a libFuzzer-style `TestOneInput(data: bytes)` function that raises `Broken` when an
oracle fails and returns quietly otherwise:

- `policy`  bytes -> a text (several decodings, or pieces of secret shapes); every detector and the
            policy never raise, findings are well-formed, reject keeps the text, redaction is
            idempotent and leaves nothing to find.
- `serve`   bytes -> request lines (valid, mutated, raw, deep, overlong) fed to the real `serve`
            loop in process; it never raises, answers every non-blank line before `stop` with
            exactly one well-formed reply (never `internal`, never `raised`), echoes valid `seq`s.
- `exec`    bytes -> an argument vector for `refmem exec` (roots confined to a scratch folder); it
            never raises but SystemExit(0 or 2) from argument parsing, returns 0, 1 or 2, prints no
            traceback, and says what went wrong on one line when it returns 2.
- `prune`   bytes -> a hostile tree (old and new files, links in and out, FIFOs, hard links to the
            outside, deep chains, forged records and squatters in `.refmem/`) and a prune (dry or
            real); it never raises (but for a root that is not a directory), removes no file newer
            than the cut-off, nothing that is not a regular file, nothing outside the root, and a dry
            run removes nothing at all.

Run without atheris (`--engine random`, a seeded random-bytes driver) or with it:

    python -m refmem_fuzz.robustness policy --engine atheris --max-time 60
    python -m refmem_fuzz.robustness serve --engine random --runs 2000 --seed 3

`refmem` is imported lazily, inside atheris' instrumentation when atheris drives.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import pathlib
import random
import sys
import tempfile
import time
from types import ModuleType
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

from refmem_harness import hosttree
from refmem_harness.byte_reader import ByteReader


class Broken(AssertionError):
    """An oracle failed; the message says which and shows the input's decoded form, shortened."""


def _check(condition: bool, what: str, shown: object) -> None:
    if not condition:
        raise Broken(f"{what}: {shown!r:.600}")


def _modules() -> Dict[str, ModuleType]:
    """The modules under test, imported on first use (so atheris can instrument them)."""
    if not _LOADED:
        import refmem.cli
        import refmem.policy
        import refmem.protocol
        import refmem.serve

        _LOADED.update(cli=refmem.cli, policy=refmem.policy, protocol=refmem.protocol, serve=refmem.serve)
    return _LOADED


_LOADED: Dict[str, ModuleType] = {}


# --- the scratch folder: roots for `reset` and `--root` ----------------------------------------


class Scratch:
    """A private folder holding the roots a harness may name: a directory, a file, a FIFO, a link."""

    def __init__(self) -> None:
        self.base = pathlib.Path(tempfile.mkdtemp(prefix="refmem-robust-"))
        self.memories = self.base / "memories"
        self.file = self.base / "file"
        self.fifo = self.base / "fifo"
        self.link = self.base / "link-to-file"
        self.file.write_text("x")
        if hasattr(os, "mkfifo"):
            os.mkfifo(self.fifo)
        self.link.symlink_to(self.file)
        self.fresh()

    def fresh(self) -> pathlib.Path:
        """An empty memory directory (what an earlier input wrote is gone)."""
        hosttree.remove(str(self.memories))
        self.memories.mkdir()
        return self.memories

    def roots(self) -> List[Any]:
        """Every root value a request or an argument may carry; all absolute paths stay inside `base`."""
        base = str(self.base)
        return [
            str(self.memories),
            str(self.memories),
            str(self.file),
            str(self.fifo),
            str(self.link),
            base + "/missing/deeper",
            base + "/nul\x00byte",
            base + "/\udcff",
            base + "/" + "n" * 300,
            "relative/dir",
            "",
            None,
            7,
            [base],
        ]

    def close(self) -> None:
        hosttree.remove(str(self.base))


_SCRATCH: List[Scratch] = []


def scratch() -> Scratch:
    if not _SCRATCH:
        _SCRATCH.append(Scratch())
    return _SCRATCH[0]


def close_scratch() -> None:
    while _SCRATCH:
        _SCRATCH.pop().close()


# --- shared pieces of text ----------------------------------------------------------------------

_BEGIN = "-----BEGIN " + "PRIVATE KEY-----"
_END = "-----END " + "PRIVATE KEY-----"
_SECRET_PIECES = (
    _BEGIN, _END, "\n", " ", "-", "_", ".", ":", "=", "eyJ", "eyJhbGciOiJub25lIn0.", "eyJzdWIiOiJ4In0.",
    "eyJhIjpb" + "W1tb" * 400 + ".", "AKIA", "ABCDEFGHIJKLMNOP", "sk-", "proj-", "aZ9xQ7mL2pR8sT4vW6yB1cD3eF5gH7jK",
    "4111", "1111", "4111 1111 1111 1111", "5555555555554444", "ghp_", "A" * 36, "xoxb-", "123456",
    "https://hooks.slack.com/services/", "aws_secret_access_key = ", "A" * 40, "AIza", "sk_live_",
    "[REDACTED:jwt]", "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7",
)  # fmt: skip
_PATHS = ("/memories", "/memories/a.md", "/memories/d", "/memories/d/b.txt", "/memories/a.md/x")
_WORDS = ("view", "create", "str_replace", "insert", "delete", "rename", "/memories", "/memories/a.md", "..", "\x00")


def _text(reader: ByteReader, max_len: int) -> str:
    """Text of several kinds: decoded bytes (lone surrogates included) or secret-shaped pieces."""
    mode = reader.below(5)
    if mode == 0:
        return reader.raw(max_len).decode("utf-8", "replace")
    if mode == 1:
        return reader.raw(max_len).decode("utf-8", "surrogateescape")
    if mode == 2:  # UTF-16 code units: astral characters and lone surrogates
        raw = reader.raw(max_len)
        return raw[: len(raw) // 2 * 2].decode("utf-16-le", "surrogatepass")
    if mode == 3:
        return "".join(reader.pick(_SECRET_PIECES) for _ in range(reader.below(24)))
    return "".join(reader.pick(_WORDS) + reader.raw(4).decode("latin-1") for _ in range(reader.below(6)))


# --- policy -------------------------------------------------------------------------------------


def policy_one_input(data: bytes) -> None:
    """Every detector and both actions of the policy, on one text made from `data`."""
    check_policy(_text(ByteReader(data), 4096))


def check_policy(text: str) -> None:
    policy = _modules()["policy"]
    kinds = set(policy.KIND_DESCRIPTIONS)
    for detector in policy.DEFAULT_DETECTORS:
        for found in detector(text):
            _check(0 <= found.start < found.end <= len(text), f"{detector.__name__}: span outside the text", text)
            _check(found.kind in kinds, f"{detector.__name__}: unknown kind {found.kind}", text)
    findings = policy.ContentPolicy().findings(text)
    _check(all(a.end <= b.start for a, b in zip(findings, findings[1:])), "findings overlap or are unsorted", text)
    rejected = policy.ContentPolicy("reject").check(text)
    _check(rejected.text is text, "reject changed the text", text)
    _check(rejected.refused_kinds == list(dict.fromkeys(f.kind for f in findings)), "refused kinds", text)
    redacted = policy.ContentPolicy("redact").check(text)
    _check(not redacted.refused_kinds, "redact refused", text)
    _check(policy.ContentPolicy().findings(redacted.text) == [], "redacted text still holds a finding", text)
    _check(policy.ContentPolicy("redact").check(redacted.text).text == redacted.text, "redaction not idempotent", text)


# --- serve --------------------------------------------------------------------------------------

SERVE_LINE_BOUND = 4096
"""The line bound the serve harness runs with, small so that overlong lines are cheap to make."""

_VERSIONS: Tuple[Any, ...] = (1, 1, 1, 2, 0, True, 1.0, "1", None, [1])
_SEQS: Tuple[Any, ...] = (None, 1, 2, 3, 0, -1, 1.5, True, "1", 10**20, [1], {"a": 1})
_CMDS: Tuple[Any, ...] = ("start", "reset", "execute", "stop", "fly", "", None, 1, [], {}, "START", "execute ")
_OPTIONS: Tuple[Any, ...] = (
    None, {}, {"read_only": True}, {"read_only": "yes"}, {"allow": ["*.md", "a/**"]}, {"allow": "*.md"},
    {"limits": {"max_view_chars": 40}}, {"limits": {"max_view_chars": 0}}, {"limits": {"bogus": 1}},
    {"limits": []}, {"content_policy": "reject"}, {"content_policy": "redact"}, {"content_policy": ["x"]},
    {"colour": 1}, [], "read_only",
)  # fmt: skip


def _tool_input(reader: ByteReader) -> Any:
    kind = reader.below(6)
    if kind == 0:
        return _text(reader, 64)
    if kind == 1:
        return [reader.below(3)] * reader.below(4)
    command: Dict[str, Any] = {"command": reader.pick(_WORDS[:6]) if reader.below(8) else reader.pick(("", "vieW", 1))}
    for field in ("path", "file_text", "old_str", "new_str", "insert_text", "old_path", "new_path"):
        if reader.chance(1, 3):
            if "path" in field:
                command[field] = reader.pick(_PATHS) if reader.below(3) else "/memories/" + _text(reader, 24)
            else:
                command[field] = reader.pick(("", "x\n", "a\nb\n")) if reader.below(2) else _text(reader, 256)
    if reader.chance(1, 4):
        command["insert_line"] = reader.pick((0, 1, -1, 2**40, "1", None, 1.5))
    if reader.chance(1, 4):
        command["view_range"] = reader.pick(([1, 2], [1, -1], [0, 0], "1", [1], None))
    return command


def _request(reader: ByteReader, roots: Sequence[Any]) -> Dict[str, Any]:
    cmd = reader.pick(_CMDS) if reader.chance(1, 6) else reader.pick(("start", "reset", "execute", "execute", "stop"))
    request: Dict[str, Any] = {"cmd": cmd}
    seq = reader.pick(_SEQS) if reader.chance(1, 4) else 1 + reader.below(9)
    if seq is not None:
        request["seq"] = seq
    if cmd == "start" or reader.chance(1, 8):
        request["version"] = reader.pick(_VERSIONS)
    if cmd == "reset" or reader.chance(1, 8):
        request["root"] = reader.pick(roots) if reader.chance(1, 3) else roots[0]
        if reader.chance(1, 3):
            request["options"] = reader.pick(_OPTIONS)
    if cmd == "execute" or reader.chance(1, 8):
        if reader.below(8):
            request["input"] = _tool_input(reader)
    if reader.chance(1, 8):
        request[_text(reader, 8)] = _text(reader, 8)  # a field nobody knows
    return request


def _line(reader: ByteReader, roots: Sequence[Any]) -> bytes:
    kind = reader.below(20)
    if kind == 0:
        return reader.raw(200).replace(b"\n", b" ")
    if kind == 1:
        return reader.pick((b"[", b"{", b'{"a":', b"[{}, ")) * reader.below(4000)
    if kind == 2:
        return b"x" * (SERVE_LINE_BOUND - 8 + reader.below(16))  # around the bound
    if kind == 3:
        return reader.pick((b"", b" ", b"\t\r", b"\xc2\xa0", b"null", b"1", b'"s"', b"true", b"[]", b"{}"))
    line = json.dumps(_request(reader, roots)).encode()
    if kind == 4 and line:  # a valid request with bytes spliced in
        at = reader.below(len(line))
        line = line[:at] + reader.raw(6).replace(b"\n", b" ") + line[at + reader.below(4) :]
    return line


def _serve_lines(data: bytes, roots: Sequence[Any]) -> List[bytes]:
    reader = ByteReader(data)
    lines = [b'{"cmd": "start", "version": 1}'] if reader.below(4) else []
    if reader.below(4):
        lines.append(json.dumps({"cmd": "reset", "seq": 1, "root": roots[0]}).encode())
    while not reader.exhausted and len(lines) < 24:
        lines.append(_line(reader, roots))
    return lines


def _expected(protocol: ModuleType, line: bytes) -> Tuple[str, Any]:
    """What a line must get: ("blank", None), ("stop", None) or ("reply", the seq to echo or None)."""
    if len(line) > SERVE_LINE_BOUND:
        return "reply", None
    try:
        request = protocol.decode_line(line)
    except protocol.LineError:
        return "reply", None
    if request is protocol.BLANK:
        return "blank", None
    seq = request.get("seq") if isinstance(request, dict) else None
    echo = seq if protocol.valid_seq(seq) else None
    if isinstance(request, dict) and request.get("cmd") == "stop" and (seq is None or echo is not None):
        return "stop", None
    return "reply", echo


def serve_one_input(data: bytes) -> None:
    """A session of request lines made from `data`, through the real server loop."""
    place = scratch()
    place.fresh()
    check_session(_serve_lines(data, place.roots()))


def check_session(lines: Sequence[bytes]) -> None:
    """One server session over `lines` (no newline inside any); raises Broken if a reply is wrong."""
    modules = _modules()
    protocol, serve = modules["protocol"], modules["serve"]
    out = io.StringIO()
    status = serve.serve(io.BytesIO(b"".join(line + b"\n" for line in lines)), out, SERVE_LINE_BOUND)
    _check(status == 0, "serve returned a non-zero status", lines)
    replies = out.getvalue().splitlines()
    expected = []
    for line in lines:
        outcome, echo = _expected(protocol, line)
        if outcome == "stop":
            break
        if outcome == "reply":
            expected.append((line, echo))
    _check(len(replies) == len(expected), f"{len(replies)} replies to {len(expected)} request lines", lines)
    for (line, echo), raw in zip(expected, replies):
        _check_reply(protocol, line, echo, raw)


def _check_reply(protocol: ModuleType, line: bytes, echo: Any, raw: str) -> None:
    _check(raw.isascii(), "a reply line is not ASCII", raw)
    reply = json.loads(raw)
    _check(isinstance(reply, dict), "a reply is not an object", raw)
    _check(reply.get("seq") == echo, f"seq {reply.get('seq')!r} answers a request with seq {echo!r}", (line, raw))
    if "error" in reply and "ready" not in reply:
        error = reply["error"]
        _check(isinstance(error, dict) and isinstance(error.get("message"), str), "malformed error", raw)
        _check(error.get("code") in protocol.ERROR_CODES, "unknown error code", raw)
        _check(error.get("code") != protocol.INTERNAL, "the server failed on a line", (line, raw))
        return
    if "ready" in reply:
        _check(isinstance(reply["ready"], bool) and reply.get("version") == protocol.VERSION, "bad start reply", raw)
        return
    if "ok" in reply:
        _check(reply["ok"] is True, "bad reset reply", raw)
        return
    _check(isinstance(reply.get("output"), str) and isinstance(reply.get("is_error"), bool), "bad reply", raw)
    _check("raised" not in reply, "the handler raised", (line, reply.get("raised")))


# --- exec ---------------------------------------------------------------------------------------

_FLAGS = ("--read-only", "--root", "--bogus", "-h", "--", "-", "--read-only=1", "--root=", "exec", "prune")


def _exec_argv(data: bytes, roots: Sequence[Any]) -> List[str]:
    reader = ByteReader(data)
    argv = ["exec"]
    usable = [root for root in roots if isinstance(root, str) and os.path.isabs(root)]
    if reader.below(8):
        argv += ["--root", reader.pick(usable) if reader.chance(1, 3) else usable[0]]
    for _ in range(reader.below(4) if reader.chance(1, 4) else 0):
        flag = reader.pick(_FLAGS)
        if flag == "--root":
            argv += [flag, reader.pick(usable)]
        elif flag == "--root=":
            argv.append(flag + reader.pick(usable))
        elif flag != "-h" or reader.chance(1, 8):  # help is cheap but noisy
            argv.append(flag)
    if reader.below(8):
        kind = reader.below(4)
        if kind == 0:
            argv.append(_text(reader, 200))
        elif kind == 1:
            argv.append(reader.pick(("[", "{", '{"a":')) * reader.below(3000))
        else:
            argv.append(json.dumps(_tool_input(reader)))
    return argv


def _confined(argv: Sequence[str], base: str) -> bool:
    """Every root the argument vector could name lies inside the scratch folder (never the cwd)."""
    for index, arg in enumerate(argv):
        value = argv[index + 1] if arg == "--root" and index + 1 < len(argv) else None
        if arg.startswith("--root="):
            value = arg[len("--root=") :]
        if value is not None and not (value.startswith(base + "/") or value == base):
            return False
    return True


def exec_one_input(data: bytes) -> None:
    """`refmem exec` with an argument vector made from `data`."""
    place = scratch()
    place.fresh()
    argv = _exec_argv(data, place.roots())
    if _confined(argv, str(place.base)):
        check_exec(argv)


def check_exec(argv: List[str]) -> None:
    """`refmem exec` in process with stdout strict UTF-8; raises Broken if its answer is wrong."""
    cli = _modules()["cli"]
    out_bytes, err_bytes = io.BytesIO(), io.BytesIO()
    out = io.TextIOWrapper(out_bytes, encoding="utf-8")  # strict, like a real UTF-8 stdout
    err = io.TextIOWrapper(err_bytes, encoding="utf-8", errors="backslashreplace")
    code: Any
    stdin, sys.stdin = sys.stdin, io.TextIOWrapper(io.BytesIO(b'{"command": "view", "path": "/memories"}'))
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):  # `-` reads this stdin, never ours
            try:
                code = cli.main(argv)
            except SystemExit as exit_:
                code = ("exit", exit_.code)
    finally:
        sys.stdin = stdin
    out.flush()
    err.flush()
    printed = out_bytes.getvalue().decode("utf-8")
    said = err_bytes.getvalue().decode("utf-8")
    _check("Traceback" not in said, "a traceback on stderr", (argv, said))
    if isinstance(code, tuple):
        _check(code[1] in (0, 2), "argument parsing exited with an unexpected status", (argv, code))
        return
    _check(code in (0, 1, 2), "exec returned an unexpected status", (argv, code))
    if code == 2:
        _check(said.startswith("refmem: ") and said.count("\n") == 1 and printed == "", "status 2 unexplained",
               (argv, said, printed))  # fmt: skip
    else:
        _check(printed.endswith("\n") and said == "", "a result is one printed text", (argv, printed, said))


# --- prune --------------------------------------------------------------------------------------

_DAY = 86400.0
_NOW = 2_000_000_000.0
_PRUNE_NAMES = ("a.md", "b", "c.txt", "d", ".hidden", ".refmem", ".refmem-tmp-1", "x")


def _prune_tree(reader: ByteReader, top: pathlib.Path, outside: pathlib.Path) -> None:
    """Build a hostile tree below `top` from the input, every entry dated old or new."""
    folders = [top]
    for _ in range(reader.below(24)):
        here = reader.pick(folders)
        name = reader.pick(_PRUNE_NAMES) + str(reader.below(3) or "")
        path = here / name
        if os.path.lexists(path):
            continue
        kind = reader.below(9)
        with contextlib.suppress(OSError):
            if kind <= 2:
                path.write_text("memory")
            elif kind <= 4:
                path.mkdir()
                folders.append(path)
            elif kind == 5:
                path.symlink_to(reader.pick([str(outside), str(outside / "secret.txt"), str(top), "missing"]))
            elif kind == 6 and hasattr(os, "mkfifo"):
                os.mkfifo(path)
            elif kind == 7:
                os.link(outside / "secret.txt", path)
            else:  # a chain deeper than a path may name
                deep = path
                for _ in range(reader.below(40)):
                    deep = deep / "n"
                deep.mkdir(parents=True)
                (deep / "leaf.md").write_text("deep")
            age = _NOW - (reader.below(60) * _DAY)
            os.utime(path, (age, age), follow_symlinks=False)
    if reader.chance(1, 4):  # forged or squatting bookkeeping
        records = top / ".refmem" / "access"
        with contextlib.suppress(OSError):
            records.mkdir(parents=True)
            (records / ("0" * 64)).write_bytes(reader.raw(80))
            (records / ("f" * 64)).symlink_to(outside / "secret.txt")


def _snapshot(top: pathlib.Path) -> Dict[str, Tuple[hosttree.Node, int]]:
    """Every entry below `top` (hosttree: bounded, no link followed) with its modification time, which a prune
    must not change either."""
    return {path: (node, node.mtime_ns) for path, node in hosttree.read(str(top)).tree.items()}


def prune_one_input(data: bytes) -> None:
    reader = ByteReader(data)
    base = pathlib.Path(tempfile.mkdtemp(prefix="refmem-prune-"))
    try:
        outside, top = base / "outside", base / "memories"
        outside.mkdir()
        (outside / "secret.txt").write_text("CANARY")
        top.mkdir()
        _prune_tree(reader, top, outside)
        check_prune(top, outside, older_than=reader.pick([1.0, 7 * _DAY, 30 * _DAY]), dry_run=reader.chance(1, 3))
    finally:
        _remove_tree(base)


def check_prune(top: pathlib.Path, outside: pathlib.Path, older_than: float, dry_run: bool) -> None:
    from refmem import expiry, problems

    before, outside_before = _snapshot(top), _snapshot(outside)
    try:
        report = expiry.prune(top, older_than, dry_run=dry_run, now=_NOW)
    except problems.FsProblem:  # a damaged bookkeeping folder: refused as a whole, nothing touched
        _check(_snapshot(top) == before, "a refused prune changed the tree", sorted(before))
        return
    except Exception as error:  # noqa: BLE001 - the oracle: nothing else may escape prune
        raise Broken(f"prune raised {type(error).__name__}: {error}") from None
    after = _snapshot(top)
    _check(_snapshot(outside) == outside_before, "prune changed something outside the root", report)
    gone = set(before) - set(after)
    if dry_run:
        _check(not gone, "a dry run removed something", sorted(gone))
    removed_dirs = {name for name in gone if before[name][0].kind == hosttree.DIR}
    for name in gone:
        if any(name.startswith(folder + "/") for folder in removed_dirs):
            continue  # went with a folder the prune emptied
        if name.startswith(".refmem/") or name.rpartition("/")[2].startswith(".refmem-tmp-"):
            continue  # bookkeeping: stale records and old temp files are the prune's to clear
        node, mtime_ns = before[name]
        kind = {hosttree.LINK: "link", hosttree.OTHER: "special file"}.get(node.kind, node.kind)
        _check(node.kind in (hosttree.FILE, hosttree.DIR), f"prune removed a {kind}", name)
        if node.kind == hosttree.FILE:
            _check(mtime_ns / 1e9 < _NOW - older_than, "prune removed a file newer than the cut-off", name)


def _remove_tree(base: pathlib.Path) -> None:
    """Remove a scratch tree of any depth with the harness's own remover (hosttree: iterative, no link
    followed), never with the code under test."""
    hosttree.remove(str(base))


HARNESSES: Dict[str, Callable[[bytes], None]] = {
    "policy": policy_one_input,
    "serve": serve_one_input,
    "exec": exec_one_input,
    "prune": prune_one_input,
}


# --- drivers ------------------------------------------------------------------------------------


def random_inputs(seed: int, max_len: int = 1024) -> Iterator[bytes]:
    """Seeded random bytes: fresh ones, and mutations of earlier ones (no coverage feedback)."""
    rng = random.Random(seed)
    kept: List[bytes] = [b"", b"\x00" * 16, bytes(range(256))]
    while True:
        if rng.random() < 0.5:
            data = bytes(rng.randrange(256) for _ in range(rng.randrange(max_len)))
        else:
            chunk = bytearray(rng.choice(kept))
            for _ in range(1 + rng.randrange(8)):
                at = rng.randrange(len(chunk) + 1)
                chunk[at:at] = bytes(rng.randrange(256) for _ in range(rng.randrange(8)))
                if chunk and rng.random() < 0.5:
                    del chunk[rng.randrange(len(chunk))]
            data = bytes(chunk[:max_len])
        if len(kept) < 64:
            kept.append(data)
        yield data


def run_random(name: str, runs: Optional[int] = None, seconds: Optional[float] = None, seed: int = 1) -> int:
    """Run one harness on seeded random inputs; returns how many ran. A failure raises `Broken`."""
    one_input = HARNESSES[name]
    started = time.monotonic()
    count = 0
    for data in random_inputs(seed):
        if runs is not None and count >= runs:
            break
        if seconds is not None and time.monotonic() - started >= seconds:
            break
        one_input(data)
        count += 1
    return count


def run_atheris(name: str, seconds: float, seed: int, extra: Sequence[str] = ()) -> None:  # pragma: no cover
    import atheris  # type: ignore[import-untyped]

    with atheris.instrument_imports(include=["refmem"]):
        _modules()
    one_input = HARNESSES[name]
    started = time.monotonic()
    runs = [0]

    def test_one_input(data: bytes) -> None:
        one_input(data)
        runs[0] += 1
        if time.monotonic() - started >= seconds:
            print(f"robustness {name}: {runs[0]} runs in {time.monotonic() - started:.1f}s, no failure", flush=True)
            close_scratch()
            os._exit(0)

    argv = [sys.argv[0], f"-seed={seed}", "-max_len=4096", "-timeout=30", "-print_final_stats=1", *extra]
    atheris.Setup(argv, test_one_input)
    atheris.Fuzz()


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m refmem_fuzz.robustness", description=__doc__.split("\n\n")[0])
    parser.add_argument("harness", choices=tuple(HARNESSES))
    parser.add_argument("--engine", choices=("random", "atheris"), default="random")
    parser.add_argument("--max-time", type=float, default=60.0, help="seconds")
    parser.add_argument("--runs", type=int, default=None, help="random engine: stop after this many inputs")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--libfuzzer-arg", action="append", default=[])
    ns = parser.parse_args(argv)
    if ns.engine == "atheris":
        run_atheris(ns.harness, ns.max_time, ns.seed, ns.libfuzzer_arg)
        return 0
    started = time.monotonic()
    try:
        count = run_random(ns.harness, ns.runs, ns.max_time, ns.seed)
    finally:
        close_scratch()
    print(f"robustness {ns.harness}: {count} runs in {time.monotonic() - started:.1f}s, no failure (random engine)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
