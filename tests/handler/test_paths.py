"""The path parser (`refmem.paths.parse_path`), rule by rule, against docs/spec-notes.md.

Each refusal is checked by the rule it names. The rule sentences themselves are pinned once, by the
conformance cases (conformance/cases/paths.json and others, run against the handler by
tests/conformance/test_conformance_suite.py), so here they are taken from `refmem.messages`.
"""

from __future__ import annotations

import os
import unicodedata

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from refmem import Limits, PathError, VirtualPath, parse_path
from refmem.messages import RULE_BACKSLASH as BACKSLASH
from refmem.messages import RULE_CONTROL as CONTROL
from refmem.messages import RULE_DEVICE as DEVICE
from refmem.messages import RULE_DOTS as DOTS
from refmem.messages import RULE_EMPTY as EMPTY
from refmem.messages import RULE_NFKC as NFKC
from refmem.messages import RULE_PERCENT as PERCENT
from refmem.messages import RULE_PREFIX as PREFIX
from refmem.messages import RULE_RESERVED as RESERVED
from refmem.messages import RULE_TRAILING as TRAILING
from refmem.messages import RULE_WINDOWS_CHARS as WINDOWS_CHARS
from refmem.messages import rule_name_too_long as name_bytes
from refmem.messages import rule_too_deep as depth
from refmem.messages import rule_too_long as path_bytes


def rule_of(raw: str, limits: Limits = Limits()) -> str:
    with pytest.raises(PathError) as caught:
        parse_path(raw, limits)
    return caught.value.rule


# --- D-PATH-PREFIX --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw",
    [
        "",
        "/",
        "memories",
        "memories/x",
        "/memoriesX",
        "/memories_evil",
        "/memories_evil/secret",
        "/Memories",
        "/MEMORIES/x",
        "/memories.",
        "/memories..",
        "/memories\\x",
        "//memories/x",
        " /memories/x",
        "/etc/passwd",
        "/tmp/memories/x",
        "./memories/x",
        "../memories/x",
        "C:\\memories\\x",
        "\\\\host\\share\\memories",
        "\\\\?\\C:\\memories",
        "file:///memories/x",
        "/proc/self/root/memories/x",
        "%2fmemories/x",
        "/memories%2fx",
        "\uff0fmemories/x",
        "/memorie\u0455/x",  # Cyrillic dze look-alike of "s"
    ],
)
def test_D_PATH_PREFIX_refused(raw: str) -> None:
    assert rule_of(raw) == PREFIX


# --- D-PATH-CANON: the root in every spelling, one trailing slash ----------------------------------


@pytest.mark.parametrize("raw, slash", [("/memories", False), ("/memories/", True)])
def test_D_PATH_CANON_root_spellings(raw: str, slash: bool) -> None:
    parsed = parse_path(raw)
    assert parsed.parts == ()
    assert parsed.is_root
    assert parsed.canonical == "/memories"
    assert parsed.trailing_slash is slash


@pytest.mark.parametrize(
    "raw, rule",
    [
        ("/memories//", EMPTY),
        ("/memories/.", DOTS),
        ("/memories/./", DOTS),
        ("/memories/..", DOTS),
        ("/memories/../memories", DOTS),
        ("/memories/%2e", PERCENT),
        ("/memories/\uff0e", NFKC),
    ],
)
def test_D_PATH_CANON_other_root_spellings_refused(raw: str, rule: str) -> None:
    assert rule_of(raw) == rule


def test_D_PATH_CANON_one_trailing_slash_dropped() -> None:
    parsed = parse_path("/memories/notes/")
    assert parsed.parts == ("notes",)
    assert parsed.trailing_slash
    assert parsed.canonical == "/memories/notes"
    nested = parse_path("/memories/a/b/")
    assert nested.parts == ("a", "b") and nested.canonical == "/memories/a/b"


def test_D_PATH_CANON_no_trailing_slash() -> None:
    parsed = parse_path("/memories/a/b")
    assert parsed == VirtualPath(("a", "b"), False)
    assert parsed.canonical == "/memories/a/b"


@pytest.mark.parametrize("raw", ["/memories/notes//", "/memories///", "/memories/a//b"])
def test_D_PATH_CANON_two_trailing_slashes_are_an_empty_segment(raw: str) -> None:
    assert rule_of(raw) == EMPTY


# --- D-PATH-RULES, one rule at a time -------------------------------------------------------------


@pytest.mark.parametrize("raw", ["/memories//a", "/memories/a//b", "/memories/a///"])
def test_rule_empty_segments(raw: str) -> None:
    assert rule_of(raw) == EMPTY


