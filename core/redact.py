"""Secrets never reach disk: redaction of stored copies and the scan before every write.

Three rules find a secret, each in its own place:

- **by name**: a field named like a credential (``api_key``, ``Authorization``) is masked
  wherever names are not part of the question (``SEMANTIC_FIELDS``);
- **by format**: known key formats (``SECRET_FORMATS``: OpenAI, Anthropic, Google, Slack,
  GitLab, GitHub, Stripe, AWS, Azure-style keys, Hugging Face, JWTs, private keys, ...) and,
  in stored requests, traces, metadata and errors only, tokens that read as random
  (``chaincassette.entropy``);
- **by value**: every value the process holds in a secret-looking environment variable
  (``chaincassette.secret_env``, plus the cassette's ``redact_env=[...]``) is masked
  wherever it appears, responses included, however JSON, a URL or ``repr`` spelled it.

Values and formats are sought in field names too (a tool schema's property, a metadata
key), and across a stream's chunks (a model's tokens cut a key in pieces).

Redaction touches only what is *stored*: the key is computed before it. A recorded
response is never rewritten by name or format; one holding a known format refuses the
save (``CassetteSecretError``), because a rewritten response replays differently. Two
exceptions: the exact value of a secret variable, and a value a request of the same
cassette sent that its redaction masked (a known format, a random token: a model repeats
the prompt's session token; ``chaincassette.sent_secrets``). A response holding one is
stored masked (``Redactor.mask_response``), and the recording run is handed the same
masked copy, so the run and every replay of it agree (with a ``SecretMaskedWarning``).
"""

from __future__ import annotations

import itertools
import json
import os
import re
import threading
import urllib.parse
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from . import entropy, secret_env
from .keyrules import OPAQUE_FIELDS
from .memo import Memo
from .sent_secrets import Sent, SentSecrets, matcher

REDACTED = "<redacted>"

_START = r"(?<![A-Za-z0-9_\-])"  # a key starts a token: "task-management" holds no "sk-…"
_HAS_DIGIT = (
    r"(?=[A-Za-z0-9_\-]*[0-9])"  # real keys mix digits in; slugs and placeholders rarely do
)

#: Known credential formats, most specific first. These are masked in keys too
#: (``normalize.drop_secrets``: a rotated key must not cause a miss), so this table is fixed
#: with the key rules; a format added later goes to ``STORED_SECRET_PATTERNS``.
DEFAULT_SECRET_PATTERNS: dict[str, str] = {
    "anthropic-key": _START + r"sk-ant-" + _HAS_DIGIT + r"[A-Za-z0-9_\-]{20,}",
    "openai-key": _START + r"sk-(?:proj-|svcacct-|admin-)?" + _HAS_DIGIT + r"[A-Za-z0-9_\-]{20,}",
    "google-key": _START + r"AIza[0-9A-Za-z_\-]{35}",
    "groq-key": _START + r"gsk_[A-Za-z0-9]{20,}",
    "xai-key": _START + r"xai-[A-Za-z0-9]{20,}",
    "huggingface-token": _START + r"hf_[A-Za-z0-9]{30,}",
    "github-token": _START + r"gh[pousr]_[A-Za-z0-9]{36,}",
    "aws-access-key": _START + r"(?:AKIA|ASIA)[0-9A-Z]{16}",
    "jwt": _START + r"eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}",
    "bearer-token": r"(?i:bearer)\s+(?=[A-Za-z0-9._~+/=\-]*[0-9])[A-Za-z0-9._~+/=\-]{16,}",
    "url-credential": r"(?<=[?&])(?i:api[_\-]?key|key|token|access_token|sig|signature)"
    r"=[^&#\s\"']{8,}",
}

#: Formats masked in what is stored (and refused in responses), never in keys.
STORED_SECRET_PATTERNS: dict[str, str] = {
    "slack-token": _START + r"xox[bpars]-" + _HAS_DIGIT + r"[A-Za-z0-9\-]{10,}",
    "slack-webhook": r"https://hooks\.slack\.com/services/[A-Za-z0-9_/]{20,}",
    "gitlab-token": _START + r"gl(?:pat|dt|ptt|rt|soat|cbt)-" + _HAS_DIGIT + r"[A-Za-z0-9_\-]{20,}",
    "github-fine-grained-token": _START + r"github_pat_[A-Za-z0-9_]{22,}",
    "stripe-key": _START + r"(?:sk|rk)_(?:live|test)_" + _HAS_DIGIT + r"[A-Za-z0-9]{16,}",
    "google-oauth-token": _START + r"ya29\.[A-Za-z0-9_\-]{20,}",
    "npm-token": _START + r"npm_[A-Za-z0-9]{36}",
    "pypi-token": _START + r"pypi-AgE[A-Za-z0-9_\-]{50,}",
    "private-key": r"-----BEGIN (?:[A-Z]+ )*PRIVATE KEY-----[\s\S]*?"
    r"(?:-----END (?:[A-Z]+ )*PRIVATE KEY-----|$)",
    # 32 hex digits are a hash anywhere else: a key only right after a key's name
    "azure-key": r"(?i:(?:api|subscription|access|secret|account|admin|query|primary|secondary"
    r"|openai|azure|search|cognitive)[_\- ]?key|client[_\- ]?secret)[\"']?\s*[:=]\s*[\"']?"
    r"(?P<secret>[0-9a-fA-F]{32})(?![0-9A-Za-z])",
    "aws-secret-key": r"(?i:aws[_\-]?secret[_\-]?(?:access[_\-]?)?key)[\"']?\s*[:=]\s*[\"']?"
    r"(?P<secret>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])",
}

