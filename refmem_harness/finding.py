"""Finding files: a minimal command sequence, the oracle it broke, and what was observed.

A finding file is plain JSON a reviewer can read and attach to a bug report. It never holds a host
path or the run's canary value: both are replaced by placeholders (`<CASE>`, `<WORK>`, `<CANARY>`).

Cost findings need large inputs (a megabyte of `a\n`); a long parameter that repeats a short unit is
stored as `{"$repeat": UNIT, "times": N, "then": REST}` and expanded again on loading, and long
outputs and file contents are cut (they are what was observed, not what is replayed).

A finding file is also something a stranger sends (SECURITY.md asks reporters for one), so loading
trusts nothing in it: the file is read with a size bound, parsed with a nesting bound, checked field
by field against the shape `conformance/schema/fuzz-finding.schema.json` publishes (by hand: the
fuzzer does not need jsonschema), and every `$repeat` expands within a bound per value and a bound
for the whole finding. Anything else is refused with a one-line `FindingError`. The target a file
names is only ever shown, never started (fuzz/replay.py).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
import pathlib
import re
import stat
from typing import Any, Callable, Dict, List, Optional, Tuple

from refmem.protocol import MAX_LINE_BYTES

from .sequence_layout import Layout

FORMAT = "refmem-fuzz-finding/2"
READABLE = ("refmem-fuzz-finding/1", FORMAT)
"""/2 added packed repeated parameters and the `cost` record; /1 files read the same."""
HARNESS_NAMES = ("sequence", "paths", "openclaw")
"""The memory tool's harnesses, then the plug-ins' (fuzz/plugin.py PLUGINS, which names no other): the name says how a
file is replayed."""
PACK_MIN_CHARS = 1024
PACK_MAX_UNIT = 64
KEPT_CHARS = 4096
"""Observed outputs and file contents longer than this are cut in the file."""
KEPT_TREE_CHARS = 1 << 20
"""The observed tree is kept up to this many characters (paths and contents): a deep tree's paths
grow with the square of its depth, and the tree is what was observed, not what is replayed."""
REPEAT = "$repeat"

# --- what a finding file may hold (the schema says the same: tests/fuzz/test_finding_files.py) --------

MAX_FILE_BYTES = MAX_LINE_BYTES
"""A finding file is read up to 16 MiB and refused beyond: the largest the fuzzer writes is far
smaller (the megabyte inputs are packed, outputs and the tree cut)."""
MAX_DEPTH = 512
"""JSON nesting refused beyond this: the decoder nests parameters 256 levels (grow.NESTING) inside
the file's own few levels, and every later step (hashing, printing, the adapter protocol) must be
able to walk what was loaded."""
MAX_COMMANDS = 256
"""Commands (and observed steps) in a finding: the decoder makes at most grow.MAX_EXPANDED (160)."""
MAX_VALUE_CHARS = 4 * (1 << 20)
"""Characters one `$repeat` may expand to: four times the largest growth form (grow.MAX_CHARS, a
little over a megabyte), and at most 16 MiB as UTF-8, a line of the adapter protocol."""
MAX_TOTAL_CHARS = MAX_LINE_BYTES
"""Characters all of a finding's command parameters may hold once expanded (16 Mi)."""
MAX_OTHER_ORACLES = 256
"""Other oracles a finding's run broke: a few families times the decoder's few command names."""
MAX_NAME_CHARS = 4096
"""Longest target, harness or engine name kept as it is."""
LABEL = "[A-Za-z_][A-Za-z0-9_]{0,63}"
"""A command's name in an oracle (oracles.py labels a command by its name when that is an
identifier, else `input`); the decoder's names are ASCII."""
ORACLE_PATTERN = (
    "^(?:escape:(?:outside-changed|parser)"
    f"|leak:(?:canary|host-path|traceback):{LABEL}"
    f"|hang:{LABEL}"
    f"|crash:(?:result-type|{LABEL})"
    "|exception:(?:parser:)?[A-Za-z0-9_]{1,100}"
    f"|cost:(?:time|output|memory):{LABEL}"
    f"|diverge:(?:tree|{LABEL}:(?:ok|error)-vs-(?:ok|error))"
    "|parser:(?:invariant|canonical-refused|canonical-unstable)"
    ")(?![\\s\\S])"
)
"""Every oracle class the fuzzer reports (oracles.py, cost.py, harness.py). `(?![\\s\\S])` ends the
string in both Python and ECMAScript regular expressions (`$` would also match before a final
newline in Python), so the schema's `pattern` and this loader read it alike."""
_ORACLE = re.compile(ORACLE_PATTERN)



class FindingError(ValueError):
    """A file that is not a well-formed finding; the message is one line naming the field (a key
    is shown escaped and cut), never a value."""