@pytest.mark.parametrize(
    "raw",
    [
        "/memories/.",
        "/memories/..",
        "/memories/../x",
        "/memories/a/../../etc/passwd",
        "/memories/a/./b",
        "/memories/a/..",
        "/memories/a/../",
    ],
)
def test_rule_dot_segments(raw: str) -> None:
    assert rule_of(raw) == DOTS


@pytest.mark.parametrize("raw", ["/memories/..\\x", "/memories/a\\b", "/memories/\\", "/memories/x\\..\\..\\y"])
def test_rule_backslashes(raw: str) -> None:
    assert rule_of(raw) == BACKSLASH


@pytest.mark.parametrize(
    "char",
    ["\x00", "\x01", "\t", "\n", "\r", "\x1b", "\x1f", "\x7f", "\x80", "\x85", "\x9f", "\u2028", "\u2029"]
    + [chr(c) for c in range(0x202A, 0x202F)]
    + [chr(c) for c in range(0x2066, 0x206A)]
    + ["\ud800", "\udfff"],
)
def test_rule_control_characters(char: str) -> None:
    assert rule_of(f"/memories/a{char}b.md") == CONTROL


@pytest.mark.parametrize(
    "name",
    [
        # single
        "%2e%2e",
        "%2E%2E",
        "%2e",
        "a%2fb",
        "a%2Fb",
        "%2e%2e%2fetc",
        "..%2f",
        "a%5cb",
        "x%00",
        "%0a",
        "%e2%80%ae",  # RIGHT-TO-LEFT OVERRIDE
        "%e2%80%a8",  # LINE SEPARATOR
        # double and nested
        "%252e%252e",
        "%252e%252e%252f",
        "%25252e%25252e",
        "%%32%65%%32%65",
        "%%32%65",
        "%252f",
        # %uNNNN
        "%u002e%u002e",
        "%u002e",
        "%U002E%U002E",
        "a%u002fb",
        "a%u005cb",
        # overlong UTF-8
        "%c0%ae%c0%ae",
        "%c0%ae",
        "%C0%AE",
        "%c0%af",
        "%c1%9c",
        "%e0%80%ae",
        "%f0%80%80%ae",
        # percent-encoded NFKC look-alikes
        "%ef%bc%8e%ef%bc%8e",  # fullwidth full stops
    ],
)
def test_rule_percent_encoding_families(name: str) -> None:
    assert rule_of(f"/memories/{name}") == PERCENT


def test_rule_percent_decoding_that_never_settles_is_refused() -> None:
    # nine layers of %25 on top of %2e: still decoding after the spec's 8 rounds
    layered = "%2e"
    for _ in range(9):
        layered = layered.replace("%", "%25")
    assert rule_of(f"/memories/{layered}") == PERCENT


@pytest.mark.parametrize(
    "name",
    ["100%.md", "%", "%%", "50%off", "%zz", "%2", "%g0", "a%u00", "%u", "100%25", "%41bc", "%20x", "caf%c3%a9"],
)
def test_rule_percent_that_hides_nothing_is_ordinary(name: str) -> None:
    assert parse_path(f"/memories/{name}").parts == (name,)


@pytest.mark.parametrize(
    "name",
    [
        "\uff0e",  # fullwidth full stop
        "\uff0e\uff0e",
        "\u2024",  # one dot leader
        "\u2024\u2024",
        "\u2025",  # two dot leader -> ".."
        "\ufe52",  # small full stop
        "\ufe52\ufe52",
        "a\uff0fb",  # fullwidth solidus
        "a\uff3cb",  # fullwidth reverse solidus
        "\ufe68x",  # small reverse solidus
        "a\u2215b",  # division slash (spec example)
    ],
)
def test_rule_nfkc_look_alikes(name: str) -> None:
    assert rule_of(f"/memories/{name}") == NFKC


def test_rule_nfkc_division_slash_spec_example() -> None:
    """The spec lists the division slash `∕` (U+2215) by name among the refused look-alikes."""
    assert rule_of("/memories/a\u2215b") == NFKC
    assert rule_of("/memories/..\u2215..\u2215etc") == NFKC


@pytest.mark.parametrize("name", ["a.", "a..", "a ", "notes.md.", "notes.md ", "x. ", "...", "....", " "])
def test_rule_trailing_dot_or_space(name: str) -> None:
    assert rule_of(f"/memories/{name}") == TRAILING


@pytest.mark.parametrize("char", list('<>:"|?*'))
def test_rule_windows_characters(char: str) -> None:
    assert rule_of(f"/memories/a{char}b") == WINDOWS_CHARS


@pytest.mark.parametrize("name", ["file.txt:stream:$DATA", "C:", "c:x"])
def test_rule_windows_streams_and_drives(name: str) -> None:
    assert rule_of(f"/memories/{name}") == WINDOWS_CHARS


