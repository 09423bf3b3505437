"""The opt-in content policy (D-POLICY): realistic positives, near-miss negatives, redaction.

Secret-shaped test values are assembled at run time from pieces, so that this file itself never
contains a string that a repository secret scanner would flag.
"""

from __future__ import annotations

import base64
import json
import random
import string
import time

import pytest

from refmem import policy
from refmem.messages import render
from refmem.policy import DEFAULT_DETECTORS, ContentPolicy, Finding, describe, luhn_valid

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

        return [Finding("employee_id", m.start(), m.end()) for m in re.finditer(r"\bEMP-\d{6}\b", text)]

    p = ContentPolicy("reject", DEFAULT_DETECTORS + (employee_ids,), {"employee_id": "an employee ID"})
    outcome = p.check("Ask EMP-123456 about it")
    assert outcome.refused_kinds == ["employee_id"]
    assert p.describe(outcome.refused_kinds) == "an employee ID"
    assert describe(["employee_id"]) == 'text matching the "employee_id" detector'
    redacted = ContentPolicy("redact", [employee_ids]).check("Ask EMP-123456 about it").text
    assert redacted == "Ask [REDACTED:employee_id] about it"


def test_overlapping_and_out_of_range_findings_are_merged_and_clipped() -> None:
    def a(text: str):
        return [Finding("a", 2, 6), Finding("a", -5, 1), Finding("a", 9, 9)]

    def b(text: str):
        return [Finding("b", 4, 8), Finding("b", 8, 100)]

    p = ContentPolicy("redact", [a, b])
    assert p.findings("0123456789") == [Finding("a", 0, 1), Finding("a", 2, 8), Finding("b", 8, 10)]
    assert p.check("0123456789").text == "[REDACTED:a]1[REDACTED:a][REDACTED:b]"


def test_bad_action_is_refused() -> None:
    with pytest.raises(ValueError):
        ContentPolicy("warn")


def test_detector_exceptions_propagate() -> None:
    def broken(text: str):
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        ContentPolicy(detectors=[broken]).check("x")


@pytest.mark.parametrize(
    "text",
    [
        "eyJ" * 120_000,
        "eyJa." * 60_000,
        ("-----BEGIN RSA " + "PRIVATE KEY-----\n") * 8_000,
        "sk-" * 100_000,
        "4111 " * 60_000,
        "1-" * 150_000,
        "ghp_" * 70_000,
        "a" * 300_000,
        "AKIA" * 70_000,
    ],
    ids=["eyJ", "eyJa.", "pem-begin", "sk-", "digit-groups", "digit-hyphens", "ghp_", "letters", "AKIA"],
)
def test_adversarial_input_stays_linear(text: str) -> None:
    # Not a benchmark: a quadratic scan of ~300 KB takes minutes, a linear one well under a second.
    started = time.perf_counter()
    ContentPolicy().check(text)
    assert time.perf_counter() - started < 10


def test_every_builtin_kind_has_a_description() -> None:
    kinds = {k for k, _ in POSITIVES} | {"aws_secret_access_key"}
    assert kinds == set(policy.KIND_DESCRIPTIONS)
    assert len(DEFAULT_DETECTORS) == len(policy.KIND_DESCRIPTIONS)


def test_the_handler_hook_returns_text_and_descriptions() -> None:
    text = f"{RSA_KEY} and 4111 1111 1111 1111"
    assert ContentPolicy()(text) == (text, ["a private key block", "a card number"])
    assert ContentPolicy("redact")("card 4111 1111 1111 1111") == ("card [REDACTED:card_number]", [])


def test_handler_refuses_and_redacts_with_the_policy(tmp_path) -> None:
    handler_module = pytest.importorskip("refmem.handler")
    handler = handler_module.MemoryHandler(tmp_path, content_policy=ContentPolicy())
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
    redactor = handler_module.MemoryHandler(tmp_path, content_policy=ContentPolicy("redact"))
    done = redactor.execute(
        {"command": "str_replace", "path": "/memories/a.md", "old_str": "TBD", "new_str": STRIPE_LIVE}
    )
    assert not done.is_error
    assert (tmp_path / "a.md").read_text() == "token: [REDACTED:stripe_key]\n"