@dataclasses.dataclass
class Finding:
    target: str
    harness: str
    oracle: str
    detail: str
    step: Optional[int]
    hostile_layout: bool
    differential: bool
    commands: List[Any]
    observed: List[Dict[str, Any]]
    tree_after: Optional[Dict[str, Any]] = None
    engine: str = ""
    seed: Optional[int] = None
    runs: Optional[int] = None
    other_oracles: List[str] = dataclasses.field(default_factory=list)
    cost: Optional[Dict[str, Any]] = None
    """For a cost finding: the step's input size, what it cost, the budget, and the confirming runs."""

    @property
    def signature(self) -> str:
        return self.oracle

    def key(self) -> str:
        blob = json.dumps([self.oracle, self.commands], sort_keys=True, ensure_ascii=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:12]

    def file_name(self) -> str:
        safe = "".join(ch if ch.isalnum() or ch in "-_" else "-" for ch in self.oracle)
        return f"{safe}-{self.key()}.json"

    def to_json(self) -> Dict[str, Any]:
        data: Dict[str, Any] = {"format": FORMAT}
        data.update(dataclasses.asdict(self))
        data["commands"] = [pack_command(command) for command in self.commands]
        data["observed"] = [
            dict(entry, input=pack_command(entry.get("input")), output=cut(entry.get("output")))
            for entry in self.observed
        ]
        if self.tree_after is not None:
            data["tree_after"] = cut_tree(self.tree_after)
        if data["cost"] is None:
            del data["cost"]
        return data

    @classmethod
    def from_json(cls, data: Any) -> Finding:
        """A finding from parsed JSON, checked field by field; raises FindingError."""
        check(data)
        fields = {field.name for field in dataclasses.fields(cls)}
        found = cls(**{key: _integral(value) for key, value in data.items() if key in fields})
        found.commands = unpack_commands(found.commands)
        return found


def cut(text: Any) -> Any:
    if not isinstance(text, str) or len(text) <= KEPT_CHARS:
        return text
    return text[:KEPT_CHARS] + f"...[{len(text) - KEPT_CHARS} more characters cut in this file]"


def cut_tree(tree: Dict[str, Any]) -> Dict[str, Any]:
    """The observed tree, each content cut, the entries kept in order up to KEPT_TREE_CHARS."""
    kept: Dict[str, Any] = {}
    left = KEPT_TREE_CHARS
    for path, value in tree.items():
        value = cut(value)
        left -= len(path) + (len(value) if isinstance(value, str) else 0)
        if left < 0:
            break
        kept[path] = value
    return kept


def pack(text: str) -> Any:
    """A long string that repeats a short unit as a `$repeat` object; anything else as it is."""
    if len(text) < PACK_MIN_CHARS:
        return text
    for period in range(1, PACK_MAX_UNIT + 1):
        if text[period:] == text[:-period]:
            times = len(text) // period
            return {REPEAT: text[:period], "times": times, "then": text[times * period :]}
    return text


def unpack(value: Any) -> Any:
    """A `$repeat` object as the string it stands for (FindingError if it is not a well-formed one, or
    expands past MAX_VALUE_CHARS); anything else as it is."""
    if isinstance(value, dict) and REPEAT in value:
        problem = _repeat(value)
        if problem is not None:
            raise FindingError(f"a {REPEAT} object: {problem}")
        return value[REPEAT] * _integral(value["times"]) + value["then"]
    return value


def pack_command(command: Any) -> Any:
    if not isinstance(command, dict):
        return command
    return {key: pack(value) if isinstance(value, str) else value for key, value in command.items()}


def unpack_command(command: Any) -> Any:
    if not isinstance(command, dict):
        return command
    return {key: unpack(value) for key, value in command.items()}


def unpack_commands(commands: List[Any]) -> List[Any]:
    """The commands with every `$repeat` expanded, refused (FindingError) past MAX_TOTAL_CHARS in all.

    The total is worked out before anything is expanded, so a refused file costs nothing."""
    total = 0
    for command in commands:
        for value in command.values() if isinstance(command, dict) else ():
            total += _expanded_chars(value) if isinstance(value, dict) and REPEAT in value else 0
            total += len(value) if isinstance(value, str) else 0
    if total > MAX_TOTAL_CHARS:
        raise FindingError(f"commands: the parameters expand to {total:,} characters, over the {MAX_TOTAL_CHARS:,} "
                           "a finding may hold")
    return [unpack_command(command) for command in commands]


def scrub(text: str, layout: Layout) -> str:
    if not isinstance(text, str):
        return text
    for host_path in layout.host_paths():
        placeholder = "<WORK>" if host_path == str(layout.work) else "<CASE>"
        text = text.replace(host_path, placeholder)
    return text.replace(layout.canary, "<CANARY>")


