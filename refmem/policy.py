"""Opt-in content policy: find secrets in text the model asks to write, then refuse or redact.

The documentation's first security consideration is sensitive information: the model usually
declines to store secrets, but an application "may want to implement stricter validation". This
module is that validation, kept pure (text in, findings out) so it can be tested without a
filesystem and reused by any backend.

A detector is any callable ``text -> list[Detection]``. The built-in ones look for shapes that are
specific enough to be worth refusing a write over: each has a fixed prefix or a checksum, and
each is bounded by word boundaries so that a fragment of a longer token (a hex digest, a base64
blob, a UUID) is not mistaken for one. They are deliberately not "high entropy string" heuristics:
a memory directory holds hashes, ids and code, and a policy that refuses those is switched off.

The policy never raises for any text, and its cost is linear in the length of the text, even for
adversarial input (D-POLICY-BOUNDS): every pattern either starts at a token boundary (a look-behind)
or with a fixed literal, and has no two ways to split a run of characters, so each token is scanned a
bounded number of times; the loops below never scan a stretch of text again for a later match; and
what is decoded (the parts of a JWT) is bounded in size and nesting before it is parsed.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import json
import re
from typing import Callable, Dict, Iterable, List, NamedTuple, Optional, Sequence, Tuple


class Detection(NamedTuple):
    """One suspected secret: its kind and the half-open character span ``text[start:end]``."""

    kind: str
    start: int
    end: int


KIND_DESCRIPTIONS: Dict[str, str] = {
    "private_key": "a private key block",
    "aws_access_key_id": "an AWS access key ID",
    "aws_secret_access_key": "an AWS secret access key",  # nosec B105
    "github_token": "a GitHub token",  # nosec B105
    "slack_token": "a Slack token",  # nosec B105
    "slack_webhook": "a Slack webhook URL",
    "stripe_key": "a Stripe secret key",
    "google_api_key": "a Google API key",
    "jwt": "a JSON Web Token",
    "api_key": "an API secret key",
    "card_number": "a card number",
}
"""How each built-in kind is named in the refusal message (``{what}`` of ``content_refused``)."""


# --- helpers ----------------------------------------------------------------------------------

# Characters that continue a token. A match must not be preceded or followed by one of them, so
# that a key shape found inside a longer identifier, digest or blob does not count. Five dashes
# are a separator, not part of a token: a PEM marker (or a rule) glued to a token must not hide
# it, or redacting the key would uncover a secret that redaction left in place.
_WORD_CHARS = "A-Za-z0-9_\\-"
_BEFORE = f"(?:(?<![{_WORD_CHARS}])|(?<=-----))"
_AFTER = f"(?:(?![{_WORD_CHARS}])|(?=-----))"


def _regex_detector(kind: str, pattern: str, flags: int = 0) -> Callable[[str], List[Detection]]:
    compiled = re.compile(pattern, flags)

    def detect(text: str) -> List[Detection]:
        return [Detection(kind, m.start(), m.end()) for m in compiled.finditer(text)]

    detect.__name__ = f"detect_{kind}"
    detect.__doc__ = f"Find {KIND_DESCRIPTIONS.get(kind, kind)}: pattern {pattern!r}."
    return detect


def _mixed_alphanumeric(token: str) -> bool:
    """Random keys mix digits, lower and upper case; words and prose identifiers do not."""
    return (
        any(c.isdigit() for c in token) and any("a" <= c <= "z" for c in token) and any("A" <= c <= "Z" for c in token)
    )


# --- PEM private key blocks -------------------------------------------------------------------

_PEM_BEGIN = re.compile(r"-----BEGIN ((?:[A-Z0-9]+ )*)PRIVATE KEY( BLOCK)?-----")
_PEM_END = re.compile(r"-----END ((?:[A-Z0-9]+ )*)PRIVATE KEY( BLOCK)?-----")
_BASE64_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=")
_NOT_BASE64 = {ord(c): None for c in _BASE64_CHARS}  # str.translate table that deletes base64 characters
_PEM_HEADER_LINE = re.compile(r"[A-Za-z][A-Za-z0-9-]*: ?.*")
# What may follow the BEGIN marker on its own line: nothing but blanks, or a first base64 line
# glued to the marker (a key pasted without its line breaks).
_PEM_REST_BLANK = re.compile(r"[^\S\n]*(?:\n|\Z)")
_PEM_REST_BASE64 = re.compile(r"[A-Za-z0-9+/=]+[^\S\n]*(?=\n|\Z)")
_PEM_MIN_BODY = 40  # base64 characters; a header quoted alone in prose has none
_PLACEHOLDER = re.compile(r"\[REDACTED:[A-Za-z0-9_.-]*\]")  # what `redact` writes for a built-in kind


def detect_private_key(text: str) -> List[Detection]:
    """PEM and OpenSSH/PGP private key blocks (``-----BEGIN ... PRIVATE KEY...-----``).

    A block counts when at least 40 base64 characters follow the BEGIN line, with or without the
    END line (a truncated key is still a secret). The marker quoted alone, a public key or a
    certificate is not a finding. The span runs from BEGIN to the end of the END line, or, with no
    END line, to the end of the base64 lines that follow.

    Linear: each stretch between a BEGIN and the next END is counted once (a later BEGIN before the
    same END has a suffix of that stretch, so it cannot have more base64 characters), and no line
    after a BEGIN without an END is read for two different BEGINs (no line a body accepts holds a
    marker).
    """
    ends = [(m.start(), m.end()) for m in _PEM_END.finditer(text)]
    end_starts = [start for start, _ in ends]
    findings: List[Detection] = []
    covered = 0
    failed_end = -1  # the END whose stretch already had too few base64 characters
    for begin in _PEM_BEGIN.finditer(text):
        if begin.start() < covered:
            continue
        index = bisect.bisect_left(end_starts, begin.end())
        if index < len(ends):
            if index == failed_end:
                continue
            body_stop, stop = ends[index]
        else:
            body_stop = stop = _pem_open_body_end(text, begin.end())
        if _base64_count(text, begin.end(), body_stop) >= _PEM_MIN_BODY:
            findings.append(Detection("private_key", begin.start(), stop))
            covered = stop
        elif index < len(ends):
            failed_end = index
    return findings


def _base64_count(text: str, start: int, stop: int) -> int:
    """Base64 characters in ``text[start:stop]``, not counting redaction placeholders: text the
    policy wrote itself is no evidence of a key (so redacting twice changes nothing more)."""
    body = text[start:stop]
    if "[REDACTED:" in body:
        body = _PLACEHOLDER.sub("", body)
    return len(body) - len(body.translate(_NOT_BASE64))


def _pem_open_body_end(text: str, start: int) -> int:
    """Where the header and base64 lines after a BEGIN marker that has no END line stop.

    The rest of the marker's line is blank or a first base64 line. Then: header lines (``Name:
    value``, before any base64 line, never holding ``-----``), blank lines before the body, and
    base64 lines, which all have the first one's length except the last, which is shorter; a blank
    line after the body, a line that is neither, or any line after a short one ends the block.
    """
    stop = start
    width = previous = 0
    rest = _PEM_REST_BLANK.match(text, start)
    if rest is None:
        glued = _PEM_REST_BASE64.match(text, start)
        if glued is None:
            return start
        width = previous = len(glued.group().rstrip())
        stop = start + width
        pos = glued.end() + 1
    else:
        pos = rest.end()
    length = len(text)
    while pos < length:
        newline = text.find("\n", pos)
        line_end = length if newline == -1 else newline
        raw = text[pos:line_end]
        line = raw.strip()
        if not line:
            if width:
                break
        elif width == 0 and "-----" not in line and _PEM_HEADER_LINE.fullmatch(line):
            stop = pos + len(raw.rstrip())
        elif set(line) <= _BASE64_CHARS:
            if width and previous < width:
                break
            if not width:
                width = len(line)
            previous = len(line)
            stop = pos + len(raw.rstrip())
        else:
            break
        pos = line_end + 1
    return stop


# --- cloud and SaaS credentials ---------------------------------------------------------------

detect_aws_access_key_id = _regex_detector(
    "aws_access_key_id", _BEFORE + r"(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}" + _AFTER
)

_AWS_SECRET = re.compile(
    r"(?i:aws_?secret_?access_?key|aws_?secret|secret_?access_?key)[\"']?\s*(?::|=|=>)\s*[\"']?"
    r"([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])"
)


def detect_aws_secret_access_key(text: str) -> List[Detection]:
    """A 40-character AWS secret access key written after its usual label (``aws_secret_access_key = ...``)."""
    return [Detection("aws_secret_access_key", m.start(1), m.end(1)) for m in _AWS_SECRET.finditer(text)]


detect_github_token = _regex_detector(
    "github_token",
    _BEFORE + r"(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9]{22}_[A-Za-z0-9]{30,})" + _AFTER,
)

detect_slack_token = _regex_detector(
    "slack_token",
    _BEFORE
    + r"(?:xox[abposr]-[0-9]{6,}-[A-Za-z0-9-]{8,}|xox[abposr]-[A-Za-z0-9]{10,}-[A-Za-z0-9-]{8,}"
    + r"|xapp-[0-9]-[A-Z0-9]{6,}-[0-9]{6,}-[A-Za-z0-9]{16,})"
    + _AFTER,
)

detect_slack_webhook = _regex_detector(
    "slack_webhook",
    r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9]{6,}/[A-Za-z0-9]{6,}"
    r"/[A-Za-z0-9]{12,}",
)

detect_stripe_key = _regex_detector(
    # Secret (sk_) and restricted (rk_) keys; publishable keys (pk_) are public by design.
    "stripe_key",
    _BEFORE + r"(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}" + _AFTER,
)

detect_google_api_key = _regex_detector("google_api_key", _BEFORE + r"AIza[0-9A-Za-z_\-]{35}" + _AFTER)


# --- JSON Web Tokens --------------------------------------------------------------------------

_JWT = re.compile(_BEFORE + r"(eyJ[A-Za-z0-9_-]{4,})\.(eyJ[A-Za-z0-9_-]{4,})\.([A-Za-z0-9_-]*)" + _AFTER)
_JWT_MAX_PART_CHARS = 65_536
"""Longest header or payload part decoded; a real one is a few hundred characters, rarely a few KB."""
_JWT_MAX_NESTING = 32
"""Deepest nesting of arrays and objects parsed in a decoded part; real claims nest two or three deep."""
_JSON_STRUCTURE = re.compile(r'[\[\]{}"\\]')


def _json_nesting_within(document: str, limit: int) -> bool:
    """Whether no array or object in ``document`` (JSON or not) lies more than ``limit`` levels deep.

    Brackets inside strings do not count. Checked before parsing, because the parser recurses once
    per level and a crafted part would otherwise exhaust the stack (RecursionError).
    """
    if document.count("[") + document.count("{") <= limit:
        return True
    depth = 0
    in_string = False
    escaped = -1  # the position of the character a backslash escapes
    for mark in _JSON_STRUCTURE.finditer(document):
        at = mark.start()
        if at == escaped:
            continue
        char = mark.group()
        if in_string:
            if char == "\\":
                escaped = at + 1
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > limit:
                return False
        elif char in "]}":
            depth -= 1
    return True


def _b64url_json_object(segment: str) -> Optional[Dict[str, object]]:
    """The JSON object a base64url JWT part encodes, or None (too long, too deep, not an object)."""
    if len(segment) > _JWT_MAX_PART_CHARS:
        return None
    try:
        document = base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4)).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None
    if not _json_nesting_within(document, _JWT_MAX_NESTING):
        return None
    try:
        value = json.loads(document)
    except (ValueError, RecursionError):  # not JSON; RecursionError only if the caller's stack is nearly full
        return None
    return value if isinstance(value, dict) else None


def detect_jwt(text: str) -> List[Detection]:
    """Signed or unsigned JWTs: three dot-separated base64url parts whose first two decode to JSON
    objects and whose header names an algorithm (``alg``). Parts longer than 64 KiB characters or
    nesting deeper than 32 levels are not decoded, so such a token is not a finding."""
    findings = []
    for m in _JWT.finditer(text):
        header = _b64url_json_object(m.group(1))
        if header is None or "alg" not in header or _b64url_json_object(m.group(2)) is None:
            continue
        findings.append(Detection("jwt", m.start(), m.end()))
    return findings


# --- generic "sk-" secret keys ----------------------------------------------------------------

_SK_KEY = re.compile(_BEFORE + r"sk-(?:[a-z]{2,10}[0-9]{0,2}-){0,2}([A-Za-z0-9_-]{32,})" + _AFTER)


def detect_api_key(text: str) -> List[Detection]:
    """``sk-`` secret keys as issued by several model APIs (``sk-...``, ``sk-proj-...``,
    ``sk-ant-api03-...``): at least 32 key characters after the prefix, mixing digits, lower and
    upper case. ``sk-`` in prose, ``sk-learn`` and hyphenated words are not findings."""
    return [Detection("api_key", m.start(), m.end()) for m in _SK_KEY.finditer(text) if _mixed_alphanumeric(m.group(1))]


# --- payment card numbers ---------------------------------------------------------------------

_DIGIT_RUN = re.compile(r"[0-9]+(?:[ -][0-9]+)*")
_CARD_MIN, _CARD_MAX = 13, 19


def luhn_valid(digits: str) -> bool:
    """The Luhn (mod 10) checksum that every payment card number carries."""
    total = 0
    for index, char in enumerate(reversed(digits)):
        value = ord(char) - 48
        if index % 2 == 1:
            value *= 2
            if value > 9:
                value -= 9
        total += value
    return total % 10 == 0


def card_brand(digits: str) -> Optional[str]:
    """The card network whose issuer prefix and length ``digits`` has, or None."""
    n = len(digits)
    two, four, six = int(digits[:2]), int(digits[:4]), int(digits[:6])
    if digits[0] == "4" and n in (13, 16, 19):
        return "visa"
    if (51 <= two <= 55 or 2221 <= four <= 2720) and n == 16:
        return "mastercard"
    if two in (34, 37) and n == 15:
        return "amex"
    if (four == 6011 or 644 <= int(digits[:3]) <= 649 or two == 65 or 622126 <= six <= 622925) and 16 <= n <= 19:
        return "discover"
    if 3528 <= four <= 3589 and 16 <= n <= 19:
        return "jcb"
    if (300 <= int(digits[:3]) <= 305 or two in (36, 38, 39)) and 14 <= n <= 19:
        return "diners"
    if two == 62 and 16 <= n <= 19:
        return "unionpay"
    if four in (5018, 5020, 5038, 5893, 6304, 6759, 6761, 6762, 6763) and 13 <= n <= 19:
        return "maestro"
    return None


def detect_card_number(text: str) -> List[Detection]:
    """Payment card numbers: 13 to 19 digits, written together or in groups separated by single
    spaces or hyphens (one separator throughout, a first group of 4, no group shorter than 3), with
    a known issuer prefix and length, passing the Luhn check, and not part of a longer number,
    word, decimal or identifier."""
    findings: List[Detection] = []
    for run in _DIGIT_RUN.finditer(text):
        groups = [(m.start() + run.start(), m.end() + run.start()) for m in re.finditer(r"[0-9]+", run.group())]
        first = 0
        last = len(groups) - 1
        # A group glued to a letter, underscore or dot belongs to an identifier or a decimal.
        start, end = run.start(), run.end()
        if start > 0 and (text[start - 1].isalnum() or text[start - 1] in "_."):
            first += 1
        if end < len(text) and (
            text[end].isalnum()
            or text[end] == "_"
            or (text[end] in ".," and end + 1 < len(text) and text[end + 1].isdigit())
        ):
            last -= 1
        i = first
        while i <= last:
            hit = _card_window(text, groups, i, last)
            if hit is None:
                i += 1
                continue
            findings.append(Detection("card_number", groups[i][0], groups[hit][1]))
            i = hit + 1
    return findings


def _card_window(text: str, groups: Sequence[Tuple[int, int]], i: int, last: int) -> Optional[int]:
    """The index of the last group of a card number starting at group ``i``, or None."""
    digits = ""
    separator = None
    for j in range(i, last + 1):
        g_start, g_end = groups[j]
        size = g_end - g_start
        if j > i:
            sep = text[g_start - 1]
            if separator is None:
                separator = sep
            elif sep != separator:
                return None
            if size < 3 or (j == i + 1 and groups[i][1] - groups[i][0] != 4):
                return None
        digits += text[g_start:g_end]
        if len(digits) > _CARD_MAX:
            return None
        if j == i and size > _CARD_MAX:
            return None
        if len(digits) >= _CARD_MIN and _is_card(digits):
            # Prefer the longest grouping: "4111 1111 1111 1111 111" is one 19-digit number only
            # if that is valid; a valid 16-digit prefix followed by a CVV stays 16.
            longer = _card_longer(text, groups, j, last, digits, separator)
            return j if longer is None else longer
    return None


def _card_longer(
    text: str, groups: Sequence[Tuple[int, int]], j: int, last: int, digits: str, separator: Optional[str]
) -> Optional[int]:
    for k in range(j + 1, last + 1):
        g_start, g_end = groups[k]
        if g_end - g_start < 3 or (separator is not None and text[g_start - 1] != separator):
            return None
        digits += text[g_start:g_end]
        if len(digits) > _CARD_MAX:
            return None
        if _is_card(digits):
            return k
    return None


def _is_card(digits: str) -> bool:
    return (
        _CARD_MIN <= len(digits) <= _CARD_MAX
        and len(set(digits)) > 1
        and card_brand(digits) is not None
        and luhn_valid(digits)
    )


# --- the policy -------------------------------------------------------------------------------

DEFAULT_DETECTORS: Tuple[Callable[[str], List[Detection]], ...] = (
    detect_private_key,
    detect_aws_access_key_id,
    detect_aws_secret_access_key,
    detect_github_token,
    detect_slack_token,
    detect_slack_webhook,
    detect_stripe_key,
    detect_google_api_key,
    detect_jwt,
    detect_api_key,
    detect_card_number,
)
"""The built-in detectors, in the order their findings win when two overlap."""


class PolicyOutcome(NamedTuple):
    """What the policy made of one text.

    ``text`` is the text to write (redacted in redact mode, unchanged otherwise). ``refused_kinds``
    is non-empty exactly when the write must be refused (reject mode), each kind once, in order of
    first appearance. What redact mode replaced is visible in the text (``[REDACTED:{kind}]``) and
    from ``ContentPolicy.findings``.
    """

    text: str
    refused_kinds: List[str]

    @property
    def refused(self) -> bool:
        return bool(self.refused_kinds)


def describe(kinds: Iterable[str], descriptions: Optional[Dict[str, str]] = None) -> str:
    """A human list for the refusal message: ``a private key block and a card number``."""
    table = dict(KIND_DESCRIPTIONS)
    if descriptions:
        table.update(descriptions)
    names = [table.get(kind, f'text matching the "{kind}" detector') for kind in kinds]
    if not names:
        return "nothing"
    if len(names) == 1:
        return names[0]
    return ", ".join(names[:-1]) + " and " + names[-1]


class ContentPolicy:
    """Refuse or redact writes that contain secrets.

    ``action="reject"``: ``check`` returns the text unchanged and the kinds found; the handler
    refuses the write with the ``content_refused`` message. ``action="redact"``: every finding is
    replaced by ``[REDACTED:{kind}]`` and the write proceeds.

    ``detectors`` may be any sequence of callables ``text -> list[Detection]``; pass
    ``DEFAULT_DETECTORS + (mine,)`` to add one. Overlapping findings are merged into one span that
    keeps the kind of the finding that starts first (earlier detectors win ties). Spans outside the
    text are clipped; empty spans are ignored. A detector that raises propagates its exception.
    """

    ACTIONS = ("reject", "redact")

    def __init__(
        self,
        action: str = "reject",
        detectors: Sequence[Callable[[str], List[Detection]]] = DEFAULT_DETECTORS,
        descriptions: Optional[Dict[str, str]] = None,
    ) -> None:
        if action not in self.ACTIONS:
            raise ValueError(f"ContentPolicy action must be one of {', '.join(self.ACTIONS)}")
        self.action = action
        self.detectors = tuple(detectors)
        self.descriptions = dict(descriptions or {})

    def findings(self, text: str) -> List[Detection]:
        """All findings, merged so that no two overlap, sorted by position."""
        raw: List[Tuple[int, int, int, str]] = []
        for order, detector in enumerate(self.detectors):
            for finding in detector(text):
                start = max(0, min(int(finding.start), len(text)))
                end = max(0, min(int(finding.end), len(text)))
                if end > start:
                    raw.append((start, order, end, str(finding.kind)))
        raw.sort()
        merged: List[Detection] = []
        for start, _, end, kind in raw:
            if merged and start < merged[-1].end:
                if end > merged[-1].end:
                    merged[-1] = merged[-1]._replace(end=end)
                continue
            merged.append(Detection(kind, start, end))
        return merged

    def check(self, text: str) -> PolicyOutcome:
        found = self.findings(text)
        if not found:
            return PolicyOutcome(text, [])
        if self.action == "reject":
            return PolicyOutcome(text, list(dict.fromkeys(f.kind for f in found)))
        return PolicyOutcome(redact(text, found), [])

    def __call__(self, text: str) -> Tuple[str, List[str]]:
        """The handler's hook: (text to write, human descriptions of what was refused)."""
        outcome = self.check(text)
        return outcome.text, [describe([kind], self.descriptions) for kind in outcome.refused_kinds]

    def describe(self, kinds: Iterable[str]) -> str:
        return describe(kinds, self.descriptions)


def redact(text: str, findings: Sequence[Detection]) -> str:
    """Replace each (non-overlapping, sorted) finding by ``[REDACTED:{kind}]``."""
    parts = []
    pos = 0
    for finding in findings:
        parts.append(text[pos : finding.start])
        parts.append(f"[REDACTED:{finding.kind}]")
        pos = finding.end
    parts.append(text[pos:])
    return "".join(parts)
