"""``canonical_messages`` (the memo's check inlined for a conversation) against the
reference, with the list path alone and under attack (an adversarial review).

The inline check reads the watched fields with the itemgetter kept in the memo entry and
compares their pickle with the kept state. ``test_message_memo_properties`` checks it after
``canonical_message`` has filled the memo; here the list path is the only way in (it fills
the memo through its own misses), messages repeat within a list, change between calls
(nested values, deleted fields, extras, another class, equal values of another type), die
and are replaced at their address, and are changed by another thread while read.
Every answer is compared with ``reference`` (``json.loads(dumps(m))`` -> ``message_from_lc``).
"""

from __future__ import annotations

import sys
import threading
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from test_message_memo_properties import (
    REFUSED,
    mutate,
    new_messages,
    reference,
    same,
    unread_cleared,
)

from chaincassette.integrations.langchain import messages as memo
from chaincassette.integrations.langchain.messages import canonical_message, canonical_messages


def expected_of(message: BaseMessage) -> Any:
    """What ``canonical_message`` must give (``REFUSED`` where it must raise)."""
    try:
        return reference(message)
    except Exception:
        try:
            return reference(unread_cleared(message))
        except Exception:
            return REFUSED


def check_list(conversation: list[Any]) -> list[Any] | None:
    """The list path alone, against the reference item by item, in order (the first item
    with no canonical form gives ``None``, the first the reference refuses raises); then,
    for each message the memo kept, the single path must hand out the very object the
    list path did."""
    expected = []
    for message in conversation:
        want = expected_of(message) if isinstance(message, BaseMessage) else None
        if want is REFUSED:
            with pytest.raises(Exception):  # noqa: B017 (whichever the reference raises)
                canonical_messages(conversation)
            return None
        if want is None:
            assert canonical_messages(conversation) is None
            return None
        expected.append(want)
    got = canonical_messages(conversation)
    assert got is not None
    for message, item, want in zip(conversation, got, expected, strict=True):
        assert same(item, want), f"{type(message).__name__}:\n{item!r}\n{want!r}"
        entry = memo._memo.get(id(message))
        if entry is not None and entry.ref() is message:
            assert canonical_message(message) is item  # the kept object, on either path
    return got


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data())
def test_the_list_path_alone_gives_what_a_fresh_dumps_gives(data: st.DataObject) -> None:
    """Conversations (messages repeated, in any order) sent again and again through the
    list path only, with messages changed, dropped and replaced between sends. Would
    catch an inline hit on a stale entry (a state kept by another reader, a dead message's
    entry, a changed class) or a miss path that differs from ``canonical_message``."""
    live: list[BaseMessage] = []
    for _ in range(data.draw(st.integers(1, 10))):
        step = data.draw(st.sampled_from(["new", "mutate", "mutate", "drop", "again"]))
        if step == "new" or not live:
            live.append(data.draw(new_messages()))
        elif step == "mutate":
            mutate(data.draw, data.draw(st.sampled_from(live)))
        elif step == "drop":
            live.pop(data.draw(st.integers(0, len(live) - 1)))
            live.append(data.draw(new_messages()))
        sent = data.draw(st.lists(st.sampled_from(live), min_size=1, max_size=2 * len(live)))
        if data.draw(st.integers(0, 9)) == 0:
            sent.insert(
                data.draw(st.integers(0, len(sent))), data.draw(st.sampled_from([None, "x"]))
            )
        check_list(sent)
        check_list(sent)  # the same again: hits where the first call kept


def test_a_constructed_message_missing_a_field_then_given_it() -> None:
    """``model_construct`` without ``content``: kept with the whole ``__dict__`` read (no
    reader kept for the inline check); given its content, then losing a watched field
    again. Would catch the inline check trusting an entry whose state is of another read."""
    message = AIMessage.model_construct(tool_calls=[], invalid_tool_calls=[], additional_kwargs={})
    assert "content" not in message.__dict__
    check_list([message, message])
    assert memo._memo[id(message)].read is None
    message.content = "now"
    check_list([message])
    assert memo._memo[id(message)].read is not None
    del message.__dict__["content"]
    check_list([message, message])
    message.__dict__["content"] = "now"  # back, at the end of ``__dict__`` now
    check_list([message])