def dumps(finding: Finding) -> str:
    data = finding.to_json()
    try:
        text = json.dumps(data, indent=2, ensure_ascii=False)
        text.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates: keep them as JSON escapes
        text = json.dumps(data, indent=2, ensure_ascii=True)
    return text + "\n"


def save(finding: Finding, directory: pathlib.Path) -> pathlib.Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / finding.file_name()
    path.write_text(dumps(finding), encoding="utf-8")
    return path


# --- loading ------------------------------------------------------------------------------------


def load(path: pathlib.Path) -> Finding:
    """The finding in `path`; FindingError for anything that is not a well-formed finding file."""
    return parse(read_bounded(path))


def read_bounded(path: pathlib.Path, limit: int = MAX_FILE_BYTES) -> bytes:
    """At most `limit` bytes of a regular file (FindingError beyond): a FIFO or a device is not
    waited on, a huge file not read whole. OSError (a missing file) passes through."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        regular = stat.S_ISREG(os.fstat(fd).st_mode)
    except OSError:
        regular = False
    if not regular:
        os.close(fd)
        raise FindingError("not a regular file")
    with os.fdopen(fd, "rb") as handle:
        chunks: List[bytes] = []
        size = 0
        while size <= limit:  # in chunks: a read of limit + 1 bytes would take that much memory for any file
            chunk = handle.read(1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    if size > limit:
        raise FindingError(f"larger than the {limit:,} bytes a finding file may have")
    return b"".join(chunks)


def parse(data: bytes) -> Finding:
    """A finding from a file's bytes: UTF-8, JSON nested at most MAX_DEPTH deep, then `check`."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FindingError(f"not UTF-8 (byte {exc.start})") from None
    try:
        value = json.loads(text, parse_constant=_no_constant, parse_float=_finite_float)
    except RecursionError:
        raise FindingError(f"not JSON this fuzzer reads: nested deeper than {MAX_DEPTH} levels") from None
    except json.JSONDecodeError as exc:
        raise FindingError(f"not JSON ({exc.msg}: line {exc.lineno}, column {exc.colno})") from None
    except ValueError as exc:  # a number of more digits than int() converts, NaN, Infinity
        raise FindingError(f"not JSON this fuzzer reads ({str(exc).split(':')[0][:80]})") from None
    if depth(value) > MAX_DEPTH:
        raise FindingError(f"not JSON this fuzzer reads: nested deeper than {MAX_DEPTH} levels")
    return Finding.from_json(value)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _finite_float(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise ValueError("a number too large for a float")
    return number


def depth(value: Any) -> int:
    """How deeply arrays and objects nest in `value` (a scalar is 0), without recursion."""
    deepest = 0
    pending: List[Tuple[Any, int]] = [(value, 0)]
    while pending:
        item, level = pending.pop()
        if isinstance(item, (list, dict)):
            level += 1
            deepest = max(deepest, level)
            pending.extend((child, level) for child in (item.values() if isinstance(item, dict) else item))
    return deepest


# --- the shape, field by field ------------------------------------------------------------------

Rule = Callable[[Any], Optional[str]]
"""A value -> None when it is fine, else what is wrong with it (a few words, never the value)."""


def _key(key: str) -> str:
    """A key of the file as a message may show it: JSON-escaped (ASCII), cut at 40 characters."""
    return json.dumps(key[:40])


def _is_integer(value: Any) -> bool:
    """JSON's integer, as JSON Schema reads it: 3 and 3.0, never true."""
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and value.is_integer())


def _integral(value: Any) -> Any:
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _string(max_chars: Optional[int] = None) -> Rule:
    def rule(value: Any) -> Optional[str]:
        if not isinstance(value, str):
            return "must be a string"
        if max_chars is not None and len(value) > max_chars:
            return f"is longer than {max_chars:,} characters"
        return None

    return rule


def _one_of(*allowed: Any) -> Rule:
    def rule(value: Any) -> Optional[str]:
        if isinstance(value, str) and value in allowed:
            return None
        return "must be one of " + ", ".join(allowed)

    return rule


def _boolean(value: Any) -> Optional[str]:
    return None if isinstance(value, bool) else "must be true or false"


def _integer_or_null(minimum: Optional[int] = None) -> Rule:
    def rule(value: Any) -> Optional[str]:
        if value is None:
            return None
        if not _is_integer(value):
            return "must be an integer or null"
        if minimum is not None and value < minimum:
            return f"must be at least {minimum}"
        return None

    return rule


def _oracle(value: Any) -> Optional[str]:
    if isinstance(value, str) and _ORACLE.search(value):
        return None
    return "is not an oracle this fuzzer reports"


def _array(item: Rule, max_items: int, min_items: int = 0) -> Rule:
    def rule(value: Any) -> Optional[str]:
        if not isinstance(value, list):
            return "must be an array"
        if not min_items <= len(value) <= max_items:
            return f"must hold {min_items} to {max_items} items, not {len(value):,}"
        for index, entry in enumerate(value):
            problem = item(entry)
            if problem is not None:
                return f"[{index}]{problem if problem.startswith(('.', '[')) else ' ' + problem}"
        return None

    return rule