#: The text each format needs (a fast ``in`` test before its regular expression).
_FORMAT_LITERALS: dict[str, tuple[str, ...]] = {
    "anthropic-key": ("sk-ant-",),
    "openai-key": ("sk-",),
    "google-key": ("AIza",),
    "groq-key": ("gsk_",),
    "xai-key": ("xai-",),
    "huggingface-token": ("hf_",),
    "github-token": ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
    "github-fine-grained-token": ("github_pat_",),
    "aws-access-key": ("AKIA", "ASIA"),
    "jwt": ("eyJ",),
    "bearer-token": ("earer", "EARER"),
    "url-credential": ("=",),
    "slack-token": ("xox",),
    "slack-webhook": ("hooks.slack.com",),
    "gitlab-token": ("glpat-", "gldt-", "glptt-", "glrt-", "glsoat-", "glcbt-"),
    "stripe-key": ("_live_", "_test_"),
    "google-oauth-token": ("ya29.",),
    "npm-token": ("npm_",),
    "pypi-token": ("pypi-AgE",),
    "private-key": ("PRIVATE KEY",),
    "azure-key": ("key", "Key", "KEY", "secret", "Secret", "SECRET"),
    "aws-secret-key": ("aws", "Aws", "AWS"),
}

#: Literal text every default pattern needs: a fast ``in`` test before the regexes (which
#: cannot use their literal-prefix speed-up behind a look-behind) keeps key computation cheap.
#: One ``in`` per literal: a third of one regex alternation's cost on prose, where the
#: alternation stops at every ``s`` and ``e``.
_LITERALS = (
    "sk-", "AIza", "gsk_", "xai-", "hf_", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "AKIA", "ASIA", "eyJ",
    "earer", "EARER",
)  # fmt: skip


def might_hold_secret(text: str) -> bool:
    """False when no default secret pattern can match ``text`` (most text, cheaply)."""
    for literal in _LITERALS:
        if literal in text:
            return True
    return "=" in text and ("?" in text or "&" in text)


#: Names (after camelCase and dashes become snake_case) that hold credentials.
_SECRET_SUFFIXES = (
    "api_key",
    "apikey",
    "secret",
    "password",
    "passwd",
    "passphrase",
    "access_key",
    "secret_key",
    "private_key",
    "signing_key",
    "encryption_key",
    "subscription_key",
    "access_token",
    "refresh_token",
    "id_token",
    "session_token",
    "auth_token",
    "api_token",
    "bearer_token",
    "authorization",
    "credential",
    "credentials",
    "cookie",
)
_SECRET_EXACT = frozenset({"token", "auth", "bearer"})
#: A name that is one of the suffixes, or ends with ``_`` and one.
_SECRET_SUFFIX = re.compile(rf"(?:^|_)(?:{'|'.join(map(re.escape, _SECRET_SUFFIXES))})\Z")

#: Fields whose contents are what the model is asked (messages, tool schemas and arguments,
#: output schemas): a property there named ``token`` or ``api_key`` is part of the question,
#: never a credential of the caller, so names are not judged inside them (values still are).
SEMANTIC_FIELDS = frozenset(
    {
        "messages",
        "prompt",
        "tools",
        "functions",
        "tool_choice",
        "response_format",
        "args",
        "arguments",
        "schema",
        "parameters",
        "properties",
        "content",
        "input",
        "inputs",
    }
)
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def is_secret_name(name: str) -> bool:
    """True for field names that carry credentials (``api_key``, ``Authorization``,
    ``openAIApiKey``, ``Ocp-Apim-Subscription-Key``), not for ``max_tokens`` or ``eos_token``."""
    if not name.islower():  # camelCase (or no letters): its words split first
        name = _CAMEL.sub("_", name).lower()
    snake = name.replace("-", "_").replace(".", "_")
    return snake in _SECRET_EXACT or _SECRET_SUFFIX.search(snake) is not None


@dataclass(frozen=True)
class SecretFinding:
    """Where a secret was found: a JSON path and the kind of secret."""

    path: str
    kind: str


#: What a mask looks like (ours, and ``normalize``'s ``<secret>``): never a secret itself.
_MASKED = re.compile(r"<redacted[:>]|<secret>")


@dataclass(frozen=True)
class SecretFormat:
    """One credential format: its kind, its pattern (a group ``secret``, when present, is
    the part masked) and the literal text it needs (none: always tried)."""

    kind: str
    pattern: re.Pattern[str]
    literals: tuple[str, ...] = ()

    def may_match(self, text: str) -> bool:
        if not self.literals:
            return True
        return any(literal in text for literal in self.literals)

    def masked(self, text: str) -> str:
        return self.pattern.sub(self._label, text)

    def _label(self, match: re.Match[str]) -> str:
        whole = match.group()
        if _MASKED.search(whole):  # ``?token=<redacted:env:X>``: masked already
            return whole
        label = f"<redacted:{self.kind}>"
        if "secret" not in self.pattern.groupindex:
            return label
        start, end = match.start("secret") - match.start(), match.end("secret") - match.start()
        return whole[:start] + label + whole[end:]

    def spans(self, text: str) -> Iterator[tuple[int, int]]:
        """Where in ``text`` each unmasked match's secret is (its ``secret`` group, if any)."""
        for match in self.pattern.finditer(text):
            if not _MASKED.search(match.group()):
                yield match.span("secret") if "secret" in self.pattern.groupindex else match.span()

    def found(self, text: str) -> Iterator[str]:
        for match in self.pattern.finditer(text):
            if not _MASKED.search(match.group()):
                yield (
                    match.group("secret") if "secret" in self.pattern.groupindex else match.group()
                )