def test_a_watched_field_deleted_from_under_a_kept_entry() -> None:
    """Each watched field of a kept message deleted from its ``__dict__`` in turn: the
    kept reader raises ``KeyError`` and the list path must answer as ``dumps`` does
    (or raise as it raises, for a field its ``lc_attributes`` reads)."""
    layout = memo._layout(AIMessage)
    assert layout is not None and layout.watched is not None
    for name in AIMessage.model_fields:
        message = AIMessage(content="c", tool_calls=[{"name": "f", "args": {"a": [1]}, "id": "i"}])
        check_list([message])
        assert memo._memo[id(message)].read is layout.watched
        del message.__dict__[name]
        check_list([message, message])


def test_extras_added_after_the_message_was_kept() -> None:
    """An attribute the class does not declare (a pydantic extra) set on a kept message,
    changed, then removed. Would catch the inline check skipping the extras test."""
    message = HumanMessage(content="x")
    first = check_list([message])
    message.note = {"a": 1}  # type: ignore[attr-defined]
    check_list([message])
    message.note["a"] = 1.0  # type: ignore[attr-defined]
    check_list([message])
    del message.note  # type: ignore[attr-defined]
    again = check_list([message])
    assert first is not None and again is not None and same(first, again)


def test_equal_values_of_other_types_in_nested_places() -> None:
    """``1``, ``1.0``, ``True`` and ``0.0``, ``-0.0`` in tool-call args, content blocks and
    additional kwargs, changed in place between list calls."""
    message = AIMessage(
        content=[{"type": "text", "text": "t", "extra": [1]}],
        tool_calls=[{"name": "f", "args": {"x": {"y": [1]}}, "id": "c"}],
        additional_kwargs={"k": [0.0]},
    )
    for value in (1, 1.0, True, 1, 0, 0.0, -0.0, False, 0.0, 1):
        message.tool_calls[0]["args"]["x"]["y"][0] = value
        check_list([message])
        message.content[0]["extra"][0] = value  # type: ignore[index]
        check_list([message, message])
        message.additional_kwargs["k"][0] = value
        check_list([message])


class Flagged(AIMessage):
    """A user's subclass with a field of its own and LangChain's getters (so a reader is
    kept for it)."""

    urgent: bool = False


class Shouting(HumanMessage):
    """A user's subclass whose own ``lc_attributes`` derives an attribute from a field
    (no reader is kept: every field is watched)."""

    @property
    def lc_attributes(self) -> dict[str, Any]:
        return {"name": str(self.content).upper()}


def test_user_subclasses_and_a_class_swapped_under_a_kept_entry() -> None:
    """A kept reader is the class's: a message moved to another class with other fields
    or other getters must not pass the inline check with the old class's reader."""
    flagged = Flagged(content="x", urgent=True)
    shouting = Shouting(content="quiet")
    flagged_layout, shouting_layout = memo._layout(Flagged), memo._layout(Shouting)
    assert flagged_layout is not None and flagged_layout.watched is not None
    assert shouting_layout is not None and shouting_layout.watched is None
    check_list([flagged, shouting])
    flagged.urgent = 1  # type: ignore[assignment]
    shouting.content = "loud"
    check_list([flagged, shouting])
    flagged.__class__ = AIMessage  # ``urgent`` no longer a field: not serialized
    shouting.__class__ = HumanMessage  # no getter deriving ``name`` any more
    check_list([flagged, shouting])
    flagged.__class__ = Flagged
    shouting.__class__ = Shouting
    check_list([flagged, shouting, flagged])


def test_a_new_message_at_a_dead_ones_address_through_the_list_path() -> None:
    reused, before = 0, None
    for n in range(200):
        kind = (AIMessage, ToolMessage)[n % 2]
        extra: dict[str, Any] = {"tool_call_id": "c"} if kind is ToolMessage else {}
        message = kind(content=f"m{n // 4}", **extra)  # repeated contents: equal states
        address = id(message)
        reused += address == before
        check_list([message])
        del message
        before = address
    assert reused  # the scenario happened


