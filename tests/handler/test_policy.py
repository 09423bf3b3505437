"""The opt-in content policy (D-POLICY): realistic positives, near-miss negatives, redaction.

Secret-shaped test values are assembled at run time from pieces, so that this file itself never
contains a string that a repository secret scanner would flag.
"""

from __future__ import annotations

import base64
import json
import random
import string
from typing import Callable, Dict, Tuple

import pytest
from cpu_clock_support import count_before_each, least_seconds, ratio_within
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from refmem import policy
from refmem.handler import MemoryHandler
from refmem.messages import render
from refmem.policy import DEFAULT_DETECTORS, ContentPolicy, Detection, describe, luhn_valid

RNG = random.Random(20250818)
ALNUM = string.ascii_letters + string.digits


def rand(n: int, alphabet: str = ALNUM) -> str:
    return "".join(RNG.choice(alphabet) for _ in range(n))


def mixed(n: int) -> str:
    """A random key body that certainly mixes digits, lower and upper case."""
    return "aZ9" + rand(n - 3)


def b64url(obj: dict) -> str:
    return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")


PEM_BODY = "\n".join(rand(64, string.ascii_letters + string.digits + "+/") for _ in range(6))
RSA_KEY = "-----BEGIN RSA " + "PRIVATE KEY-----\n" + PEM_BODY + "\n-----END RSA " + "PRIVATE KEY-----"
PKCS8_KEY = "-----BEGIN " + "PRIVATE KEY-----\n" + PEM_BODY + "\n-----END " + "PRIVATE KEY-----"
OPENSSH_KEY = "-----BEGIN OPENSSH " + "PRIVATE KEY-----\n" + PEM_BODY + "\n-----END OPENSSH " + "PRIVATE KEY-----"
EC_KEY_NO_END = "-----BEGIN EC " + "PRIVATE KEY-----\n" + PEM_BODY + "\n"
ENCRYPTED_LEGACY = (
    "-----BEGIN RSA " + "PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,"
    + rand(32, "0123456789ABCDEF") + "\n\n" + PEM_BODY + "\n-----END RSA " + "PRIVATE KEY-----"
)
PGP_KEY = (
    "-----BEGIN PGP " + "PRIVATE KEY BLOCK-----\n\n" + PEM_BODY + "\n=" + rand(4) + "\n-----END PGP "
    + "PRIVATE KEY BLOCK-----"
)
AWS_ID = "AKIA" + rand(16, string.ascii_uppercase + string.digits)
AWS_TEMP_ID = "ASIA" + rand(16, string.ascii_uppercase + string.digits)
AWS_SECRET = rand(40, ALNUM + "/+")
GH_CLASSIC = "ghp_" + mixed(36)
GH_OAUTH = "gho_" + mixed(36)
GH_FINE = "github" + "_pat_" + mixed(22) + "_" + mixed(59)
SLACK_BOT = "xox" + "b-" + rand(12, string.digits) + "-" + rand(13, string.digits) + "-" + mixed(24)
SLACK_USER = "xox" + "p-" + "-".join(rand(12, string.digits) for _ in range(3)) + "-" + rand(32, "0123456789abcdef")
UPPER_DIGITS = string.ascii_uppercase + string.digits
SLACK_HOOK = "https://hooks.slack.com/services/" + f"T{rand(8, UPPER_DIGITS)}/B{rand(8, UPPER_DIGITS)}/{mixed(24)}"
STRIPE_LIVE = "sk_" + "live_" + mixed(24)
STRIPE_RESTRICTED = "rk_" + "test_" + mixed(24)
GOOGLE = "AIza" + rand(35, ALNUM + "_-")
JWT = ".".join(
    [b64url({"alg": "HS256", "typ": "JWT"}), b64url({"sub": "1234567890", "name": "Ada", "iat": 1516239022}),
     rand(43, ALNUM + "_-")]
)
JWT_NONE = b64url({"alg": "none"}) + "." + b64url({"sub": "x"}) + "."
OPENAI_LEGACY = "sk-" + mixed(48)
OPENAI_PROJECT = "sk-" + "proj-" + mixed(100)
ANTHROPIC = "sk-" + "ant-api03-" + mixed(93) + "-" + mixed(6) + "AA"