#: Every known format, compiled once: the key formats, then the stored-only ones.
SECRET_FORMATS: tuple[SecretFormat, ...] = tuple(
    SecretFormat(kind, re.compile(pattern), _FORMAT_LITERALS[kind])
    for kind, pattern in {**DEFAULT_SECRET_PATTERNS, **STORED_SECRET_PATTERNS}.items()
)
#: No known format fits in fewer characters (``?key=12345678``): shorter text is not scanned.
_SHORTEST_SECRET = 12
#: What a redactor remembers per text: how many texts, and the longest it remembers.
_MEMO_ENTRIES = 4096
_MEMO_CHARS = 2048
#: The kind of a masked random-looking token (``chaincassette.entropy``).
RANDOM_TOKEN = "random-token"


class SecretMaskedWarning(UserWarning):
    """A recorded response held the value of a secret environment variable: it is stored,
    and replays, masked."""


class _EnvValues:
    """The values of the process's secret variables, every one seen by a pass of the
    redactor: a variable unset between a recording and the save (a test's ``monkeypatch``
    undone) is still masked in the trace written at the save."""

    def __init__(self, environ: Mapping[str, str] | None, named: tuple[str, ...]) -> None:
        self.environ = environ
        self._named = named
        self._lock = threading.Lock()
        self._seen: dict[str, str] = {}  # spelled value -> variable
        self._snapshot: tuple[tuple[str, str], ...] = ()
        self._pattern: re.Pattern[str] | None = None
        self._json_plain = True  # no spelling holds a character JSON text escapes
        self._names: dict[str, str] = {}  # what ``current`` hands out: never changed
        self._secret_names: Memo[str, bool] = Memo(1024)  # which variable names are secret
        # (every variable's name, the secret ones): one tuple, replaced whole
        self._variables: tuple[tuple[str, ...], tuple[str, ...]] = ((), ())

    def current(
        self, allowed: Callable[[str], bool]
    ) -> tuple[re.Pattern[str] | None, dict[str, str], bool]:
        """The pattern matching every value (longest first), the variable of each, and
        whether every spelling reads the same in JSON text (``_json_plain``)."""
        environ = os.environ if self.environ is None else self.environ
        found = secret_env.values_of(environ, self._secret_variables(environ), self._named)
        snapshot = tuple(sorted(found.items()))
        with self._lock:
            if snapshot != self._snapshot:
                self._snapshot = snapshot
                for value, name in snapshot:
                    if allowed(value):
                        continue
                    for spelled in _spellings(value):
                        self._seen.setdefault(spelled, name)
                self._pattern, self._names, self._json_plain = matcher(self._seen, _json_plain)
            return self._pattern, self._names, self._json_plain

    def _secret_variables(self, environ: Mapping[str, str]) -> tuple[str, ...]:
        """The secret variables among ``environ``'s, judged again only when its names
        change (asked at every pass: the names are listed, the values read, each time)."""
        names = tuple(environ)
        known, secret = self._variables
        if names != known:
            secret = secret_env.secret_names(names, self._named, known=self._secret_names)
            self._variables = names, secret
        return secret


#: What JSON text (``ensure_ascii=False``) spells otherwise than the string itself.
_JSON_ESCAPED = re.compile(r'["\\\x00-\x1f]')


def _json_plain(text: str) -> bool:
    """Whether ``text`` sits verbatim in the JSON text of any string that holds it."""
    return _JSON_ESCAPED.search(text) is None


def _spellings(value: str) -> list[str]:
    """``value`` as it is, URL-quoted, and escaped once and twice: how it sits in a URL, a
    JSON text, a ``repr`` (``f"{config!r}"`` in an error), or the ``repr`` of an error whose
    message quotes it. A value with no character to escape has one or two spellings."""
    once = [*_escaped(value), repr(value.encode("utf-8", "surrogateescape"))[2:-1]]
    twice = [again for spelled in once for again in _escaped(spelled)]
    quoted = [urllib.parse.quote(value, safe=""), urllib.parse.quote_plus(value, safe="")]
    return list(dict.fromkeys([value, *quoted, *once, *twice]))


def _escaped(text: str) -> list[str]:
    """``text`` inside a JSON string (ASCII or not) and inside a Python ``repr``, quoted by
    ``'`` (quotes escaped: ``\\'``) or by ``"`` (when ``repr`` picks it, ``'`` is not)."""
    return [
        json.dumps(text)[1:-1],
        json.dumps(text, ensure_ascii=False)[1:-1],
        repr(text)[1:-1],
        repr("'\"" + text)[4:-1],  # ``repr`` of a text holding both quotes escapes ``'``
    ]


