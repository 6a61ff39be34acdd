"""Token counts found in recorded responses, for "tokens not spent thanks to replay".

A recording stores its count in ``meta.tokens`` when the provider reported usage (for a
stream: its final usage, which OpenAI sends only when asked). A model call without one
is *unknown*, never 0: ``chaincassette ls`` and the pytest summary say so.
"""

from __future__ import annotations

from typing import Any

_TOTAL_FIELDS = ("total_tokens", "total_token_count")
_PART_FIELDS = (
    ("input_tokens", "output_tokens"),
    ("prompt_tokens", "completion_tokens"),
)


def count_tokens(response: Any, _depth: int = 0) -> int:
    """Total tokens in the first usage block found in ``response`` (0 when none)."""
    if _depth > 6:
        return 0
    if isinstance(response, dict):
        for name in _TOTAL_FIELDS:
            value = response.get(name)
            if isinstance(value, int) and not isinstance(value, bool):
                return value
        for first, second in _PART_FIELDS:
            a, b = response.get(first), response.get(second)
            if isinstance(a, int) and isinstance(b, int):
                return a + b
        children = response.values()
    elif isinstance(response, list):
        children = response  # type: ignore[assignment]
    else:
        return 0
    total = 0
    for child in children:
        found = count_tokens(child, _depth + 1)
        if found and not isinstance(response, list):
            return found
        total += found
    return total


#: Request kinds that spend tokens; tools, ``@recorded`` functions and embeddings are not counted.
MODEL_CALL_KINDS = frozenset({"chat", "completion"})


def unknown_usage(request: Any, response: Any, meta: Any) -> int:
    """1 for a recorded model call (not an error, nor one the program cancelled:
    ``chaincassette.cancellation``) whose provider reported no usage, else 0."""
    kind = request.get("kind") if isinstance(request, dict) else None
    if not isinstance(kind, str) or kind not in MODEL_CALL_KINDS:  # a hand-edited file: any value
        return 0
    if isinstance(response, dict) and set(response) in ({"error"}, {"cancelled"}):
        return 0
    tokens = meta.get("tokens") if isinstance(meta, dict) else None
    return 0 if isinstance(tokens, int) and not isinstance(tokens, bool) else 1
