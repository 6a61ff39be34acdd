"""Every patch is undone: the classes are wrapped once, by the first cassette that needs
them, and ``chaincassette.patching.undo_all()`` (what the pytest plugin runs at the end of a
session) leaves no LangChain or LlamaIndex attribute different from what it was before."""

from __future__ import annotations

import asyncio
import gc
import sys
from pathlib import Path
from typing import Any

import pytest
from langchain_core.embeddings import Embeddings
from langchain_core.globals import get_llm_cache, set_llm_cache
from langchain_core.language_models import chat_models, llms
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.language_models.llms import BaseLLM as LangChainLLM
from langchain_core.tools import BaseTool, tool
from langchain_core.tools import base as tools_base
from llama_index.core import Settings
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.base.llms.base import BaseLLM as LlamaIndexLLM
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.tools import FunctionTool

from chaincassette import Cassette, use_cassette
from chaincassette.integrations.langchain import CassetteCache, CassetteEmbeddings
from chaincassette.integrations.llama_index import CassetteEmbedding, CassetteLLM
from chaincassette.patching import all_subclasses, undo_all

sys.path.insert(0, str(Path(__file__).parent / "langchain"))
sys.path.insert(0, str(Path(__file__).parent / "llama_index"))

from fake_provider import FakeProviderChat, FakeProviderLLM
from li_fake_provider import FakeProvider, Reply


def hello(messages: Any, tools: Any) -> Reply:
    return Reply(text="Hello there, friend.")


