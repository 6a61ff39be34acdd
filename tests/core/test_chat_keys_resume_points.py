"""``ChatKeys`` resume points against the whole-request path (an adversarial review).

``ChatKeys.keyed`` keeps a resume point (aliasing state, normalized list, sha256 state,
open tool-result run) only at the node where a request ended; a later request walks the
identity prefix, resumes from the deepest node holding one and re-walks the nodes after
it. A non-tool message with no run open is hashed directly. These tests aim at the places
where that could differ from ``normalize`` + ``key_of``: requests that branch from the
middle of an earlier one or stop short of its end (a node with no resume point), the same
object twice in one request, tool-result runs cut by resume points, ``None`` items, kinds
interleaved over the same objects, and the tree regrowing (``MAX_NODES`` or ``MAX_HELD``)
while a request is walked. Each answer is checked with ``check`` (the same normalized
request, types and all, and the same key); where a scenario depends on the tree's shape,
the shape is asserted too, so that the test cannot pass without the scenario happening.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chaincassette.chat_keys import ChatKeys

from .test_chat_keys_properties import (
    Request,
    check,
    ids,
    limits,
    messages,
    sessions,
    tail_fields,
)


def resume_marks(keys: ChatKeys, kind: str, conversation: list[Any]) -> list[bool]:
    """Along the identity path of ``conversation``: whether each node holds a resume point
    (shorter than the conversation where the tree does not hold all of it)."""
    node = keys._roots.get(kind)
    marks: list[bool] = []
    for message in conversation:
        if node is None:
            break
        child = node.children.get(id(message))
        if child is None or child.message is not message:
            break
        marks.append(child.resume is not None)
        node = child
    return marks


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def asks(*call_ids: str) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"id": i, "name": "f", "args": {"q": i}} for i in call_ids],
    }


def result(call_id: str, text: str = "r") -> dict[str, Any]:
    return {"role": "tool", "content": text, "tool_call_id": call_id}


def chat(conversation: list[Any], **tail: Any) -> Request:
    return {"kind": "chat", "messages": conversation, **tail}


def test_a_branch_from_the_middle_and_a_strict_prefix_resume_from_an_earlier_point() -> None:
    """Only the end of ``[a, b, c, d]`` holds a resume point: ``[a, b, x]`` and ``[a, b]``
    walk through nodes without one and must resume from the root, ``[a, b, c]`` from ``b``
    once ``[a, b]`` ended there. Would catch resuming from the deepest *matched* node
    (whose resume is ``None``, or another prefix's) or a resume kept at the wrong node."""
    keys = ChatKeys()
    a, b, c, d, x = (
        user("a"),
        asks("call_Q", "toolu_P"),
        result("toolu_P"),
        result("call_Q"),
        user("x"),
    )
    check(keys, chat([a, b, c, d]))
    assert resume_marks(keys, "chat", [a, b, c, d]) == [False, False, False, True]
    check(keys, chat([a, b, x]))
    assert resume_marks(keys, "chat", [a, b, x]) == [False, False, True]
    check(keys, chat([a, b]))  # ends on a node met before, with no resume point
    assert resume_marks(keys, "chat", [a, b, c, d]) == [False, True, False, True]
    check(keys, chat([a, b, c]))  # resumes at ``b``: inside a tool-result run
    assert resume_marks(keys, "chat", [a, b, c, d]) == [False, True, True, True]
    for request in ([a, b, c, d], [a, b, x], [a], [a, b, c, d, x], [a, b, c, x]):
        check(keys, chat(request))


def test_a_tool_result_run_cut_by_resume_points_at_every_place() -> None:
    """A run of results answered out of order, with requests ending (so resuming) after
    each of its results, then closed by a user message, by ``None`` and by the end of the
    request. Would catch a run kept without its earlier results, closed twice, or its
    texts hashed before it is ordered."""
    keys = ChatKeys()
    q, call = user("q"), asks("call_B", "call_A", "call_C")
    run = [result("call_C", "3"), result("call_A", "1"), result("call_B", "2")]
    for end in range(len(run) + 1):
        check(keys, chat([q, call, *run[:end]], model="m"))
    assert resume_marks(keys, "chat", [q, call, *run]) == [False, True, True, True, True]
    for closing in (user("next"), None, asks("call_D")):
        for end in range(len(run) + 1):  # closed at each point of the run
            check(keys, chat([q, call, *run[:end], closing], model="m"))
            check(keys, chat([q, call, *run[:end], closing, result("call_D")], model="m"))


def test_the_same_object_twice_in_one_request() -> None:
    """One dict at two places (a message sent twice, a tool result repeated in its run):
    the tree holds it at two depths, and the aliaser must see it twice. Would catch a
    walk that takes the second occurrence for the first's node."""
    keys = ChatKeys()
    q, call, done = user("q"), asks("call_Z", "call_Y"), result("call_Y")
    for conversation in (
        [q, q],
        [q, call, done, done],
        [q, call, done, q, call, done],
        [call, call],
        [q, call, done, done, result("call_Z")],
        [q, q, q],
    ):
        check(keys, chat(conversation))
        check(keys, chat(conversation))  # the very same request again
        check(keys, chat(list(conversation)))  # the same objects in a new list


def test_none_items_around_runs_and_resume_points() -> None:
    """``None`` is dropped, and ends a run of tool results as the whole-request path's
    ``tool_results_ordered`` ends it (two runs either side are sorted apart). Would catch
    the direct branch keeping a ``None`` or a run continuing across it."""
    keys = ChatKeys()
    q, call = user("q"), asks("call_2", "call_1")
    first, second = result("call_2"), result("call_1")
    for conversation in (
        [None],
        [None, None],
        [q, None],
        [q, None, None, q],
        [q, call, first, None],
        [q, call, first, None, second],
        [q, call, None, second, first],
        [None, q, call, second, None, first, None],
    ):
        check(keys, chat(conversation))
        check(keys, chat([*conversation, user("after")]))


def test_kinds_interleaved_over_the_same_objects() -> None:
    """The same message objects under two kinds: two roots whose resume points must not
    be taken for each other's (the kind is hashed first)."""
    keys = ChatKeys()
    q, call, done = user("q"), asks("call_1"), result("call_1")
    for kind in ("chat", "completion", "chat", "embeddings", "completion"):
        for conversation in ([q], [q, call], [q, call, done], [q, call]):
            check(keys, {"kind": kind, "messages": conversation, "model": "m"})


class Clears(dict[str, Any]):
    """A tree's roots that count how often the tree is dropped."""

    cleared = 0

    def clear(self) -> None:
        self.cleared += 1
        super().clear()


@pytest.mark.parametrize(
    ("max_nodes", "max_held", "max_chars"),
    [(3, 4_000_000, 8_000_000), (20_000, 4, 8_000_000), (2, 2, 8_000_000), (20_000, 4_000_000, 60)],
)
def test_the_tree_regrows_while_a_request_is_walked(
    max_nodes: int, max_held: int, max_chars: int
) -> None:
    """The tree is dropped at a new node after nodes met before (the walk goes on from a
    node no root reaches any more), then the next request starts from a new root. Would
    catch a regrowth that loses the state being carried, or a resume point reached
    through a dropped tree."""
    keys = ChatKeys()
    keys._roots = roots = Clears()
    q, call = user("q"), asks("call_B", "call_A")
    first, second, later = result("call_A"), result("call_B"), user("later")
    grown = [q, call, first, second, later, user("more"), asks("call_C"), result("call_C")]
    with limits(MAX_NODES=max_nodes, MAX_HELD=max_held, MAX_CHARS=max_chars):
        for end in (2, 3, 1, 5, 4, 8, 6, 2, 8):
            check(keys, chat(grown[:end]))
            check(keys, chat([*grown[:end], user("branch")]))
    assert roots.cleared  # the scenario happened


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    session=sessions(),
    max_held=st.sampled_from([1, 3, 8, 30]),
    max_chars=st.sampled_from([1, 100, 8_000_000]),
)
def test_every_answer_is_the_whole_request_path_with_little_held(
    session: tuple[list[Request], int, int], max_held: int, max_chars: int
) -> None:
    """The properties test's sessions, with ``MAX_HELD`` and ``MAX_CHARS`` small too (it
    only shrinks ``MAX_NODES``): regrowth then comes from resume points' sizes or the
    messages' text, at the first new node after a walk through known ones."""
    requests, max_nodes, _ = session
    keys = ChatKeys()
    with limits(MAX_NODES=max_nodes, MAX_HELD=max_held, MAX_CHARS=max_chars):
        for request in [*requests, *reversed(requests), *requests]:
            check(keys, request)


