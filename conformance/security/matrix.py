"""The generated security matrix: every path payload through every command and every path argument.

`generate()` reads `payloads.json` (next to this file) and returns cases in the case format of
`conformance/CASE-FORMAT.md`. It is deterministic: the same data always gives the same cases in the same
order, and every case ID is built from data keys (family, payload, command, argument), never from list
positions, so adding or reordering payloads never renames an existing check. See README.md.
"""

from __future__ import annotations

import copy
import json
import pathlib
import re
import urllib.parse
from typing import Any, Dict, List, Optional, Tuple

from refmem import tool

from .. import documentation

PAYLOADS_FILE = pathlib.Path(__file__).resolve().parent / "payloads.json"
CASE_SCHEMA_FILE = pathlib.Path(__file__).resolve().parent.parent / "schema" / "case.schema.json"

VALID_NAME = "valid.txt"
VALID_PATH = "/memories/" + VALID_NAME
VALID_TEXT = "valid content\n"
RENAME_TARGET = "/memories/moved.txt"
RENAME_TARGET_NAME = "moved.txt"
WRITTEN_TEXT = "pwned\n"

# (command, argument): the argument that carries the payload; the other arguments are valid.
SLOTS: Tuple[Tuple[str, str], ...] = tool.PATH_SLOTS

# A valid value for each parameter that does not carry the payload (view's optional view_range is left out).
VALID_VALUES: Dict[str, Any] = {
    "old_path": VALID_PATH,
    "new_path": RENAME_TARGET,
    "file_text": WRITTEN_TEXT,
    "old_str": "valid",
    "new_str": "pwned",
    "insert_line": 0,
    "insert_text": WRITTEN_TEXT,
}

# For payloads that may legitimately be accepted as ordinary names, only the slots where acceptance and
# refusal both end in an error (the name does not exist) can state `is_error`; create and rename's
# new_path would succeed on an accepted name, and the case format has no "either" for is_error.
CONTAINED_SLOTS = tuple(slot for slot in SLOTS if slot not in (("create", "path"), ("rename", "new_path")))

# The documentation's "does not exist" sentence for each slot where a name that is not there is an error.
MISSING_CITE = {
    ("view", "path"): "doc-view-missing",
    ("str_replace", "path"): "doc-str-missing",
    ("insert", "path"): "doc-insert-missing",
    ("delete", "path"): "doc-delete-missing",
    ("rename", "old_path"): "doc-rename-missing",
}
EXISTS_CITE = {("create", "path"): "doc-create-exists", ("rename", "new_path"): "doc-rename-exists"}
LEVEL = {"doc": "must", "reference": "should", "hardening": "should"}

_REPEAT = re.compile(r"\{([^{}*]+)\*([0-9]+)\}")
_KEY = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")


class PayloadError(ValueError):
    """payloads.json does not have the expected shape."""


def expand(template: str) -> str:
    """A path template is literal text, except `{TEXT*N}`, which stands for TEXT repeated N times."""
    return _REPEAT.sub(lambda match: match.group(1) * int(match.group(2)), template)


def tool_input(command: str, argument: str, payload: str) -> Dict[str, Any]:
    """The command's input with `payload` in `argument` and valid values everywhere else."""
    if (command, argument) not in SLOTS:
        raise PayloadError(f"no slot {command} {argument}")
    return tool.input_for(command, {**VALID_VALUES, argument: payload})


def _describe(payload: str, limit: int = 60) -> str:
    """One printable line naming the payload (descriptions must not contain line breaks)."""
    shown = payload.encode("unicode_escape").decode("ascii")
    return shown if len(shown) <= limit else shown[:limit] + f"... ({len(payload)} characters)"


def _check_key(kind: str, key: Any) -> str:
    if not isinstance(key, str) or not _KEY.match(key):
        raise PayloadError(f"{kind} key {key!r} must be lowercase letters, digits and single dashes")
    return key


def documented_refusal(payload: str) -> Optional[str]:
    """The documentation sentence that asks for this payload to be refused, or None when it leaves it open.

    Every reading of the documentation refuses a path that does not start with `/memories`, one with a `..`
    segment (split at `/` or `\\`: "Reject paths containing sequences like ../, ..\\"), and one whose single
    percent-decoding has such a segment ("URL-encoded traversal sequences (%2e%2e%2f)"). Anything else its own
    `resolve()` + `relative_to()` recipe may accept as long as nothing leaves the root: a `.` segment, a
    doubled slash, a Windows device name on POSIX, a control character.
    """
    if not payload.startswith("/memories"):
        return "doc-prefix"
    if ".." in re.split(r"[/\\]", payload):
        return "doc-reject-dotdot"
    decoded = urllib.parse.unquote(payload)
    if decoded != payload and ".." in re.split(r"[/\\]", decoded):
        return "doc-url-encoded"
    return None