POSITIVES = [
    ("private_key", RSA_KEY),
    ("private_key", PKCS8_KEY),
    ("private_key", OPENSSH_KEY),
    ("private_key", EC_KEY_NO_END),
    ("private_key", ENCRYPTED_LEGACY),
    ("private_key", PGP_KEY),
    ("aws_access_key_id", AWS_ID),
    ("aws_access_key_id", AWS_TEMP_ID),
    ("github_token", GH_CLASSIC),
    ("github_token", GH_OAUTH),
    ("github_token", GH_FINE),
    ("slack_token", SLACK_BOT),
    ("slack_token", SLACK_USER),
    ("slack_webhook", SLACK_HOOK),
    ("stripe_key", STRIPE_LIVE),
    ("stripe_key", STRIPE_RESTRICTED),
    ("google_api_key", GOOGLE),
    ("jwt", JWT),
    ("jwt", JWT_NONE),
    ("api_key", OPENAI_LEGACY),
    ("api_key", OPENAI_PROJECT),
    ("api_key", ANTHROPIC),
    ("card_number", "4111111111111111"),  # Visa test number
    ("card_number", "4111 1111 1111 1111"),
    ("card_number", "5555-5555-5555-4444"),  # Mastercard
    ("card_number", "2223 0031 2200 3222"),  # Mastercard 2-series
    ("card_number", "3782 822463 10005"),  # Amex 4-6-5
    ("card_number", "378282246310005"),
    ("card_number", "6011 1111 1111 1117"),  # Discover
    ("card_number", "3530 1113 3330 0000"),  # JCB
    ("card_number", "3056 930902 5904"),  # Diners 14 digits
    ("card_number", "6200 0000 0000 0005"),  # UnionPay
    ("card_number", "4222222222222"),  # 13-digit Visa
]


@pytest.mark.parametrize("kind,secret", POSITIVES, ids=[f"{k}-{i}" for i, (k, _) in enumerate(POSITIVES)])
def test_each_positive_is_found_alone_and_in_prose(kind: str, secret: str) -> None:
    p = ContentPolicy()
    for text, offset in (
        (secret, 0),
        (f"Remember for the deploy: {secret}\nthanks", len("Remember for the deploy: ")),
        (f'config = {{"token": "{secret}"}}', len('config = {"token": "')),
        (f"({secret})", 1),
    ):
        found = p.findings(text)
        assert [f.kind for f in found] == [kind], text
        assert found[0].start == offset
        assert text[found[0].start : found[0].end] == secret.rstrip("\n")
        outcome = p.check(text)
        assert outcome.refused and outcome.refused_kinds == [kind]
        assert outcome.text == text


def test_aws_secret_key_is_found_after_its_label_only() -> None:
    p = ContentPolicy()
    for text in (
        f"aws_secret_access_key = {AWS_SECRET}",
        f'AWS_SECRET_ACCESS_KEY="{AWS_SECRET}"',
        f"  SecretAccessKey: {AWS_SECRET}",
    ):
        found = p.findings(text)
        assert [f.kind for f in found] == ["aws_secret_access_key"], text
        assert text[found[0].start : found[0].end] == AWS_SECRET
    # The same 40 characters with no label are indistinguishable from any base64 and pass.
    assert p.findings(f"blob {AWS_SECRET} end") == [] or all(
        f.kind != "aws_secret_access_key" for f in p.findings(f"blob {AWS_SECRET} end")
    )


