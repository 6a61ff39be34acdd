"""An LLM that cannot describe itself still records and replays, through either path.

A recording stores a description of its LLM (metadata, payload, params) so that
``CassetteLLM(llm=None)`` can replay; it is a convenience. An LLM whose description cannot
be built (metadata or a payload that JSON has no form for) must still get its live answer,
recorded without a description, and replayed from the cassette, whether it runs in a
``CassetteLLM`` or is intercepted by ``use_cassette``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from li_fake_provider import FakeProvider, Reply
from llama_index.core.base.llms.types import ChatMessage, LLMMetadata

from chaincassette import Cassette, use_cassette
from chaincassette.integrations.llama_index import CassetteLLM


def answer(messages: Any, tools: Any) -> Reply:
    return Reply(text="an answer")


class NonJsonMetadata(LLMMetadata):
    """Metadata carrying a live object: fine for LlamaIndex's events, not for JSON."""

    client: Any = None


class Undescribable(FakeProvider):
    """A provider LLM whose description (``broken``: its metadata or its payload) cannot be
    stored as JSON, though LlamaIndex itself runs it fine."""

    broken: str = "metadata"

    @classmethod
    def class_name(cls) -> str:
        return "Undescribable"

    @property
    def metadata(self) -> LLMMetadata:
        data = super().metadata.model_dump()
        if self.broken == "metadata":
            return NonJsonMetadata(**data, client=object())
        return LLMMetadata(**data)

    def to_payload(self) -> dict[str, Any]:
        payload: dict[Any, Any] = super().to_payload()
        if self.broken == "payload":
            payload[("region", 1)] = "eu"  # a key JSON has no form for
        return payload


def ask(llm: Any) -> str:
    return str(llm.chat([ChatMessage(role="user", content="Hi?")]).message.content)


def through(path_kind: str, cassette_path: Path, mode: str, broken: str) -> tuple[str, Cassette]:
    llm = Undescribable(policy=answer, broken=broken)
    if path_kind == "wrapper":
        wrapper = CassetteLLM(llm, cassette=cassette_path, mode=mode)
        return ask(wrapper), wrapper.cassette
    with use_cassette(cassette_path, mode=mode) as cassette:
        return ask(llm), cassette


@pytest.mark.parametrize("broken", ["metadata", "payload"])
@pytest.mark.parametrize("path_kind", ["wrapper", "boundary"])
def test_a_description_that_raises_keeps_the_live_answer(
    tmp_path: Path, path_kind: str, broken: str
) -> None:
    path = tmp_path / "undescribed.yaml"
    recorded, cassette = through(path_kind, path, "record", broken)
    assert recorded == "an answer" and cassette.stats.recorded == 1
    assert [i.meta.get("llm") for i in cassette.interactions] == [None]  # nothing to store
    replayed, again = through(path_kind, path, "replay", broken)
    assert replayed == "an answer" and again.stats.replayed == 1
    assert FakeProvider.calls == ["chat"]  # the recording run only
