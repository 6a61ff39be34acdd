"""The high-entropy token rule: a credential of a format no pattern knows, found by its look.

A random key reads like no word: upper and lower case letters and digits throughout, as
many distinct characters as its length allows. The rule looks only at whole tokens (runs
of ``[A-Za-z0-9_+/-]``) of ``MIN_CHARS`` to ``MAX_CHARS`` characters and leaves alone what
a cassette legitimately holds that is random too:

- hex digits only (keys, response and content hashes, UUIDs without dashes);
- a lowercase prefix and ``_``/``-`` (provider ids: ``call_``, ``toolu_``, ``chatcmpl-``,
  ``msg_``, ``rs_``, ``fp_``, ``cassette-``), which names what the token is;
- longer than ``MAX_CHARS`` (base64 vectors, images, thinking signatures) or right after
  ``base64,`` (a data URL);
- words (``[A-Z]?[a-z]{3,}``), three or more, covering ``WORDS_SHARE`` of it or more
  (``getWeatherForecastForCity2024``, paths, slugs): random base62 has lowercase runs too,
  more the longer it is (the old rule, three runs of four, passed 9% of random 64-character
  keys and 57% of 160-character ones as words), but they cover a fifth of it at most;
- base64 that decodes to plausible little-endian float32 or float64 numbers (an embedding
  vector): random bytes read as floats are almost never all between 1e-12 and 1e12.

What is left must have the entropy (bits per character) that 99 in 100 random base62
strings of its length have or more. It masks stored copies only and never refuses a save:
a random-looking string is no proof of a credential (``chaincassette.redact``).
"""

from __future__ import annotations

import base64
import binascii
import bisect
import math
import re
import sys
from array import array
from collections import Counter
from collections.abc import Iterator

MIN_CHARS = 32
MAX_CHARS = 200

_TOKEN = re.compile(r"[A-Za-z0-9_+/\-]{" + str(MIN_CHARS) + r",}={0,2}")
_HEX = re.compile(r"[0-9a-fA-F_\-]+")
_ID_PREFIX = re.compile(r"[a-z]{2,12}[_\-]")
_WORD = re.compile(r"[A-Z]?[a-z]{3,}")
#: The share of a token that words cover in a name (random base62: under 0.4 past 48
#: characters, 1 in 500 of 32 characters reaches 0.6).
WORDS_SHARE = 0.6
#: Magnitudes of the numbers in a vector (0 aside); NaN and infinities compare false.
_PLAUSIBLE = (1e-12, 1e12)

#: (length, bits per character below which 1 in 100 random base62 strings of that length
#: falls), measured over 5,000 strings per length; interpolated linearly in between.
_ENTROPY_FLOOR = (
    (32, 4.20),
    (40, 4.46),
    (48, 4.62),
    (64, 4.89),
    (80, 5.07),
    (100, 5.24),
    (128, 5.39),
    (160, 5.51),
    (200, 5.59),
)
_LENGTHS = [length for length, _ in _ENTROPY_FLOOR]


def bits_per_char(token: str) -> float:
    """The Shannon entropy of ``token``'s characters."""
    size = len(token)
    return -sum(n / size * math.log2(n / size) for n in Counter(token).values())


def entropy_floor(length: int) -> float:
    """The entropy a random token of ``length`` characters almost always reaches."""
    at = bisect.bisect_left(_LENGTHS, length)
    if at == 0:
        return _ENTROPY_FLOOR[0][1]
    if at == len(_ENTROPY_FLOOR):
        return _ENTROPY_FLOOR[-1][1]
    (low, low_bits), (high, high_bits) = _ENTROPY_FLOOR[at - 1], _ENTROPY_FLOOR[at]
    return low_bits + (high_bits - low_bits) * (length - low) / (high - low)


def looks_random(token: str) -> bool:
    """Whether ``token`` (one whole token) reads like a generated credential."""
    core = token.rstrip("=")
    if not MIN_CHARS <= len(core) <= MAX_CHARS or _HEX.fullmatch(core):
        return False
    if _ID_PREFIX.match(core):
        return False
    if not (
        any(c.isupper() for c in core)
        and any(c.islower() for c in core)
        and any(c.isdigit() for c in core)
    ):
        return False
    if reads_as_words(core):
        return False
    if bits_per_char(core) < entropy_floor(len(core)):
        return False
    return not is_vector(token)


def reads_as_words(token: str) -> bool:
    """Whether ``token`` is made of words (a name, a path) rather than random characters."""
    words = _WORD.findall(token)
    return len(words) >= 3 and sum(map(len, words)) >= WORDS_SHARE * len(token)


def is_vector(token: str) -> bool:
    """Whether ``token`` is base64 of little-endian float32s or float64s that all read as
    plausible numbers (how chaincassette and OpenAI's client store embedding vectors)."""
    if len(token) % 4:
        return False
    try:
        raw = base64.b64decode(token, validate=True)
    except (binascii.Error, ValueError):
        return False
    for code, size in (("f", 4), ("d", 8)):
        if raw and len(raw) % size == 0:
            numbers = array(code, raw[: len(raw) - len(raw) % size])
            if sys.byteorder == "big":
                numbers.byteswap()
            if all(x == 0 or _PLAUSIBLE[0] < abs(x) < _PLAUSIBLE[1] for x in numbers):
                return True
    return False


def has_long_word(text: str) -> bool:
    """Whether ``text`` has a run of ``MIN_CHARS`` characters between blanks (a cheap test
    before ``random_tokens``: a token is never longer than the word holding it)."""
    return len(text) >= MIN_CHARS and max(map(len, text.split()), default=0) >= MIN_CHARS


def random_tokens(text: str) -> Iterator[tuple[int, int]]:
    """(start, end) of each token of ``text`` that ``looks_random``."""
    for match in _TOKEN.finditer(text):
        start, end = match.span()
        if text[max(0, start - 7) : start] == "base64,":
            continue
        if looks_random(match.group()):
            yield start, end
