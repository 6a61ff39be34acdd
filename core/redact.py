"""Secrets never reach disk: redaction of stored copies and the scan before every write.

Redaction touches only what is *stored* for humans (requests, metadata); the key is
computed before it and recorded responses are never rewritten, because a rewritten
response would replay differently and make the next request miss.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

REDACTED = "<redacted>"

_START = r"(?<![A-Za-z0-9_\-])"  # a key starts a token: "task-management" holds no "sk-…"
_HAS_DIGIT = (
    r"(?=[A-Za-z0-9_\-]*[0-9])"  # real keys mix digits in; slugs and placeholders rarely do
)

#: Known credential formats, most specific first.
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

#: Literal text every default pattern needs: a fast ``in`` test before the regexes (which
#: cannot use their literal-prefix speed-up behind a look-behind) keeps key computation cheap.
_LITERALS = (
    "sk-", "AIza", "gsk_", "xai-", "hf_", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "AKIA", "ASIA", "eyJ",
    "earer", "EARER",
)  # fmt: skip


def might_hold_secret(text: str) -> bool:
    """False when no default secret pattern can match ``text`` (most text, cheaply)."""
    return any(literal in text for literal in _LITERALS) or (
        "=" in text and ("?" in text or "&" in text)
    )


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
    snake = _CAMEL.sub("_", name).lower().replace("-", "_").replace(".", "_")
    if snake in _SECRET_EXACT:
        return True
    return any(snake == s or snake.endswith("_" + s) for s in _SECRET_SUFFIXES)


@dataclass(frozen=True)
class SecretFinding:
    """Where a secret was found: a JSON path and the kind of secret."""

    path: str
    kind: str


def _compiled(
    extra_patterns: tuple[str, ...], allow: tuple[str, ...]
) -> tuple[list[re.Pattern[str]], list[tuple[str, re.Pattern[str]]], re.Pattern[str]]:
    """The patterns of a redactor (``re`` keeps the compiled ones it has seen)."""
    patterns = dict(DEFAULT_SECRET_PATTERNS)
    for index, pattern in enumerate(extra_patterns):
        patterns[f"user-pattern-{index + 1}"] = pattern
    return (
        [re.compile(p) for p in allow],
        [(kind, re.compile(p)) for kind, p in patterns.items()],
        re.compile("|".join(f"(?:{p})" for p in patterns.values())),
    )


class Redactor:
    """Replaces secrets in stored copies and finds any that survived."""

    def __init__(self, extra_patterns: Iterable[str] = (), allow: Iterable[str] = ()) -> None:
        extra_patterns = tuple(extra_patterns)
        self._precheck = not extra_patterns
        self._allow, self._patterns, self._combined = _compiled(extra_patterns, tuple(allow))

    def _may_match(self, text: str) -> bool:
        return (not self._precheck or might_hold_secret(text)) and bool(self._combined.search(text))

    def redact_text(self, text: str) -> str:
        if not self._may_match(text):
            return text
        for kind, pattern in self._patterns:
            text = pattern.sub(f"<redacted:{kind}>", text)
        return text

    def redact(self, value: Any, *, check_names: bool = True) -> Any:
        """A copy of ``value`` with secret-named fields and known key formats replaced."""
        if isinstance(value, dict):
            return {
                k: (
                    REDACTED
                    if check_names and is_secret_name(str(k)) and _has_content(v)
                    else self.redact(v, check_names=check_names and k not in SEMANTIC_FIELDS)
                )
                for k, v in value.items()
            }
        if isinstance(value, list):
            return [self.redact(v, check_names=check_names) for v in value]
        if isinstance(value, str):
            return self.redact_text(value)
        return value

    def find(
        self, value: Any, path: str = "$", *, check_names: bool = True
    ) -> Iterator[SecretFinding]:
        """Every secret left in ``value``; ``check_names`` also flags unredacted secret fields."""
        if isinstance(value, dict):
            for k, v in value.items():
                child = f"{path}.{k}"
                if check_names and is_secret_name(str(k)) and _has_content(v) and v != REDACTED:
                    yield SecretFinding(child, f"field named {k!r}")
                else:
                    names = check_names and k not in SEMANTIC_FIELDS
                    yield from self.find(v, child, check_names=names)
        elif isinstance(value, list):
            for index, v in enumerate(value):
                yield from self.find(v, f"{path}[{index}]", check_names=check_names)
        elif isinstance(value, str) and self._may_match(value):
            for kind, pattern in self._patterns:
                for match in pattern.finditer(value):
                    if not any(allowed.fullmatch(match.group()) for allowed in self._allow):
                        yield SecretFinding(path, kind)
                        return


def _has_content(value: Any) -> bool:
    return isinstance(value, str) and bool(value) and not value.startswith("<redacted")