def _object_or_null(values: Optional[Rule] = None) -> Rule:
    def rule(value: Any) -> Optional[str]:
        if value is None:
            return None
        if not isinstance(value, dict):
            return "must be an object or null"
        for key, entry in value.items():
            problem = values(entry) if values is not None else None
            if problem is not None:
                return f"[{_key(key)}] {problem}"
        return None

    return rule


def _object(value: Any) -> Optional[str]:
    return None if isinstance(value, dict) else "must be an object"


def _repeat(value: Dict[str, Any]) -> Optional[str]:
    """A `$repeat` object: exactly its three keys, a unit of 1 to 64 characters, at most 64 more
    after it, and an expansion within MAX_VALUE_CHARS (worked out before anything is built)."""
    if set(value) != {REPEAT, "times", "then"}:
        return f'a {REPEAT} object has exactly the keys "{REPEAT}", "times" and "then"'
    unit, times, then = value[REPEAT], value["times"], value["then"]
    if not isinstance(unit, str) or not 1 <= len(unit) <= PACK_MAX_UNIT:
        return f"its unit must be a string of 1 to {PACK_MAX_UNIT} characters"
    if not isinstance(then, str) or len(then) > PACK_MAX_UNIT:
        return f'its "then" must be a string of at most {PACK_MAX_UNIT} characters'
    if not _is_integer(times) or not 0 <= times <= MAX_VALUE_CHARS:
        return f'its "times" must be an integer from 0 to {MAX_VALUE_CHARS:,}'
    size = _expanded_chars(value)
    if size > MAX_VALUE_CHARS:
        return f"expands to {size:,} characters, over the {MAX_VALUE_CHARS:,} a value may hold"
    return None


def _expanded_chars(value: Dict[str, Any]) -> int:
    return len(value[REPEAT]) * int(value["times"]) + len(value["then"])


def _command(value: Any) -> Optional[str]:
    """Any JSON value (malformed inputs are findings too); in an object, a parameter that is an
    object holding `$repeat` must be a well-formed one."""
    if not isinstance(value, dict):
        return None
    for key, parameter in value.items():
        if isinstance(parameter, dict) and REPEAT in parameter:
            problem = _repeat(parameter)
            if problem is not None:
                return f"[{_key(key)}]: {problem}"
    return None


def _observed_step(value: Any) -> Optional[str]:
    if not isinstance(value, dict):
        return "must be an object"
    for key in ("input", "output", "is_error"):
        if key not in value:
            return f"lacks {key}"
    if value["output"] is not None and not isinstance(value["output"], str):
        return ".output must be a string or null"
    if value["is_error"] is not None and not isinstance(value["is_error"], bool):
        return ".is_error must be true, false or null"
    for flag in ("crashed", "timed_out", "raised"):
        if flag in value and not isinstance(value[flag], bool):
            return f".{flag} must be true or false"
    return None


FIELDS: Dict[str, Tuple[bool, Rule]] = {
    "format": (True, _one_of(*READABLE)),
    "target": (True, _string(MAX_NAME_CHARS)),
    "harness": (True, _one_of(*HARNESS_NAMES)),
    "oracle": (True, _oracle),
    "detail": (True, _string()),
    "step": (True, _integer_or_null(0)),
    "hostile_layout": (True, _boolean),
    "differential": (True, _boolean),
    "commands": (True, _array(_command, MAX_COMMANDS, 1)),
    "observed": (True, _array(_observed_step, MAX_COMMANDS)),
    "tree_after": (False, _object_or_null(_string())),
    "engine": (False, _string(MAX_NAME_CHARS)),
    "seed": (False, _integer_or_null()),
    "runs": (False, _integer_or_null(0)),
    "other_oracles": (False, _array(_oracle, MAX_OTHER_ORACLES)),
    "cost": (False, _object),
}
"""Each key of a finding file: (required, rule). No other key is allowed."""


def check(data: Any) -> None:
    """Raise FindingError for the first thing in `data` that a finding file may not hold."""
    if not isinstance(data, dict):
        raise FindingError("the JSON is not an object")
    if data.get("format") not in READABLE:
        raise FindingError("format is not one of " + ", ".join(READABLE))
    for key, (required, _) in FIELDS.items():
        if required and key not in data:
            raise FindingError(f"{key} is missing")
    for key, value in data.items():
        if key not in FIELDS:
            raise FindingError(f"unknown key {_key(key)}")
        problem = FIELDS[key][1](value)
        if problem is not None:
            raise FindingError(f"{key}{problem if problem.startswith(('.', '[')) else ' ' + problem}")