class Redactor:
    """Replaces secrets in stored copies and finds any that survived.

    ``extra_patterns`` are the user's own formats, ``allow`` the texts that are not secrets
    although a format matches them (an example key), ``env_names`` variables to mask
    besides those named like secrets; ``environ`` stands in for ``os.environ`` (tests).
    """

    def __init__(
        self,
        extra_patterns: Iterable[str] = (),
        allow: Iterable[str] = (),
        *,
        env_names: Iterable[str] = (),
        environ: Mapping[str, str] | None = None,
    ) -> None:
        user = tuple(
            SecretFormat(f"user-pattern-{n + 1}", re.compile(p))
            for n, p in enumerate(extra_patterns)
        )
        self.formats = SECRET_FORMATS + user
        # one search tells most text holds no format's literal, instead of one per format
        literals = sorted({lit for f in self.formats for lit in f.literals}, key=len, reverse=True)
        untold = any(not f.literals for f in self.formats)  # a user's pattern: always tried
        self._literal = None if untold else re.compile("|".join(map(re.escape, literals)))
        self._allow = [re.compile(p) for p in allow]
        self.env = _EnvValues(environ, tuple(env_names))  # read at the first pass
        self.secret_names: Memo[str, bool] = Memo(4096)
        """Which field names carry credentials (a pure function of the name, asked for
        every key of every request and response)."""
        # what the formats (and random tokens) make of a text, and which format a scan finds
        # in it: pure functions of the text, asked again for each text a conversation sends
        # back in every call, and again when the save scans what it writes
        self._masked: Memo[tuple[bool, str], str] = Memo(_MEMO_ENTRIES)
        self._found: Memo[str, str] = Memo(_MEMO_ENTRIES)
        # the field names that hold no secret, each with the secret values it was read
        # under (a pass that reads others asks again): the same few names fill every call
        self.clean_fields: Memo[str, re.Pattern[str]] = Memo(_MEMO_ENTRIES)
        self.sent = SentSecrets(_spellings, self._allow, _json_plain)
        """The secrets this cassette's requests sent (masked there): masked in responses too."""
        self._secrets: Memo[tuple[bool, str], tuple[tuple[str, str], ...]] = Memo(_MEMO_ENTRIES)

    def may_hold_format(self, text: str) -> bool:
        """False when no known format can match ``text`` (it holds none of their literals)."""
        return self._literal is None or self._literal.search(text) is not None

    def masked(self, text: str, *, tokens: bool) -> str:
        """``text`` with every known format masked and, with ``tokens``, every random-looking
        token (remembered for texts up to ``_MEMO_CHARS``)."""
        found = self._masked.get((tokens, text))
        if found is not None:
            return found
        masked = text
        if self.may_hold_format(text):
            for secret in self.formats:
                if secret.may_match(masked):
                    masked = secret.masked(masked)
        if tokens and entropy.has_long_word(masked):
            spans = list(entropy.random_tokens(masked))
            for start, end in reversed(spans):
                masked = f"{masked[:start]}<redacted:{RANDOM_TOKEN}>{masked[end:]}"
        if len(text) <= _MEMO_CHARS:
            self._masked.put((tokens, text), masked)
        return masked

    def secrets_in(self, text: str, *, tokens: bool) -> tuple[tuple[str, str], ...]:
        """Each (value, kind) that ``masked`` masks in ``text``: what a request sent, which a
        response repeating it gets masked too (``SentSecrets``)."""
        found = self._secrets.get((tokens, text))
        if found is not None:
            return found
        secrets: list[tuple[str, str]] = []
        masked = text
        if self.may_hold_format(text):
            for secret in self.formats:
                if secret.may_match(masked):
                    secrets.extend((value, secret.kind) for value in secret.found(masked))
                    masked = secret.masked(masked)
        if tokens and entropy.has_long_word(masked):
            spans = entropy.random_tokens(masked)
            secrets.extend((masked[start:end], RANDOM_TOKEN) for start, end in spans)
        found = tuple(secrets)
        if len(text) <= _MEMO_CHARS:
            self._secrets.put((tokens, text), found)
        return found

    def learn_sent(self, request: Any) -> None:
        """Remember the secrets ``request`` (as an integration built it) holds in a known
        format: the normalized request holds ``<secret>`` where the key rules masked one."""
        self.sent.learn(
            found
            for text in _texts(request)
            if len(text) >= _SHORTEST_SECRET and self.may_hold_format(text)
            for found in self.secrets_in(text, tokens=False)
        )

    def format_found(self, text: str) -> str:
        """The kind of the first known format found in ``text`` that is not allowed, or ``""``."""
        found = self._found.get(text)
        if found is not None:
            return found
        found = ""
        if self.may_hold_format(text):
            for secret in self.formats:
                if secret.may_match(text) and any(
                    not self.allowed(match) for match in secret.found(text)
                ):
                    found = secret.kind
                    break
        if len(text) <= _MEMO_CHARS:
            self._found.put(text, found)
        return found

    def allowed(self, text: str) -> bool:
        return any(allowed.fullmatch(text) for allowed in self._allow)

    # -- masking -----------------------------------------------------------------------------

    def redact_text(self, text: str) -> str:
        """``text`` with every secret value, known format and random-looking token masked."""
        return _Pass(self).text(text, tokens=True)

    def redact(self, value: Any, *, check_names: bool = True) -> Any:
        """A copy of ``value`` with secret-named fields, secret values, known formats and
        random-looking tokens replaced: for stored requests, metadata, traces and errors."""
        return _Pass(self).walk(value, check_names, tokens=True)

    def stored(
        self, request: Any, meta: Any, response: Any
    ) -> tuple[Any, Any, list[SecretFinding]]:
        """A recording as it is kept, in one pass: the request and metadata redacted, and
        what ``find`` refuses in the response (its journal line is then written masked)."""
        return RecordingScan(self).stored(request, meta, response)

    def mask_values(self, value: Any) -> Any:
        """A copy of ``value`` with only the values of secret variables, and what the
        cassette's requests sent, masked."""
        return _Pass(self, formats=False).walk(value, False, tokens=False)

    def mask_response(self, response: Any, *, where: str | None = None) -> Any:
        """``response`` as it is stored and replayed: the values of secret variables, and
        what the cassette's requests sent (``SentSecrets``), masked, also where a stream
        split one across chunks; warns (naming ``where``) when it did.
        Known formats are left for ``find`` to refuse (a response is never reworded)."""
        masking = _Pass(self, formats=False)
        masked = masking.response(response)
        _warn_masked(masking, where)
        return masked

    def redact_response(self, response: Any) -> Any:
        """``response`` with secret values and known formats masked (what ``find`` would
        refuse in it): for a response the user asked to store redacted, or for a journal
        that must not keep a refused one in plain text. A replay returns the masked text."""
        return _Pass(self).response(response)

    # -- the scan ----------------------------------------------------------------------------

    def find(
        self, value: Any, path: str = "$", *, check_names: bool = True
    ) -> Iterator[SecretFinding]:
        """Every secret left in ``value``; ``check_names`` also flags unredacted secret fields.

        Secret values and known formats count; a random-looking token does not (it is masked
        where masking is free, and no proof of a credential in a response)."""
        return _Pass(self).find(value, path, check_names)

    def find_all(self, items: Iterable[tuple[Any, str, bool]]) -> list[SecretFinding]:
        """``find`` over each (value, path, check_names), in one pass (the environment read
        once): a save scans every recording it writes."""
        scan = _Pass(self)
        return [found for value, path, names in items for found in scan.find(value, path, names)]