def _level(basis: str, reason: str) -> str:
    """`must` only for a `doc` case whose sentence says MUST or states the behaviour; a safeguard the documentation
    suggests ("Consider these protections": start with /memories, reject `../`, watch for `%2e%2e%2f`, resolve to
    the canonical form) is `should`: refusing is the careful reading, accepting what stays inside is allowed, and
    escaping is a safety finding whatever the level."""
    if basis == "doc" and not documentation.may_be_must(reason):
        return "should"
    return LEVEL[basis]


def _judged(case: Dict[str, Any], basis: str, reason: str) -> Dict[str, Any]:
    """`case` with its basis, level and the documentation sentence (doc) or decision (otherwise)."""
    judged = dict(case, basis=basis, level=_level(basis, reason))
    judged["cite" if basis == "doc" else "decision"] = reason
    order = ("id", "description", "features", "basis", "level", "cite", "decision", "requires", "setup", "steps")
    return {key: judged[key] for key in order + ("final",) if key in judged}


def _payload_case(family: Dict[str, Any], entry: Dict[str, Any], command: str, argument: str) -> Dict[str, Any]:
    payload = expand(entry["path_template"])
    contained = family["expect"] == "contained"
    what = "is refused" if not contained else "is an error and changes nothing (accepted as a name or refused)"
    case = {
        "id": f"sec-{family['key']}-{entry['key']}-{command}-{argument}",
        "description": f"{family['title']}: {_describe(payload)} as {command} {argument} {what}",
        "features": ["security", "paths", command],
        "requires": "portable",
        "setup": {"files": {VALID_NAME: VALID_TEXT}},
        "steps": [{"input": tool_input(command, argument, payload), "is_error": True}],
        "final": {"files": {VALID_NAME: VALID_TEXT}, "exact": True},
    }
    if contained:  # not there whether accepted as a name or refused: the documented "does not exist"
        return _judged(case, "doc", MISSING_CITE[(command, argument)])
    cite = documented_refusal(payload)
    if cite is not None:
        return _judged(case, "doc", cite)
    tier = entry.get("open_tier", family["open_tier"])
    return _judged(case, "hardening" if tier == "hardening" else "reference", entry.get("decision", family["decision"]))


def _hazard_judgement(hazard: Dict[str, Any], command: str, argument: str, acts_on_name: bool) -> Tuple[str, str]:
    """(basis, cite or decision) of one hazard slot.

    Documented: a name that exists refused by create and by rename's new_path ("already exists"), unless
    it is a link to nowhere (a dangling or looping link may read as "not there"); and following a link that
    leads outside the root ("verify they stay inside the memory directory"). The rest (acting on a link's
    own name, reading a link or a hard link that stays inside, a FIFO) the documentation leaves open: the
    reference's decision, while containment stays a safety check.
    """
    points = hazard["points"]
    if (command, argument) in EXISTS_CITE and hazard["position"] == "last" and not hazard.get("dangling"):
        return "doc", EXISTS_CITE[(command, argument)]
    if points == "outside" and not acts_on_name and hazard["decision"] == "D-FS-SYMLINK":
        return "doc", "doc-canonical"
    return "reference", hazard["decision"]


def _hazard_case(hazard: Dict[str, Any], command: str, argument: str) -> Dict[str, Any]:
    """A filesystem object in the root (link, FIFO, hard link) reached as, or through, the payload path.

    Expectations follow docs/spec-notes.md D-FS-*: nothing is followed or opened. As the last name, delete
    and rename act on the name itself (they succeed and the target is untouched); everything else is an
    error. Through a link, every command is an error.
    """
    path: str = hazard["path"]
    name = path[len("/memories/") :]
    link_name = name.split("/", 1)[0]
    fixtures = [{"type": "file", "path": VALID_NAME, "text": VALID_TEXT}] + copy.deepcopy(hazard["fixtures"])
    acts_on_name = hazard["position"] == "last" and (command, argument) in (("delete", "path"), ("rename", "old_path"))
    final: Dict[str, List[str]]
    if acts_on_name and command == "delete":
        final = {"present": [VALID_NAME], "absent": [name]}
        outcome = "removes the name only"
    elif acts_on_name:
        final = {"present": [VALID_NAME, RENAME_TARGET_NAME], "absent": [name]}
        outcome = "moves the name only"
    else:
        final = {"present": [VALID_NAME, link_name], "absent": [RENAME_TARGET_NAME] if argument == "old_path" else []}
        if not final["absent"]:
            del final["absent"]
        outcome = "is an error"
    case = {
        "id": f"sec-fs-{hazard['key']}-{command}-{argument}",
        "description": f"{hazard['title']} ({path}) as {command} {argument} {outcome}; nothing outside changes",
        "features": ["security", "paths", command]
        + [f for f in hazard.get("features", []) if f not in ("security", "paths", command)],
        "requires": "fixtures",
        "setup": {"fixtures": fixtures},
        "steps": [{"input": tool_input(command, argument, path), "is_error": not acts_on_name}],
        "final": final,
    }
    return _judged(case, *_hazard_judgement(hazard, command, argument, acts_on_name))


