"""The key of each request a cassette is asked, with a conversation's next request costing
only its new messages.

An agent sends its whole conversation at every turn, so keying every request from scratch
costs turns² for a run. With the default pipeline a cassette remembers, per conversation
prefix it has keyed, where the pipeline stood after it: the normalized messages, the
tool-call aliases and the sha256 state of the key's canonical JSON. A prefix is named by
a digest of its raw messages (pickled), so a message edited in place, or an equal one
rebuilt, is named by what it holds, never by which object it is. A request without a
conversation (a completion, an embedding, a tool) is remembered whole, named by its pickle.

This is exact because the default pipeline decomposes: inside ``messages`` each step maps
items one by one (``normalize.default_message_steps``), aliasing numbers IDs in walk order
(``kind``, then the messages, then the other fields), and ``order_tool_results`` only
permutes runs of tool results, so what precedes an open run is final and the run is kept
aside until it ends. Anything else (a user's normalizer or ``ignore`` path, a request laid
out otherwise, an ID also used as a mapping key) takes the whole-request path; both give
the same normalized request and key, bit for bit (``tests/core/test_request_keys.py``).
"""

from __future__ import annotations

import hashlib
import pickle
from typing import Any

from .canonical import canonical_json, fresh_copy, key_of
from .keyrules import is_model_request, key_view, message_key_view
from .memo import Memo
from .normalize import (
    DEFAULT_PIPELINE,
    TOOL_RESULT_IDS,
    Normalizer,
    ToolCallAliaser,
    default_message_steps,
    drop_secrets,
    drop_volatile_fields,
    is_tool_result,
    normalize,
    strip_memory_addresses,
    tool_results_ordered,
)

Request = dict[str, Any]
#: Conversation prefixes remembered, and the message references their states hold in all
#: (a state holds its prefix's normalized messages: a 200-turn run holds about 40,000).
MAX_PREFIXES = 4096
MAX_HELD_MESSAGES = 1_000_000
#: Distinct sets of non-message fields remembered (one per model configuration, in practice).
MAX_TAILS = 256
#: Requests without a conversation (completions, embeddings, tools) remembered whole, and
#: the bytes of their names in all.
MAX_WHOLE = 4096
MAX_WHOLE_BYTES = 32 * 1024 * 1024


class _State:
    """Where the default pipeline stood after a prefix: the aliasing state, the messages
    whose place is final (fed to ``hasher``), and the run of tool results still open
    (normalized, each with its key text; ``order_tool_results`` sorts a run once it ends)."""

    __slots__ = ("aliaser", "hasher", "normalized", "run")

    def __init__(
        self,
        aliaser: ToolCallAliaser,
        normalized: list[Any],
        hasher: Any,
        run: tuple[tuple[Any, str], ...] = (),
    ) -> None:
        self.aliaser = aliaser
        self.normalized = normalized
        self.hasher = hasher
        self.run = run


class _Tail:
    """A request's fields after ``messages`` through the default steps, and the text that
    closes its key's canonical JSON."""

    __slots__ = ("closing", "keys", "normalized")

    def __init__(self, fields: Request, kind: str, aliaser: ToolCallAliaser) -> None:
        rest = strip_memory_addresses(drop_volatile_fields(drop_secrets(fields)))
        before = set(aliaser.keys)
        self.normalized = {name: aliaser.field(name, rest[name], False) for name in sorted(rest)}
        self.keys = frozenset(aliaser.keys - before) | {"kind", "messages", *rest}
        view = key_view({"kind": kind, **self.normalized})
        closing = "".join(
            f",{canonical_json(name)}:{canonical_json(view[name])}"
            for name in self.normalized
            if name in view  # a field that only steers the pipeline is not keyed
        )
        self.closing = f"]{closing}}}".encode()