def _warn_masked(masking: _Pass, where: str | None) -> None:
    """Say which secret variables' values, and which kinds of secret a request of the
    cassette sent, a recorded response held (stored masked); never a value."""
    if where is None or not (masking.masked or masking.echoed):
        return
    said, labels = [], []
    if masking.masked:
        said.append(f"holds the value of {', '.join(f'${n}' for n in sorted(masking.masked))}")
        labels.append("<redacted:env:NAME>")
    if masking.echoed:
        said.append(
            f"repeats a secret a request of this cassette sent ({', '.join(sorted(masking.echoed))})"
        )
        labels.append("<redacted:KIND>")
    read = "let it read the variable itself, or keep it" if masking.masked else "keep it"
    warnings.warn(
        f"chaincassette: a response recorded in {where} {' and '.join(said)}; it is stored "
        f"masked, and this run and every replay get {' or '.join(labels)} in its place. "
        f"If the program needs the value there, {read} in the file in plain text with "
        "allow_secrets=[r'<the value>']",
        SecretMaskedWarning,
        stacklevel=4,  # here, the mask, ``Call.record``, the adapter that recorded
    )


class RecordingScan:
    """The redaction of one recorded call (``Call.record``, then ``Cassette.keep``): the
    secret values read once for both steps, and the response's masking skipped when no
    value can be in it.

    ``text`` is the response's JSON text as ``canonical.json_copy_text`` spelled it: the
    secret values are sought there at once, and only a response where one turns up is
    walked and copied string by string. That rules out exactly what the walk would find:
    JSON text holds every string verbatim but for ``"``, ``\\`` and control characters (a
    value holding one is always walked), and a stream, whose chunks may split a value, is
    always walked too. (A known format is sought by the walk of ``find``: a search of the
    text for the formats' literals costs more than that walk.)

    Given the call's ``request`` (normalized) and ``source`` (as its integration built it),
    the request is redacted before any part of the response is masked, and the secrets it
    held learned (``Redactor.sent``): a response repeating one is masked as it was there.
    """

    def __init__(
        self,
        redactor: Redactor,
        text: str | None = None,
        *,
        request: Any = None,
        source: Any = None,
    ) -> None:
        self._finding = _Pass(redactor)
        self.text = text
        self._request, self._source = request, source
        self._stored_request: Any = None
        self._unmasked: Any = None  # the response ``mask_response`` handed back as it was

    def learn(self) -> None:
        """Redact the call's request now (once) and learn the secrets it sent."""
        if self._request is None or self._stored_request is not None:
            return
        scan, redactor = self._finding, self._finding.redactor
        scan.learned, scan.dropped = [], False
        self._stored_request = scan.walk(self._request, True, tokens=True)
        learned, scan.learned = scan.learned, None
        if learned:
            redactor.sent.learn(learned)
        if scan.dropped and self._source is not None:  # a key format the key rules masked
            redactor.learn_sent(self._source)

    def masking(self) -> _Pass:
        """A pass that masks what is masked in a response: the secret values and what the
        cassette's requests sent (this call's included)."""
        self.learn()
        return _Pass(self._finding.redactor, formats=False, env=self._finding.env)

    def mask_values(self, value: Any) -> Any:
        """``Redactor.mask_values`` with this call's request learned first (a stream's chunk)."""
        return self.masking().walk(value, False, tokens=False)

    def mask_response(self, response: Any, *, where: str | None = None) -> Any:
        """``Redactor.mask_response``; ``response`` itself (a fresh copy the caller owns)
        when no secret value can be in it."""
        masking = self.masking()
        if masking.nothing_to_mask() or (
            not _has_chunks(response) and masking.values_absent_in(self.text)
        ):
            self._unmasked = response
            return response
        masked = masking.response(response)
        _warn_masked(masking, where)
        return masked

    def text_of(self, response: Any) -> str | None:
        """``response``'s JSON text, if it is the response ``mask_response`` handed back
        unmasked (its text is then the one this scan was given), else ``None``."""
        return self.text if response is self._unmasked and response is not None else None

    def stored(
        self, request: Any, meta: Any, response: Any
    ) -> tuple[Any, Any, list[SecretFinding]]:
        """``Redactor.stored``: ``response`` must be the one ``mask_response`` returned."""
        scan = self._finding
        if request is self._request and self._stored_request is not None:
            kept = self._stored_request
        else:
            kept = scan.walk(request, True, tokens=True)
        return (
            kept,
            scan.walk(meta, True, tokens=True),
            list(scan.find(response, "response", False)),
        )