NEAR_MISSES = [
    # Luhn-failing numbers of card shape
    "4111 1111 1111 1112",
    "4111111111111112",
    "5555-5555-5555-4445",
    "3782 822463 10006",
    # digits that pass Luhn but are not cards
    "0000 0000 0000 0000",
    "order 1234567812345670 shipped",  # passes Luhn, no issuer starts with 1
    "timestamp 1700000000000 ms",
    "ISBN 978-3-16-148410-0",
    "call +1 415 555 0100 or 020 7946 0958",
    "pi = 3.14159265358979323846",
    "version 4111111111111111.5",
    "id_4111111111111111",
    "41 11 11 11 11 11 11 11",
    # hex digests, UUIDs, base64
    "sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "commit 4111111111111111a0b1c2d3e4f5061728394a5b",
    "md5 d41d8cd98f00b204e9800998ecf8427e",
    "uuid 123e4567-e89b-12d3-a456-426614174000",
    "uuid 41111111-1111-1111-1111-111111111111",
    "blob " + base64.b64encode(bytes(range(200))).decode(),
    "image data:image/png;base64," + base64.b64encode(b"\x89PNG" + bytes(120)).decode(),
    # "sk-" in prose and code
    "Use sk-learn (scikit-learn) for the baseline; the ask-tell API is fine.",
    "risk-assessment and task-oriented desk-based work",
    "sk-this-is-not-a-real-key-just-some-words-in-a-row",
    "sk-" + "abcdefghijklmnopqrstuvwxyzabcdefghijkl",  # no digits or capitals: not random
    "disk-" + "aZ9" + "x" * 40,  # "sk-" inside a word
    # prefixes without bodies, public keys, certificates, documentation placeholders
    "-----BEGIN RSA " + "PRIVATE KEY----- is the header of a PEM file",
    "-----BEGIN PUBLIC KEY-----\n" + PEM_BODY + "\n-----END PUBLIC KEY-----",
    "-----BEGIN CERTIFICATE-----\n" + PEM_BODY + "\n-----END CERTIFICATE-----",
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl user@host",
    "ghp_short",
    "ghp_" + "x" * 10,
    "AKIA is the prefix of AWS access key ids",
    "AKIA" + "12345",
    "XAKIA" + "ABCDEFGHIJKLMNOP",  # glued to a longer token
    "AKIA" + "ABCDEFGHIJKLMNOP" + "Q",  # 17 characters after the prefix
    "xoxo, see you",
    "pk_" + "live_" + "aZ9" + "x" * 24,  # Stripe publishable key: public by design
    "sk_" + "live_" + "short",
    "AIza" + "tooShort",
    "eyJhbGciOi.not.a.jwt",
    "eyJ" + "notbase64json" + ".eyJ" + "alsonotjson" + ".sig",
    b64url({"hello": "world"}) + "." + b64url({"a": 1}) + ".sig",  # no "alg": not a JWT header
    "https://hooks.slack.com/services/ is the webhook prefix",
]


@pytest.mark.parametrize("text", NEAR_MISSES)
def test_near_misses_are_not_findings(text: str) -> None:
    assert ContentPolicy().findings(text) == []
    assert ContentPolicy().check(text) == (text, [])


def test_luhn() -> None:
    assert luhn_valid("79927398713")
    assert not luhn_valid("79927398710")
    assert luhn_valid("4111111111111111")
    assert not luhn_valid("4111111111111112")


def test_card_followed_by_expiry_and_cvv_is_cut_at_the_number() -> None:
    text = "card 4111 1111 1111 1111 exp 12 27 cvv 123"
    (found,) = ContentPolicy().findings(text)
    assert text[found.start : found.end] == "4111 1111 1111 1111"
    text = "card 4111 1111 1111 1111 123"  # a CVV written right after the number
    (found,) = ContentPolicy().findings(text)
    assert text[found.start : found.end] == "4111 1111 1111 1111"


def test_mixed_separators_are_not_one_number() -> None:
    assert ContentPolicy().findings("4111 1111-1111 1111") == []


