"""Words: how queries become FTS5 expressions, which words of a query are searched alone, and the
words ranking compares (OpenClaw 2026.9.6's `buildFtsQuery`, `extractKeywords`, `normalizeSearchTokens`).

* `fts_terms` are a query's runs of letters, digits and `_` (`[\\p{L}\\p{N}_]+`), as written: each is
  quoted and all are `AND`ed (`fts_expression`), so search syntax in a query (`NEAR`, `OR`, `*`, `:`,
  quotes) is text; FTS5's `unicode61` tokenizer then folds case and Latin diacritics, and reads
  `foo_bar` as the phrase "foo bar". At most 32 runs are used (D-OPENCLAW-SEARCH-TERMS).
* `keywords` are the words searched alone when the whole query finds too little: the query lower-cased,
  cut at white space and punctuation, Han runs also as single characters and pairs, Japanese as its
  script runs, Korean without a trailing particle; less the stop words of seven languages, words of
  one or two ASCII letters, numbers and punctuation.
* `words` are OpenClaw's ranking words: NFC, runs of letters, digits and `_`, lower case.
* `terms` and `runs` cut text as FTS5's `unicode61` does, for the index that runs where FTS5 is
  missing (folded case, Latin diacritics removed).

Pure functions.
"""

from __future__ import annotations

import re
import unicodedata
from typing import FrozenSet, List, Optional

_WORD = re.compile(r"\w+")
_HAN = re.compile(r"[\u4e00-\u9fff]")
_KANA = re.compile(r"[\u3040-\u30ff]")
_HANGUL = re.compile(r"[\uac00-\ud7af\u3131-\u3163]")
_JAPANESE_PARTS = re.compile(r"[a-z0-9_]+|[\u30a0-\u30ff\u30fc]+|[\u4e00-\u9fff]+|[\u3040-\u309f]{2,}")

MAX_FTS_TERMS = 32


def _words(text: str) -> FrozenSet[str]:
    return frozenset(text.split())


# The stop words of OpenClaw's query expansion (English, Spanish, Portuguese, Arabic, Chinese, Korean,
# Japanese): words that say what kind of question it is, not what it is about.
STOP_WORDS: FrozenSet[str] = _words(
    """a an the this that these those i me my we our you your he she it they them is are was were be been
    being have has had do does did will would could should can may might in on at to for of with by from
    about into through during before after above below between under over and or but if then because as
    while when where what which who how why yesterday today tomorrow earlier later recently ago just now
    thing things stuff something anything everything nothing please help find show get tell give"""
    """ el la los las un una unos unas este esta ese esa yo mi nosotros nosotras tu tus usted ustedes ellos
    ellas de del en con por para sobre entre y o pero si porque como es son fue fueron ser estar haber
    tener hacer ayer hoy mañana antes despues después ahora recientemente que qué cómo cuando cuándo
    donde dónde porqué favor ayuda"""
    """ os as um uma uns umas esse essa eu meu minha nos nós você vocês ele ela eles elas do da em com e ou
    mas se é são foi foram ter fazer ontem hoje amanhã depois agora quê quando onde porquê ajuda"""
    """ ال و أو لكن ثم بل أنا نحن هو هي هم هذا هذه ذلك تلك هنا هناك من إلى الى في على عن مع بين ل ب ك كان كانت
    يكون تكون صار أصبح يمكن ممكن بالأمس امس اليوم غدا الآن قبل بعد مؤخرا لماذا كيف ماذا متى أين هل فضلا ساعد"""
    """ 我 我们 你 你们 他 她 它 他们 这 那 这个 那个 这些 那些 的 了 着 过 得 地
    吗 呢 吧 啊 呀 嘛 啦 是 有 在 被 把 给 让 用 到 去 来 做 说 看 找 想 要
    能 会 可以 和 与 或 但 但是 因为 所以 如果 虽然 而 也 都 就 还 又 再 才 只
    之前 以前 之后 以后 刚才 现在 昨天 今天 明天 最近 东西 事情 事 什么 哪个 哪些
    怎么 为什么 多少 请 帮 帮忙 告诉"""
    """ 은 는 이 가 을 를 의 에 에서 로 으로 와 과 도 만 까지 부터 한테 에게 께 처럼 같이 보다 마다 밖에 대로 나 나는
    내가 나를 너 우리 저 저희 그 그녀 그들 이것 저것 그것 여기 저기 거기 있다 없다 하다 되다 이다 아니다 주다 오다
    가다 것 거 등 수 때 곳 중 분 잘 더 또 매우 정말 아주 많이 너무 좀 그리고 하지만 그래서 그런데 그러나 또는 그러면
    왜 어떻게 뭐 언제 어디 누구 무엇 어떤 어제 오늘 내일 최근 지금 아까 나중 전에 제발 부탁"""
    """ これ それ あれ この その あの ここ そこ あそこ する した して です ます いる ある なる できる の こと もの
    ため そして しかし また でも から まで より だけ なぜ どう 何 いつ どこ 誰 どれ
    昨日 今日 明日 最近 今 さっき 前 後"""
) | frozenset({"من فضلك"})
KOREAN_PARTICLES = tuple(
    sorted(
        "에서 으로 에게 한테 처럼 같이 보다 까지 부터 마다 밖에 대로 은 는 이 가 을 를 의 에 로 와 과 도 만".split(),
        key=len,
        reverse=True,
    )
)


