"""The trace's sibling order: ``_sort_key`` spells the common node directly, and must give
exactly ``canonical_json([step, type, name, inputs, key])`` (recorded traces are in that
order, so a different spelling would reorder siblings and report a divergence)."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from chaincassette import canonical_json
from chaincassette.integrations.langchain.trace import _sort_key

texts = st.one_of(
    st.text(),  # any code point, control characters and lone surrogates included
    st.sampled_from(["", '"', "\\", "\n", "é", "\u2028", "\ud800", "\x7f", "RunnableSequence"]),
)
nodes = st.fixed_dictionaries(
    {"type": texts, "name": texts},
    optional={
        "step": st.one_of(st.integers(-(10**20), 10**20), st.booleans(), st.none(), texts),
        "inputs": st.one_of(st.none(), st.dictionaries(texts, st.integers(), max_size=2)),
        "key": st.one_of(st.none(), texts, st.integers()),
    },
)


def reference(node: dict[str, Any]) -> str:
    step = node.get("step") if isinstance(node.get("step"), int) else -1
    return canonical_json(
        [step, node.get("type"), node.get("name"), node.get("inputs"), node.get("key")]
    )


@given(nodes)
def test_the_sort_key_is_the_canonical_json_of_the_node_summary(node: dict[str, Any]) -> None:
    assert _sort_key(node) == reference(node)


def test_the_common_chain_node_takes_the_direct_spelling() -> None:
    node = {"type": "chain", "name": 'a "quoted" name \u2028', "step": 12, "key": "0123abcd"}
    assert _sort_key(node) == reference(node)
    assert _sort_key({"type": "node", "name": "agent"}) == '[-1,"node","agent",null,null]'
