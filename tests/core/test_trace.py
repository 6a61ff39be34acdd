"""First divergence between a recorded trace and this run's."""

from __future__ import annotations

from typing import Any

from chaincassette import first_divergence


def run_tree(weather: str = "Sunny", swap: bool = False) -> list[dict[str, Any]]:
    tools = [
        {
            "id": 3,
            "parent": 1,
            "type": "tool",
            "name": "get_weather",
            "agent": "researcher",
            "step": 2,
            "inputs": {"city": "Paris"},
            "outputs": weather,
        },
        {
            "id": 4,
            "parent": 1,
            "type": "tool",
            "name": "get_time",
            "agent": "researcher",
            "step": 2,
            "inputs": {"tz": "CET"},
            "outputs": "12:00",
        },
    ]
    if swap:
        tools.reverse()
    return [
        {"id": 1, "parent": None, "type": "agent", "name": "researcher", "agent": "researcher"},
        {
            "id": 2,
            "parent": 1,
            "type": "llm",
            "name": "fake",
            "agent": "researcher",
            "step": 1,
            "key": "abc",
        },
        *tools,
    ]


def test_identical_and_reordered_parallel_branches_do_not_diverge() -> None:
    assert first_divergence(run_tree(), run_tree()) is None
    assert first_divergence(run_tree(), run_tree(swap=True)) is None


def test_divergence_names_agent_step_and_change() -> None:
    found = first_divergence(run_tree(), run_tree(weather="Rain"))
    assert found == (
        "agent 'researcher' › agent researcher / agent 'researcher' › step 2 › tool get_weather: "
        "outputs: Sunny → Rain"
    )


def test_missing_and_extra_steps() -> None:
    shorter = run_tree()[:-1]
    assert "recorded but did not happen in this run" in str(first_divergence(run_tree(), shorter))
    assert "not in the recording" in str(first_divergence(shorter, run_tree()))
    assert first_divergence(None, run_tree()) is None


def test_step_changes_name_the_agent_steps_not_key_hashes() -> None:
    from chaincassette.trace import step_changes

    def run(weather: str, key: str, extra: bool) -> list[dict[str, object]]:
        nodes: list[dict[str, object]] = [
            {"id": 1, "parent": None, "type": "chain", "name": "LangGraph"},
            {"id": 2, "parent": 1, "type": "llm", "name": "ChatOpenAI", "step": 1, "key": "a" * 16},
            {
                "id": 3,
                "parent": 1,
                "type": "tool",
                "name": "get_weather",
                "step": 2,
                "inputs": {"city": "Paris"},
                "outputs": weather,
            },
            {"id": 4, "parent": 1, "type": "llm", "name": "ChatOpenAI", "step": 3, "key": key},
        ]
        if extra:
            nodes.append({"id": 5, "parent": 1, "type": "tool", "name": "get_time", "step": 4})
        return nodes

    assert step_changes(run("sunny", "b" * 16, False), run("sunny", "b" * 16, False)) == []
    lines = step_changes(run("sunny", "b" * 16, False), run("rainy", "c" * 16, True))
    assert lines == [
        "~ chain LangGraph › step 2 › tool get_weather: outputs: sunny → rainy",
        "~ chain LangGraph › step 3 › llm ChatOpenAI: the model was asked something else",
        "+ chain LangGraph › step 4 › tool get_time: new",
    ]
    assert not any("bbbb" in line or "cccc" in line for line in lines)