def _texts(value: Any) -> Iterator[str]:
    """Every string in ``value`` (dicts, lists and tuples), keys included."""
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            yield item
        elif isinstance(item, dict):
            pending.extend(item.keys())
            pending.extend(item.values())
        elif isinstance(item, list | tuple):
            pending.extend(item)


def _has_chunks(response: Any) -> bool:
    """Whether ``response`` is a stream's (a secret value may be split across its chunks)."""
    return isinstance(response, dict) and isinstance(response.get("chunks"), list)


#: What the memo of clean field names holds for a pass that read no secret value.
_NO_VALUES = re.compile(r"(?!)")


class _Pass:
    """One redaction or scan: the secret values read once, what it masked remembered."""

    def __init__(
        self,
        redactor: Redactor,
        *,
        formats: bool = True,
        env: tuple[re.Pattern[str] | None, dict[str, str], bool] | None = None,
    ) -> None:
        self.redactor = redactor
        self.formats = redactor.formats if formats else ()
        self.env = redactor.env.current(redactor.allowed) if env is None else env
        self.values, self.names, self._values_plain = self.env
        self.masked: set[str] = set()
        sent: Sent = redactor.sent.current()
        self.sent, self.sent_kinds, self._sent_plain = sent
        self.echoed: set[str] = set()
        """The kinds of what the cassette's requests sent that this pass masked."""
        self.learned: list[tuple[str, str]] | None = None
        """Set (``RecordingScan.learn``): the secrets a walk of a request masks, collected."""
        self.dropped = False
        """Whether that walk met ``<secret>`` (a key format the key rules masked)."""
        self._read = _NO_VALUES if self.values is None else self.values
        self._clean_field = redactor.clean_fields.get

    def nothing_to_mask(self) -> bool:
        """Whether this pass knows no secret value and nothing a request sent."""
        return self.values is None and self.sent is None

    def values_absent_in(self, text: str | None) -> bool:
        """Whether no string of the value whose JSON text is ``text`` holds a secret value
        or what a request sent (``RecordingScan``)."""
        if text is None:
            return self.nothing_to_mask()
        if self.values is not None and (not self._values_plain or self.values.search(text)):
            return False
        return self.sent is None or (self._sent_plain and self.sent.search(text) is None)

    def secret_name(self, name: Any) -> bool:
        key = str(name)
        found = self.redactor.secret_names.get(key)
        if found is None:
            found = is_secret_name(key)
            self.redactor.secret_names.put(key, found)
        return found

    def value_label(self, match: re.Match[str]) -> str:
        name = self.names[match.group()]
        self.masked.add(name)
        return f"<redacted:env:{name}>"

    def noted(self, splits: Iterable[_Split]) -> None:
        """Remember what ``splits`` mask (for the warning)."""
        for split in splits:
            if split.variable:
                self.masked.add(split.variable)
            elif split.sent:
                self.echoed.add(split.kind)

    def spellings(self, label: str) -> Iterator[str]:
        """How the value masked as ``<redacted:LABEL>`` (``env:NAME``, or a kind what a
        request sent was masked as) may be spelled."""
        if label.startswith("env:"):
            return (spelled for spelled, name in self.names.items() if name == label[4:])
        return (spelled for spelled, kind in self.sent_kinds.items() if kind == label)

    def noted_label(self, label: str) -> None:
        if label.startswith("env:"):
            self.masked.add(label[4:])
        else:
            self.echoed.add(label)

    def sent_label(self, match: re.Match[str]) -> str:
        kind = self.sent_kinds[match.group()]
        self.echoed.add(kind)
        return f"<redacted:{kind}>"

    def text(self, text: str, *, tokens: bool) -> str:
        if self.values is not None and self.values.search(text):
            text = self.values.sub(self.value_label, text)
        if self.sent is not None and self.sent.search(text):
            text = self.sent.sub(self.sent_label, text)
        learned = self.learned  # a request's walk: what its masking masks is collected
        if learned is not None and "<secret>" in text:
            self.dropped = True  # a key format the key rules masked (``RecordingScan.learn``)
        if len(text) < _SHORTEST_SECRET or not self.formats:  # values only: no tokens either
            return text
        masked = self.redactor.masked(text, tokens=tokens)
        if learned is not None and masked is not text and masked != text:
            learned.extend(self.redactor.secrets_in(text, tokens=tokens))
        return masked

    def response(self, response: Any) -> Any:
        """A response masked (no names, no random tokens), also across a stream's chunks."""
        masked = self.walk(response, False, tokens=False)
        chunks = masked.get("chunks") if isinstance(masked, dict) else None
        if isinstance(chunks, list) and (
            self.values is not None or self.sent is not None or self.formats
        ):
            masked = {**masked, "chunks": _mask_across(response["chunks"], chunks, self)}
        return masked

    def split_secrets(self, whole: str) -> list[_Split]:
        """Each secret in ``whole`` (what one place of a stream's chunks reads, joined), in
        order; one that overlaps an earlier one is left out."""
        found: list[_Split] = []
        if self.values is not None:
            for match in self.values.finditer(whole):
                name = self.names[match.group()]
                found.append(_Split(*match.span(), f"the value of ${name}", name))
        if self.sent is not None:
            for match in self.sent.finditer(whole):
                kind = self.sent_kinds[match.group()]
                found.append(_Split(*match.span(), kind, sent=True))
        if len(whole) >= _SHORTEST_SECRET and self.formats and self.redactor.may_hold_format(whole):
            for secret in self.formats:
                if secret.may_match(whole):
                    found.extend(
                        _Split(start, end, secret.kind)
                        for start, end in secret.spans(whole)
                        if not self.redactor.allowed(whole[start:end])
                    )
        kept: list[_Split] = []
        for split in sorted(found):
            if not kept or split.start >= kept[-1].end:
                kept.append(split)
        return kept

    def field(self, name: Any) -> tuple[Any, str]:
        """A field name as stored, and what secret it holds (``""``): a value or a key used
        as a name (a schema's property, a metadata key) is masked like a value, random
        tokens aside (ids and hashes name fields legitimately)."""
        if not isinstance(name, str) or self._clean_field(name) is self._read:
            return name, ""
        kind = self._kind(name)
        if not kind:
            if self.formats:  # a pass of values only has not judged it by format
                self.redactor.clean_fields.put(name, self._read)
            return name, ""
        return self.text(name, tokens=False), kind

    def walk(self, value: Any, check_names: bool, *, tokens: bool) -> Any:
        if isinstance(value, dict):
            out = {}
            clean, read = self._clean_field, self._read  # asked of every name: inlined
            for k, v in value.items():
                stored = k if clean(k) is read else self.field(k)[0]
                if check_names and self.secret_name(k) and _has_content(v):
                    out[stored] = REDACTED
                else:
                    names = check_names and k not in SEMANTIC_FIELDS
                    out[stored] = self.walk(v, names, tokens=tokens and k not in OPAQUE_FIELDS)
            return out
        if isinstance(value, list):
            return [self.walk(v, check_names, tokens=tokens) for v in value]
        if isinstance(value, str):
            return self.text(value, tokens=tokens)
        return value

    def find(self, value: Any, path: str, check_names: bool) -> Iterator[SecretFinding]:
        """Every secret left in ``value``: first walked without paths (nearly every value
        holds none, and then no path text is built), then again naming where."""
        split = list(self._split_found(value["chunks"], path)) if _has_chunks(value) else []
        if self.clean(value, check_names):
            return iter(split)
        return itertools.chain(self._found(value, path, check_names), split)

    def _split_found(self, chunks: list[Any], path: str) -> Iterator[SecretFinding]:
        """The secrets a stream cut across its chunks (no piece holds one whole)."""
        for where, indexes in _places(chunks).items():
            texts = [_at(chunks[index], where) for index in indexes]
            if _growing(texts):
                continue  # the last piece holds the whole text: read on its own
            for split in self.split_secrets("".join(texts)):
                if not split.sent and _crosses((split.start, split.end), texts):
                    named = (self.field(step)[0] for step in where)  # never a secret name
                    place = ".".join(str(step) for step in named)
                    yield SecretFinding(f"{path}.chunks[*].{place} (across chunks)", split.kind)

    def clean(self, value: Any, check_names: bool) -> bool:
        """Whether ``find`` finds nothing in ``value``."""
        if isinstance(value, dict):
            for k, v in value.items():
                if check_names and self.secret_name(k) and _has_content(v) and v != REDACTED:
                    return False
                if self._clean_field(k) is not self._read and self.field(k)[1]:
                    return False
                if not self.clean(v, check_names and k not in SEMANTIC_FIELDS):
                    return False
            return True
        if isinstance(value, list):
            return all(self.clean(v, check_names) for v in value)
        return not isinstance(value, str) or not self._kind(value)

    def _found(self, value: Any, path: str, check_names: bool) -> Iterator[SecretFinding]:
        if isinstance(value, dict):
            for k, v in value.items():
                kind = self.field(k)[1]  # a name holding a secret is never printed
                child = f"{path}.<a field name>" if kind else f"{path}.{k}"
                if kind:
                    yield SecretFinding(child, kind)
                if check_names and self.secret_name(k) and _has_content(v) and v != REDACTED:
                    yield SecretFinding(
                        child, "field named like a secret" if kind else f"field named {k!r}"
                    )
                else:
                    yield from self._found(v, child, check_names and k not in SEMANTIC_FIELDS)
        elif isinstance(value, list):
            for index, v in enumerate(value):
                yield from self._found(v, f"{path}[{index}]", check_names)
        elif isinstance(value, str):
            kind = self._kind(value)
            if kind:
                yield SecretFinding(path, kind)

    def _kind(self, text: str) -> str:
        """What secret ``text`` holds (a variable's value first), or ``""``."""
        if self.values is not None:
            match = self.values.search(text)
            if match is not None:
                return f"the value of ${self.names[match.group()]}"
        if len(text) < _SHORTEST_SECRET or not self.formats:
            return ""
        return self.redactor.format_found(text)