@pytest.mark.parametrize(
    "name",
    [
        "CON",
        "con",
        "Con",
        "PRN",
        "AUX",
        "NUL",
        "nul",
        "NUL.txt",
        "nul.tar.gz",
        "COM1",
        "com9",
        "LPT1",
        "lpt9.md",
        "COM1.log",
        "CON .txt",
        "aux.md",
    ],
)
def test_rule_windows_device_names(name: str) -> None:
    assert rule_of(f"/memories/{name}") == DEVICE


@pytest.mark.parametrize("name", ["CONSOLE", "COM", "COM10", "LPT0x", "nullable", "auxiliary.md", "xcon", "prn1"])
def test_rule_windows_device_name_look_alikes_are_fine(name: str) -> None:
    assert parse_path(f"/memories/{name}").parts == (name,)


@pytest.mark.parametrize("name", [".refmem", ".refmem-tmp-0123", ".refmemx", ".REFMEM", ".Refmem-lock"])
def test_rule_reserved_names(name: str) -> None:
    assert rule_of(f"/memories/{name}") == RESERVED
    assert rule_of(f"/memories/a/{name}/b") == RESERVED


def test_D_PATH_HIDDEN_other_dot_names_are_valid() -> None:
    assert parse_path("/memories/.hidden").parts == (".hidden",)
    assert parse_path("/memories/a/.refme").parts == ("a", ".refme")
    assert parse_path("/memories/x.refmem").parts == ("x.refmem",)


# --- limits ---------------------------------------------------------------------------------------


def test_limit_name_255_bytes() -> None:
    assert parse_path("/memories/" + "a" * 255).parts == ("a" * 255,)
    assert rule_of("/memories/" + "a" * 256) == name_bytes(255)


def test_limit_name_counts_utf8_bytes_not_characters() -> None:
    ok = "\u00e9" * 127  # 254 bytes
    assert parse_path(f"/memories/{ok}").parts == (ok,)
    assert rule_of("/memories/" + "\u00e9" * 128) == name_bytes(255)  # 256 bytes, 128 characters
    assert rule_of("/memories/" + "\U0001f600" * 64) == name_bytes(255)  # 256 bytes, 64 characters


def test_limit_name_custom() -> None:
    limits = Limits(max_name_bytes=8)
    assert parse_path("/memories/abcdefgh", limits).parts == ("abcdefgh",)
    assert rule_of("/memories/abcdefghi", limits) == name_bytes(8)


def test_limit_path_bytes() -> None:
    name = "b" * 200
    # "/memories" (9) + 5 * (1 + 200) = 1014 bytes: fine; one more segment of 9: 1024 fine; 10: over
    base = "/memories" + f"/{name}" * 5
    assert len(base.encode()) == 1014
    assert parse_path(base + "/" + "c" * 9).parts[-1] == "c" * 9
    assert rule_of(base + "/" + "c" * 10) == path_bytes(1024)


def test_limit_path_bytes_custom() -> None:
    limits = Limits(max_path_bytes=20)
    assert parse_path("/memories/abcdefghij", limits)  # 20 bytes
    assert rule_of("/memories/abcdefghijk", limits) == path_bytes(20)


def test_limit_depth() -> None:
    sixteen = "/memories" + "/d" * 16
    assert len(parse_path(sixteen).parts) == 16
    assert rule_of("/memories" + "/d" * 17) == depth(16)
    assert rule_of("/memories" + "/d" * 17 + "/") == depth(16)


def test_limit_depth_custom() -> None:
    limits = Limits(max_depth=2)
    assert parse_path("/memories/a/b", limits).parts == ("a", "b")
    assert rule_of("/memories/a/b/c", limits) == depth(2)


def test_rule_order_within_one_name() -> None:
    # dots come before everything else; backslash before control; control before percent; ...
    assert rule_of("/memories/a\\\n") == BACKSLASH
    assert rule_of("/memories/%2e\n") == CONTROL
    assert rule_of("/memories/%2e.") == PERCENT
    assert rule_of("/memories/a\uff0fb.") == NFKC
    assert rule_of("/memories/a:.") == TRAILING
    assert rule_of("/memories/con:x") == WINDOWS_CHARS
    assert rule_of("/memories/" + "a" * 300 + ":") == WINDOWS_CHARS


def test_first_broken_rule_in_rule_order_across_segments() -> None:
    """D-PATH-RULES: "The first broken rule, in the order above after the prefix rule, is reported."

    A path breaking the empty-segment rule (listed first) in its second segment and the
    trailing-dot rule in its first reports the empty-segment rule.
    """
    assert rule_of("/memories/a./b//c") == EMPTY
    assert rule_of("/memories/" + "a" * 300 + "/..") == DOTS


