"""Every wrapper takes a path (it owns the cassette) or a ``Cassette`` (its owner saves it),
and refuses a ``Cassette`` together with options it would silently ignore."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.llms.mock import MockLLM

from chaincassette import Cassette
from chaincassette.integrations.langchain import CassetteCache, CassetteEmbeddings
from chaincassette.integrations.llama_index import CassetteEmbedding, CassetteLLM

WRAPPERS: dict[str, Callable[..., Any]] = {
    "CassetteCache": lambda cassette, **kw: CassetteCache(cassette, **kw),
    "CassetteEmbeddings": lambda cassette, **kw: CassetteEmbeddings(
        DeterministicFakeEmbedding(size=4), cassette=cassette, **kw
    ),
    "CassetteEmbedding": lambda cassette, **kw: CassetteEmbedding(
        MockEmbedding(embed_dim=4), cassette=cassette, **kw
    ),
    "CassetteLLM": lambda cassette, **kw: CassetteLLM(MockLLM(), cassette=cassette, **kw),
}


@pytest.mark.parametrize("name", WRAPPERS)
def test_a_cassette_and_options_together_are_refused_by_name(name: str, tmp_path: Path) -> None:
    given = Cassette(tmp_path / "c.yaml", mode="record")
    with pytest.raises(TypeError, match=f"pass mode and options to Cassette.*to {name}"):
        WRAPPERS[name](given, mode="replay")
    with pytest.raises(TypeError, match=f"to {name}, not both"):
        WRAPPERS[name](given, ignore=["params.x"])


@pytest.mark.parametrize("name", WRAPPERS)
def test_a_path_is_opened_with_the_options_and_a_cassette_is_used_as_given(
    name: str, tmp_path: Path
) -> None:
    given = Cassette(tmp_path / "given.yaml", mode="record")
    wrapper = WRAPPERS[name](given)
    assert wrapper.cassette is given
    opened = WRAPPERS[name](tmp_path / "own.yaml", mode="replay", allow_playback_repeats=True)
    assert opened.cassette is not given
    assert opened.cassette.path == tmp_path / "own.yaml"
    assert opened.cassette.mode.value == "replay" and opened.cassette.allow_playback_repeats
    for made in (wrapper, opened):
        if isinstance(made, CassetteCache):
            made.close()