class RequestKeys:
    """The normalized request and key of each request one cassette is asked."""

    def __init__(self, pipeline: tuple[Normalizer, ...]) -> None:
        self.pipeline = pipeline
        self._by_prefix = pipeline == DEFAULT_PIPELINE
        self._states: Memo[bytes, _State] = Memo(
            MAX_PREFIXES,
            max_weight=MAX_HELD_MESSAGES,
            weigh=lambda _name, state: len(state.normalized) + len(state.run),
        )
        self._tails: Memo[tuple[str, bytes], _Tail] = Memo(MAX_TAILS)
        #: the lengths of the prefixes remembered, longest first: where a lookup tries
        self._lengths: list[int] = []
        self._whole: Memo[bytes, tuple[Request, str]] = Memo(
            MAX_WHOLE, max_weight=MAX_WHOLE_BYTES, weigh=lambda name, _keyed: len(name)
        )

    def keyed(self, request: Request) -> tuple[Request, str]:
        """``(normalized request, key)``. The normalized request shares its parts with what
        this cassette remembers: read it, never change it (hand out a copy)."""
        if not self._by_prefix:  # a user's step may change what it is given: it gets a copy
            normalized = normalize(fresh_copy(request), self.pipeline)
            return normalized, key_of(normalized)
        found = self._conversation(request)
        if found is not None:
            return found
        name = _pickled(request)  # the default pipeline is a function of content alone
        if name is not None:
            found = self._whole.get(name)
            if found is not None:
                return found
        normalized = normalize(request, self.pipeline)
        found = normalized, key_of(normalized)
        if name is not None:
            self._whole.put(name, found)
        return found

    def _conversation(self, request: Request) -> tuple[Request, str] | None:
        messages = request.get("messages")
        kind = request.get("kind")
        if not (isinstance(messages, list) and messages and isinstance(kind, str)):
            return None
        if not is_model_request(request) or not _layout_covered(request):
            return None
        positional = request.get(TOOL_RESULT_IDS) is False  # results keep their order
        whole = _prefix_name(kind, messages, positional)
        if whole is None:
            return None
        start, state = self._longest_prefix(kind, messages, positional, whole)
        aliaser = state.aliaser.copy()
        normalized = list(state.normalized)
        hasher = state.hasher.copy()
        run = list(state.run)
        for message in messages[start:]:
            item = default_message_steps(message, aliaser)
            text = "" if item is None else canonical_json(message_key_view(item))
            if is_tool_result(item):
                run.append((item, text))
            else:  # ends the run (``order_tool_results`` drops a None item)
                _close(hasher, normalized, run, positional, None if item is None else (item, text))
                run = []
        if start < len(messages):  # where the next request of this conversation resumes
            ended = _State(aliaser.copy(), list(normalized), hasher.copy(), tuple(run))
            self._remember(len(messages), whole, ended)
        _close(hasher, normalized, run, positional)
        tail = self._tail(request, kind, aliaser)
        aliaser.keys.update(tail.keys)
        if aliaser.renames_keys():
            return None
        hasher.update(tail.closing)
        return {"kind": kind, "messages": normalized, **tail.normalized}, hasher.hexdigest()

    def _longest_prefix(
        self, kind: str, messages: list[Any], positional: bool, whole: bytes
    ) -> tuple[int, _State]:
        """(n, the state after ``messages[:n]``) for the longest prefix keyed before; a
        prefix is looked up only at a length where one was remembered."""
        for length in self._lengths:
            if length > len(messages):
                continue
            name = (
                whole
                if length == len(messages)
                else _prefix_name(kind, messages[:length], positional)
            )
            state = self._states.get(name) if name is not None else None
            if state is not None:
                return length, state
        return 0, _root(kind)

    def _remember(self, length: int, name: bytes, state: _State) -> None:
        self._states.put(name, state)
        if length not in self._lengths:
            if len(self._lengths) >= MAX_PREFIXES:  # lengths of states long gone
                self._lengths.clear()
            self._lengths.append(length)
            self._lengths.sort(reverse=True)

    def _tail(self, request: Request, kind: str, aliaser: ToolCallAliaser) -> _Tail:
        """The fields after ``messages``, remembered by content (pickled, as prefixes) when
        they hold no tool-call ID (their normalized form then depends on nothing before them)."""
        rest = {k: v for k, v in request.items() if k not in ("kind", "messages")}
        try:
            name = (kind, pickle.dumps(sorted(rest.items()), _PROTOCOL))
        except Exception:  # not data: nothing to remember it by
            return _Tail(rest, kind, aliaser)
        remembered = self._tails.get(name)
        if remembered is not None:
            return remembered
        probe = ToolCallAliaser()
        tail = _Tail(rest, kind, probe)
        if probe.aliases:  # aliased after the messages' IDs: numbered per request
            return _Tail(rest, kind, aliaser)
        self._tails.put(name, tail)
        return tail


def _prefix_name(kind: str, messages: list[Any], positional: bool) -> bytes | None:
    """A request's ``kind`` and ``messages`` named by content (``None`` for messages that are
    not data): a digest, since a conversation's every prefix is remembered. ``positional``
    (tool results keep their order) names another pipeline state."""
    data = _pickled((kind, positional, messages))
    return None if data is None else hashlib.blake2b(data, digest_size=16).digest()


def _pickled(value: Any) -> bytes | None:
    """``value`` named by content, by ``pickle``: exact where JSON spells alike what the
    pipeline does not treat alike (a tuple and a list; ``1``, ``1.0`` and ``True``)."""
    try:
        return pickle.dumps(value, _PROTOCOL)
    except Exception:  # an object pickle refuses: the whole-request path says what is wrong
        return None


_PROTOCOL = pickle.HIGHEST_PROTOCOL


def _root(kind: str) -> _State:
    hasher = hashlib.sha256(f'{{"kind":{canonical_json(kind)},"messages":['.encode())
    return _State(ToolCallAliaser(), [], hasher)


def _layout_covered(request: Request) -> bool:
    """Whether the request is laid out as this module assumes: string field names, only
    ``kind`` sorting before ``messages`` (so the walk meets it first), and no top-level
    ``type`` (which would make the whole request look like a tool call to the aliaser)."""
    for name in request:
        if not isinstance(name, str) or (name < "messages" and name != "kind"):
            return False
    return "type" not in request


def _close(
    hasher: Any,
    normalized: list[Any],
    run: list[tuple[Any, str]],
    positional: bool,
    last: tuple[Any, str] | None = None,
) -> None:
    """Feed a run of tool results in ``order_tool_results`` order, then ``last``, the
    message that ends it (if any), each with its key text. A run still open at a request's
    end is fed there and again when a later request closes it."""
    if len(run) > 1 and not positional:  # results to order (an agent's one call per turn has none)
        texts = {id(item): text for item, text in run}
        run = [(item, texts[id(item)]) for item in tool_results_ordered([i for i, _ in run])]
    for closed, text in run if last is None else [*run, last]:
        hasher.update(((",", "")[not normalized] + text).encode("utf-8"))
        normalized.append(closed)
