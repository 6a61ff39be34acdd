"""Keys of chat requests that extend earlier ones, in time proportional to what is new.

An agent sends its whole conversation at every turn. Normalizing and hashing each of
those requests from scratch costs time proportional to the conversation, so a replayed
run pays turns² for its keys. An adapter that hands the engine the *same* message
dicts again for the messages that did not change (``stable_messages=True``) lets this
module keep, per prefix of messages, what the default pipeline had reached there: the
normalized messages, the tool-call alias numbering, and the sha256 state of the
canonical JSON. A request then costs its new messages and its other fields.

This is exact only because the default pipeline decomposes: each of its steps maps the
items of ``messages`` one by one (``normalize.default_message_steps``), aliasing numbers
IDs in walk order (``kind`` is walked first, then the messages, then the other fields),
and ``order_tool_results`` only permutes runs of tool results, so what precedes an open
run is final and the run is kept aside until it ends. Anything else (a user's normalizer
or ``ignore`` path, a request with fields this layout does not cover, an ID also used as
a mapping key) takes the whole-request path. Both give the same normalized request and
key, bit for bit: ``tests/core/test_chat_keys.py`` and ``test_chat_keys_properties.py``
compare them.
"""

from __future__ import annotations

import hashlib
import threading
from operator import is_
from typing import Any

from .canonical import canonical_json
from .keyrules import is_model_request, key_view, message_key_view
from .normalize import (
    DEFAULT_PIPELINE,
    Normalizer,
    ToolCallAliaser,
    default_message_steps,
    drop_secrets,
    drop_volatile_fields,
    is_tool_result,
    strip_memory_addresses,
    tool_results_ordered,
)

Request = dict[str, Any]
#: Prefix nodes kept before the tree is dropped and regrown (a node holds a
#: reference to a message and the prefix's normalized list, so its size grows with the
#: square of a conversation's length: ``MAX_HELD`` bounds the references those lists hold,
#: 8 MB of them; a 200-turn agent's conversation holds about 40,000).
MAX_NODES = 20_000
MAX_HELD = 1_000_000
#: Characters of message key text the tree's nodes hold (a 2 MB prompt is held by a node
#: as long as the tree lives: this bounds what the messages themselves weigh).
MAX_CHARS = 8_000_000
#: Distinct sets of non-message fields kept in the process (one per model configuration,
#: in practice).
MAX_TAILS = 256


class _Resume:
    """What the default pipeline reached after a prefix: the aliasing state, the messages
    whose place is final (fed to ``hasher``), and the run of tool results still open
    (normalized, each with its canonical text; ``order_tool_results`` sorts a run once it
    ends)."""

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


class _Node:
    __slots__ = ("children", "message", "resume")

    def __init__(self, message: Any, resume: _Resume | None) -> None:
        #: the caller's message dict, held so that its ``id`` names it while the node lives
        self.message = message
        #: the pipeline's state after this prefix, kept where a request ended (an agent's
        #: next request extends the whole of its last one; copying the state after every
        #: message would cost more than resuming a few messages earlier)
        self.resume = resume
        self.children: dict[int, _Node] = {}


#: The fields after ``messages`` as the default steps leave them, per set of field objects,
#: for every cassette of the process: a fresh ``Cassette`` for each test would otherwise
#: normalize the same tool schemas again (the objects are held, so their ``id`` names
#: them; adapters build them once per model configuration and never change them).
_tails: dict[tuple[Any, ...], _Tail] = {}
_tails_lock = threading.Lock()


def supports(pipeline: tuple[Normalizer, ...]) -> bool:
    """Whether a cassette with this pipeline can key requests by prefix."""
    return pipeline == DEFAULT_PIPELINE


