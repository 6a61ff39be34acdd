"""Which environment variables hold secrets, and which of their values are worth masking.

A key of a format no pattern knows still has a name the process gave it: whatever the
program reads from ``ACME_API_KEY`` may turn up in a prompt, a tool result or an error, and
its exact value is the surest way to find it there. ``secret_values`` names every value
the redactor masks (``chaincassette.redact``); nothing here reads a file or keeps state.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from .memo import Memo

#: Provider variables masked whatever the name rules say (most also match them).
PROVIDER_VARIABLES = frozenset(
    {
        "OPENAI_API_KEY",
        "AZURE_OPENAI_API_KEY",
        "AZURE_OPENAI_KEY",
        "AZURE_OPENAI_AD_TOKEN",
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_AUTH_TOKEN",
        "GOOGLE_API_KEY",
        "GEMINI_API_KEY",
        "MISTRAL_API_KEY",
        "GROQ_API_KEY",
        "COHERE_API_KEY",
        "CO_API_KEY",
        "XAI_API_KEY",
        "DEEPSEEK_API_KEY",
        "TOGETHER_API_KEY",
        "FIREWORKS_API_KEY",
        "OPENROUTER_API_KEY",
        "PERPLEXITY_API_KEY",
        "PPLX_API_KEY",
        "VOYAGE_API_KEY",
        "NVIDIA_API_KEY",
        "WATSONX_APIKEY",
        "HF_TOKEN",
        "HUGGING_FACE_HUB_TOKEN",
        "HUGGINGFACEHUB_API_TOKEN",
        "REPLICATE_API_TOKEN",
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_BEARER_TOKEN_BEDROCK",
        "LANGSMITH_API_KEY",
        "LANGCHAIN_API_KEY",
        "PINECONE_API_KEY",
        "TAVILY_API_KEY",
        "SERPAPI_API_KEY",
        "GITHUB_TOKEN",
        "GH_TOKEN",
        "GITLAB_TOKEN",
        "SLACK_BOT_TOKEN",
        "STRIPE_SECRET_KEY",
    }
)

#: ``*_API_KEY``, ``*_TOKEN``, ``*_SECRET``, ``*_KEY`` (``AZURE_SEARCH_ADMIN_KEY``),
#: ``*APIKEY``, ``*_PAT``, and anything holding ``PASSWORD``, ``PASSWD`` or ``SECRET``.
_SECRET_NAME = re.compile(
    r"(?:^|_)(?:API_?KEY|TOKEN|SECRET|KEY|PAT|PASSPHRASE)$|PASSWORD|PASSWD|SECRET|APIKEY$"
)

#: A value a name rule found must be at least this long to be masked (shorter ones, like
#: ``test`` or ``EMPTY``, are placeholders, and masking them would mask every such word).
MIN_CHARS = 8
#: A value the user named (``redact_env=[...]``) is masked from this length on.
MIN_CHARS_NAMED = 4
#: From this length on any value is masked; shorter ones only if they look like a key
#: (a digit, or upper and lower case): ``postgres`` or ``not-needed`` is a word, not a key.
ANY_VALUE_CHARS = 20


def is_secret_variable(name: str) -> bool:
    """True for ``ACME_API_KEY``, ``SLACK_BOT_TOKEN``, ``DB_PASSWORD``, ``OPENAI_API_KEY``;
    false for ``TOKENIZERS_PARALLELISM``, ``PATH`` or ``HF_TOKEN_PATH``."""
    upper = name.upper()
    return upper in PROVIDER_VARIABLES or bool(_SECRET_NAME.search(upper))


def worth_masking(value: str, *, named: bool = False) -> bool:
    """Whether ``value`` is specific enough that every occurrence of it is the secret."""
    text = value.strip()
    if len(text) < (MIN_CHARS_NAMED if named else MIN_CHARS):
        return False
    if named or len(text) >= ANY_VALUE_CHARS:
        return True
    if text.isdigit():  # a port, a count, a date: digits alone are everywhere
        return False
    has_digit = any(c.isdigit() for c in text)
    return has_digit or (any(c.isupper() for c in text) and any(c.islower() for c in text))


def secret_values(
    environ: Mapping[str, str], named: Iterable[str] = (), *, known: Memo[str, bool] | None = None
) -> dict[str, str]:
    """Each value worth masking that ``environ`` holds under a secret name (or one of
    ``named``), mapped to the first such variable's name. ``known`` remembers which names
    are secret (for a caller that asks at every redaction: only values are read again)."""
    return values_of(environ, secret_names(environ, named, known=known), named)


def secret_names(
    names: Iterable[str], named: Iterable[str] = (), *, known: Memo[str, bool] | None = None
) -> tuple[str, ...]:
    """Which of ``names`` are secret variables (or one of ``named``), sorted."""
    wanted = {n.upper() for n in named}
    secret = []
    for name in names:
        flag = None if known is None else known.get(name)
        if flag is None:
            flag = name.upper() in wanted or is_secret_variable(name)
            if known is not None:
                known.put(name, flag)
        if flag:
            secret.append(name)
    return tuple(sorted(secret))


def values_of(
    environ: Mapping[str, str], names: Iterable[str], named: Iterable[str] = ()
) -> dict[str, str]:
    """``secret_values`` of the variables ``names`` (``secret_names``, sorted)."""
    wanted = {n.upper() for n in named}
    found: dict[str, str] = {}
    for name in names:
        value = environ.get(name)
        if value is None or not worth_masking(value, named=name.upper() in wanted):
            continue
        found.setdefault(value.strip(), name)
    return found