def test_reject_message_names_every_kind_once_in_order() -> None:
    text = f"{RSA_KEY}\nold card 4111 1111 1111 1111 and 5555555555554444\nkey {AWS_ID}"
    outcome = ContentPolicy().check(text)
    assert outcome.refused_kinds == ["private_key", "card_number", "aws_access_key_id"]
    what = describe(outcome.refused_kinds)
    assert what == "a private key block, a card number and an AWS access key ID"
    rendered = render("content_refused", what=what)
    assert rendered.is_error
    assert rendered.output == (
        "Error: The text was not saved: it appears to contain a private key block, a card number "
        "and an AWS access key ID. Remove it and try again."
    )
    assert describe(["private_key", "card_number"]) == "a private key block and a card number"
    assert describe(["jwt"]) == "a JSON Web Token"


def test_redact_replaces_each_finding_and_keeps_the_rest() -> None:
    text = f"line 1\nstripe {STRIPE_LIVE}, card 4111-1111-1111-1111.\n{PKCS8_KEY}\nend\n"
    outcome = ContentPolicy("redact").check(text)
    assert not outcome.refused
    assert [f.kind for f in ContentPolicy("redact").findings(text)] == ["stripe_key", "card_number", "private_key"]
    assert outcome.text == (
        "line 1\nstripe [REDACTED:stripe_key], card [REDACTED:card_number].\n[REDACTED:private_key]\nend\n"
    )
    # Redaction is idempotent: the placeholders are not themselves findings.
    assert ContentPolicy("redact").check(outcome.text).text == outcome.text


def test_clean_text_is_returned_as_is() -> None:
    text = "Favorite color: green\nMeeting at 10:30 in room 4111.\n"
    for action in ("reject", "redact"):
        outcome = ContentPolicy(action).check(text)
        assert outcome == (text, [])
        assert outcome.text is text


def test_custom_detector_and_description() -> None:
    def employee_ids(text: str):
        import re

        return [Detection("employee_id", m.start(), m.end()) for m in re.finditer(r"\bEMP-\d{6}\b", text)]

    p = ContentPolicy("reject", DEFAULT_DETECTORS + (employee_ids,), {"employee_id": "an employee ID"})
    outcome = p.check("Ask EMP-123456 about it")
    assert outcome.refused_kinds == ["employee_id"]
    assert p.describe(outcome.refused_kinds) == "an employee ID"
    assert describe(["employee_id"]) == 'text matching the "employee_id" detector'
    redacted = ContentPolicy("redact", [employee_ids]).check("Ask EMP-123456 about it").text
    assert redacted == "Ask [REDACTED:employee_id] about it"


def test_overlapping_and_out_of_range_findings_are_merged_and_clipped() -> None:
    def a(text: str):
        return [Detection("a", 2, 6), Detection("a", -5, 1), Detection("a", 9, 9)]

    def b(text: str):
        return [Detection("b", 4, 8), Detection("b", 8, 100)]

    p = ContentPolicy("redact", [a, b])
    assert p.findings("0123456789") == [Detection("a", 0, 1), Detection("a", 2, 8), Detection("b", 8, 10)]
    assert p.check("0123456789").text == "[REDACTED:a]1[REDACTED:a][REDACTED:b]"


def test_bad_action_is_refused() -> None:
    with pytest.raises(ValueError):
        ContentPolicy("warn")


def test_detector_exceptions_propagate() -> None:
    def broken(text: str):
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        ContentPolicy(detectors=[broken]).check("x")


# --- cost: linear in the text for every detector (D-POLICY-BOUNDS) ------------------------------

BEGIN = "-----BEGIN " + "PRIVATE KEY-----"
END = "-----END " + "PRIVATE KEY-----"


def nested_part(depth: int) -> str:
    """A base64url JWT part (it starts with eyJ) whose JSON nests `depth` arrays deep."""
    return b64url_raw(b'{"a":' + b"[" * depth + b"]" * depth + b"}")