# --- D-PATH-UNICODE -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "caf\u00e9.md",
        "cafe\u0301.md",  # NFD spelling: a different, valid name
        "\u65e5\u672c\u8a9e",
        "\u30e1\u30e2.md",
        "\U0001f9e0 notes.md",
        "\u00c5ngstr\u00f6m",
        "\u0627\u0644\u0639\u0631\u0628\u064a\u0629",
        "a\u00a0b",  # no-break space inside a name
        "\ufb01le",  # "fi" ligature: NFKC changes it, but to nothing dangerous
        "\u2460",  # circled digit one
        "a\u2024b",  # one dot leader inside a longer name: NFKC gives "a.b"
        "x.y.z",
        "-rf",
        "~",
        "$HOME",
        "'quoted'",
        "a b",
        ".hidden",
        "..a",
        "a..b",
    ],
)
def test_D_PATH_UNICODE_accepted_names_are_kept_as_given(name: str) -> None:
    parsed = parse_path(f"/memories/{name}")
    assert parsed.parts == (name,)
    assert parsed.canonical == f"/memories/{name}"


def test_D_PATH_UNICODE_nested() -> None:
    parsed = parse_path("/memories/\u65e5\u672c\u8a9e/\u30e1\u30e2.md")
    assert parsed.parts == ("\u65e5\u672c\u8a9e", "\u30e1\u30e2.md")


def test_D_PATH_UNICODE_nfc_and_nfd_are_two_names() -> None:
    nfc = parse_path("/memories/caf\u00e9").parts
    nfd = parse_path("/memories/cafe\u0301").parts
    assert nfc != nfd
    assert unicodedata.normalize("NFC", nfd[0]) == nfc[0]


# --- attack strings from the public corpora -------------------------------------------------------


@pytest.mark.parametrize(
    "raw",
    [
        "/memories/../../../etc/passwd",
        "/memories/..%2f..%2fetc%2fpasswd",
        "/memories/%2e%2e%2f%2e%2e%2fetc%2fpasswd",
        "/memories/%252e%252e%252fetc",
        "/memories/....//....//etc/passwd",
        "/memories/..././..././etc",
        "/memories/..\\..\\windows\\win.ini",
        "/memories/%c0%ae%c0%ae/%c0%ae%c0%ae/etc/passwd",
        "/memories/\uff0e\uff0e/\uff0e\uff0e/etc",
        "/memories/x%00.md",
        "/memories/x\x00.md",
        "/memories/\\\\host\\share",
        "/memories/C:\\x",
        "/memories/x/../../memories_evil/secret",
        "/memories_evil/../memories/x",
        "/memories/COM1 ",
        "/memories/NUL.",
        "/memories/a\tb",
        "/memories/a\nb",
    ],
)
def test_attack_strings_are_refused(raw: str) -> None:
    with pytest.raises(PathError):
        parse_path(raw)


# --- the property: whatever the string, a refusal or a confined canonical path ---------------------

_ROOT_ON_HOST = os.path.normpath(os.path.join(os.sep, "srv", "host", "memories"))
_interesting = st.sampled_from(
    [
        "/",
        "//",
        ".",
        "..",
        "\\",
        "%",
        "%2e",
        "%2f",
        "%25",
        "%c0%ae",
        "%u002e",
        "\uff0e",
        "\u2215",
        "\uff0f",
        "\x00",
        "\n",
        " ",
        ":",
        "con",
        "memories",
        "/memories",
        "/memories/",
        ".refmem",
        "a",
        "\u00e9",
        "\U0001f600",
    ]
)
_path_like = st.lists(st.one_of(_interesting, st.text(max_size=6)), max_size=12).map(
    lambda pieces: "/memories/" + "".join(pieces)
)


@settings(max_examples=400, deadline=None)
@given(st.one_of(st.text(max_size=40), _path_like))
@example("/memories/../x")
@example("/memories/a/%2e%2e/b")
@example("/memories/")
@example("/memories/a/")
def test_property_parse_is_refusal_or_confined(raw: str) -> None:
    try:
        parsed = parse_path(raw)
    except PathError as error:
        assert isinstance(error.rule, str) and error.rule
        return
    for part in parsed.parts:
        assert part not in ("", ".", "..")
        assert "/" not in part and "\\" not in part and "\x00" not in part
    joined = os.path.normpath(os.path.join(_ROOT_ON_HOST, *parsed.parts))
    assert os.path.commonpath([_ROOT_ON_HOST, joined]) == _ROOT_ON_HOST
    if parsed.parts:
        assert joined != _ROOT_ON_HOST
    again = parse_path(parsed.canonical)
    assert again.parts == parsed.parts
    assert again.trailing_slash is False
    assert parse_path(parsed.canonical + "/").parts == parsed.parts
