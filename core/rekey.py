"""Which recordings made by older key rules can take this version's keys (``upgrade``).

A recording is stored with the normalized request it was made for, so the key the current
rules give a request is usually theirs to compute from it: a change of what the key reads
of a stored field (media by content, whole numbers of real-valued parameters) applies to the
stored request as well as to the program's next one. It cannot when the change is in what
an integration puts in the request, because the stored request then lacks what the new
rules read: such a recording keeps the rules that keyed it (and replays by them, see
``Cassette.begin``) until it is recorded again. ``blocker`` names why, per rule version.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

from . import keyrules, media
from .canonical import canonical_json, key_of
from .normalize import is_tool_result

Blocker = Callable[[dict[str, Any]], str | None]


def rekeyed(request: dict[str, Any], key: str, rules: int) -> tuple[str, int, str | None]:
    """(key, rules, why not current) of a stored recording after an upgrade: its key by the
    current rules when they can be computed from ``request``, else by the rules it has
    (rules 1: what they make of ``request``, for keys made before rules had versions)."""
    current = keyrules.KEY_RULES_VERSION
    if rules == current:
        return key, rules, None
    if "<redacted" in canonical_json(request):
        return key, rules, "it holds a redacted value, so its key cannot be computed again"
    if key_of(request, rules) != key and rules > 1:
        return key, rules, f"its stored key is not what key rules {rules} make of its request"
    for version in range(rules + 1, current + 1):
        for blocker in _BLOCKERS.get(version, ()):
            why = blocker(request)
            if why is not None:
                return key_of(request, rules), rules, why
    return key_of(request, current), current, None


def _llm_string_only(request: dict[str, Any]) -> str | None:
    """Rules 2 read a LangChain model's own fields where its llm_string names no model: such
    a request stored the model's type (``chat-ollama``) where its name goes."""
    params = request.get("params")
    kind = params.get("_type") if isinstance(params, dict) else None
    if kind is not None and request.get("model") == kind:
        return (
            "its request was built from LangChain's llm_string alone, which names neither the "
            "model nor its parameters; key rules 2 read them from the model: re-record it"
        )
    return None


#: Integrations whose provider matches tool results by position (rules 2 keep their order).
_POSITIONAL_CLASSES = ("langchain_google_genai", "langchain_ollama", "llama_index.llms.ollama")


def _parallel_results(request: dict[str, Any]) -> str | None:
    """Rules 1 sorted parallel tool results, so the stored order may not be the order sent;
    rules 2 key the order sent where the provider matches results by position."""
    messages = request.get("messages")
    if not isinstance(messages, list) or not any(
        is_tool_result(a) and is_tool_result(b) for a, b in itertools.pairwise(messages)
    ):
        return None
    source = str(request.get("model_class") or "")
    if source and not any(name in source for name in _POSITIONAL_CLASSES):
        return None
    return (
        "key rules 1 stored its parallel tool results sorted, and key rules 2 key the order "
        "a provider that matches them by position was sent: re-record it"
    )


def _whole_number_args(request: dict[str, Any]) -> str | None:
    """Rules 2 key an int given to a float parameter of an ``@recorded`` function as that
    float; the stored arguments do not say which parameters take floats."""
    args = request.get("args")
    if not (request.get("kind") == "call" and isinstance(args, dict)):
        return None
    if any(type(value) is int for value in args.values()):
        return (
            "its arguments hold whole numbers, which key rules 2 key as floats for a float "
            "parameter (which parameters are is not stored): re-record it"
        )
    return None


def _local_file_by_path(request: dict[str, Any]) -> str | None:
    """Rules 3 key a media block naming a local file by the hash of its bytes, which the
    integration stores in the block since rules 3; a block stored before has its path alone
    (and the file may have changed since)."""
    if not media.files_by_path(request.get("messages")):
        return None
    return (
        "it sends a local file that key rules 3 key by its bytes, which its stored request "
        "(built by older rules) does not hold: re-record it"
    )


#: Per version, why a request stored by the rules before it cannot take its keys.
_BLOCKERS: dict[int, tuple[Blocker, ...]] = {
    2: (_llm_string_only, _parallel_results, _whole_number_args),
    3: (_local_file_by_path,),
}