class _Split(NamedTuple):
    """A secret in the joined pieces of a stream's place: where, its kind, the variable
    whose value it is (``""``: a known format), and whether a request of the cassette sent
    it (masked, never refused: ``SentSecrets``)."""

    start: int
    end: int
    kind: str
    variable: str = ""
    sent: bool = False

    @property
    def label(self) -> str:
        return f"<redacted:env:{self.variable}>" if self.variable else f"<redacted:{self.kind}>"


def _places(chunks: list[Any]) -> dict[tuple[Any, ...], list[int]]:
    """Each place of a stream's chunks (``message.data.content``) and the chunks holding a
    non-empty string there, in order: the pieces a stream cut one text into."""
    places: dict[tuple[Any, ...], list[int]] = {}
    for index, chunk in enumerate(chunks):
        for where, text in _strings(chunk, ()):
            if text:
                places.setdefault(where, []).append(index)
    return {where: indexes for where, indexes in places.items() if len(indexes) > 1}


def _mask_across(raw: list[Any], chunks: list[Any], masking: _Pass) -> list[Any]:
    """``chunks`` (``raw`` as walked, each piece masked alone) with each secret (a value,
    and a known format when ``masking`` masks them) that a stream split across them
    masked: the strings at one place of each chunk are read as one text. A place whose
    pieces each hold the text so far (growing: ``raw``'s are prefixes of the next) has
    the secrets of its last piece masked in each earlier one, where they begin."""
    edits: dict[tuple[int, tuple[Any, ...]], str] = {}
    for where, indexes in _places(raw).items():
        grown = _masked_prefixes([_at(raw[index], where) for index in indexes], masking)
        if grown is not None:
            edits.update({(index, where): text for index, text in zip(indexes, grown, strict=True)})
    for where, indexes in _places(chunks).items():
        if any((index, where) in edits for index in indexes):
            continue
        texts = [_at(chunks[index], where) for index in indexes]
        masked = _masked_pieces(texts, masking)
        if masked is not None:
            edits.update(
                {(index, where): text for index, text in zip(indexes, masked, strict=True)}
            )
    if not edits:
        return chunks
    return [
        _replaced(chunk, (), {w: t for (i, w), t in edits.items() if i == index})
        for index, chunk in enumerate(chunks)
    ]


