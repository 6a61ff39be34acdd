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

#: Known credential formats, most specific first.
DEFAULT_SECRET_PATTERNS: dict[str, str] = {
    "anthropic-key": r"sk-ant-[A-Za-z0-9_\-]{20,}",
    "openai-key": r"sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}",
    "google-key": r"AIza[0-9A-Za-z_\-]{35}",
    "groq-key": r"gsk_[A-Za-z0-9]{20,}",
    "xai-key": r"xai-[A-Za-z0-9]{20,}",
    "huggingface-token": r"hf_[A-Za-z0-9]{30,}",
    "github-token": r"gh[pousr]_[A-Za-z0-9]{36,}",
    "aws-access-key": r"(?:AKIA|ASIA)[0-9A-Z]{16}",
    "jwt": r"eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}",
    "bearer-token": r"(?i:bearer)\s+[A-Za-z0-9._~+/=\-]{16,}",
}

_SECRET_NAME = re.compile(
    r"(?i)(?:^|[_\-.])(?:api[_\-]?key|apikey|secret|client[_\-]?secret|password|passwd|"
    r"authorization|proxy[_\-]authorization|bearer|credentials?|cookie|set[_\-]cookie|"
    r"(?:access|refresh|id|session|auth|api|bearer)[_\-]?token|token|"
    r"(?:secret|private|signing|encryption)[_\-]?key|x[_\-]api[_\-]key)$"
)


def is_secret_name(name: str) -> bool:
    """True for field names that carry credentials (``api_key``, ``Authorization``, …)."""
    return bool(_SECRET_NAME.search(name))


@dataclass(frozen=True)
class SecretFinding:
    """Where a secret was found: a JSON path and the kind of secret."""

    path: str
    kind: str


class Redactor:
    """Replaces secrets in stored copies and finds any that survived."""

    def __init__(self, extra_patterns: Iterable[str] = ()) -> None:
        patterns = dict(DEFAULT_SECRET_PATTERNS)
        for index, pattern in enumerate(extra_patterns):
            patterns[f"user-pattern-{index + 1}"] = pattern
        self._patterns = [(kind, re.compile(p)) for kind, p in patterns.items()]
        self._combined = re.compile("|".join(f"(?:{p})" for p in patterns.values()))

    def redact_text(self, text: str) -> str:
        if not self._combined.search(text):
            return text
        for kind, pattern in self._patterns:
            text = pattern.sub(f"<redacted:{kind}>", text)
        return text

    def redact(self, value: Any) -> Any:
        """A copy of ``value`` with secret-named fields and known key formats replaced."""
        if isinstance(value, dict):
            return {
                k: (REDACTED if is_secret_name(str(k)) and _has_content(v) else self.redact(v))
                for k, v in value.items()
            }
        if isinstance(value, list):
            return [self.redact(v) for v in value]
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
                    yield from self.find(v, child, check_names=check_names)
        elif isinstance(value, list):
            for index, v in enumerate(value):
                yield from self.find(v, f"{path}[{index}]", check_names=check_names)
        elif isinstance(value, str) and self._combined.search(value):
            for kind, pattern in self._patterns:
                if pattern.search(value):
                    yield SecretFinding(path, kind)
                    return


def _has_content(value: Any) -> bool:
    return isinstance(value, str) and bool(value) and not value.startswith("<redacted")