def b64url_raw(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


# Each shape repeats a piece that makes a careless detector look at the same text again (a marker
# with no END, a prefix with no body, a run a pattern can split two ways), sized by n; n = 1000 gives
# some 25-120 KB. detector -> shape name -> text of size ~n.
ADVERSARIAL: Dict[str, Dict[str, Callable[[int], str]]] = {
    "detect_private_key": {
        "markers-on-one-line": lambda n: BEGIN * n,
        "markers-with-glued-base64": lambda n: (BEGIN + "AAAA") * n,
        "marker-lines": lambda n: (BEGIN + "\n") * n,
        "markers-then-blank-lines": lambda n: (BEGIN + "\n\n\n") * n,
        "markers-in-header-lines": lambda n: (BEGIN + "\nA: " + BEGIN + "\n") * n,
        "short-bodies": lambda n: (BEGIN + "\nAAAA\n") * n,
        "many-begins-one-end": lambda n: (BEGIN + "!!!!") * n + END,
        "marker-word-run": lambda n: "-----BEGIN " + "A " * (12 * n),
    },
    "detect_aws_access_key_id": {"prefixes": lambda n: "AKIA" * (6 * n)},
    "detect_aws_secret_access_key": {
        "labels": lambda n: "aws_secret_access_key=" * n,
        "labels-and-spaces": lambda n: ("aws_secret = " + " " * 20) * n,
        "label-and-long-value": lambda n: "aws_secret=" + "A" * (24 * n),
    },
    "detect_github_token": {
        "prefixes": lambda n: "ghp_" * (6 * n),
        "bodies-glued-by-underscore": lambda n: ("ghp_" + "a" * 40 + "_") * n,
        "bodies-between-dash-runs": lambda n: ("ghp_" + "a" * 36 + "------") * n,
        "pat-prefixes": lambda n: "github_pat_" * (3 * n),
    },
    "detect_slack_token": {
        "prefixes": lambda n: "xoxb-" * (5 * n),
        "digit-groups": lambda n: "xoxb-123456-" * (2 * n),
        "hyphen-run": lambda n: "xoxb-1234567890-" + "a-" * (12 * n) + "_",
        "app-token-run": lambda n: "xapp-1-" + "A1-" * (8 * n),
        "after-dash-runs": lambda n: "-----xoxb-123456-" * (2 * n),
    },
    "detect_slack_webhook": {
        "prefixes": lambda n: "https://hooks.slack.com/services/" * n,
        "long-segment": lambda n: "https://hooks.slack.com/services/" + "A" * (30 * n),
    },
    "detect_stripe_key": {"prefixes": lambda n: "sk_live_" * (3 * n)},
    "detect_google_api_key": {"prefixes": lambda n: "AIza" * (6 * n)},
    "detect_jwt": {
        "prefix-run": lambda n: "eyJ" * (8 * n),
        "dotted-prefixes": lambda n: "eyJa." * (5 * n),
        "chain-of-parts": lambda n: "eyJaaaa.eyJaaaa." * (2 * n),
        "two-parts-then-stop": lambda n: "eyJaaaa.eyJ" + "a" * (24 * n) + "!",
        "nested-parts": lambda n: (nested_part(400) + "." + nested_part(400) + ".s ") * max(1, n // 12),
        "escaped-quotes-and-brackets": lambda n: (
            b64url_raw(b'{"alg":"' + b'\\"[' * 40 + b'"}') + "." + b64url({"a": 1}) + ".s "
        ) * max(1, n // 2),
    },
    "detect_api_key": {
        "prefixes": lambda n: "sk-" * (8 * n),
        "prefix-words": lambda n: "sk-ab-" * (4 * n),
        "long-body": lambda n: "sk-" + "a" * (24 * n) + "!",
        "dash-runs": lambda n: "sk-" + "aZ9-----" * (3 * n) + "!",
    },
    "detect_card_number": {
        "groups-of-four": lambda n: "4111 " * (5 * n),
        "digits-and-hyphens": lambda n: "1-" * (12 * n),
        "one-digit-run": lambda n: "4" * (24 * n),
        "luhn-near-misses": lambda n: "4111 1111 1111 1112 " * n,
        "single-digits": lambda n: "1 " * (12 * n),
        "valid-numbers": lambda n: "4111 1111 1111 1111 " * n,
    },
}
GROWTH_CASES = [(det, shape) for det, shapes in ADVERSARIAL.items() for shape in shapes]


GROWTH = 4
"""Each detector runs on text of size n and GROWTH * n: linear work takes about 4 times as long, quadratic 16."""
GROWTH_BOUND = 8.0


def grows_linearly(run: Callable[[str], object], make: Callable[[int], str], n: int = 1000) -> Tuple[bool, str]:
    """t(4n) < 8 t(n) in CPU time of this thread, least of 5 interleaved rounds (tests/cpu_clock_support.py); a ratio
    over the bound is measured again, up to three times in all: a quadratic cost fails every time."""
    small, large = make(n), make(GROWTH * n)

    def measure() -> Tuple[float, float]:
        t_small, t_large = least_seconds([lambda: run(small), lambda: run(large)], rounds=5)
        return t_small, t_large

    linear, seen = ratio_within(measure, GROWTH_BOUND)
    return linear, "; ".join(seen)


def test_the_growth_check_catches_a_quadratic_detector() -> None:
    """The check means something: a detector that looks back over the text before every marker (the shape of
    the audit's 34-second finding) is caught at these sizes, and its linear twin is not."""

    def rescans(text: str) -> int:
        return count_before_each(text, "-----", "-")

    def scans_once(text: str) -> int:
        return text.count("-----")

    make = ADVERSARIAL["detect_private_key"]["markers-on-one-line"]
    assert not grows_linearly(rescans, make, n=200)[0]
    assert grows_linearly(scans_once, make, n=200)[0]


@pytest.mark.parametrize("detector,shape", GROWTH_CASES, ids=[f"{d[7:]}-{s}" for d, s in GROWTH_CASES])
def test_each_detector_grows_linearly_on_adversarial_text(detector: str, shape: str) -> None:
    detect = getattr(policy, detector)
    linear, seen = grows_linearly(detect, ADVERSARIAL[detector][shape])
    assert linear, f"{detector} on {shape}: doubling the text took {seen}"


def test_every_builtin_detector_has_adversarial_shapes() -> None:
    assert set(ADVERSARIAL) == {detector.__name__ for detector in DEFAULT_DETECTORS}


def test_the_whole_policy_grows_linearly_with_many_findings() -> None:
    piece = f"k {AWS_ID} c 4111 1111 1111 1111 {BEGIN}\n{PEM_BODY}\n{END} j {JWT}\n"
    for action in ("reject", "redact"):
        linear, seen = grows_linearly(ContentPolicy(action).check, lambda n: piece * max(1, n // 8))
        assert linear, f"{action}: {seen}"


def test_markers_on_one_line_from_the_audit() -> None:
    # The shape that took 34 s at 432 KB: markers with no END, no line break. Not a key.
    assert ContentPolicy().findings(BEGIN * 2000) == []
    # A key pasted without line breaks and without its END line is still one.
    glued = BEGIN + PEM_BODY.replace("\n", "")
    assert [f.kind for f in ContentPolicy().findings(f"key: {glued}\nthanks!")] == ["private_key"]
    assert ContentPolicy().findings(f"key: {glued}\nthanks!")[0].end == len("key: ") + len(glued)


def test_a_token_glued_to_a_key_marker_is_redacted_with_the_key() -> None:
    # Five dashes separate tokens: before, a Slack token glued to the END line was hidden by the
    # dash and redact mode wrote it in clear (it only showed up once the key was replaced).
    for text in (f"{RSA_KEY}{SLACK_BOT}", f"{GH_CLASSIC}{PKCS8_KEY}", f"rule-----{AWS_ID}-----rule"):
        redacted = ContentPolicy("redact").check(text).text
        assert "xox" not in redacted and "ghp_" not in redacted and "AKIA" not in redacted, redacted
        assert ContentPolicy().findings(redacted) == []


def test_redaction_placeholders_are_not_counted_as_key_material() -> None:
    # 39 base64 characters between the markers: not a key; the card's placeholder adds letters
    # that must not make the block a key on a second pass.
    text = BEGIN + "xoxb-xoxb-5555555555554444" + BEGIN + END
    once = ContentPolicy("redact").check(text).text
    assert once == BEGIN + "xoxb-xoxb-[REDACTED:card_number]" + BEGIN + END
    assert ContentPolicy("redact").check(once).text == once


# --- never raises; bounded decoding (D-POLICY-BOUNDS) -------------------------------------------

PAYLOAD = b64url({"sub": "x"})


def jwt_with_header(header: bytes) -> str:
    return b64url_raw(header) + "." + PAYLOAD + ".c2ln"


def test_a_jwt_whose_header_nests_deeply_is_not_decoded_and_nothing_raises() -> None:
    # The audit's token: the header decodes to JSON nested far deeper than the parser's stack.
    token = jwt_with_header(b'{"a":' + b"[" * 100_000)
    assert token.startswith("eyJ")
    for action in ("reject", "redact"):
        assert ContentPolicy(action).check(f"note {token} end") == (f"note {token} end", [])
    deep_payload = b64url({"alg": "HS256"}) + "." + b64url_raw(b'{"a":' + b"{" * 50_000) + ".sig"
    assert ContentPolicy().findings(deep_payload) == []


def test_jwt_nesting_bound_is_32_levels_outside_strings() -> None:
    def header(depth: int) -> bytes:
        return b'{"alg":"HS256","x":' + b"[" * (depth - 1) + b"]" * (depth - 1) + b"}"

    assert [f.kind for f in ContentPolicy().findings(jwt_with_header(header(32)))] == ["jwt"]
    assert ContentPolicy().findings(jwt_with_header(header(33))) == []
    # Brackets and escaped quotes inside strings are text, not nesting.
    in_string = b'{"alg":"HS256","x":"' + b'[{\\\"' * 200 + b'"}'
    assert json.loads(in_string)["alg"] == "HS256"
    assert [f.kind for f in ContentPolicy().findings(jwt_with_header(in_string))] == ["jwt"]


def test_jwt_parts_longer_than_the_bound_are_not_decoded() -> None:
    def header(size: int) -> bytes:
        return b'{"alg":"HS256","pad":"' + b"a" * size + b'"}'

    fits = jwt_with_header(header(40_000))
    assert len(fits.split(".")[0]) <= 65_536
    assert [f.kind for f in ContentPolicy().findings(fits)] == ["jwt"]
    too_long = jwt_with_header(header(50_000))
    assert len(too_long.split(".")[0]) > 65_536
    assert ContentPolicy().findings(too_long) == []


def test_jwt_parts_that_are_not_json_objects_are_not_findings() -> None:
    huge_number = b'{"alg":' + b"9" * 5000 + b"}"  # int() refuses more than 4300 digits
    for header in (huge_number, b'{"a\xff":1}', b'{"alg": NaN', b'{"alg"]', b'{"a":"\\'):
        token = b64url_raw(header) + "." + PAYLOAD + ".s"
        assert token.startswith("eyJ")
        assert ContentPolicy().findings(token) == [], header


def test_handler_write_with_the_audit_jwt_is_not_an_internal_error(tmp_path) -> None:
    handler = MemoryHandler(tmp_path, content_policy=ContentPolicy())
    token = jwt_with_header(b'{"a":' + b"[" * 100_000)
    result = handler.execute({"command": "create", "path": "/memories/t.md", "file_text": token})
    assert (result.is_error, result.output) == (False, "File created successfully at: /memories/t.md")


SECRET_PIECES = [
    BEGIN, END, "\n", " ", "-", "_", ".", ":", "=", "eyJ", b64url({"alg": "none"}), PAYLOAD + ".",
    nested_part(3000) + ".",
    "AKIA", "ABCDEFGHIJKLMNOP", "sk-", "proj-", mixed(40), "4111", "1111", "4111 1111 1111 1111", "5555555555554444",
    "ghp_", "A" * 36, "xoxb-", "123456", "https://hooks.slack.com/services/", "aws_secret_access_key = ",
    "A" * 40, "AIza", "sk_live_", "[REDACTED:jwt]", PEM_BODY[:64],
]
any_text = st.text(alphabet=st.characters(blacklist_categories=()))  # lone surrogates included
secretish_text = st.lists(st.one_of(st.sampled_from(SECRET_PIECES), any_text.filter(lambda t: len(t) < 4)), max_size=40)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(any_text, secretish_text.map("".join)))
def test_property_never_raises_and_findings_are_well_formed(text: str) -> None:
    for detector in DEFAULT_DETECTORS:
        for found in detector(text):
            assert 0 <= found.start < found.end <= len(text) and found.kind in policy.KIND_DESCRIPTIONS
    found = ContentPolicy().findings(text)
    assert all(a.end <= b.start for a, b in zip(found, found[1:]))
    rejected = ContentPolicy("reject").check(text)
    assert rejected.text is text
    assert rejected.refused_kinds == list(dict.fromkeys(f.kind for f in found))
    returned, descriptions = ContentPolicy("reject")(text)
    assert returned is text and len(descriptions) == len(rejected.refused_kinds)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(any_text, secretish_text.map("".join)))
def test_property_redaction_is_idempotent_and_leaves_nothing_to_find(text: str) -> None:
    redacted = ContentPolicy("redact").check(text)
    assert redacted.refused_kinds == []
    assert ContentPolicy().findings(redacted.text) == []
    assert ContentPolicy("redact").check(redacted.text).text == redacted.text


def test_every_builtin_kind_has_a_description() -> None:
    kinds = {k for k, _ in POSITIVES} | {"aws_secret_access_key"}
    assert kinds == set(policy.KIND_DESCRIPTIONS)
    assert len(DEFAULT_DETECTORS) == len(policy.KIND_DESCRIPTIONS)


def test_the_handler_hook_returns_text_and_descriptions() -> None:
    text = f"{RSA_KEY} and 4111 1111 1111 1111"
    assert ContentPolicy()(text) == (text, ["a private key block", "a card number"])
    assert ContentPolicy("redact")("card 4111 1111 1111 1111") == ("card [REDACTED:card_number]", [])


def test_handler_refuses_and_redacts_with_the_policy(tmp_path) -> None:
    handler = MemoryHandler(tmp_path, content_policy=ContentPolicy())
    result = handler.execute({"command": "create", "path": "/memories/a.md", "file_text": f"k {AWS_ID}\n{RSA_KEY}\n"})
    assert result.is_error
    assert result.output == (
        "Error: The text was not saved: it appears to contain an AWS access key ID and a private key "
        "block. Remove it and try again."
    )
    assert not (tmp_path / "a.md").exists()
    created = handler.execute({"command": "create", "path": "/memories/a.md", "file_text": "token: TBD\n"})
    assert created.is_error is False
    refused = handler.execute(
        {"command": "str_replace", "path": "/memories/a.md", "old_str": "TBD", "new_str": GH_CLASSIC}
    )
    assert refused.is_error and "a GitHub token" in refused.output
    refused = handler.execute({"command": "insert", "path": "/memories/a.md", "insert_line": 0, "insert_text": JWT})
    assert refused.is_error and "a JSON Web Token" in refused.output
    assert (tmp_path / "a.md").read_text() == "token: TBD\n"
    redactor = MemoryHandler(tmp_path, content_policy=ContentPolicy("redact"))
    done = redactor.execute(
        {"command": "str_replace", "path": "/memories/a.md", "old_str": "TBD", "new_str": STRIPE_LIVE}
    )
    assert not done.is_error
    assert (tmp_path / "a.md").read_text() == "token: [REDACTED:stripe_key]\n"
