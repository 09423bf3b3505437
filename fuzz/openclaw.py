"""Fuzzing OpenClaw's memory tools (and the reference's) with hostile paths on a hostile workspace: a plug-in.

    python -m refmem_fuzz.openclaw_cli --target openclaw --max-time 300      # OpenClaw's memory_get / memory_search
    python -m refmem_fuzz.openclaw_cli --target refmem --runs 20000          # the reference
    python -m refmem_fuzz.openclaw_cli replay fuzz/findings/openclaw/FILE.json --target openclaw
    refmem-fuzz run --harness openclaw --target openclaw                 # the same, through refmem-fuzz
    refmem-fuzz replay fuzz/findings/openclaw/FILE.json --target openclaw

What is OpenClaw's own lives here (`PLUGIN`, fuzz/plugin.py): the workspace (`LAYOUT`, beside a canary tree and
`outside/secret.md`: symbolic links to the outside, a dangling one, a hard link to the outside secret, a FIFO, a
folder named like a file, a file that is not UTF-8, a CRLF file), the decoder (bytes -> one to eight calls, each
naming its tool with the protocol's `tool` field: mostly a `memory_get` path built from a dictionary of hostile
pieces, dot segments, encoded dots, backslashes, NUL, look-alike dots and slashes, the workspace's own host path,
with random `from` / `lines`; now and then a `memory_search` for the canary's words) and the oracles, by class:

| oracle | broken when |
|---|---|
| `leak:canary:TOOL` | a reply (its output or its result object) holds the canary text (content from outside) |
| `leak:host-path:TOOL` | a reply holds a host path of the case directory that the call did not hold itself |
| `leak:traceback:TOOL` | (the reference) a reply holds a traceback or an exception class name |
| `hang:TOOL` / `crash:TOOL` | a call took longer than the step timeout / the target died or broke the protocol |
| `exception:TYPE` | the target raised instead of answering |
| `escape:outside-changed` | anything outside the workspace changed |

Everything else is the memory tool's fuzzer: the session (a fresh workspace and reset per input), the engines
(`engine_random`, seeded: a run is reproducible from its seed), the minimiser (calls, path names and optional
parameters dropped while the oracle still breaks), the finding files (refmem_harness/finding.py: validated, bounded,
host paths and the canary written `<CASE>`, `<WORK>`, `<CANARY>`; harness `openclaw`) and replay, which never starts
the target a file names.
"""

from __future__ import annotations

import json
import pathlib
from typing import Any, Callable, Dict, List, Optional

from refmem_harness.byte_reader import ByteReader
from refmem_harness.finding import Finding
from refmem_harness.openclaw_target import TOOLS
from refmem_harness.oracles import Violation, check_result
from refmem_harness.sequence_layout import Layout, symlinks
from refmem_harness.targets import Target

from . import plugin, reach
from .harness import Harness, Options
from .minimise import Fields
from .session import Report, finding_from_report, run_sequence

LAYOUT: List[Dict[str, str]] = [
    {"type": "file", "path": "MEMORY.md", "text": "# Prefs\n- green\n"},
    {"type": "file", "path": "memory/ok.md", "text": "an ordinary note\n"},
    {"type": "file", "path": "memory/crlf.md", "text": "one\r\ntwo\r\n"},
    {"type": "file", "path": "memory/bin.md", "base64": "aGVsbG8g//4K"},
    *symlinks(
        ("memory/link.md", "../../outside/secret.md"),
        ("memory/out", "../../outside"),
        ("memory/dangling.md", "../../outside/nothing.md"),
        ("USER.md", "../outside/secret.md"),
    ),
    {"type": "hardlink", "path": "memory/hard.md", "target": "outside/secret.md"},
    {"type": "fifo", "path": "memory/fifo.md"},
    {"type": "dir", "path": "memory/dir.md"},
]
"""The hostile workspace (hostile-v1 of the first OpenClaw findings); `OUTSIDE` is laid out before it."""
OUTSIDE = {"outside/secret.md": "<CANARY> outside secret markdown\n"}