def fts_terms(query: str) -> List[str]:
    """The query's runs of letters, digits and `_`, as written, at most 32."""
    return [run for run in _WORD.findall(query)][:MAX_FTS_TERMS]


def fts_expression(query: str) -> Optional[str]:
    """OpenClaw's `buildFtsQuery`: every run quoted, all `AND`ed; None for a query with none."""
    found = fts_terms(query)
    if not found:
        return None
    return " AND ".join('"' + run.replace('"', "") + '"' for run in found)


def words(text: str) -> List[str]:
    """OpenClaw's ranking words: NFC, runs of letters, digits and `_`, lower case."""
    normalized = text if text.isascii() else unicodedata.normalize("NFC", text)
    return [word.lower() for word in _WORD.findall(normalized)]


def _korean_stem(token: str) -> Optional[str]:
    for particle in KOREAN_PARTICLES:
        if len(token) > len(particle) and token.endswith(particle):
            return token[: -len(particle)]
    return None


def _useful_korean_stem(stem: str) -> bool:
    if re.search(r"[\uac00-\ud7af]", stem):
        return len(stem) >= 2
    return re.fullmatch(r"[a-z0-9_]+", stem, re.IGNORECASE) is not None


def _is_break(char: str) -> bool:
    return char.isspace() or unicodedata.category(char).startswith("P")


def _segments(text: str) -> List[str]:
    """The lower-cased text cut at white space and punctuation (`\\s` and `\\p{P}`)."""
    found: List[str] = []
    current: List[str] = []
    for char in text.strip().lower():
        if _is_break(char):
            if current:
                found.append("".join(current))
                current = []
        else:
            current.append(char)
    if current:
        found.append("".join(current))
    return found


def _tokens(query: str) -> List[str]:
    """OpenClaw's query-expansion tokens (unicode61 tokenizer)."""
    tokens: List[str] = []
    for segment in _segments(query):
        if _KANA.search(segment):
            for part in _JAPANESE_PARTS.findall(segment):
                tokens.append(part)
                if re.fullmatch(r"[\u4e00-\u9fff]+", part):
                    tokens.extend(part[i : i + 2] for i in range(len(part) - 1))
        elif _HAN.search(segment):
            han = [char for char in segment if _HAN.match(char)]
            tokens.extend(han)
            tokens.extend(han[i] + han[i + 1] for i in range(len(han) - 1))
        elif _HANGUL.search(segment):
            stem = _korean_stem(segment)
            if segment not in STOP_WORDS and not (stem is not None and stem in STOP_WORDS):
                tokens.append(segment)
            if stem and stem not in STOP_WORDS and _useful_korean_stem(stem):
                tokens.append(stem)
        else:
            tokens.append(segment)
    return tokens


def _is_keyword(token: str) -> bool:
    if not token or token in STOP_WORDS:
        return False
    if token.isascii() and token.isalpha() and len(token) < 3:
        return False
    if token.isascii() and token.isdigit():
        return False
    return not all(unicodedata.category(char)[0] in "PS" for char in token)


def keywords(query: str) -> List[str]:
    """The distinct keywords of `query`, in order (OpenClaw's `extractKeywords`)."""
    found: List[str] = []
    for token in _tokens(query):
        if _is_keyword(token) and token not in found:
            found.append(token)
    return found


# --- FTS5's unicode61, for the index without FTS5 --------------------------------------------------


def _is_term_char(char: str) -> bool:
    category = unicodedata.category(char)
    return category[0] in "LN" or category in ("Co", "Cn") or (category == "Mn" and "\u0300" <= char <= "\u036f")


def runs(text: str) -> List[str]:
    """Maximal runs of term characters, as they are written."""
    found: List[str] = []
    start = -1
    for index, char in enumerate(text):
        inside = char.isalnum() if char.isascii() else _is_term_char(char)
        if inside and start < 0:
            start = index
        elif not inside and start >= 0:
            found.append(text[start:index])
            start = -1
    if start >= 0:
        found.append(text[start:])
    return found


def _strip_diacritic(char: str) -> str:
    """A Latin letter with combining marks as its base letter; anything else as it is."""
    parts = unicodedata.normalize("NFD", char)
    if len(parts) > 1 and parts[0].isascii() and all("\u0300" <= mark <= "\u036f" for mark in parts[1:]):
        return parts[0]
    return char


def fold(run: str) -> str:
    """Lower case without the diacritics of Latin letters (`unicode61`'s `remove_diacritics 1`,
    which leaves other scripts alone: Cyrillic `ё` stays)."""
    lowered = run.lower()
    if lowered.isascii():
        return lowered
    return "".join(_strip_diacritic(char) for char in lowered if not "\u0300" <= char <= "\u036f")


def terms(text: str) -> List[str]:
    """The folded terms of `text`, in order, repeats kept (the pure-Python index's tokenizer)."""
    if text.isascii():
        return re.findall(r"[a-z0-9]+", text.lower())
    return [term for term in (fold(run) for run in runs(text)) if term]