@st.composite
def branching(draw: st.DrawFn) -> list[Request]:
    """Conversations as a tree of requests: each takes an earlier request's messages up to
    a cut (possibly all, possibly none), and may add messages, mostly tool results on a
    small ID pool, repeats of objects already in the conversation, and ``None``."""
    pool = [draw(messages()) for _ in range(draw(st.integers(1, 4)))]
    results = [
        {"role": "tool", "content": draw(st.sampled_from(["", "r"])), "tool_call_id": draw(ids)}
        for _ in range(draw(st.integers(1, 4)))
    ]
    tail = draw(tail_fields)
    requests: list[Request] = []
    for _ in range(draw(st.integers(1, 10))):
        base: list[Any] = draw(st.sampled_from(requests))["messages"] if requests else []
        conversation = base[: draw(st.integers(0, len(base)))]
        for _ in range(draw(st.integers(0 if conversation else 1, 3))):
            source = draw(st.sampled_from(["pool", "result", "result", "repeat", "none"]))
            if source == "repeat" and conversation:
                conversation.append(draw(st.sampled_from(conversation)))
            elif source == "none":
                conversation.append(None)
            elif source == "result":
                conversation.append(draw(st.sampled_from(results)))
            else:
                conversation.append(draw(st.sampled_from(pool)))
        requests.append({"kind": "chat", "messages": conversation, **tail})
    return requests


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    requests=branching(),
    max_nodes=st.sampled_from([1, 4, 20_000]),
    max_held=st.sampled_from([2, 20, 4_000_000]),
)
def test_branches_prefixes_repeats_and_runs_key_as_the_whole_request(
    requests: list[Request], max_nodes: int, max_held: int
) -> None:
    """Every request of a tree of branches (cut anywhere, tool-result runs cut by the
    cuts, objects repeated, ``None`` between them), in order and again in reverse."""
    keys = ChatKeys()
    with limits(MAX_NODES=max_nodes, MAX_HELD=max_held):
        for request in [*requests, *reversed(requests)]:
            check(keys, request)