class ChatKeys:
    """Prefix-resumable keying of chat requests with the default pipeline (one tree serves
    every cassette that has it: ``key_memo.SHARED_CHAT_KEYS``). Threads may key through
    one tree at once: a node is only ever added, a resume point is set once and never
    changed (it is copied before use), and a lost race only loses a shortcut."""

    __slots__ = ("_chars", "_held", "_nodes", "_roots")

    def __init__(self) -> None:
        self._roots: dict[str, _Node] = {}
        self._nodes = 0
        self._held = 0
        self._chars = 0

    def keyed(self, request: Request) -> tuple[Request, str] | None:
        """The normalized request and its key, or ``None`` when only the whole-request
        path can compute them."""
        messages = request.get("messages")
        kind = request.get("kind")
        if not (isinstance(messages, list) and messages and isinstance(kind, str)):
            return None
        if not is_model_request(request) or not _layout_covered(request):
            return None
        node = resumed = self._root(kind)
        resumed_at = 0
        for matched, message in enumerate(messages, 1):  # the prefix met before, by identity
            child = node.children.get(id(message))
            if child is None or child.message is not message:
                break
            node = child
            if child.resume is not None:
                resumed, resumed_at = child, matched
        state = resumed.resume
        if state is None:  # never: a root always has one
            return None
        aliaser = state.aliaser.copy()
        normalized = list(state.normalized)
        hasher = state.hasher.copy()
        run = list(state.run)
        node = resumed
        last = len(messages)
        for position, message in enumerate(messages[resumed_at:], resumed_at + 1):
            item = default_message_steps(message, aliaser)
            text = "" if item is None else _text(item)
            if is_tool_result(item):
                run.append((item, text))
            else:  # ends the run (``order_tool_results`` drops a None item)
                _close(hasher, normalized, run, None if item is None else (item, text))
                run = []
            node = self._child(node, message, len(text))
            if position == last and node.resume is None:  # where the next request resumes
                node.resume = _Resume(aliaser.copy(), list(normalized), hasher.copy(), tuple(run))
                self._held += len(normalized) + len(run)
        _close(hasher, normalized, run)
        tail = self._tail(request, kind, aliaser)
        aliaser.keys.update(tail.keys)
        if aliaser.renames_keys():
            return None
        hasher.update(tail.closing)
        return {"kind": kind, "messages": normalized, **tail.normalized}, hasher.hexdigest()

    def _tail(self, request: Request, kind: str, aliaser: ToolCallAliaser) -> _Tail:
        """The fields after ``messages``, kept per set of field objects when they hold no
        tool-call ID (their normalized form then depends on nothing before them)."""
        rest = {k: v for k, v in request.items() if k not in ("kind", "messages")}
        values = tuple(rest.values())
        name = (kind, *((k, id(v)) for k, v in rest.items()))
        kept = _tails.get(name)
        if (
            kept is not None
            and len(kept.values) == len(values)
            and all(map(is_, kept.values, values))
        ):
            return kept
        probe = ToolCallAliaser()
        tail = _Tail(rest, kind, probe, values)
        if probe.aliases:  # aliased after the messages' IDs: numbered per request
            return _Tail(rest, kind, aliaser, values)
        with _tails_lock:
            if len(_tails) >= MAX_TAILS:
                _tails.clear()
            _tails[name] = tail
        return tail

    def _root(self, kind: str) -> _Node:
        root = self._roots.get(kind)
        if root is None:
            hasher = hashlib.sha256(f'{{"kind":{canonical_json(kind)},"messages":['.encode())
            root = _Node(None, _Resume(ToolCallAliaser(), [], hasher))
            self._roots[kind] = root
        return root

    def _child(self, parent: _Node, message: Any, size: int) -> _Node:
        """The node for ``message`` after ``parent``: the one met before, or a new one
        (which holds no resume point until a request ends there); ``size``: the characters
        of the message's key text, what holding it costs."""
        child = parent.children.get(id(message))
        if child is not None and child.message is message:
            return child
        if self._nodes >= MAX_NODES or self._held >= MAX_HELD or self._chars >= MAX_CHARS:
            self._roots.clear()  # regrow from scratch: only the shortcut is lost
            self._nodes = self._held = self._chars = 0
        child = _Node(message, None)
        parent.children[id(message)] = child
        self._nodes += 1
        self._chars += size
        return child


def _layout_covered(request: Request) -> bool:
    """Whether the request is laid out as this module assumes: string field names, only
    ``kind`` sorting before ``messages`` (so the walk meets it first), and no top-level
    ``type`` (which would make the whole request look like a tool call to the aliaser)."""
    for name in request:
        if not isinstance(name, str) or (name < "messages" and name != "kind"):
            return False
    return "type" not in request


def _text(message: Any) -> str:
    return canonical_json(message_key_view(message))


def _close(
    hasher: Any,
    normalized: list[Any],
    run: list[tuple[Any, str]],
    last: tuple[Any, str] | None = None,
) -> None:
    """Feed a run of tool results in ``order_tool_results`` order, then ``last``, the
    message that ends it (if any), each with its key text. A run still open at a request's
    end is fed there and again when a later request closes it."""
    if len(run) > 1:  # results to order (an agent's one call per turn has none)
        texts = {id(item): text for item, text in run}
        run = [(item, texts[id(item)]) for item in tool_results_ordered([i for i, _ in run])]
    for closed, text in run if last is None else [*run, last]:
        hasher.update(((",", "")[not normalized] + text).encode("utf-8"))
        normalized.append(closed)


class _Tail:
    """A request's fields after ``messages`` through the default steps, and the text that
    closes its key's canonical JSON."""

    __slots__ = ("closing", "keys", "normalized", "values")

    def __init__(
        self, fields: Request, kind: str, aliaser: ToolCallAliaser, values: tuple[Any, ...]
    ) -> None:
        #: the request's own field objects, held so that their ``id`` names them
        self.values = values
        rest = strip_memory_addresses(drop_volatile_fields(drop_secrets(fields)))
        before = set(aliaser.keys)
        self.normalized = {name: aliaser.field(name, rest[name], False) for name in sorted(rest)}
        self.keys = frozenset(aliaser.keys - before) | {"kind", "messages", *rest}
        view = key_view({"kind": kind, **self.normalized})
        closing = "".join(
            f",{canonical_json(name)}:{canonical_json(view[name])}" for name in self.normalized
        )
        self.closing = f"]{closing}}}".encode()