def load(path: Optional[pathlib.Path] = None) -> Dict[str, Any]:
    data = json.loads((path or PAYLOADS_FILE).read_text(encoding="utf-8"))
    if not isinstance(data, dict) or not isinstance(data.get("families"), list):
        raise PayloadError("payloads.json must be an object with a families list")
    return data


def generate(path: Optional[pathlib.Path] = None) -> List[Dict[str, Any]]:
    """Every generated case, in data order."""
    data = load(path)
    cases: List[Dict[str, Any]] = []
    seen = set()
    for family in data["families"]:
        _check_key("family", family.get("key"))
        if family["key"] == "fs":
            raise PayloadError('family key "fs" is kept for the filesystem hazards')
        if family.get("expect") not in ("refused", "contained"):
            raise PayloadError(f"family {family['key']}: expect must be refused or contained")
        slots = SLOTS if family["expect"] == "refused" else CONTAINED_SLOTS
        for entry in family["payloads"]:
            _check_key("payload", entry.get("key"))
            for command, argument in slots:
                cases.append(_payload_case(family, entry, command, argument))
    for hazard in data.get("fs_hazards", []):
        _check_key("hazard", hazard.get("key"))
        for command, argument in SLOTS:
            cases.append(_hazard_case(hazard, command, argument))
    for case in cases:
        if case["id"] in seen:
            raise PayloadError(f"duplicate generated ID {case['id']}")
        seen.add(case["id"])
    return cases


# --- the committed expansion --------------------------------------------------------------------

EXPANDED_DIR = pathlib.Path(__file__).resolve().parent / "cases"
"""Where the expansion is committed: one file per family (`sec-dotdot.json`, ..., `sec-fs.json`)."""


def family_of(case_id: str) -> str:
    return case_id.split("-", 2)[1]


def case_schema_id() -> str:
    """The case schema's `$id`: the `$schema` every committed case file names first (CASE-FORMAT.md)."""
    schema_id = json.loads(CASE_SCHEMA_FILE.read_text(encoding="utf-8")).get("$id")
    if not isinstance(schema_id, str) or not schema_id:
        raise PayloadError(f"{CASE_SCHEMA_FILE} has no $id")
    return schema_id


def expanded_files(cases: Optional[List[Dict[str, Any]]] = None) -> Dict[str, str]:
    """File name -> exact text of the committed expansion of `cases` (default: `generate()`)."""
    groups: Dict[str, List[Dict[str, Any]]] = {}
    for case in generate() if cases is None else cases:
        groups.setdefault(f"sec-{family_of(case['id'])}", []).append(case)
    schema_id = case_schema_id()
    return {
        f"{group}.json": json.dumps(
            {"$schema": schema_id, "group": group, "generated_by": "conformance/security/matrix.py", "cases": members},
            indent=2,
            ensure_ascii=True,
        )
        + "\n"
        for group, members in groups.items()
    }


def differences(directory: Optional[pathlib.Path] = None) -> List[str]:
    """How the committed files differ from what the generator makes now (empty when they are the same)."""
    directory = directory or EXPANDED_DIR
    wanted = expanded_files()
    present = {path.name for path in directory.glob("*.json")} if directory.is_dir() else set()
    problems = [f"{name}: missing" for name in sorted(set(wanted) - present)]
    problems += [f"{name}: not made by the generator" for name in sorted(present - set(wanted))]
    for name in sorted(set(wanted) & present):
        if (directory / name).read_text(encoding="utf-8") != wanted[name]:
            problems.append(f"{name}: differs from the generator's output")
    return problems


def write(directory: Optional[pathlib.Path] = None) -> List[str]:
    """Write the expansion (and remove files it no longer makes); the names written."""
    directory = directory or EXPANDED_DIR
    directory.mkdir(exist_ok=True)
    wanted = expanded_files()
    for stale in directory.glob("*.json"):
        if stale.name not in wanted:
            stale.unlink()
    for name, text in wanted.items():
        (directory / name).write_text(text, encoding="utf-8")
    return sorted(wanted)


def main(argv: Optional[List[str]] = None) -> int:
    """`python -m refmem_conformance.security.matrix [--write | --check]`: count, regenerate, or verify the files."""
    import sys

    args = sys.argv[1:] if argv is None else argv
    if args == ["--write"]:
        names = write()
        print(f"wrote {len(names)} files, {len(generate())} cases, to {EXPANDED_DIR}")
        return 0
    if args == ["--check"]:
        problems = differences()
        for problem in problems:
            print(problem)
        print("the committed matrix is the generator's output" if not problems else "run with --write to update")
        return 1 if problems else 0
    if args:
        print("usage: python -m refmem_conformance.security.matrix [--write | --check]")
        return 2
    print(f"{len(generate())} generated checks")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
