"""The scripted models the fake server answers with, one a test family; each reads a
``Turn`` (the same for every wire format) and gives a ``Reply``."""

from __future__ import annotations

import re
import uuid

from fakes.turns import Reply, Turn

HAND_OFF = "Successfully transferred to "


def weather_tour(turn: Turn) -> Reply:
    """The provider matrix's model: offered the weather tools and no result yet, two
    parallel calls (weather and time in Paris); two results, one more call (weather in
    Lyon); three, a final text quoting the results; no tools, it echoes the user."""
    names = [t["name"] for t in turn.tools]
    if names and "get_weather" not in names:
        return any_tools(turn)
    if names and not turn.results:
        return Reply(calls=[("get_weather", {"city": "Paris"}), ("get_time", {"city": "Paris"})])
    if names and len(turn.results) == 2:
        return Reply(calls=[("get_weather", {"city": "Lyon"})])
    if names:
        return Reply(text="Summary: " + " | ".join(turn.results))
    return Reply(text=f"You said: {turn.last_user}")


def any_tools(turn: Turn) -> Reply:
    """Any other program's model: call the first offered tool (the first that is not a
    hand-off, after a hand-off) with arguments made from its schema, and answer with text
    once a tool has answered."""
    handed_over = turn.last_text.startswith(HAND_OFF)
    if turn.tools and (not turn.answered or handed_over):
        names = [t["name"] for t in turn.tools]
        own = [n for n in names if not n.startswith("transfer_")]
        chosen = own[0] if handed_over and own else names[0]
        schema = next(t for t in turn.tools if t["name"] == chosen)
        props = schema["parameters"].get("properties") or {}
        args = {
            k: ("FAANG headcount 2024" if v.get("type") == "string" else 2)
            for k, v in props.items()
        }
        return Reply(calls=[(chosen, args)])
    return Reply(text="Done: " + turn.last_text[:120])


def echo(turn: Turn) -> Reply:
    """The SDK tests' model: offered tools and no result yet, a call of the first tool by
    name (tools are a set: whatever their order); a result, "Answer: <result>"; else
    "Echo: <last user text>"."""
    if turn.tools and not turn.results:
        schema = min(turn.tools, key=lambda t: str(t["name"]))
        props = schema["parameters"].get("properties") or {}
        args = {k: ("Paris" if v.get("type") == "string" else 1) for k, v in props.items()}
        return Reply(calls=[(schema["name"], args)])
    if turn.results:
        return Reply(text="Answer: " + turn.results[-1])
    return Reply(text="Echo: " + turn.last_user)


CITIES = ("Paris", "Berlin", "Tokyo", "Lisbon")


def from_context(turn: Turn) -> Reply:
    """The model-call tests' model: names the cities the prompt's context mentions, in
    order, plus a random nonce (a replay that reached it would not reproduce the run)."""
    prompt = turn.last_user
    context = prompt.rsplit("Question", 1)[0] if "Question" in prompt else prompt
    found = sorted((context.find(c), c) for c in CITIES if c in context)
    about = ", ".join(c for _, c in found) or "nothing"
    return Reply(text=f"Answer from context about {about} (nonce {uuid.uuid4().hex[:8]})")


FORECAST_USAGE = (11, 7)
"""The tokens of every forecast answer: the CLI's summaries count them (18 a call)."""


def forecast(turn: Turn) -> Reply:
    """The CLI and README tests' model: offered tools and no result yet, a call of the
    first tool with the city the user asks about (``in Rome``); then "Forecast: <result>.";
    no tools, "You asked: <question>"."""
    if turn.tools and not turn.results:
        found = re.search(r"in ([A-Z][a-z]+)", turn.last_user)
        args = {"city": found.group(1) if found else "Paris"}
        return Reply(calls=[(str(turn.tools[0]["name"]), args)], usage=FORECAST_USAGE)
    if turn.results:
        return Reply(text=f"Forecast: {turn.results[-1]}.", usage=FORECAST_USAGE)
    return Reply(text=f"You asked: {turn.last_user}", usage=FORECAST_USAGE)