class Vectors(Embeddings):
    """A provider-like LangChain embedding model."""

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [[float(len(t)), 0.5] for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


class LiVectors(BaseEmbedding):
    """A provider-like LlamaIndex embedding model."""

    def _get_query_embedding(self, query: str) -> list[float]:
        return [float(len(query))]

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return [float(len(query))]

    def _get_text_embedding(self, text: str) -> list[float]:
        return [float(len(text))]


ROOTS = (
    BaseChatModel,
    LangChainLLM,
    BaseTool,
    LlamaIndexLLM,
    FunctionTool,
    Embeddings,
    BaseEmbedding,
)


@pytest.fixture(autouse=True)
def nothing_installed_yet() -> None:
    """Earlier tests of the session installed the patches: start from none."""
    undo_all()


def snapshot() -> dict[Any, Any]:
    """Identity of every attribute of every class that may be patched, and of the globals."""
    state: dict[Any, Any] = {}
    for root in ROOTS:
        for cls in (root, *all_subclasses(root)):
            state[cls] = {name: id(value) for name, value in vars(cls).items()}
    state["tools_base"] = {k: id(v) for k, v in vars(tools_base).items()}
    state["chat_models"] = {k: id(v) for k, v in vars(chat_models).items()}
    state["llms"] = {k: id(v) for k, v in vars(llms).items()}
    state["llm_cache"] = id(get_llm_cache())
    state["span_handlers"] = [id(h) for h in get_dispatcher().span_handlers]
    state["settings_llm"] = id(Settings._llm)
    state["meta_path"] = [id(f) for f in sys.meta_path]
    return state


def differences(before: dict[Any, Any], after: dict[Any, Any]) -> list[str]:
    found = []
    for key, old in before.items():
        new = after.get(key)
        if isinstance(old, dict):
            changed = sorted(n for n in old.keys() | new.keys() if old.get(n) != new.get(n))
            found += [f"{getattr(key, '__qualname__', key)}.{n}" for n in changed]
        elif old != new:
            found.append(str(key))
    return found


@tool
def shout(text: str) -> str:
    """Shout the text."""
    return text.upper()


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def use_everything(tmp_path: Path) -> None:
    lc_path, li_path = tmp_path / "lc.yaml", tmp_path / "li.yaml"
    hi = [ChatMessage(role="user", content="Hi")]
    with use_cassette(tmp_path / "block.yaml", mode="record", replay_tools=True):
        FakeProviderChat().invoke("hello")
        list(FakeProviderChat().stream("stream me"))
        FakeProviderLLM().invoke("complete me")
        shout.invoke({"text": "hey"})
        FakeProvider(policy=hello).chat(hi)
        FunctionTool.from_defaults(add).call(a=1, b=2)
        Vectors().embed_query("embed me")
        LiVectors().get_text_embedding_batch(["embed", "me"])
        "".join(FakeProviderLLM().stream("stream a completion"))

        async def nested() -> None:
            async with use_cassette(tmp_path / "inner.yaml", mode="record"):
                await FakeProviderChat().ainvoke("inner")

        asyncio.run(nested())
    cache = CassetteCache(lc_path, mode="record", replay_tools=True)
    set_llm_cache(cache)
    FakeProviderChat().invoke("through the global cache")
    set_llm_cache(None)
    cache.close()
    with CassetteCache(lc_path, mode="new_episodes") as scoped:
        FakeProviderChat(cache=scoped).invoke("through its own cache")
    wrapper = CassetteLLM(
        FakeProvider(policy=hello), cassette=li_path, mode="record", replay_tools=True
    )
    wrapper.chat(hi)
    del wrapper
    CassetteEmbeddings(Vectors(), cassette=tmp_path / "e.yaml", mode="record").embed_query("x")
    CassetteEmbedding(LiVectors(), cassette=tmp_path / "e.yaml", mode="record").get_query_embedding(
        "y"
    )
    gc.collect()


def test_no_attribute_differs_after_undo_all(tmp_path: Path) -> None:
    before = snapshot()
    use_everything(tmp_path)
    assert differences(before, snapshot()) != []  # still installed: the next block is free
    undo_all()
    assert differences(before, snapshot()) == []


def test_the_patches_were_really_installed_meanwhile(tmp_path: Path) -> None:
    """The check above could pass by patching nothing: inside a block, attributes differ."""
    before = snapshot()
    with use_cassette(tmp_path / "c.yaml", mode="record", replay_tools=True):
        FakeProviderChat().invoke("hello")
        FakeProvider(policy=hello).chat([ChatMessage(role="user", content="Hi")])
        inside = differences(before, snapshot())
    assert any(name.endswith("._generate") for name in inside)
    assert "Vectors.embed_documents" in inside and "LiVectors._get_text_embedding" in inside
    assert "BaseEmbedding.__pydantic_init_subclass__" in inside
    assert any(name.startswith("FunctionTool.") for name in inside)
    assert "BaseTool.run" in inside and "chat_models.get_llm_cache" in inside
    assert "llm_cache" not in inside  # no global cache is set for a block
    undo_all()
    assert differences(before, snapshot()) == []


def test_a_later_block_wraps_and_unwraps_nothing_and_serves_its_own_calls(
    tmp_path: Path,
) -> None:
    """Issue 28: the first block installs the patches; later blocks only set the context, so
    entering and leaving one changes no class attribute or module global, and each call
    reaches its own block's cassette (none outside a block). What a block does add is its
    own: LlamaIndex's span handler (the block's trace) and, for a framework not imported
    yet (here the provider SDKs), an import watcher."""
    with use_cassette(tmp_path / "first.yaml", mode="record"):
        FakeProviderChat().invoke("first block")
    installed = snapshot()
    with use_cassette(tmp_path / "second.yaml", mode="record") as second:
        assert set(differences(installed, snapshot())) <= {"span_handlers", "meta_path"}
        FakeProviderChat().invoke("second block")
    assert differences(installed, snapshot()) == []
    FakeProviderChat().invoke("no block")  # passes through: no cassette records it
    assert [i.request["messages"][0]["content"] for i in second.interactions] == ["second block"]
    first = Cassette(tmp_path / "first.yaml", mode="replay")
    first.load()
    assert [i.request["messages"][0]["content"] for i in first.interactions] == ["first block"]
    undo_all()
