"""SDK calls whose attempts fail without an HTTP answer: each client (openai, anthropic;
sync, async) makes a call that fails at first, then is answered, and one that fails every
time (its retries spent: ``APIConnectionError``, or ``APITimeoutError``). ``FAULT`` picks the
failure: ``hang_up`` (the default: the connection drops twice, two retries) or ``stall``
(the fake answers late once, after the client's 1 s ``timeout``: one retry). Prints what
each call gave, then ``sleeps: N``: the sleeps of a minute or less (an SDK's back-off) the
program made, counted by wrapping ``time.sleep`` and ``anyio.sleep`` (what the SDKs sleep
with). ``SHORT_BACKOFF`` makes each such sleep last 0 s: the count is the signal, the wait
is not."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from collections.abc import Callable
from typing import Any

import anthropic
import anyio
import openai

SLEPT: list[float] = []
OPENAI_URL = os.environ.get("OPENAI_BASE_URL", "")
ANTHROPIC_URL = os.environ.get("ANTHROPIC_BASE_URL", "")
#: FAULT → the markers of its two calls (fails at first, fails always), the clients' options
FAULTS: dict[str, tuple[tuple[str, str], dict[str, Any]]] = {
    "hang_up": (("HANG_UP_TWICE", "HANG_UP_ALWAYS"), {"max_retries": 2}),
    "stall": (("STALL_ONCE", "STALL_ALWAYS"), {"max_retries": 1, "timeout": 1.0}),
}
MARKERS, FAULT_OPTIONS = FAULTS[os.environ.get("FAULT") or "hang_up"]
OPTIONS = {"api_key": "sk-backoff-test", **FAULT_OPTIONS}


def counting(sleep: Callable[[float], Any]) -> Callable[[float], Any]:
    def counted(seconds: float) -> Any:
        if 0 < seconds <= 60:
            SLEPT.append(seconds)
            if os.environ.get("SHORT_BACKOFF"):
                seconds = 0
        return sleep(seconds)

    return counted


time.sleep = counting(time.sleep)  # type: ignore[assignment]
anyio.sleep = counting(anyio.sleep)  # type: ignore[assignment]


def said(outcome: Callable[[], Any]) -> str:
    try:
        return json.dumps(outcome().model_dump(mode="json"), sort_keys=True)
    except (openai.APIConnectionError, anthropic.APIConnectionError) as error:
        return f"{type(error).__module__}.{type(error).__name__}: {error}"


async def asaid(outcome: Callable[[], Any]) -> str:
    try:
        return json.dumps((await outcome()).model_dump(mode="json"), sort_keys=True)
    except (openai.APIConnectionError, anthropic.APIConnectionError) as error:
        return f"{type(error).__module__}.{type(error).__name__}: {error}"


def ask(marker: str, who: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": f"{marker} {who}"}]


def sync_calls() -> list[str]:
    chat = openai.OpenAI(base_url=OPENAI_URL, **OPTIONS).chat.completions
    messages = anthropic.Anthropic(base_url=ANTHROPIC_URL, **OPTIONS).messages
    out = []
    for marker in MARKERS:
        q = ask(marker, "openai sync")
        out.append(said(lambda q=q: chat.create(model="gpt-4o-mini", messages=q)))
        q = ask(marker, "anthropic sync")
        out.append(
            said(lambda q=q: messages.create(model="claude-sonnet-4-5", max_tokens=8, messages=q))
        )
    return out


async def async_calls() -> list[str]:
    chat = openai.AsyncOpenAI(base_url=OPENAI_URL, **OPTIONS).chat.completions
    messages = anthropic.AsyncAnthropic(base_url=ANTHROPIC_URL, **OPTIONS).messages
    out = []
    for marker in MARKERS:
        q = ask(marker, "openai async")
        out.append(await asaid(lambda q=q: chat.create(model="gpt-4o-mini", messages=q)))
        q = ask(marker, "anthropic async")
        out.append(
            await asaid(
                lambda q=q: messages.create(model="claude-sonnet-4-5", max_tokens=8, messages=q)
            )
        )
    return out


started = time.perf_counter()
for line in [*sync_calls(), *asyncio.run(async_calls())]:
    print(line)
print(f"sleeps: {len(SLEPT)}")
print(f"took {time.perf_counter() - started:.3f} s", file=sys.stderr)