def test_messages_changed_by_another_thread_while_conversations_are_read() -> None:
    """One thread flips values in place (a nested arg between ``1``, ``1.0`` and
    ``True``; content between two texts); readers send the conversation meanwhile. Each
    answer must be one of the reference's answers for the values the thread writes, and
    once it stops, the answer must be the final state's (no stale entry kept)."""
    call = AIMessage(content="", tool_calls=[{"name": "f", "args": {"x": 1}, "id": "c"}])
    note = HumanMessage(content="a")
    values = (1, 1.0, True)
    texts = ("a", "b")
    answers: dict[str, list[Any]] = {"call": [], "note": []}
    for value in values:
        call.tool_calls[0]["args"]["x"] = value
        answers["call"].append(reference(call))
    for text in texts:
        note.content = text
        answers["note"].append(reference(note))
    stop = threading.Event()
    failures: list[str] = []

    def writer() -> None:
        n = 0
        while not stop.is_set() and n < 200_000:
            call.tool_calls[0]["args"]["x"] = values[n % 3]
            note.content = texts[n % 2]
            n += 1

    def reader() -> None:
        for _ in range(3_000):
            got = canonical_messages([call, note, call])
            if got is None:
                failures.append("no canonical form")
                return
            for item, name in zip(got, ("call", "note", "call"), strict=True):
                if not any(same(item, want) for want in answers[name]):
                    failures.append(f"{name}: {item!r}")
                    return

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=writer)] + [
            threading.Thread(target=reader) for _ in range(2)
        ]
        for thread in threads:
            thread.start()
        for thread in threads[1:]:
            thread.join(timeout=120)
        stop.set()
        threads[0].join(timeout=120)
    finally:
        sys.setswitchinterval(interval)
    assert not failures, failures[:3]
    for value in (*values, 1):  # settled: each state is served as it is now
        call.tool_calls[0]["args"]["x"] = value
        check_list([call, note])
        check_list([call, note])


# -- both shortcuts together, as the boundary uses them ------------------------------------------

LLM_STRING = '{"id": ["x", "Chat"], "kwargs": {"model": "m"}}---[("stop", None)]'


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data())
def test_a_growing_conversation_changed_in_place_keys_as_dumps_keys_it(
    data: st.DataObject, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A conversation grows, is cut back and branched, and its messages are changed in
    place between calls; each call is keyed as the boundary keys it (``canonical_messages``,
    ``chat_request``, a lookup with ``stable_messages``: the memo's kept dicts feed
    ``ChatKeys``' identity tree) and as LangChain's cache step would (``dumps`` of the
    list, ``build_request``, ``key_for``). Would catch a kept dict handed out for a changed
    message (the tree would resume past it) or a resume point of another prefix."""
    from chaincassette import Cassette
    from chaincassette.integrations.langchain.boundary import _dumps_without_ids
    from chaincassette.integrations.langchain.requests import build_request, chat_request

    folder = tmp_path_factory.mktemp("both")
    cassette = Cassette(folder / "c.yaml", mode="record")
    plain = Cassette(folder / "plain.yaml", mode="record")
    conversation: list[BaseMessage] = []
    compared = 0
    for _ in range(data.draw(st.integers(1, 10))):
        step = data.draw(st.sampled_from(["grow", "grow", "mutate", "cut", "same"]))
        if step == "grow" or not conversation:
            conversation = [*conversation, data.draw(new_messages())]
        elif step == "mutate":
            mutate(data.draw, data.draw(st.sampled_from(conversation)))
        elif step == "cut":
            conversation = conversation[: data.draw(st.integers(1, len(conversation)))]
        try:
            text = _dumps_without_ids(conversation)
            expected = plain.key_for(build_request(text, LLM_STRING))
        except Exception:  # the reference refuses it: the boundary would too, or read dumps
            continue
        canonical = canonical_messages(conversation)
        if canonical is None:  # the boundary takes the dumps path itself
            continue
        found = cassette.lookup(
            chat_request(canonical, LLM_STRING, stream=False), stable_messages=True
        )
        assert found.key == expected
        compared += 1
    event(f"compared {min(compared, 3)}+")