PIECES = [
    "MEMORY.md", "USER.md", "dreams.md", "DREAMS.md", "memory", "memory.md", "ok.md", "crlf.md", "bin.md",
    "link.md", "out", "secret.md", "dangling.md", "hard.md", "fifo.md", "dir.md", "dir", "inner.txt", "..", ".",
    "", "%2e%2e", "%252e%252e", "..%2f", "%2f", "\\", "..\\", "\u2025", "\uff0e\uff0e", "\u2215", "\x00", "~",
    "memories", "memories_evil", "outside", ".refmem", ".openclaw-repair", "x.md", "a\nb.md", " MEMORY.md ",
    "%00", "....//", "..;", "CON", "x.md:stream", "file:", "?", "*.md",
]  # fmt: skip
PREFIXES = ["", "", "", "/memories/", "/", "./", "<ROOT>/", "<CASE>/", "memory/", "memory/out/", "../", "file://"]
KNOWN = [spec["path"] for spec in LAYOUT] + ["memory/out/secret.md", "memory/out/dir/inner.txt", "dreams.md"]
"""The layout's own paths, which mutations start from (a random path rarely names a file)."""
MUTATIONS: List[Callable[[ByteReader, str], str]] = [
    lambda pick, path: pick.pick(PREFIXES) + path,
    lambda pick, path: path.replace("/", pick.pick(["//", "/./", "\\", "/%2f", "\u2215"]), 1),
    lambda pick, path: path.replace("memory/", "memory/" + pick.pick(["../", "x/../", "./", "%2e%2e/", "out/../"]), 1),
    lambda pick, path: path.upper() if pick.chance(1, 2) else path.lower(),
    lambda pick, path: path + pick.pick(["/", "\x00", ".", " ", "%00", ":$DATA", "/..", "?x", "#x"]),
    lambda pick, path: path.replace(".md", pick.pick([".MD", ".md.", ".md ", "%2emd", ".txt", ""]), 1),
    lambda pick, path: "".join(f"%{ord(ch):02x}" if ch == "." and pick.chance(1, 2) else ch for ch in path),
]
WORDS = ["<CANARY>", "outside", "secret", "inner", "green", "note", "NEAR(", '"', "*"]
FROMS: List[Any] = [1, 2, 3, 0, -1, 10**12, 1.5, "2"]
LINES: List[Any] = [1, 2, 120, 0, 10**12]
MAX_RESULTS: List[Any] = [1, 6, 50]
MAX_CALLS = 8
PLACEHOLDERS = ("<ROOT>", "<CASE>", "<CANARY>")


# --- the decoder ----------------------------------------------------------------------------------------


def decode(data: bytes) -> List[Dict[str, Any]]:
    """The calls `data` stands for, one to MAX_CALLS; every decision takes a byte or two (byte_reader.py), and the
    empty input is `memory_get` of MEMORY.md."""
    reader = ByteReader(data)
    return [_call(reader) for _ in range(1 + reader.below(MAX_CALLS))]


def _call(reader: ByteReader) -> Dict[str, Any]:
    if reader.chance(2, 25):  # a search now and then: OpenClaw's is much slower than its reader
        search: Dict[str, Any] = {"tool": "memory_search", "query": f"{reader.pick(WORDS)} {reader.pick(WORDS)}"}
        if reader.chance(3, 4):
            search["maxResults"] = reader.pick(MAX_RESULTS)
        return search
    if reader.chance(1, 2):
        path = reader.pick(PREFIXES) + "/".join(reader.pick(PIECES) for _ in range(1 + reader.below(5)))
    else:
        path = KNOWN[reader.below(len(KNOWN))]
        for _ in range(reader.below(3)):
            path = reader.pick(MUTATIONS)(reader, path)
    call: Dict[str, Any] = {"tool": "memory_get", "path": path}
    if reader.chance(3, 10):
        call["from"] = reader.pick(FROMS)
    if reader.chance(3, 10):
        call["lines"] = reader.pick(LINES)
    return call


# --- running a call and judging it ----------------------------------------------------------------------


def concrete(command: Any, layout: Layout) -> Any:
    """The call with its placeholders filled in: the workspace's host paths and the run's canary."""
    if not isinstance(command, dict):
        return command
    text = json.dumps(command)
    for mark, value in zip(PLACEHOLDERS, (layout.root, layout.case, layout.canary)):
        text = text.replace(mark, json.dumps(str(value))[1:-1])
    return json.loads(text)


def execute(target: Any, command: Any, layout: Layout) -> Any:
    """One call, on the tool it names (the protocol's `tool`); what names no tool is memory_get's input as it is
    (a finding file may hold anything)."""
    call = concrete(command, layout)
    if not isinstance(call, dict) or not isinstance(call.get("tool"), str):
        return target.execute(call, TOOLS[0])
    tool = call.pop("tool")
    return target.execute(call, tool)