def _growing(texts: list[str]) -> bool:
    """Whether each of ``texts`` (a place's pieces) is the start of the next."""
    return all(later.startswith(text) for text, later in itertools.pairwise(texts))


#: A secret variable's value (``env:NAME``), or what a request sent (its kind), masked.
_VALUE_LABEL = re.compile(r"<redacted:([^>]+)>")


def _masked_prefixes(texts: list[str], masking: _Pass) -> list[str] | None:
    """``texts`` (a place's pieces) with each secret of the last masked in every earlier
    piece that reaches it (one holding only its start gets the label there too), when
    each is the start of the last; ``None`` when they are not. The last may hold a value
    masked already (a stream masks each chunk as it goes), where an earlier piece holds
    only the start of that value."""
    last = texts[-1]
    splits = masking.split_secrets(last)
    masked = []
    for text in texts:
        start = text if last.startswith(text) else _start_of_masked(text, last, masking)
        if start is None:
            return None
        kept, at = [], 0
        for split in splits:
            if split.start >= len(start):
                break
            kept += [start[at : split.start], split.label]
            at = min(split.end, len(start))
        masked.append("".join([*kept, start[at:]]))
    masking.noted(splits)
    return masked


def _start_of_masked(text: str, last: str, masking: _Pass) -> str | None:
    """``text`` as the start of ``last``, if it is one but for the start of a value that
    ``last`` holds masked: that start replaced by the label, else ``None``."""
    pairs = enumerate(zip(text, last, strict=False))
    common = next((n for n, (a, b) in pairs if a != b), min(len(text), len(last)))
    label = _VALUE_LABEL.match(last, common)
    if label is None:
        return None
    cut = text[common:]
    if not any(spelled.startswith(cut) for spelled in masking.spellings(label[1])):
        return None
    masking.noted_label(label[1])
    return text[:common] + label.group()


def _masked_pieces(texts: list[str], masking: _Pass) -> list[str] | None:
    """``texts`` (one string cut in pieces) with every secret masked, the label in the piece
    where it starts; ``None`` when none crosses a cut (each piece is masked on its own)."""
    splits = masking.split_secrets("".join(texts))
    spans = [(split.start, split.end) for split in splits]
    if not any(_crosses(span, texts) for span in spans):
        return None
    masking.noted(splits)
    labels = {split.start: split.label for split in splits}
    masked, offset = [], 0
    for text in texts:
        kept = []
        for position, char in enumerate(text, start=offset):
            inside = next((s for s in spans if s[0] <= position < s[1]), None)
            if inside is None:
                kept.append(char)
            elif position == inside[0]:
                kept.append(labels[position])
        masked.append("".join(kept))
        offset += len(text)
    return masked


def _strings(value: Any, where: tuple[Any, ...]) -> list[tuple[tuple[Any, ...], str]]:
    """Each string in ``value`` and where (its keys and indexes); a loop, not recursion of
    generators: the save reads every chunk of every stream it writes."""
    found, pending = [], [(where, value)]
    while pending:
        here, item = pending.pop()
        if isinstance(item, str):
            found.append((here, item))
        elif isinstance(item, dict):
            pending.extend(((*here, k), v) for k, v in item.items())
        elif isinstance(item, list):
            pending.extend(((*here, n), v) for n, v in enumerate(item))
    return found


def _at(value: Any, where: tuple[Any, ...]) -> str:
    for step in where:
        value = value[step]
    text: str = value
    return text


def _crosses(span: tuple[int, int], texts: list[str]) -> bool:
    """Whether ``span`` of the joined ``texts`` covers more than one of them."""
    offset = 0
    for text in texts:
        if offset <= span[0] and span[1] <= offset + len(text):
            return False
        offset += len(text)
    return True


def _replaced(value: Any, where: tuple[Any, ...], edits: dict[tuple[Any, ...], str]) -> Any:
    if not edits:
        return value
    if isinstance(value, dict):
        return {k: _replaced(v, (*where, k), edits) for k, v in value.items()}
    if isinstance(value, list):
        return [_replaced(v, (*where, n), edits) for n, v in enumerate(value)]
    return edits.get(where, value)


def _has_content(value: Any) -> bool:
    return isinstance(value, str) and bool(value) and not value.startswith("<redacted")