def _label(command: Any) -> str:
    tool = command.get("tool") if isinstance(command, dict) else None
    return tool if isinstance(tool, str) and tool.isidentifier() else "input"


def check_step(index: int, command: Any, step: Any, layout: Layout, strict: bool) -> List[Violation]:
    """The shared oracles on a call, over its output and its result object; a host path the call held itself is
    not a leak (an error may name the path it was given)."""
    result = getattr(step, "result", None)
    also = json.dumps(result, ensure_ascii=False) if result is not None else ""
    sent = json.dumps(concrete(command, layout), ensure_ascii=False)
    return check_result(index, _label(command), step, layout, strict, also, sent)


PLUGIN: plugin.Plugin = plugin.Plugin(
    harness="openclaw",
    tools=TOOLS,
    fixtures=LAYOUT,
    outside=OUTSIDE,
    decode=decode,
    execute=execute,
    check_step=check_step,
    fields=Fields(optional=("from", "lines", "maxResults", "minScore"), texts=("query",), paths=("path",),
                  kept_names=0),
)


def outcome(step: Any) -> str:
    """What a call came to: its result's status (`ok`, `error`, `not_found`...), `results` for a search, `none`."""
    result = getattr(step, "result", None)
    if not isinstance(result, dict):
        return "none"
    return str(result.get("status", "results"))[:40]


class WarmTarget:
    """The target, reset only when a sequence needs it: the first time, after the workspace was laid out afresh,
    and after a hang or a crash. Neither tool writes, so every sequence still starts from the same workspace,
    and OpenClaw keeps the index its first search builds: that search takes 2 to 11 s, which a reset before
    every input paid again (and a 10 s step timeout took for a hang). Replay starts the target afresh."""

    def __init__(self, target: Target, layout: Layout) -> None:
        self.target = target
        self.layout = layout
        self._laid_out: Optional[object] = None

    @property
    def storage(self) -> str:
        return self.target.storage

    def reset(self, root: pathlib.Path) -> None:
        if self._laid_out is not self.layout.baseline_print:
            self.target.reset(root)
            self._laid_out = self.layout.baseline_print

    def execute(self, tool_input: Any, tool: str) -> Any:
        step = self.target.execute(tool_input, tool)
        if step.crashed or step.timed_out:
            self._laid_out = None
        return step

    def close(self) -> None:
        self.target.close()


class OpenClawHarness(Harness):
    """Decoded calls on the plug-in's workspace, through the shared session; each new oracle minimised and
    recorded as a finding file of harness `openclaw`."""

    name = PLUGIN.harness

    def __init__(self, options: Options, work: pathlib.Path) -> None:
        super().__init__(options, work)
        self.layout = PLUGIN.layout(work / "openclaw")
        self.layout.reset()
        self.target = WarmTarget(reach.open(options.target, self.layout.root, options.step_timeout, TOOLS), self.layout)
        strict = options.is_reference if options.strict is None else options.strict
        self.settings = PLUGIN.settings(strict=strict, deadline=options.deadline, step_timeout=options.step_timeout)
        self.calls = 0
        self.outcomes: Dict[str, int] = {}

    def run(self, commands: List[Any]) -> Report:
        return run_sequence(commands, self.target, self.layout, self.settings)

    def one_input(self, data: bytes) -> Optional[Finding]:
        self.runs += 1
        report = self.run(list(decode(data)))
        self.calls += len(report.steps)
        features = []
        for command, step in zip(report.commands, report.steps):
            kind = outcome(step)
            self.outcomes[kind] = self.outcomes.get(kind, 0) + 1
            result = getattr(step, "result", None)
            code = str(result.get("code", result.get("error", "")))[:40] if isinstance(result, dict) else ""
            features.append((_label(command), kind, code))
        self.last_features = frozenset(features)
        primary = report.primary
        if primary is None or primary.oracle in self.seen:
            return None
        final = self.minimised(report, primary.oracle, self.run, PLUGIN.fields)
        found = finding_from_report(final, self.layout, self.options.target, self.name, False, primary.oracle)
        return self._record(found)

    def close(self) -> None:
        self.target.close()
        self.layout.remove()

